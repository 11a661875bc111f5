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
# the lock, log, low priority and copy-on-success are benchmarks/record_run.sh's
exec bash "$(dirname "$0")/record_run.sh" record_hypotheses pairing_hypotheses_full.json -- -m eqlib.experiments.pairing_hypotheses --budget full \
  --seeds "${SEEDS:-0,1,2}" --no-download
