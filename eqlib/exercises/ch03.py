"""Checkers for the exercises of *Models, latent spaces and submodels*
(book/part1/03_models_and_submodels).
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from ..models.mlp import ACTIVATIONS
from . import ExerciseError, passed, require, variants

__all__ = ["given", "check_merge_clone", "check_fold_constant", "check_lift"]

#: The numbers the book's exercises give (no variant).
_BOOK = {"lift_left_inverse": (1, 0, 0)}
#: The worked example's A_1 (the embedding of the submodel's hidden neuron).
_LIFT_A = (1.0, -1.0, 0.0)


def given() -> dict:
    """The numbers this copy's exercises give, for the current variant
    (``eqlib.exercises.variants.current()``).

    - ``"lift_left_inverse"`` (ch03-ex4): the row A_1^* through which k̃(m) = -1 is
      lifted, a left inverse of the worked example's A_1 = (1, -1, 0)^T
      (A_1^* A_1 = 1), as a tuple of 3 integers. Book: ``(1, 0, 0)``, the worked
      example's. A variant draws (p + 1, p, 0) with p an integer in -12..12 other than 0:
      every such row is a left inverse whose third entry is 0 (so it reads nothing of the
      constant neuron and the lift still sends α_1(h̃) to α_1(-h̃)), and the lift
      I - 2 A_1 A_1^* has an entry of size at least 2, so it is never a signed
      permutation.

    Examples:
        >>> given()["lift_left_inverse"]     # the book: no variant
        (1, 0, 0)

    Chapter: *Models, latent spaces and submodels*.
    """
    numbers = dict(_BOOK)
    gen = variants.parameter_generator("ch03-ex4")
    if gen is not None:
        p = int(torch.randint(24, (1,), generator=gen)) - 12
        p += p >= 0                              # -12..-1, 1..12
        numbers["lift_left_inverse"] = (p + 1, p, 0)
    return numbers


def _two_layer(act: str, W1, b1, W2, b2, x):
    return ACTIVATIONS[act](x @ W1.T + b1) @ W2.T + b2


def _cases(exercise: str, seed: int, n: int = 4):
    gen = variants.input_generator(exercise, book=seed)
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
    for case, W1, b1, W2, b2, x in _cases("ch03-ex1", 0):
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
        for case, W1, b1, W2, b2, x in _cases("ch03-ex2", 1, 3):
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
    worked example's A = (1, -1, 0)^T and A* = ``given()["lift_left_inverse"]`` (the
    book: the worked example's (1, 0, 0)).

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
    A = torch.tensor(_LIFT_A)[:, None]
    A_star = torch.tensor(given()["lift_left_inverse"], dtype=torch.float32)[None, :]
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
    passed("Correct: the lift A k̃ A* + (I - A A*) is an involution, and not a signed permutation.")
