"""Training speed with glibc's mmap threshold fixed (eqlib.device.limit_resident_memory)
against glibc's default growing threshold, side by side, for chapter 10's laptop CNN and
chapter 11's MLP.

    python benchmarks/malloc_threshold.py [--steps 30] [--rounds 3]

Each measurement runs in a fresh process (the threshold is process-wide); the rounds
alternate the two settings so a change of load hits both. Prints ms per training step and
the ratio fixed / default per model.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

_STEP = r"""
import sys, time, torch
from eqlib.device import limit_resident_memory
if sys.argv[1] == "fixed":
    assert limit_resident_memory()
torch.manual_seed(0)
if sys.argv[2] == "cnn":
    from eqlib.experiments import gcnn_barrier as gb
    b = gb.BUDGETS["laptop"]
    net, batch = gb.build_network("plain", 1.0, 0, b), b.train.batch_size
    x = torch.rand(batch, 3, 32, 32)
else:
    from eqlib.models import MLP
    net, batch = MLP([3072, 256, 256, 10], activations="tanh", seed=0), 128
    x = torch.rand(batch, 3072)
y = torch.randint(0, 10, (batch,))
opt = torch.optim.Adam(net.parameters(), 1e-3)
def step():
    opt.zero_grad()
    torch.nn.functional.cross_entropy(net(x), y).backward()
    opt.step()
for _ in range(3):
    step()
t = time.perf_counter()
for _ in range(int(sys.argv[3])):
    step()
print((time.perf_counter() - t) / int(sys.argv[3]) * 1000)
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    for model in ("cnn", "mlp"):
        times: dict[str, list[float]] = {"default": [], "fixed": []}
        for _ in range(args.rounds):
            for how in times:
                out = subprocess.run([sys.executable, "-c", _STEP, how, model, str(args.steps)],
                                     capture_output=True, text=True, check=True).stdout
                times[how].append(float(out))
        d, f = statistics.median(times["default"]), statistics.median(times["fixed"])
        print(f"{model}: default threshold {d:.1f} ms/step, fixed at 128 KiB {f:.1f} ms/step, "
              f"ratio fixed/default {f / d:.2f} (medians of {args.rounds})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
