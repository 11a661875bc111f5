"""Checkers for the exercises of *Introduction* (book/part1/01_introduction).

Chapter: *Introduction* (book/part1/01_introduction).
"""
from __future__ import annotations

import torch

from ..actions import Action
from . import passed, require, variants

__all__ = ["check_symmetrized_weight", "check_abs_hidden_action", "check_read_off_action", "ABS_W1",
           "ABS_W2"]

#: The invariant network f(x) = W_2 ReLU(W_1 x) = abs(x) of the chapter (x ∈ R, G = {±1}).
ABS_W1 = torch.tensor([[1.0], [-1.0], [2.0]])
ABS_W2 = torch.tensor([[1.0, 1.0, 0.0]])


def _tensor(x, name: str) -> torch.Tensor:
    require(x is not None, f"{name} is None: did you replace `raise NotImplementedError()` with your answer?")
    try:
        return torch.as_tensor(x, dtype=torch.float32)
    except Exception as exc:  # noqa: BLE001 - the message is for the student
        raise AssertionError(f"{name} could not be turned into a tensor: {exc}") from None


def check_symmetrized_weight(W_sym, W, rho: Action) -> None:
    """ch01-ex1: ``W_sym`` must be the group average of ρ(g) W ρ(g)^{-1} over all g in G.

    Checks that W_sym commutes with every ρ(g) (so x ↦ W_sym x is equivariant) and that
    it is the average of W over the group (not just any equivariant matrix such as 0).

    Chapter: *Introduction*.
    """
    W_sym, W = _tensor(W_sym, "W_sym"), _tensor(W, "W")
    require(W_sym.shape == W.shape, f"W_sym has shape {tuple(W_sym.shape)}, expected {tuple(W.shape)} like W")
    require(bool(torch.isfinite(W_sym).all()), "W_sym contains NaN or inf")
    require(bool(W.abs().max() > 0), "W is zero: every equivariant matrix is the average of something; "
            "symmetrize the random W of the answer cell")
    scale = W.abs().max().item() + 1e-12
    for g in rho.group:
        P = rho.matrix(g)
        err = (P @ W_sym - W_sym @ P).abs().max().item() / scale
        require(err < 1e-5, f"W_sym does not commute with ρ({g.name}): max |ρ(g) W_sym − W_sym ρ(g)| = "
                            f"{err:.3g} (relative); the map x ↦ W_sym x is not equivariant")
    avg = torch.stack([rho.matrix(g) @ W @ rho.matrix(~g) for g in rho.group]).mean(0)
    err = (W_sym - avg).abs().max().item() / scale
    require(err < 1e-5, f"W_sym is equivariant but is not the group average of W (max deviation {err:.3g}); "
                        "average ρ(g) W ρ(g)^{-1} over all g in G")
    passed("Correct: averaging over the group projects W onto the equivariant matrices.")


def check_abs_hidden_action(A) -> None:
    """ch01-ex2: a 3×3 matrix A acting on the hidden layer of f(x) = abs(x) such that both
    layers are equivariant for the sign flip: A ReLU(W_1 x) = ReLU(−W_1 x), W_2 A = W_2,
    and A² = I (so g ↦ A is an action of {±1}).

    Chapter: *Introduction*.
    """
    A = _tensor(A, "A")
    require(A.shape == (3, 3), f"A must be a 3×3 matrix (the hidden layer has 3 neurons), got {tuple(A.shape)}")
    require(bool(torch.isfinite(A).all()), "A contains NaN or inf")
    x = torch.linspace(-3, 3, 61)[:, None]
    h = torch.relu(x @ ABS_W1.T)
    h_flipped = torch.relu(-x @ ABS_W1.T)
    err1 = (h @ A.T - h_flipped).abs().max().item()
    require(err1 < 1e-4, f"layer 1 is not equivariant with this A: max |A ReLU(W_1 x) − ReLU(−W_1 x)| = {err1:.3g}")
    err2 = (ABS_W2 @ A - ABS_W2).abs().max().item()
    require(err2 < 1e-4, f"layer 2 is not invariant with this A: max |W_2 A − W_2| = {err2:.3g}")
    err3 = (A @ A - torch.eye(3)).abs().max().item()
    require(err3 < 1e-4, f"A·A ≠ I (max deviation {err3:.3g}): the sign flip has order 2, so its action must too")
    monomial = bool(((A.abs() > 1e-6).sum(0) == 1).all() and ((A.abs() > 1e-6).sum(1) == 1).all())
    require(not monomial, "A looks like a scaled permutation, which the chapter shows is impossible; check your A")
    passed("Correct: the hidden action exists, but it is not a (scaled) permutation, so ReLU does not commute with it.")


def check_read_off_action(K2, net, rho: Action) -> None:
    """ch01-ex4: ``K2`` is the hidden action of the mirror on the second hidden layer of
    the planted network ``net``, read off by a least-squares fit and rounded: a signed
    permutation with K2² = I and K2 f_{≤2}(x) = f_{≤2}(m·x).

    Chapter: *Introduction*.
    """
    require(K2 is not None, "K2 is None: did you replace `raise NotImplementedError()` with your answer?")
    K = _tensor(K2, "K2")
    d = net.dims[2]
    require(tuple(K.shape) == (d, d), f"K2 must be {d}x{d} (the second hidden layer has {d} neurons), "
            f"got shape {tuple(K.shape)}")
    require(bool(((K == 0) | (K.abs() == 1)).all()),
            "K2 has entries other than 0 and ±1: round the fitted matrix (K2 = fit.A.round())")
    require(bool(((K != 0).sum(0) == 1).all() and ((K != 0).sum(1) == 1).all()),
            "K2 is not a signed permutation: some row or column has no or several nonzero entries; "
            "fit on more inputs (the fit needs more samples than neurons)")
    require(torch.equal(K @ K, torch.eye(d)), "K2² ≠ I, but m² = e, so the hidden action of m is an involution")
    m = next(g for g in rho.group if g != rho.group.identity)
    x = torch.randn(256, rho.dim, generator=variants.input_generator("ch01-ex4", book=11))
    with torch.no_grad():
        h, h_m = net.prefix(2)(x), net.prefix(2)(rho.act(m, x))
    err = float((h @ K.T - h_m).norm() / h_m.norm())
    require(err < 1e-4, f"K2 f_≤2(x) differs from f_≤2(m·x) by {err:.2g} (relative): fit the map from the "
            "activations of x to those of m·x, in that order")
    passed("Correct: the fitted hidden action is a signed permutation involution.")
