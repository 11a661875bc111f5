#!/usr/bin/env bash
# One GPU session's checks, in order of importance; each step runs even if an earlier one fails:
#   1. the gpu-marked tests (tests/unit/test_devices.py and the CUDA data transforms);
#   2. the CIFAR-10 MLP experiment at the full budget (figures + JSON, tarred into OUT);
#   2b. the GCNN barrier at the full budget (VGG11, 4 variants x 3 networks; stopped after
#      GCNN_TIMEOUT s, default 270); its JSON goes to OUT and to book/part3/recorded/;
#   3. the trainer and latent-action benchmarks on the device;
#   4. a longer exploration: the ablation retrained on all 50,000 images for the Tanh
#      autoencoder and classifier (stopped at DEADLINE; its rows are printed as they finish).
#
#   EQLIB_DATA=path/to/cifar bash benchmarks/gpu_check.sh OUT_DIR
#
# Env: DEVICE (default cuda), BUDGET (default full), EQLIB_CACHE (default /tmp/eqlib_cache),
#      DEADLINE (seconds from the start by which step 4 is stopped; default 420).
# Runs from the repository root without installing eqlib (PYTHONPATH), so the machine's own
# torch is used. Writes at most ten files into OUT_DIR.
set -uo pipefail
out=${1:?usage: EQLIB_DATA=... bash benchmarks/gpu_check.sh OUT_DIR}
device=${DEVICE:-cuda}
budget=${BUDGET:-full}
deadline=${DEADLINE:-420}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export EQLIB_CACHE=${EQLIB_CACHE:-/tmp/eqlib_cache}
py=$(command -v python3 || command -v python)
status=0

step() {  # step NAME LOG COMMAND...: run, log, time, remember failures
  local name=$1 log=$2; shift 2
  echo "== $name: $*" | tee -a "$log"
  local t0=$SECONDS
  "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$log" "$out/summary.log"
  [ "$rc" -eq 0 ] || status=1
}

{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null
  "$py" -c "import torch; print('torch', torch.__version__, 'cuda' if torch.cuda.is_available() else 'no cuda')"
} | tee "$out/summary.log"

step tests "$out/tests.log" "$py" -m pytest tests/unit/test_devices.py tests/unit/test_data.py -q \
  -o addopts="" -p no:cacheprovider -k "${device} or gpu"

results=$(mktemp -d)
step "cifar_mlp $budget" "$out/cifar_mlp.log" "$py" -m eqlib.experiments.cifar_mlp --budget "$budget" \
  --device "$device" --out "$results" --no-progress
cp "$results"/*.json "$out/" 2>/dev/null
tar czf "$out/cifar_mlp_figures.tgz" -C "$results" .

gcnn=$(mktemp -d)
step "gcnn_barrier $budget" "$out/gcnn_barrier.log" timeout "${GCNN_TIMEOUT:-270}" "$py" -m eqlib.experiments.gcnn_barrier \
  --budget "$budget" --device "$device" --out "$gcnn" --no-progress --parts barriers
if [ -f "$gcnn/gcnn_barrier_$budget.json" ]; then
  cp "$gcnn/gcnn_barrier_$budget.json" "$out/"
  cp "$gcnn/gcnn_barrier_$budget.json" "book/part3/recorded/gcnn_barrier_$budget.json"
fi

step bench_train "$out/bench.log" "$py" benchmarks/bench_train.py --device "$device"
step bench_latent "$out/bench.log" "$py" benchmarks/bench_latent.py --device "$device"

left=$((deadline - SECONDS))
if [ "$left" -gt 30 ]; then
  explore=$(mktemp -d)
  step "cifar_mlp explore ($left s)" "$out/explore.log" timeout "$left" "$py" -m eqlib.experiments.cifar_mlp \
    --budget "$budget" --device "$device" --parts ablation --out "$explore" --no-progress \
    --set ablation_n_train=50000 --set "ablation_epochs=${EXPLORE_EPOCHS:-15}" \
    --set ablation_networks=tanh-autoencoder,tanh-classifier \
    --set "ablation_variants=base,5× epochs,smaller first-layer init (×0.1),default first-layer init (×10),strong weight decay (0.5),penalty weight ×10,no penalty,2× width"
  for f in "$explore"/*.json; do [ -e "$f" ] && cp "$f" "$out/explore_$(basename "$f")"; done
else
  echo "== explore skipped: $left s left" | tee -a "$out/summary.log"
fi
exit $status
