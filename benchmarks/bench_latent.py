"""Benchmark of eqlib.latent, each figure beside a straightforward baseline run side by side.

1. ``latent_actions(method="weights")`` on a planted tanh MLP [3072, 1024, 1024, 1024, 10]
   for the mirror group (goal < 2 s on 2 CPU cores), against the same recovery with the
   rows matched by a Python loop (greedy best remaining partner per row).
2. The lstsq fit of one layer: 100,000 Gaussian samples through the first layer
   (3072 → 1024), fit on 50,000, error on 50,000. The features f(g·y) come from y and
   the acted-on weight W ρ(g) (the adjunction; the inputs are never permuted); the
   ratio of the old path, which permutes the 100,000 inputs, is printed beside it. Compared with the *matmul bound*
   measured in the same run (the forward matmuls of f(y) and f(gy) plus the Gram matmul
   XᵀX of the normal equations) and with a baseline fit in numpy float64
   (``numpy.linalg.lstsq``).

Run: ``python benchmarks/bench_latent.py [--samples 100000] [--device cpu|cuda]``.
Timings on a shared machine vary; rerun and compare ratios, not absolute seconds.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from eqlib.actions import mirror, trivial
from eqlib.groups import flip
from eqlib.latent import fit_linear_action, latent_actions, paired_features, plant_equivariant


def _timed(fn, *args, **kwargs):
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return out, time.perf_counter() - t


def loop_matching(A: torch.Tensor, B: torch.Tensor):
    """Baseline: for each row of A, the best remaining row of B by |cosine| (Python loop)."""
    An = A / A.norm(dim=1, keepdim=True)
    Bn = B / B.norm(dim=1, keepdim=True)
    free = list(range(B.shape[0]))
    perm, signs = [], []
    for j in range(A.shape[0]):
        sims = [float(An[j] @ Bn[c]) for c in free]
        best = int(np.argmax(np.abs(sims)))
        perm.append(free.pop(best))
        signs.append(1.0 if sims[best] >= 0 else -1.0)
    return torch.tensor(perm), torch.tensor(signs)


def bench_weights(device):
    G = flip()
    rin, rout = mirror((3, 32, 32)), trivial(G, 10)
    net, _ = plant_equivariant(G, rin, rout, [3072, 1024, 1024, 1024, 10], "tanh", seed=0)
    net = net.to(device)
    latent_actions(net, rin, rout)  # warm-up
    res, t = _timed(latent_actions, net, rin, rout)
    assert res.ok, res.summary()
    # baseline: the row matching of the three hidden layers, for g = m, by a Python loop
    m = G["m"]
    t0 = time.perf_counter()
    k_perm, k_sign = rin.permutation(m), torch.ones(3072)
    for layer in net.layers[:-1]:
        W = layer.weight.detach().cpu()
        Wk = torch.empty_like(W)
        Wk[:, k_perm] = W * k_sign
        A = torch.cat([Wk, layer.bias.detach().cpu()[:, None]], 1)
        B = torch.cat([W, layer.bias.detach().cpu()[:, None]], 1)
        k_perm, k_sign = loop_matching(A, B)
    t_loop = time.perf_counter() - t0
    return t, t_loop


def bench_lstsq(device, samples):
    G = flip()
    rin, rout = mirror((3, 32, 32)), trivial(G, 10)
    net, _ = plant_equivariant(G, rin, rout, [3072, 1024, 1024, 10], "tanh", seed=0)
    net = net.to(device)
    prefix = net.prefix(1)
    m = G["m"]
    solver = "normal"
    # warm-up on a few samples: the first CUDA call of each kernel/library (cuBLAS, cuSOLVER) loads it
    fit_linear_action(*paired_features(prefix, rin, m, 4096, 1), 0.5, 0.0, solver)
    (F, Fg), t_feat = _timed(paired_features, prefix, rin, m, samples, 0)
    # side by side: the same features with the inputs permuted (no adjunction)
    (F2, Fg2), t_feat_perm = _timed(paired_features, prefix, rin, m, samples, 0, use_adjoint=False)
    same = float((Fg - Fg2).abs().max())
    del F2, Fg2
    fit, t_fit = _timed(fit_linear_action, F, Fg, 0.5, 0.0, solver)
    fit_gelsd, t_gelsd = (None, float("nan"))
    if device.type == "cpu":
        fit_gelsd, t_gelsd = _timed(fit_linear_action, F, Fg, 0.5, 0.0, "gelsd")
    assert fit.median_error < 1e-3, fit
    # the matmul bound: forward matmuls of y and g·y, and the Gram matrix XᵀX
    W = net.layers[0].weight.detach()
    y = torch.randn(8192, 3072, device=device)
    n_chunks = samples / 8192
    _, t_mm = _timed(lambda: [torch.cat([y, y]) @ W.T for _ in range(3)])
    X = F[: samples // 2]
    _, t_gram = _timed(lambda: X.T @ X)
    bound = t_mm / 3 * n_chunks + t_gram
    # baseline: numpy float64 lstsq on the same features
    Xn, Yn = X.cpu().double().numpy(), Fg[: samples // 2].cpu().double().numpy()
    _, t_np = _timed(np.linalg.lstsq, Xn, Yn, rcond=None)
    return dict(features=t_feat, features_permute=t_feat_perm, max_difference=same, fit_normal=t_fit, fit_gelsd=t_gelsd, bound=bound, numpy=t_np,
                error=fit.median_error, error_gelsd=getattr(fit_gelsd, "median_error", float("nan")))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--samples", type=int, default=100_000)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = p.parse_args()
    device = torch.device(a.device)
    print(f"device {device}, torch threads {torch.get_num_threads()} (shared machines: timings vary)")
    t, t_loop = bench_weights(device)
    print(f"weights  [3072,1024,1024,1024,10] mirror: {t:7.2f} s   (goal < 2 s)   "
          f"Python-loop matching of the same rows: {t_loop:7.2f} s   ratio {t_loop / t:5.1f}x")
    r = bench_lstsq(device, a.samples)
    total = r["features"] + r["fit_normal"]
    print(f"lstsq    {a.samples} samples, width 1024: features {r['features']:.2f} s + normal-equation fit "
          f"{r['fit_normal']:.2f} s = {total:.2f} s; matmul bound {r['bound']:.2f} s; ratio {total / r['bound']:.2f} "
          f"(goal <= 1.5); median error {r['error']:.2e}")
    old = r["features_permute"] + r["fit_normal"]
    print(f"         ratio to the bound: {total / r['bound']:.2f} acting on W_1's columns (adjunction) "
          f"vs {old / r['bound']:.2f} permuting the inputs (features {r['features_permute']:.2f} s); "
          f"largest feature difference {r['max_difference']:.1e}")
    if r["fit_gelsd"] == r["fit_gelsd"]:
        print(f"         gelsd fit {r['fit_gelsd']:.2f} s (median error {r['error_gelsd']:.2e})")
    print(f"         numpy float64 lstsq baseline fit: {r['numpy']:.2f} s   ratio to normal-equation fit "
          f"{r['numpy'] / r['fit_normal']:5.1f}x")


if __name__ == "__main__":
    main()
