#!/usr/bin/env bash
# One GPU session's checks, fitted into TOTAL seconds (default 480: 8 minutes on one H200).
# Every step has its own time limit (timeout), so no step can starve a later one; each step
# runs even if an earlier one fails or runs out, and a step that runs out keeps what it has:
#   1. the gpu-marked tests (tests/unit/test_devices.py and the CUDA data transforms);
#        limit TESTS_TIMEOUT (60 s);
#   2. the CIFAR-10 MLP experiment at the budget (figures + JSON, tarred into OUT; the
#        recorded full run took 80 s on an H200); limit MLP_TIMEOUT (150 s);
#   3. the trainer and latent-action benchmarks on the device (without the CPU-side gelsd and
#        numpy fits); limit BENCH_TIMEOUT (45 s) each;
#   4. the GCNN barrier at the budget (VGG11, 4 variants x 3 networks); limit: GCNN_SHARE
#      percent (50) of the time left, at most GCNN_TIMEOUT (270 s). Its JSON goes to OUT and
#      to eqlib/recorded/ (the recorded runs ship inside the package); when it runs out,
#      the networks it trained stay in EQLIB_CACHE (a rerun resumes there) and the summary
#      says so;
#   5. a longer exploration until TOTAL: the ablation retrained on all 50,000 images for the
#      Tanh autoencoder and classifier. Its rows are printed as they finish; when it runs out,
#      the finished rows are written to OUT/explore_rows_partial.jsonl.
# A step is skipped (and the summary says so) when less than MIN_STEP (30 s) would be left
# for it. Steps 4 and 5 are the long recordings: 4 gets its share first, 5 the rest.
#
#   EQLIB_DATA=path/to/cifar bash benchmarks/gpu_check.sh OUT_DIR
#
# Env: DEVICE (default cuda), BUDGET (default full), EQLIB_CACHE (default /tmp/eqlib_cache),
#      TOTAL (seconds for the whole script; default 480, or DEADLINE if set), the limits
#      above, EXPLORE_EPOCHS (15), PYTHON (the interpreter; default python3).
# Runs from the repository root without installing eqlib (PYTHONPATH), so the machine's own
# torch is used. Writes at most twelve files into OUT_DIR. Tested on the CPU with a stub
# interpreter and tiny limits: tests/unit/test_gpu_check.py.
set -uo pipefail
out=${1:?usage: EQLIB_DATA=... bash benchmarks/gpu_check.sh OUT_DIR}
device=${DEVICE:-cuda}
budget=${BUDGET:-full}
total=${TOTAL:-${DEADLINE:-480}}
min_step=${MIN_STEP:-30}
margin=${MARGIN:-10}  # kept back at the end for copying results
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export EQLIB_CACHE=${EQLIB_CACHE:-/tmp/eqlib_cache}
py=${PYTHON:-$(command -v python3 || command -v python)}
status=0
SECONDS=0

left() { echo $((total - margin - SECONDS)); }
limit() {  # limit CAP [PERCENT]: CAP, or PERCENT % of the time left if less, never past TOTAL
  local cap=$1 pct=${2:-100} l
  l=$(left)
  l=$((l * pct / 100))
  echo $((cap < l ? cap : l))
}

step() {  # step NAME LOG LIMIT COMMAND...: run under a time limit, log, time, remember failures
  local name=$1 log=$2 lim=$3; shift 3
  if [ "$lim" -lt "$min_step" ]; then
    echo "== $name: skipped, $lim s left for it (< $min_step s)" | tee -a "$out/summary.log"
    status=1
    return 99
  fi
  echo "== $name (limit $lim s): $*" | tee -a "$log"
  local t0=$SECONDS
  timeout -k 5 "$lim" "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  local how="exit $rc"
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then how="ran out of its $lim s (exit $rc)"; fi
  echo "== $name: $how after $((SECONDS - t0)) s (at $SECONDS s of $total)" | tee -a "$log" "$out/summary.log"
  return "$rc"
}

{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null
  "$py" -c "import torch; print('torch', torch.__version__, 'cuda' if torch.cuda.is_available() else 'no cuda')"
} | tee "$out/summary.log"
echo "== budget $total s in all" | tee -a "$out/summary.log"

step tests "$out/tests.log" "$(limit "${TESTS_TIMEOUT:-60}")" "$py" -m pytest tests/unit/test_devices.py \
  tests/unit/test_data.py -q -o addopts="" -p no:cacheprovider -k "${device} or gpu" || status=1

results=$(mktemp -d)
step "cifar_mlp $budget" "$out/cifar_mlp.log" "$(limit "${MLP_TIMEOUT:-150}")" "$py" -m eqlib.experiments.cifar_mlp \
  --budget "$budget" --device "$device" --out "$results" --no-progress || status=1
cp "$results"/*.json "$out/" 2>/dev/null
tar czf "$out/cifar_mlp_figures.tgz" -C "$results" .

step bench_train "$out/bench.log" "$(limit "${BENCH_TIMEOUT:-45}")" "$py" benchmarks/bench_train.py \
  --device "$device" || status=1
step bench_latent "$out/bench.log" "$(limit "${BENCH_TIMEOUT:-45}")" "$py" benchmarks/bench_latent.py \
  --device "$device" --no-fit-baselines || status=1

gcnn=$(mktemp -d)
step "gcnn_barrier $budget" "$out/gcnn_barrier.log" "$(limit "${GCNN_TIMEOUT:-270}" "${GCNN_SHARE:-50}")" \
  "$py" -m eqlib.experiments.gcnn_barrier --budget "$budget" --device "$device" --out "$gcnn" \
  --no-progress --parts barriers || status=1
if [ -f "$gcnn/gcnn_barrier_$budget.json" ]; then
  cp "$gcnn/gcnn_barrier_$budget.json" "$out/"
  cp "$gcnn/gcnn_barrier_$budget.json" "eqlib/recorded/gcnn_barrier_$budget.json"
else
  echo "== gcnn_barrier: no JSON; the networks it trained are cached in $EQLIB_CACHE (a rerun resumes)" \
    | tee -a "$out/summary.log"
fi

explore=$(mktemp -d)
# runs until TOTAL: running out here is the plan, not a failure
step "cifar_mlp explore" "$out/explore.log" "$(limit "$total")" "$py" -m eqlib.experiments.cifar_mlp \
  --budget "$budget" --device "$device" --parts ablation --out "$explore" --no-progress \
  --set ablation_n_train=50000 --set "ablation_epochs=${EXPLORE_EPOCHS:-15}" \
  --set ablation_networks=tanh-autoencoder,tanh-classifier \
  --set "ablation_variants=base,5× epochs,smaller first-layer init (×0.1),default first-layer init (×10),strong weight decay (0.5),penalty weight ×10,no penalty,2× width"
rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] || status=1
wrote=0
for f in "$explore"/*.json; do [ -e "$f" ] && cp "$f" "$out/explore_$(basename "$f")" && wrote=1; done
if [ "$wrote" -eq 0 ] && [ -f "$out/explore.log" ]; then
  sed -n 's/^ablation: //p' "$out/explore.log" > "$out/explore_rows_partial.jsonl"
  echo "== explore: no JSON; $(wc -l < "$out/explore_rows_partial.jsonl") finished rows in explore_rows_partial.jsonl" \
    | tee -a "$out/summary.log"
fi
echo "== done after $SECONDS s of $total (status $status)" | tee -a "$out/summary.log"
exit $status
