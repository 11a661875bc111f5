"""Checkers for the exercises of *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from . import ExerciseError, passed, require

__all__ = ["check_hidden_representation", "check_bypass_weights"]


def check_hidden_representation(W1, rho0, answer) -> None:
    """Exercise ch07-ex1: ρ_1 = W_1 ρ_0 W_1^{-1}, a positively scaled permutation with ρ_1 W_1 = W_1 ρ_0.

    Chapter: *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps).
    """
    require(isinstance(answer, torch.Tensor), f"return a torch.Tensor, got {type(answer).__name__}")
    require(answer.shape == W1.shape, f"ρ_1 has shape {tuple(W1.shape)}, got {tuple(answer.shape)}")
    err = float((answer @ W1 - W1 @ rho0).norm() / (W1 @ rho0).norm())
    require(err < 1e-4, f"ρ_1 W_1 ≠ W_1 ρ_0 (relative error {err:.3g}): solve for ρ_1 = W_1 ρ_0 W_1^{{-1}}")
    nz = answer.abs() > 1e-4
    require(bool((nz.sum(0) == 1).all() and (nz.sum(1) == 1).all()) and bool((answer[nz] > 0).all()),
            "your ρ_1 is not a positively scaled permutation matrix (Proposition 2.3 says it must be)")
    passed("Correct: ρ_1 is a positively scaled permutation and layer 1 is equivariant")


def check_bypass_weights(W1, W2) -> None:
    """Exercise ch07-ex2: W_2 ReLU(W_1 x) = x on R² with bypass pairs.

    Chapter: *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps).
    """
    W1, W2 = torch.as_tensor(W1, dtype=torch.float32), torch.as_tensor(W2, dtype=torch.float32)
    require(W1.ndim == 2 and W1.shape[1] == 2, f"W_1 must have shape (h, 2), got {tuple(W1.shape)}")
    require(W2.shape == (2, W1.shape[0]), f"W_2 must have shape (2, {W1.shape[0]}), got {tuple(W2.shape)}")
    x = torch.randn(256, 2, generator=torch.Generator().manual_seed(0)) * 3
    y = F.relu(x @ W1.T) @ W2.T
    err = float((y - x).norm() / x.norm())
    if err >= 1e-5:
        raise ExerciseError(f"W_2 ReLU(W_1 x) differs from x (relative error {err:.3g}); "
                            "use ReLU(t) − ReLU(−t) = t for each coordinate")
    passed("Correct: the ReLU layer passes x through linearly")
