"""Checkers for the exercises of *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns).

Chapter: *ReLU CNNs and GCNNs*.
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from . import ExerciseError, passed, require

__all__ = ["check_relu_intertwiner", "check_gcnn_projection", "check_filter_distance"]


def _reference_is_intertwiner(a: torch.Tensor, tol: float = 1e-9) -> bool:
    # a positive scaled permutation: exactly one nonzero per row and column, all positive
    nz = a.abs() > tol
    if not (bool((nz.sum(0) == 1).all()) and bool((nz.sum(1) == 1).all())):
        return False
    return bool((a[nz] > 0).all())


def check_relu_intertwiner(is_intertwiner: Callable[[torch.Tensor], bool]) -> None:
    """Check ``is_intertwiner(A) -> bool``: does ReLU(A z) = A ReLU(z) hold for all z?

    The answer must say True exactly for permutations times positive diagonal matrices.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    gen = torch.Generator().manual_seed(9)
    p = torch.eye(4)[torch.tensor([2, 0, 3, 1])]
    cases = {
        "the identity": (torch.eye(3), True),
        "a permutation": (p, True),
        "a permutation times a positive diagonal": (p @ torch.diag(torch.tensor([0.5, 2.0, 3.0, 1.5])), True),
        "a negative diagonal": (-torch.eye(2), False),
        "a signed permutation": (p @ torch.diag(torch.tensor([1.0, -1.0, 1.0, 1.0])), False),
        "a rotation by 45°": (torch.tensor([[0.7071, -0.7071], [0.7071, 0.7071]]), False),
        "a random matrix": (torch.randn(3, 3, generator=gen), False),
        "a positive matrix with two nonzeros in a row": (torch.tensor([[1.0, 1.0], [0.0, 1.0]]), False),
    }
    for name, (a, expected) in cases.items():
        got = is_intertwiner(a.clone())
        if not isinstance(got, (bool, torch.Tensor)) and type(got).__name__ != "bool_":
            raise ExerciseError(f"is_intertwiner must return a bool, got {type(got).__name__} for {name}")
        require(bool(got) == expected,
                f"for {name} you answered {bool(got)}, but ReLU(A z) = A ReLU(z) for all z is {expected}: "
                f"A = {a.tolist()}")
        assert expected == _reference_is_intertwiner(a)
    passed("Correct: ReLU commutes exactly with permutations times positive diagonal matrices.")


def check_gcnn_projection(project: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check ``project(W, pi_out, pi_in)``: the orthogonal projection of a conv weight W (C_out, C_in, k, k)
    onto the mirror-GCNN constraint W[o, i, :, ::-1] = W[π_out(o), π_in(i), :, :].

    Chapter: *ReLU CNNs and GCNNs*.
    """
    gen = torch.Generator().manual_seed(3)
    w = torch.randn(6, 4, 3, 3, generator=gen)
    pi_out = torch.tensor([1, 0, 3, 2, 4, 5])
    pi_in = torch.tensor([1, 0, 2, 3])
    out = project(w.clone(), pi_out, pi_in)
    require(isinstance(out, torch.Tensor) and out.shape == w.shape,
            f"project must return a tensor of shape {tuple(w.shape)}, got "
            f"{tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__}")
    gap = float((out.flip(-1) - out[pi_out][:, pi_in]).abs().max())
    require(gap < 1e-5, f"the result does not satisfy W[o, i, :, ::-1] = W[π(o), π(i)] (largest violation {gap:.3g})")
    again = project(out.clone(), pi_out, pi_in)
    require(torch.allclose(again, out, atol=1e-5), "projecting twice changed the result: a projection is idempotent")
    # orthogonal: the residual is orthogonal to the constrained subspace (to the result itself and to any projection)
    other = project(torch.randn(6, 4, 3, 3, generator=gen), pi_out, pi_in)
    inner = float(((w - out) * other).sum())
    require(abs(inner) < 1e-4, f"W − project(W) is not orthogonal to constrained weights (inner product {inner:.3g}); "
            "the orthogonal projection averages W with its transformed copy")
    passed("Correct: averaging W with W[π_out][:, π_in] flipped is the orthogonal projection onto the GCNN constraint.")


def check_filter_distance(filter_distance: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], float]) -> None:
    """Check ``filter_distance(W, pi_out, pi_in)``: the normalised distance
    ‖W − TW‖ / (‖W‖ + ‖TW‖) of a conv weight W from the mirror-GCNN constraint, with
    TW = W flipped horizontally, output channels permuted by π_out and input channels by π_in.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    gen = torch.Generator().manual_seed(4)
    pi_out, pi_in = torch.tensor([1, 0, 3, 2, 4]), torch.tensor([2, 1, 0])
    w = torch.randn(5, 3, 3, 3, generator=gen)
    tw = w.flip(-1)[pi_out][:, pi_in]
    expected = float((w - tw).norm() / (w.norm() + tw.norm()))

    def ask(weight, what):
        got = filter_distance(weight.clone(), pi_out.clone(), pi_in.clone())
        try:
            return float(got)
        except (TypeError, ValueError):
            raise ExerciseError(f"filter_distance must return a number, got {type(got).__name__} for {what}") from None

    got = ask(w, "a random weight")
    unflipped = float((w - w[pi_out][:, pi_in]).norm() / (2 * w.norm()))
    unpermuted = float((w - w.flip(-1)).norm() / (2 * w.norm()))
    if abs(got - unflipped) < 1e-5:
        raise ExerciseError("your distance does not flip the filters: TW is W[..., ::-1] with channels permuted")
    if abs(got - unpermuted) < 1e-5:
        raise ExerciseError("your distance does not permute the channels: TW = W.flip(-1)[pi_out][:, pi_in]")
    gcnn = 0.5 * (w + tw)
    require(abs(ask(gcnn, "a GCNN filter")) < 1e-5,
            f"a weight that satisfies the constraint (W = TW) must have distance 0, you returned {ask(gcnn, 'x'):.4g}")
    anti = w - tw
    require(abs(ask(anti, "TW = −W") - 1.0) < 1e-5,
            f"for TW = −W the distance is ‖2W‖ / (2‖W‖) = 1, you returned {ask(anti, 'x'):.4g}; "
            "divide by ‖W‖ + ‖TW‖")
    require(abs(got - expected) < 1e-4,
            f"for a random weight the distance is {expected:.4f}, you returned {got:.4f}")
    scaled = ask(3.0 * w, "3 W")
    require(abs(scaled - expected) < 1e-4, f"the distance must not change when W is scaled by 3 (got {scaled:.4f}, "
            f"expected {expected:.4f}): normalise by ‖W‖ + ‖TW‖")
    passed(f"Correct: d = ‖W − TW‖ / (‖W‖ + ‖TW‖) = {expected:.3f} for this random weight "
           "(0 for GCNN filters, 1 for TW = −W).")
