#!/usr/bin/env bash
# Records eqlib/recorded/gcnn_barrier_medium.json: the GCNN barrier at the `medium` budget
# (VGG11's layers at 1/8 width, all 50,000 CIFAR-10 training images with flip/crop augmentation,
# 4 variants x 3 network seeds, tested on all 10,000 test images) on the CPU, at the lowest
# priority (nice -n 19). It takes many hours (see the CLI's epilog:
# python -m eqlib.experiments.gcnn_barrier --help); every network is trained through the model
# cache ($EQLIB_CACHE/models), which checkpoints each epoch, so
#
#   EQLIB_DATA=path/to/cifar bash benchmarks/record_medium.sh
#
# can be killed at any moment (Ctrl-C, logout, reboot) and started again with the same command:
# finished networks are loaded, never retrained, and the network in progress resumes from its
# last finished epoch with the weights of an uninterrupted run. Only the barrier measurements
# after the training (minutes) start over. A second copy started while one runs exits at once
# (a lock file in the cache). The JSON is written at the very end (through a temporary folder,
# moved in at once), so an interrupted run never leaves a partial record.
#
# Env: EQLIB_DATA (CIFAR-10), EQLIB_CACHE (the model cache; default ~/.cache/eqlib: keep it
#      between sessions), OMP_NUM_THREADS (default 2), LOG (default
#      $EQLIB_CACHE/logs/record_medium.log: appended to, one line per trained epoch with its
#      seconds and test accuracy), PYTHON (default python3), DEVICE (default cpu),
#      RECORD_DEST (where the JSON is copied; default eqlib/recorded).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export EQLIB_CACHE=${EQLIB_CACHE:-$HOME/.cache/eqlib}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} MKL_NUM_THREADS=${MKL_NUM_THREADS:-${OMP_NUM_THREADS:-2}}
py=${PYTHON:-$(command -v python3 || command -v python)}
log=${LOG:-$EQLIB_CACHE/logs/record_medium.log}
mkdir -p "$(dirname "$log")" "$EQLIB_CACHE"
exec 9>"$EQLIB_CACHE/record_medium.lock"
if ! flock -n 9; then
  echo "record_medium.sh: another recording holds $EQLIB_CACHE/record_medium.lock; not starting" >&2
  exit 1
fi
{ echo "== $(date -u) start (or resume) on $(hostname): $(uptime)"
  echo "== OMP_NUM_THREADS=$OMP_NUM_THREADS EQLIB_CACHE=$EQLIB_CACHE, log $log"; } | tee -a "$log"
set +e
# the run writes the JSON and its figures into a fresh folder; only the JSON is package data
out=$(mktemp -d "${TMPDIR:-/tmp}/record_medium.XXXXXX")
nice -n 19 "$py" -m eqlib.experiments.gcnn_barrier --budget medium --device "${DEVICE:-cpu}" \
  --no-download --parts barriers --no-progress --out "$out" >> "$log" 2>&1
rc=$?
set -e
echo "== $(date -u) exit $rc: $(uptime)" | tee -a "$log"
dest=${RECORD_DEST:-eqlib/recorded}
if [ "$rc" -eq 0 ]; then
  if [ ! -f "$out/gcnn_barrier_medium.json" ]; then
    echo "record_medium.sh: the run exited 0 but wrote no $out/gcnn_barrier_medium.json" | tee -a "$log" >&2
    exit 1
  fi
  cp "$out/gcnn_barrier_medium.json" "$dest/"
  echo "wrote $dest/gcnn_barrier_medium.json (figures in $out; log: $log)"
fi
exit "$rc"
