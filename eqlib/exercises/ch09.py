"""Checkers for the exercises of *Where the theorem does not apply* (book/part2/09_where_it_fails).

Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
"""
from __future__ import annotations

import torch

from . import ExerciseError, passed, require

__all__ = ["check_dense_adjunction", "check_residual_invariant"]


def _tensor(x, name: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise ExerciseError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    return x.detach().to(torch.get_default_dtype())


def check_dense_adjunction(W_prime, layer, action, g, x) -> None:
    """ch09-ex1: W' must give layer(g·x) = σ(W' x + b) on the probes x.

    Chapter: *Where the theorem does not apply*.
    """
    W_prime = _tensor(W_prime, "W_prime")
    require(tuple(W_prime.shape) == tuple(layer.weight.shape),
            f"W' must have the shape of W, {tuple(layer.weight.shape)}; got {tuple(W_prime.shape)}")
    with torch.no_grad():
        want = layer(action.act(g, x))
        got = torch.tanh(x @ W_prime.T + layer.bias) if layer.activation == "tanh" else None
    require(got is not None, "this checker expects a tanh layer")
    err = float((got - want).norm() / want.norm())
    require(err < 1e-4, f"σ(W' x + b) differs from f(g·x) (relative error {err:.3g}); "
                        "W' should precompose W with ρ(g)")
    passed("Correct: W' = W ρ(g) moves g from the input onto the parameters.")


def check_residual_invariant(W2, W1, x) -> None:
    """ch09-ex2: with ReLU, f(x) = x + W2 relu(W1 x) must satisfy f(−x) = f(x) on x.

    Chapter: *Where the theorem does not apply*.
    """
    W2, W1 = _tensor(W2, "W2"), _tensor(W1, "W1")
    require(tuple(W2.shape) == (W1.shape[1], W1.shape[0]),
            f"W2 must have shape {(W1.shape[1], W1.shape[0])}, got {tuple(W2.shape)}")

    def f(z):
        return z + torch.relu(z @ W1.T) @ W2.T

    with torch.no_grad():
        err = float((f(-x) - f(x)).norm() / f(x).norm().clamp_min(1e-12))
    require(err < 1e-4, f"f(−x) ≠ f(x) (relative error {err:.3g}); use relu(z) − relu(−z) = z: "
                        "you need W2 W1 = −2 I")
    passed("Correct: the block is invariant (W2 W1 = −2 I).")
