"""benchmarks/gpu_check.sh on the CPU with a stub interpreter and tiny time limits: the order
of the steps, that each one's limit keeps the script within TOTAL, that a step that runs out
keeps what it has, and that a step with too little time left is skipped and reported."""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.sh"

# Stands in for python: each experiment either writes its JSON at once or runs (sleeps) until
# it is stopped; HANG names the ones that run out. Every call is logged to CALLS.
STUB = r"""#!/usr/bin/env bash
echo "$*" >> "$CALLS"
out=""; prev=""
for a in "$@"; do [ "$prev" = "--out" ] && out=$a; prev=$a; done
case "$*" in
  -c*) echo "torch stub"; exit 0 ;;
  *pytest*) echo "1 passed"; exit 0 ;;
  *bench_*) echo "bench line"; exit 0 ;;
  *gcnn_barrier*)
    [[ " $HANG " == *" gcnn "* ]] && exec sleep 1000
    echo '{"claims": {}}' > "$out/gcnn_barrier_full.json"; exit 0 ;;
  *"--parts ablation"*)
    for i in 1 2 3; do echo "ablation: {\"network\": \"tanh-classifier\", \"row\": $i}"; done
    [[ " $HANG " == *" explore "* ]] && exec sleep 1000
    echo '{"ablation": []}' > "$out/cifar_mlp_full.json"; exit 0 ;;
  *cifar_mlp*) echo '{"table": []}' > "$out/cifar_mlp_full.json"; exit 0 ;;
esac
echo "stub: unexpected call $*" >&2; exit 3
"""


def run_check(tmp_path: Path, hang: str, **env_extra: str):
    stub = tmp_path / "python-stub"
    stub.write_text(STUB)
    stub.chmod(0o755)
    repo = tmp_path / "repo"  # the script writes eqlib/recorded/ under its working folder
    (repo / "eqlib" / "recorded").mkdir(parents=True, exist_ok=True)
    out = tmp_path / "out"
    calls = tmp_path / "calls.log"
    env = dict(os.environ, PYTHON=str(stub), CALLS=str(calls), HANG=hang, BUDGET="full",
               DEVICE="cpu", EQLIB_CACHE=str(tmp_path / "cache"))
    env.update({"MIN_STEP": "2", "MARGIN": "1", **env_extra})
    t0 = time.monotonic()
    proc = subprocess.run(["bash", str(SCRIPT), str(out)], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=120)
    return proc, time.monotonic() - t0, out, calls.read_text().splitlines(), repo


def test_all_steps_finish_in_order_and_record(tmp_path):
    proc, _, out, calls, repo = run_check(tmp_path, hang="", TOTAL="60")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    order = ["-c", "pytest", "cifar_mlp --budget", "bench_train", "bench_latent", "gcnn_barrier",
             "--parts ablation"]
    assert len(calls) == len(order)
    for call, key in zip(calls, order):
        assert key in call, (call, key)
    assert (out / "cifar_mlp_full.json").exists() and (out / "explore_cifar_mlp_full.json").exists()
    assert (out / "gcnn_barrier_full.json").exists()
    assert (repo / "eqlib/recorded/gcnn_barrier_full.json").exists()
    assert not (out / "explore_rows_partial.jsonl").exists()
    assert "status 0" in (out / "summary.log").read_text()


def test_steps_that_run_out_keep_what_they_have_within_total(tmp_path):
    total = 12
    proc, seconds, out, calls, _ = run_check(tmp_path, hang="gcnn explore", TOTAL=str(total),
                                             GCNN_SHARE="50")
    # each step is stopped at its limit (plus timeout's 5 s grace at most once per step)
    assert seconds < total + 8, seconds
    summary = (out / "summary.log").read_text()
    assert proc.returncode == 1  # the GCNN barrier was not recorded
    assert "gcnn_barrier full: ran out" in summary and "no JSON; the networks it trained" in summary
    assert "cifar_mlp explore: ran out" in summary
    # gcnn got about half of what was left, so the exploration still ran (not starved)
    assert any("--parts ablation" in c for c in calls)
    rows = [json.loads(line) for line in (out / "explore_rows_partial.jsonl").read_text().splitlines()]
    assert [r["row"] for r in rows] == [1, 2, 3]
    assert "3 finished rows" in summary
    assert (out / "cifar_mlp_full.json").exists()  # the earlier recording is kept


def test_a_step_without_time_left_is_skipped_and_reported(tmp_path):
    proc, seconds, out, calls, _ = run_check(tmp_path, hang="gcnn", TOTAL="9", GCNN_SHARE="100",
                                             MIN_STEP="3")
    summary = (out / "summary.log").read_text()
    assert "cifar_mlp explore: skipped" in summary, summary
    assert not any("--parts ablation" in c for c in calls)
    assert proc.returncode == 1 and seconds < 9 + 8


def test_missing_interpreter_fails_every_step_without_hanging(tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ, PYTHON="nonexistent-python", TOTAL="20", MIN_STEP="1", MARGIN="1",
               EQLIB_CACHE=str(tmp_path / "cache"))
    proc = subprocess.run(["bash", str(SCRIPT), str(out)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "status 1" in (out / "summary.log").read_text()
