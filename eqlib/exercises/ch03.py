"""Checkers for the exercises of *Models, latent spaces and submodels*
(book/part1/03_models_and_submodels).
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from ..models.mlp import ACTIVATIONS
from ..seeds import torch_generator
from . import ExerciseError, passed, require

__all__ = ["check_merge_clone", "check_fold_constant", "check_lift"]


def _two_layer(act: str, W1, b1, W2, b2, x):
    return ACTIVATIONS[act](x @ W1.T + b1) @ W2.T + b2


def _cases(seed: int, n: int = 4):
    gen = torch_generator(seed)
    for case in range(n):
        d_in, d, d_out = 3 + case, 5 + case, 2 + case % 2
        W1, b1 = torch.randn(d, d_in, generator=gen), torch.randn(d, generator=gen)
        W2, b2 = torch.randn(d_out, d, generator=gen), torch.randn(d_out, generator=gen)
        x = torch.randn(64, d_in, generator=gen)
        yield case, W1, b1, W2, b2, x


def check_merge_clone(merge_clone: Callable) -> None:
    """Exercise ch03-ex1: ``merge_clone(W1, b1, W2, a, j, c)`` removes neuron j, a clone of
    neuron a with (W1[j], b1[j]) = c (W1[a], b1[a]) (c = ±1 for tanh), and returns
    (W1', b1', W2') of the smaller network computing the same function.

    Chapter: *Models, latent spaces and submodels*.
    """
    for case, W1, b1, W2, b2, x in _cases(0):
        # the twin a before the removed neuron j in cases 0-1, after it in cases 2-3 (an answer
        # that deletes column j first and then adds into the old index a fails there)
        a, j = (case % 3, 3 + case) if case < 2 else (3 + case, case % 3)
        c = -1.0 if case % 2 else 1.0
        W1[j], b1[j] = c * W1[a], c * b1[a]
        y = _two_layer("tanh", W1, b1, W2, b2, x)
        try:
            out = merge_clone(W1.clone(), b1.clone(), W2.clone(), a, j, c)
        except NotImplementedError:
            raise ExerciseError("merge_clone is not implemented yet") from None
        require(isinstance(out, tuple) and len(out) == 3, "merge_clone must return a tuple (W1, b1, W2)")
        W1n, b1n, W2n = (torch.as_tensor(t, dtype=torch.float32) for t in out)
        d = W1.shape[0]
        require(W1n.shape == (d - 1, W1.shape[1]) and b1n.shape == (d - 1,) and W2n.shape == (W2.shape[0], d - 1),
                f"case {case}: expected shapes {(d - 1, W1.shape[1])}, {(d - 1,)}, {(W2.shape[0], d - 1)}; got "
                f"{tuple(W1n.shape)}, {tuple(b1n.shape)}, {tuple(W2n.shape)}")
        err = float((_two_layer("tanh", W1n, b1n, W2n, b2, x) - y).abs().max())
        require(err < 1e-4, f"case {case} (a={a}, j={j}, c={c:+.0f}): the function changed by {err:.3g}; "
                "neuron a's outgoing column must absorb c times neuron j's")
    passed("Correct: merging a clone sums its outgoing column, times c, into its twin's.")


def check_fold_constant(fold_constant: Callable) -> None:
    """Exercise ch03-ex2: ``fold_constant(W1, b1, W2, b2, j, activation)`` removes neuron j,
    whose incoming row W1[j] is zero, and returns (W1', b1', W2', b2').

    Chapter: *Models, latent spaces and submodels*.
    """
    for act in ("sigmoid", "tanh", "gelu"):
        for case, W1, b1, W2, b2, x in _cases(1, 3):
            j = case + 1
            W1[j] = 0.0
            y = _two_layer(act, W1, b1, W2, b2, x)
            try:
                out = fold_constant(W1.clone(), b1.clone(), W2.clone(), b2.clone(), j, act)
            except NotImplementedError:
                raise ExerciseError("fold_constant is not implemented yet") from None
            require(isinstance(out, tuple) and len(out) == 4, "fold_constant must return (W1, b1, W2, b2)")
            W1n, b1n, W2n, b2n = (torch.as_tensor(t, dtype=torch.float32) for t in out)
            require(W1n.shape[0] == W1.shape[0] - 1 and W2n.shape[1] == W2.shape[1] - 1,
                    f"{act}, case {case}: neuron {j} must be removed (one row of W1 and one column of W2 fewer)")
            err = float((_two_layer(act, W1n, b1n, W2n, b2n, x) - y).abs().max())
            require(err < 1e-4, f"{act}, case {case}: the function changed by {err:.3g}; the neuron outputs the "
                    "constant σ(b1[j]), which b2 must absorb through W2[:, j]")
    passed("Correct: a constant neuron folds into the next layer's bias.")


def check_lift(K) -> None:
    """Exercise ch03-ex4: the lift K = A k̃ A* + (I - A A*) of k̃(m) = -1 through the
    worked example's A = (1, -1, 0)^T, A* = (1, 0, 0).

    Chapter: *Models, latent spaces and submodels*.
    """
    require(K is not None, "K_lift is None: did you replace `raise NotImplementedError()` with your answer?")
    if not isinstance(K, torch.Tensor):  # a NumPy array or nested lists are answers too
        try:
            K = torch.as_tensor(K, dtype=torch.float64)
        except (TypeError, ValueError, RuntimeError):
            pass
    require(isinstance(K, torch.Tensor) and tuple(K.shape) == (3, 3),
            f"K_lift must be a 3x3 tensor (it acts on the 3 hidden neurons), got "
            f"{tuple(K.shape) if isinstance(K, torch.Tensor) else type(K).__name__}")
    K = K.float()
    A, A_star = torch.tensor([[1.0], [-1.0], [0.0]]), torch.tensor([[1.0, 0.0, 0.0]])
    truth = A @ torch.tensor([[-1.0]]) @ A_star + torch.eye(3) - A @ A_star
    without_term = A @ torch.tensor([[-1.0]]) @ A_star
    require(not torch.allclose(K, without_term),
            "K_lift is only A k̃ A*: it is singular (it kills everything off the image of A); "
            "add the term I - A A*, which acts as the identity on what A* does not read")
    require(torch.allclose(K @ K, torch.eye(3), atol=1e-5),
            "K_lift squared is not the identity, but the lift of an involution is an involution "
            "(exercise ch03-ex3): check the order of the factors A k̃ A*")
    require(torch.allclose(K @ A, A @ torch.tensor([[-1.0]]), atol=1e-5),
            "K_lift A ≠ A k̃: the lift must act on the embedded hidden vectors like k̃ does")
    require(torch.allclose(K, truth, atol=1e-5), f"K_lift = {K.tolist()} is an involution with K A = A k̃ "
            "but not the lift A k̃ A* + (I - A A*); compute exactly that formula")
    passed("Correct: the lift is the involution [[-1, 0, 0], [2, 1, 0], [0, 0, 1]], not a signed permutation.")
