#!/usr/bin/env bash
# The resumable CPU recording that benchmarks/record_medium.sh and record_hypotheses.sh share:
#
#   bash benchmarks/record_run.sh NAME RECORD.json -- python-arguments...
#
# runs `python <python-arguments> --out <fresh folder>` at the lowest priority (nice -n 19),
# appends its output to the log, and copies RECORD.json from the fresh folder to RECORD_DEST
# (default eqlib/recorded) only when the run exits 0. Networks are trained through the model
# cache ($EQLIB_CACHE/models), so killing the run and starting it again resumes it. A second
# copy started while one runs exits at once (the lock file $EQLIB_CACHE/NAME.lock).
#
# Env: EQLIB_CACHE (default ~/.cache/eqlib: keep it between sessions), OMP_NUM_THREADS
#      (default 2), LOG (default $EQLIB_CACHE/logs/NAME.log), PYTHON (default python3),
#      RECORD_DEST (default eqlib/recorded).
set -euo pipefail
if [ "$#" -lt 4 ] || [ "$3" != "--" ]; then
  echo "usage: record_run.sh NAME RECORD.json -- python-arguments..." >&2
  exit 2
fi
name=$1 record=$2
shift 3
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export EQLIB_CACHE=${EQLIB_CACHE:-$HOME/.cache/eqlib}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} MKL_NUM_THREADS=${MKL_NUM_THREADS:-${OMP_NUM_THREADS:-2}}
py=${PYTHON:-$(command -v python3 || command -v python)}
log=${LOG:-$EQLIB_CACHE/logs/$name.log}
mkdir -p "$(dirname "$log")" "$EQLIB_CACHE"
exec 9>"$EQLIB_CACHE/$name.lock"
if ! flock -n 9; then
  echo "$name.sh: another recording holds $EQLIB_CACHE/$name.lock; not starting" >&2
  exit 1
fi
{ echo "== $(date -u) start (or resume) on $(hostname): $(uptime)"
  echo "== OMP_NUM_THREADS=$OMP_NUM_THREADS EQLIB_CACHE=$EQLIB_CACHE, log $log"; } | tee -a "$log"
set +e
# the run writes the JSON (and any figures) into a fresh folder; only the JSON is package data
out=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
nice -n 19 "$py" "$@" --out "$out" >> "$log" 2>&1
rc=$?
set -e
echo "== $(date -u) exit $rc: $(uptime)" | tee -a "$log"
dest=${RECORD_DEST:-eqlib/recorded}
if [ "$rc" -eq 0 ]; then
  if [ ! -f "$out/$record" ]; then
    echo "$name.sh: the run exited 0 but wrote no $out/$record" | tee -a "$log" >&2
    exit 1
  fi
  cp "$out/$record" "$dest/"
  echo "wrote $dest/$record (other outputs in $out; log: $log)"
fi
exit "$rc"
