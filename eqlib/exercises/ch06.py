"""Checkers for the exercises of *The main theorem* (book/part2/06_main_theorem)."""
from __future__ import annotations

import torch

from . import passed, require

__all__ = ["check_transported_weight", "check_latent_action"]


def check_transported_weight(model, rho_in, g, answer) -> None:
    """Exercise ch06-ex1: the first-layer weight of θ^g, W_1 ρ_in(g).

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    W = model.layers[0].weight.detach()
    require(isinstance(answer, torch.Tensor), f"return a torch.Tensor, got {type(answer).__name__}")
    require(tuple(answer.shape) == tuple(W.shape), f"W_1 ρ_in(g) has shape {tuple(W.shape)}, got {tuple(answer.shape)}")
    expected = W @ rho_in.matrix(g)
    err = float((answer - expected).norm() / expected.norm())
    require(err < 1e-5, f"relative error {err:.3g}: the first layer of θ^g should satisfy "
                        "f_1(x; θ^g) = f_1(ρ_in(g) x; θ), i.e. its weight is W_1 ρ_in(g)")
    passed("Correct: f_1(ρ_in(g) x; θ_1) = f_1(x; θ_1^g)")


def check_latent_action(model, rho_in, g, perm, signs) -> None:
    """Exercise ch06-ex2: k_1(g) as (perm, signs) with f_1(ρ_in(g) x) = k_1(g) f_1(x).

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    d = model.layers[0].out_dim
    perm, signs = torch.as_tensor(perm).long(), torch.as_tensor(signs, dtype=torch.float32)
    require(perm.shape == (d,) and signs.shape == (d,), f"perm and signs must both have shape ({d},)")
    require(torch.equal(torch.sort(perm).values, torch.arange(d)), "perm is not a permutation of 0..d-1")
    require(bool((signs.abs() == 1).all()), "signs must be ±1 (tanh's symmetry group is signed permutations)")
    x = torch.randn(64, rho_in.dim, generator=torch.Generator().manual_seed(5))
    f1 = model.layers[0]
    with torch.no_grad():
        lhs = f1(rho_in.act(g, x))
        rhs = f1(x)[:, perm] * signs
    err = float((lhs - rhs).norm() / lhs.norm())
    require(err < 1e-4, f"f_1(ρ_in(g) x) ≠ k f_1(x): relative error {err:.3g}. Match the rows of "
                        "[W_1 ρ_in(g) | b_1] with those of [W_1 | b_1] up to sign")
    passed(f"Correct: layer 1 is equivariant under your k_1(g) (error {err:.1e})")
