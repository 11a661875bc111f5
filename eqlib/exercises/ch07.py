"""Checkers for the exercises of *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from . import ExerciseError, passed, require, variants

__all__ = ["given", "check_sigmoid_flip", "check_bypass_weights", "check_bypass_c4"]


def given() -> dict:
    """The numbers this copy's exercises give, for the current variant
    (``eqlib.exercises.variants``).

    - ``"ex1_signs"``: the signs s of ch07-ex1, a tuple of ±1, one per unit: the layer
      flips the sign of the pre-activation of the units with s_j = −1. Book: (−1, −1, −1)
      (every unit of a layer of 3). A variant draws 3 to 5 units and their signs, at least
      one −1 (so the map is affine, not linear), and redraws them while they are the
      book's (the answer would be the book's).
    - ``"ex4_W1"`` (4×2): the first weight of the GELU bypass layer of ch07-ex4, its rows
      ±e_1, ±e_2. Book: (I; −I), rows e_1, e_2, −e_1, −e_2. A variant draws the order of the
      four rows.
    - ``"ex4_rotation"`` (2×2): the matrix of the generator r of C_4 in ch07-ex4. Book:
      ((0, −1), (1, 0)), a quarter turn counterclockwise. A variant draws the direction of
      the quarter turn, and redraws both while the answer k_1(r) (a 4-cycle of the four
      units) is the book's.

    Chapter: *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps).
    """
    gen = variants.parameter_generator("ch07-ex1")
    signs = (-1, -1, -1)
    while gen is not None and signs == (-1, -1, -1):
        n = int(torch.randint(3, 6, (), generator=gen))
        draw = (torch.randint(0, 2, (n,), generator=gen) * 2 - 1).tolist()
        if min(draw) == 1:
            draw[int(torch.randint(0, n, (), generator=gen))] = -1
        signs = tuple(draw)
    gen = variants.parameter_generator("ch07-ex4")
    book = torch.cat([torch.eye(2), -torch.eye(2)]) + 0.0     # no -0.0 entries
    rows, turn = book, 1.0
    while gen is not None and torch.equal(_bypass_lift(rows, turn), _bypass_lift(book, 1.0)):
        rows = book[torch.randperm(4, generator=gen)]
        turn = float(torch.randint(0, 2, (), generator=gen) * 2 - 1)
    return {"ex1_signs": signs, "ex4_W1": rows, "ex4_rotation": _quarter_turn(turn)}


def _quarter_turn(turn: float) -> torch.Tensor:
    return torch.tensor([[0.0, -turn], [turn, 0.0]])


def _bypass_lift(rows: torch.Tensor, turn: float) -> torch.Tensor:
    """k_1(r) of ch07-ex4 for first-layer rows ±e_1, ±e_2: row j of W_1 r is row π(j)."""
    return (rows @ _quarter_turn(turn) @ rows.T > 0.5).float()


def check_bypass_weights(W1, W2) -> None:
    """Exercise ch07-ex2: W_2 ReLU(W_1 x) = (``|x_1|``, x_2) on R², no biases.

    The first output folds x_1 (ReLU(t) + ReLU(−t) = ``|t|``), the second passes x_2
    through a bypass pair (ReLU(t) − ReLU(−t) = t). Each output is checked on its own,
    so the message says which one is wrong.

    Chapter: *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps).
    """
    W1, W2 = torch.as_tensor(W1, dtype=torch.float32), torch.as_tensor(W2, dtype=torch.float32)
    require(W1.ndim == 2 and W1.shape[1] == 2, f"W_1 must have shape (h, 2), got {tuple(W1.shape)}")
    require(W2.shape == (2, W1.shape[0]), f"W_2 must have shape (2, {W1.shape[0]}), got {tuple(W2.shape)}")
    require(bool(torch.isfinite(W1).all() and torch.isfinite(W2).all()), "W_1 and W_2 must be finite")
    x = torch.randn(256, 2, generator=variants.input_generator("ch07-ex2", book=0)) * 3
    y = F.relu(x @ W1.T) @ W2.T
    target = torch.stack([x[:, 0].abs(), x[:, 1]], 1)
    err = (y - target).norm(dim=0) / target.norm(dim=0)
    if err[0] >= 1e-5:
        raise ExerciseError(f"the first output differs from |x_1| (relative error {float(err[0]):.3g}); "
                            "use ReLU(t) + ReLU(−t) = |t| with t = x_1")
    if err[1] >= 1e-5:
        raise ExerciseError(f"the second output differs from x_2 (relative error {float(err[1]):.3g}); "
                            "use ReLU(t) − ReLU(−t) = t with t = x_2")
    passed("Correct: the ReLU layer folds x_1 and passes x_2 through linearly")


def check_sigmoid_flip(D, c) -> None:
    """Exercise ch07-ex1: the affine map with σ(s ⊙ z) = D σ(z) + c for the logistic
    sigmoid, s = ``given()["ex1_signs"]`` (the book: s = (−1, −1, −1), σ(−z) = D σ(z) + c).

    The exercise fixes the number n of units (3 in the book), so ``D`` must be (n, n) and
    ``c`` of length n.

    Chapter: *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps).
    """
    try:
        D, c = torch.as_tensor(D, dtype=torch.float32), torch.as_tensor(c, dtype=torch.float32)
    except (TypeError, ValueError, RuntimeError):
        raise ExerciseError(f"D and c must be arrays of numbers, got {type(D).__name__} and "
                            f"{type(c).__name__}") from None
    require(c.ndim == 1, f"c must be a vector, got shape {tuple(c.shape)}")
    signs = torch.tensor(given()["ex1_signs"], dtype=torch.float32)
    n = len(signs)                              # the exercise's number of units
    require(D.shape == (n, n) and c.shape == (n,),
            f"D must be ({n}, {n}) and c ({n},) for the exercise's {n} units, got "
            f"{tuple(D.shape)} and {tuple(c.shape)}")
    z = 3 * torch.randn(512, n, generator=variants.input_generator("ch07-ex1", book=71))
    err = float((torch.sigmoid(signs * z) - (torch.sigmoid(z) @ D.float().T + c.float())).abs().max())
    require(err < 1e-5, f"σ(s ⊙ z) ≠ D σ(z) + c (largest gap {err:.3g}). Compute σ(t) + σ(−t) "
                        "for one number t: it does not depend on t")
    passed("Correct: σ(−t) = 1 − σ(t), so a sigmoid layer turns the sign flip into an "
           "affine map, not a linear one")


def check_bypass_c4(k) -> None:
    """Exercise ch07-ex4: the permutation k_1(r) of the GELU bypass network for C_4.

    The bypass layer is f_1(x) = GELU(W_1 x) on R² with W_1 = ``given()["ex4_W1"]`` (the
    book: (I; −I)), and r = ``given()["ex4_rotation"]`` is a quarter turn (the book: 90°
    counterclockwise); ``k`` must satisfy f_1(r x) = k f_1(x) and be a permutation matrix.

    Chapter: *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps).
    """
    try:
        k = torch.as_tensor(k, dtype=torch.float32)
    except (TypeError, ValueError, RuntimeError):
        raise ExerciseError(f"k must be a (4, 4) array of numbers, got {type(k).__name__}") from None
    require(k.shape == (4, 4), f"k must be a (4, 4) matrix, got shape {tuple(k.shape)}")
    is_perm = bool(((k == 0) | (k == 1)).all() and (k.sum(0) == 1).all() and (k.sum(1) == 1).all())
    require(is_perm, "k must be a permutation matrix (0/1 entries, one 1 per row and column)")
    numbers = given()
    W1, rot = numbers["ex4_W1"], numbers["ex4_rotation"]
    x = torch.randn(256, 2, generator=variants.input_generator("ch07-ex4", book=72))
    lhs, rhs = F.gelu(x @ (W1 @ rot).T), F.gelu(x @ W1.T) @ k.T
    err = float((lhs - rhs).abs().max())
    require(err < 1e-5, f"GELU(W_1 r x) ≠ k GELU(W_1 x) (largest gap {err:.3g}). Write W_1 r: "
                        "which row of W_1 is each of its rows?")
    passed("Correct: for C_4 the bypass layer is equivariant under a permutation in K_1")
