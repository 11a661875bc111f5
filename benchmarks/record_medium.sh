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
# last finished epoch with the weights of an uninterrupted run. The barrier measurements after
# the training (hours at nice 19 on a shared CPU) resume merge by merge: every finished merge is
# cached ($EQLIB_CACHE/results) and logged with its seconds. A second copy started while one runs exits at once
# (a lock file in the cache). The JSON is written at the very end (through a temporary folder,
# moved in at once), so an interrupted run never leaves a partial record.
#
# Env: EQLIB_DATA (CIFAR-10), EQLIB_CACHE (the model cache; default ~/.cache/eqlib: keep it
#      between sessions), OMP_NUM_THREADS (default 2), LOG (default
#      $EQLIB_CACHE/logs/record_medium.log: appended to, one line per trained epoch with its
#      seconds and test accuracy), PYTHON (default python3), DEVICE (default cpu),
#      RECORD_DEST (where the JSON is copied; default eqlib/recorded).
set -euo pipefail
# the lock, log, low priority and copy-on-success are benchmarks/record_run.sh's
exec bash "$(dirname "$0")/record_run.sh" record_medium gcnn_barrier_medium.json -- -m eqlib.experiments.gcnn_barrier --budget medium --device "${DEVICE:-cpu}" --no-download \
  --parts barriers --no-progress
