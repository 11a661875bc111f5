"""Benchmark of the attention recovery's per-head change-of-basis fit, old and new side by side.

``eqlib.latent.attention.recover._fit_partner_basis`` finds, per head, the C (d × d) with
W1 C = W1g and W2 C^{-ᵀ} = W2g (the A_h, B_h of :func:`recover_attention_action`). The
old solve (kept as ``_fit_partner_basis_dense``) takes a dense SVD of the Kronecker
system, (m + p) d rows × d² columns in float64: O((m + p) d⁵) time and (m + p) d³ memory
per head. The new one solves the normal equations P C + C Q = R (a Sylvester equation,
P ⊗ I + I ⊗ Q in vec form) in the eigenbases of P and Q, got from the SVDs of the two
m × d and p × d factors: O((m + p) d²) per head.

Both run on the same inputs, for each d of ``--sizes``: H heads with m = p = ``--ratio``·d
rows (default 4, the CIFAR attention test's shape d_in = 192, d_k = 48 at d = 48), a
planted well-conditioned C, W1g perturbed by 1 % noise (so the least-squares problem is
not exact); with ``--degenerate``, head 0 of every instance has W1 and W2g of rank d/2
(C is then free on ker W1 ⊗ ker W2g and the best-conditioned candidate is chosen).
Printed: the time of each (best of ``--repeat``, run in turn), their ratio, the largest
|difference| of the recovered C's, and both residuals. The dense solve is skipped (its
column says so) when its Kronecker matrix would exceed ``--dense-max-gb``.

Run: ``python benchmarks/bench_attention.py [--sizes 16,32,48,64,128] [--heads 1]
[--ratio 4] [--repeat 2] [--degenerate] [--dense-max-gb 1.5]``.
Timings on a shared machine vary; compare ratios, not absolute seconds.
"""
from __future__ import annotations

import argparse
import time

import torch

from eqlib.latent.attention.recover import _fit_partner_basis, _fit_partner_basis_dense
from eqlib.symmetries import random_invertible


def instance(d: int, heads: int, m: int, p: int, degenerate: bool, seed: int = 0):
    """(W1, W1g, W2, W2g) in float64 with a planted C, 1 % noise on W1g."""
    gen = torch.Generator().manual_seed(seed)
    W1 = torch.randn(heads, m, d, generator=gen, dtype=torch.float64)
    W2 = torch.randn(heads, p, d, generator=gen, dtype=torch.float64)
    C = random_invertible(heads, d, gen, 0.5).double()
    W2g = W2 @ torch.linalg.inv(C).mT
    if degenerate:
        r = max(1, d // 2)
        b1 = torch.linalg.qr(torch.randn(d, r, generator=gen, dtype=torch.float64))[0]
        b2 = torch.linalg.qr(torch.randn(d, r, generator=gen, dtype=torch.float64))[0]
        W1[0], W2g[0] = W1[0] @ b1 @ b1.T, W2g[0] @ b2 @ b2.T
        W2[0] = W2g[0] @ C[0].T
    W1g = W1 @ C
    W1g = W1g + 0.01 * W1g.norm() / W1g.numel() ** 0.5 * torch.randn(W1g.shape, generator=gen, dtype=torch.float64)
    return W1, W1g, W2, W2g


def timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t


def dense_gb(d: int, heads: int, m: int, p: int) -> float:
    """Memory of the dense Kronecker matrix (float64), all heads, in GB."""
    return heads * (m + p) * d * d * d * 8 / 1e9


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="16,32,48,64,128", help="comma-separated head dimensions d")
    p.add_argument("--heads", type=int, default=1)
    p.add_argument("--ratio", type=float, default=4.0, help="m = p = ratio·d rows per factor")
    p.add_argument("--repeat", type=int, default=2, help="rounds, the best time of each solver kept")
    p.add_argument("--degenerate", action="store_true", help="head 0 of rank d/2 in W1 and W2g")
    p.add_argument("--dense-max-gb", type=float, default=1.5,
                   help="skip the dense solve when its Kronecker matrix would exceed this")
    a = p.parse_args()
    sizes = [int(s) for s in a.sizes.split(",") if s.strip()]
    warm = instance(4, 1, 8, 8, True)
    _fit_partner_basis(*warm), _fit_partner_basis_dense(*warm)  # first calls load the LAPACK kernels
    print(f"torch threads {torch.get_num_threads()} (shared machines: timings vary); heads {a.heads}, "
          f"m = p = {a.ratio:g}·d, {'head 0 degenerate (rank d/2)' if a.degenerate else 'full-rank heads'}, "
          f"best of {a.repeat}")
    print(f"{'d':>5} {'m':>5} {'dense GB':>9} {'dense s':>10} {'new s':>10} {'ratio':>9} "
          f"{'max|ΔC|':>9} {'resid dense':>12} {'resid new':>12}")
    for d in sizes:
        m = max(1, int(round(a.ratio * d)))
        args = instance(d, a.heads, m, m, a.degenerate)
        gb = dense_gb(d, a.heads, m, m)
        run_dense = gb <= a.dense_max_gb
        t_new = t_dense = float("inf")
        for _ in range(a.repeat):
            (C_new, e_new), t = timed(_fit_partner_basis, *args)
            t_new = min(t_new, t)
            if run_dense:
                (C_dense, e_dense), t = timed(_fit_partner_basis_dense, *args)
                t_dense = min(t_dense, t)
        if run_dense:
            diff = float((C_new - C_dense).abs().max())
            print(f"{d:>5} {m:>5} {gb:>9.3f} {t_dense:>10.4f} {t_new:>10.4f} {t_dense / t_new:>8.1f}x "
                  f"{diff:>9.1e} {e_dense:>12.3e} {e_new:>12.3e}")
        else:
            print(f"{d:>5} {m:>5} {gb:>9.3f} {'skipped':>10} {t_new:>10.4f} {'-':>9} {'-':>9} {'-':>12} "
                  f"{e_new:>12.3e}")


if __name__ == "__main__":
    main()
