"""Checkers for the exercises of *Where the theorem does not apply* (book/part2/09_where_it_fails).

Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
"""
from __future__ import annotations

import torch

from . import ExerciseError, passed, require

__all__ = ["check_sum_pair_adjunction", "check_residual_invariant", "check_relating_count"]


def _tensor(x, name: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise ExerciseError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    return x.detach().to(torch.get_default_dtype())


def check_residual_invariant(W2, W1, x, slope: float = 0.0) -> None:
    """ch09-ex2: with the leaky ReLU σ_a(z) = max(z, a z) of slope ``a = slope`` (ReLU for
    0), f(x) = x + W2 σ_a(W1 x) must satisfy f(−x) = f(x) on x.

    Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
    """
    W2, W1 = _tensor(W2, "W2"), _tensor(W1, "W1")
    require(tuple(W2.shape) == (W1.shape[1], W1.shape[0]),
            f"W2 must have shape {(W1.shape[1], W1.shape[0])}, got {tuple(W2.shape)}")
    a = float(slope)

    def f(z):
        return z + torch.nn.functional.leaky_relu(z @ W1.T, a) @ W2.T

    with torch.no_grad():
        err = float((f(-x) - f(x)).norm() / f(x).norm().clamp_min(1e-12))
    require(err < 1e-4, f"f(−x) ≠ f(x) (relative error {err:.3g}); σ_a(z) − σ_a(−z) = (1 + a) z "
                        f"with a = {a:g}: you need (1 + a) W2 W1 = −2 I")
    passed(f"Correct: the block is invariant ((1 + a) W2 W1 = −2 I with a = {a:g}).")


def check_sum_pair_adjunction(Lam, Gam, b, answer) -> None:
    """ch09-ex1: for a sum-pooling layer on sets of two, σ(X_i Λ + (X_1 + X_2) Γ + b),
    ``answer = (Λ', Γ', b')`` must satisfy f(T X; θ) = f(X; θ') with T the swap.

    Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
    """
    require(isinstance(answer, (tuple, list)) and len(answer) == 3,
            "give the answer as a tuple (Lam_prime, Gam_prime, b_prime)")
    Lp, Gp, bp = (_tensor(t, n) for t, n in zip(answer, ("Lam_prime", "Gam_prime", "b_prime")))
    require(Lp.shape == Lam.shape and Gp.shape == Gam.shape and bp.shape == b.shape,
            f"θ' has the shapes of θ: {tuple(Lam.shape)}, {tuple(Gam.shape)}, {tuple(b.shape)}")

    def layer(X, L, G, c):
        return torch.tanh(X @ L + X.sum(-2, keepdim=True) @ G + c)

    X = torch.randn(64, 2, Lam.shape[0], generator=torch.Generator().manual_seed(91))
    want, got = layer(X.flip(-2), Lam, Gam, b), layer(X, Lp, Gp, bp)
    err = float((got - want).norm() / want.norm())
    require(err < 1e-5, f"f(X; θ') ≠ f(T X; θ) (relative error {err:.3g}). Write row 1 of the "
                        "pre-activation as X_1(Λ + Γ) + X_2 Γ + b and ask which (Λ', Γ') "
                        "exchanges the two coefficients")
    passed("Correct: with a sum, T·θ = (−Λ, Γ + Λ, b); with the course's mean it is (−Λ, Γ + 2Λ, b)")


def check_relating_count(answer, layer1, layer2, x) -> None:
    """ch09-ex4: the number of symmetries of V_1 (``pair_set_symmetries``) relating θ^T to
    θ for the two-layer pair network ``(layer1, layer2)`` on the probes ``x``.

    Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
    """
    import copy

    from ..latent.generalized import pair_set_symmetries, relating_sequences
    from ..models.sets import pair_swap_parameters

    require(isinstance(answer, int) and not isinstance(answer, bool),
            f"give the count as an int, got {answer!r}")

    def swapped(layer):
        new = copy.deepcopy(layer)
        with torch.no_grad():
            for name, value in pair_swap_parameters(layer).items():
                getattr(new, name).copy_(value)
        return new

    K1 = pair_set_symmetries(layer1.Lam.shape[1])
    found = relating_sequences([layer1, layer2], [swapped(layer1), swapped(layer2)], [K1], x)
    require(answer == len(found),
            f"{answer} is not the number of relating symmetries: run relating_sequences "
            "with the candidates pair_set_symmetries(d) and count what it returns")
    passed(f"Correct: {len(found)} symmetries relate θ^T to θ, so θ is not identifiable")
