#!/usr/bin/env bash
# Records eqlib/recorded/pairing_hypotheses_full.json: chapter 11's three hypothesis experiments
# (python -m eqlib.experiments.pairing_hypotheses: stability vs reachability of a planted paired
# first layer, structure first, where the penalty acts) at the `full` budget (the filter search's
# networks: 10,000 CIFAR-10 training images, widths 256/128/128, 15 epochs) on seeds 0, 1, 2, on
# the CPU at the lowest priority (nice -n 19). 42 networks, about 60-80 CPU-minutes (see the
# module's BUDGETS); every network is trained through the model cache
# ($EQLIB_CACHE/models), which checkpoints each epoch, so
#
#   EQLIB_DATA=path/to/cifar bash benchmarks/record_hypotheses.sh
#
# can be killed at any moment and started again with the same command: finished networks are
# loaded, never retrained, and the network in progress resumes from its last finished epoch with
# the weights of an uninterrupted run; only the measurements (seconds per network) start over. A
# second copy started while one runs exits at once (a lock file in the cache). The JSON is written
# at the very end (through a temporary folder, moved in at once), so an interrupted run never
# leaves a partial record.
#
# Env: EQLIB_DATA (CIFAR-10), EQLIB_CACHE (the model cache; default ~/.cache/eqlib: keep it
#      between sessions), OMP_NUM_THREADS (default 2), LOG (default
#      $EQLIB_CACHE/logs/record_hypotheses.log: appended to, one line per measured network),
#      PYTHON (default python3), SEEDS (default 0,1,2), RECORD_DEST (where the JSON is copied;
#      default eqlib/recorded).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export EQLIB_CACHE=${EQLIB_CACHE:-$HOME/.cache/eqlib}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} MKL_NUM_THREADS=${MKL_NUM_THREADS:-${OMP_NUM_THREADS:-2}}
py=${PYTHON:-$(command -v python3 || command -v python)}
log=${LOG:-$EQLIB_CACHE/logs/record_hypotheses.log}
mkdir -p "$(dirname "$log")" "$EQLIB_CACHE"
exec 9>"$EQLIB_CACHE/record_hypotheses.lock"
if ! flock -n 9; then
  echo "record_hypotheses.sh: another recording holds $EQLIB_CACHE/record_hypotheses.lock; not starting" >&2
  exit 1
fi
{ echo "== $(date -u) start (or resume) on $(hostname): $(uptime)"
  echo "== OMP_NUM_THREADS=$OMP_NUM_THREADS EQLIB_CACHE=$EQLIB_CACHE, log $log"; } | tee -a "$log"
set +e
out=$(mktemp -d "${TMPDIR:-/tmp}/record_hypotheses.XXXXXX")
nice -n 19 "$py" -m eqlib.experiments.pairing_hypotheses --budget full --seeds "${SEEDS:-0,1,2}" \
  --no-download --out "$out" >> "$log" 2>&1
rc=$?
set -e
echo "== $(date -u) exit $rc: $(uptime)" | tee -a "$log"
dest=${RECORD_DEST:-eqlib/recorded}
if [ "$rc" -eq 0 ]; then
  if [ ! -f "$out/pairing_hypotheses_full.json" ]; then
    echo "record_hypotheses.sh: the run exited 0 but wrote no $out/pairing_hypotheses_full.json" | tee -a "$log" >&2
    exit 1
  fi
  cp "$out/pairing_hypotheses_full.json" "$dest/"
  echo "wrote $dest/pairing_hypotheses_full.json (log: $log)"
fi
exit "$rc"
