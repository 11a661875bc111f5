"""Checkers for the exercises of *Building equivariant layers* (book/part1/05_equivariant_layers)."""
from __future__ import annotations

from collections.abc import Callable

import torch

from ..actions import Action, DirectSum, PermutationAction, equivariant_basis, from_matrices, regular, trivial
from ..images import image_dihedral, mirror
from ..groups import cyclic, dihedral, flip
from . import ExerciseError, passed, require, variants

__all__ = ["given", "check_intertwiner_dim", "check_circulant", "check_relu_breaks"]

#: The numbers the book's exercises give (no variant).
_BOOK = {"first_row": (1, 2, 3, 4)}


def given() -> dict:
    """The numbers this copy's exercises give, for the current variant
    (``eqlib.exercises.variants.current()``).

    - ``"first_row"`` (ch05-ex2): the first row of the C4-intertwiner of the regular
      representation that the exercise asks for, a tuple of 4 integers. Book:
      ``(1, 2, 3, 4)``. A variant draws 4 different integers from 1..9 in random order
      (not the book's row), so every row of the circulant is a different shift.

    Examples:
        >>> given()["first_row"]             # the book: no variant
        (1, 2, 3, 4)

    Chapter: *Building equivariant layers*.
    """
    numbers = dict(_BOOK)
    gen = variants.parameter_generator("ch05-ex2")
    if gen is not None:
        row = _BOOK["first_row"]
        while row == _BOOK["first_row"]:
            row = tuple(int(v) + 1 for v in torch.randperm(9, generator=gen)[:4])
        numbers["first_row"] = row
    return numbers


def _pairs() -> list[tuple[str, Action, Action]]:
    D4, C4 = dihedral(4), cyclic(4)
    rot = from_matrices(C4, {C4["r"]: [[0.0, -1.0], [1.0, 0.0]]})
    return [
        ("D4 on 3x3 images → trivial", image_dihedral((1, 3, 3)), trivial(D4, 1)),
        ("regular(D4) → regular(D4)", regular(D4), regular(D4)),
        ("mirror of 2x2 images → regular(Z2)", mirror((1, 2, 2)), regular(flip())),
        ("C4 rotation of the plane → regular(C4)", rot, regular(C4)),
    ]


def _real_scalar(got, what: str) -> float:
    """``got`` as a Python float: any real scalar (int, float, a NumPy scalar, a one-element
    array or tensor, a complex number with zero imaginary part) is accepted; strings, complex
    or NaN values and arrays of several entries are refused with a message saying why."""
    if isinstance(got, (str, bytes)):
        raise ExerciseError(f"{what}: intertwiner_dim must return a real number, got the string {got!r}")
    size = getattr(got, "size", None)
    size = got.numel() if torch.is_tensor(got) else size
    if isinstance(size, int) and size != 1:
        raise ExerciseError(f"{what}: intertwiner_dim must return one real number, "
                            f"got {type(got).__name__} with {size} entries")
    if size == 1 and hasattr(got, "reshape"):  # a one-element array or tensor
        got = got.reshape(-1)[0]
    if isinstance(got, complex) or getattr(getattr(got, "dtype", None), "kind", "") == "c" \
            or (torch.is_tensor(got) and got.is_complex()):
        z = complex(got)
        if abs(z.imag) > 1e-9:
            raise ExerciseError(f"{what}: intertwiner_dim must return a real number, got the complex {got!r}; "
                                "for a real representation the characters are real")
        got = z.real  # a complex computation of a real number
    try:
        value = float(got)
    except (TypeError, ValueError, RuntimeError):
        raise ExerciseError(f"{what}: intertwiner_dim must return a real number, "
                            f"got {type(got).__name__}") from None
    require(value == value, f"{what}: intertwiner_dim returned NaN")
    return value


def check_intertwiner_dim(intertwiner_dim: Callable) -> None:
    """Exercise ch05-ex1: ``intertwiner_dim(rho_in, rho_out)`` returns dim Hom_G(ρ_in, ρ_out)
    from characters; compared with the null space of :func:`eqlib.actions.equivariant_basis`.

    Chapter: *Building equivariant layers*.
    """
    for what, rin, rout in _pairs():
        try:
            got = intertwiner_dim(rin, rout)
        except NotImplementedError:
            raise ExerciseError("intertwiner_dim is not implemented yet") from None
        want = equivariant_basis(rin, rout).shape[0]
        value = _real_scalar(got, what)
        require(abs(value - want) < 1e-4,
                f"{what}: got {value:.4g}, which is not the dimension of the null space; "
                "average χ_in(g⁻¹)·χ_out(g) over the group (χ(g) = trace of ρ(g))")
    passed("Correct: the character formula matches the null space on all four pairs.")


def check_circulant(W) -> None:
    """Exercise ch05-ex2: the C4-equivariant map regular → regular with first row
    ``given()["first_row"]`` (the book: (1, 2, 3, 4)).

    Chapter: *Building equivariant layers*.
    """
    try:
        W = torch.as_tensor(W, dtype=torch.get_default_dtype())
    except (TypeError, ValueError, RuntimeError):
        raise ExerciseError(f"W must be a 4x4 array of numbers, got {W!r}") from None
    require(W.shape == (4, 4), f"W must be 4x4, got shape {tuple(W.shape)}")
    first_row = torch.tensor(given()["first_row"], dtype=W.dtype)
    require(torch.allclose(W[0], first_row),
            f"the first row must be given['first_row'] (this copy's numbers), got {W[0].tolist()}")
    rho = regular(cyclic(4))
    for g in rho.group:
        err = float((W @ rho.matrix(g) - rho.matrix(g) @ W).abs().max())
        require(err < 1e-6, f"W ρ({g.name}) ≠ ρ({g.name}) W (max difference {err:.3g}): "
                "an intertwiner of the regular representation has W[gk, gh] = W[k, h]")
    passed("Correct: a circulant matrix, the group convolution of C4.")


def _in_relu_group(matrix: torch.Tensor, tol: float = 1e-6) -> bool:
    """Whether a square matrix is a positively scaled permutation (ReLU's intertwiner group,
    chapter *Parameter symmetries*): one nonzero entry in every row and column, all positive."""
    nonzero = matrix.abs() > tol
    return bool((nonzero.sum(0) == 1).all() and (nonzero.sum(1) == 1).all() and (matrix[nonzero] > 0).all())


def check_relu_breaks(rho_out) -> None:
    """Exercise ch05-ex4: an action ρ_out of D4 with Hom(regular, ρ_out) ≠ 0 for which
    x ↦ ReLU(W x) is not equivariant, W a random intertwiner.

    The decision is exact where it can be: if every ρ_out(g) is a positively scaled
    permutation, ReLU commutes with it and the answer is rejected; otherwise the layer of a
    random intertwiner must move by more than rounding (the written solution proves that
    some intertwiner then breaks equivariance).

    Chapter: *Building equivariant layers*.
    """
    D4 = dihedral(4)
    require(isinstance(rho_out, Action) and rho_out.group == D4,
            f"rho_out must be an Action of dihedral(4), got {rho_out!r}")
    B = equivariant_basis(regular(D4), rho_out)
    require(B.shape[0] > 0, "Hom_G(regular, rho_out) = 0: every intertwiner is zero; pick another rho_out")
    require(not all(_in_relu_group(rho_out.matrix(g)) for g in D4),
            "for this action ReLU(W x) stays equivariant for every intertwiner W; "
            "pick another rho_out")
    coef = torch.randn(B.shape[0], generator=variants.input_generator("ch05-ex4", book=0))
    W = torch.einsum("k,kij->ij", coef, B)
    x = torch.randn(64, 8, generator=variants.input_generator("ch05-ex4", book=1))
    fx = torch.relu(x @ W.T)
    err = max(float((torch.relu(regular(D4).act(g, x) @ W.T) - rho_out.act(g, fx)).norm() / fx.norm()) for g in D4)
    require(err > 1e-5, f"some ρ_out(g) lies outside ReLU's group, yet ReLU(W x) is still equivariant for "
            f"this random W (error {err:.2g}): its image avoids the points where ReLU and ρ_out(g) "
            "disagree; try another rho_out")
    passed(f"Correct: ReLU breaks equivariance (relative error {err:.2g}).")
