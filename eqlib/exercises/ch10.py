"""Checkers for the exercises of *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns).

Chapter: *ReLU CNNs and GCNNs*.
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from ..seeds import torch_generator
from . import ExerciseError, passed, require

__all__ = ["check_filter_distance_by_hand", "check_gcnn_projection"]


def check_gcnn_projection(project: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check ``project(W, pi_out, pi_in)``: the orthogonal projection of a conv weight W (C_out, C_in, k, k)
    onto the mirror-GCNN constraint W[o, i, :, ::-1] = W[π_out(o), π_in(i), :, :].

    Chapter: *ReLU CNNs and GCNNs*.
    """
    gen = torch_generator(3)
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
    # onto the WHOLE constrained space: every constrained weight V (built here, not by
    # ``project``) is left unchanged; zeros or a projection onto a smaller space fail this
    v = torch.randn(6, 4, 3, 3, generator=gen)
    constrained = 0.5 * (v + v[pi_out][:, pi_in].flip(-1))
    kept = project(constrained.clone(), pi_out, pi_in)
    moved = float((kept - constrained).abs().max())
    require(moved < 1e-5, f"project moved a weight that already satisfies the constraint (by up to "
            f"{moved:.3g}): a projection onto the constrained weights must leave each of them "
            "unchanged. Which linear map T fixes exactly the constrained weights?")
    # orthogonal: the residual W − project(W) is orthogonal to every constrained weight
    inner = float(((w - out) * constrained).sum())
    require(abs(inner) < 1e-4, f"W − project(W) is not orthogonal to the constrained weights (inner "
            f"product {inner:.3g}); for an involution T, which combination of 1 and T is a "
            "symmetric idempotent?")
    passed("Correct: averaging W with W[π_out][:, π_in] flipped is the orthogonal projection onto the GCNN constraint.")


def check_filter_distance_by_hand(answer) -> None:
    """ch10-ex1: the normalised filter distance d(W) = ‖W − TW‖ / (‖W‖ + ‖TW‖), computed by
    hand, of the conv weight with two output channels and one input channel whose 1×3 filters
    are (1, 2, 0) and (0, 2, 2), with π_out the swap of the two channels and π_in = id
    (TW = W flipped horizontally, output channels permuted by π_out).

    Chapter: *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns).
    """
    W = torch.tensor([[1.0, 2.0, 0.0], [0.0, 2.0, 2.0]], dtype=torch.float64)[:, None, None, :]
    swap = torch.tensor([1, 0])
    TW = W.flip(-1)[swap]
    expected = float((W - TW).norm() / (W.norm() + TW.norm()))
    if isinstance(answer, torch.Tensor) and answer.numel() == 1:
        answer = answer.item()
    elif type(answer).__module__ == "numpy" and getattr(answer, "size", 0) == 1:
        answer = answer.item()  # a NumPy scalar or one-element array
    require(isinstance(answer, (int, float)) and not isinstance(answer, bool),
            f"give d as a number (a float), got {type(answer).__name__}")
    got = float(answer)
    mistakes = {
        "TW needs both steps: flip every filter, then swap the two channels (TW[0] is "
        "channel 1's filter flipped); a flip alone or a swap alone gives "
        "this value": float((W - W[swap]).norm() / (2 * W.norm())),
        "you divided by ‖W‖ alone; the denominator is ‖W‖ + ‖TW‖ = 2‖W‖":
            float((W - TW).norm() / W.norm()),
        "this is the square of the right value: is a square root missing?": expected ** 2,
    }
    for message, value in mistakes.items():
        if abs(got - value) < 5e-4:
            raise ExerciseError(f"{got:.4g}: {message}")
    require(abs(got - expected) < 5e-4,
            f"{got:.4g} is not d(W). Write TW (flip each filter, then swap the two channels), "
            "then ‖W − TW‖ and ‖W‖ = ‖TW‖ as square roots of sums of squares")
    passed(f"Correct: TW has filters (2, 2, 0) and (0, 2, 1), ‖W − TW‖ = √2, ‖W‖ = ‖TW‖ = √13, "
           f"so d = √2 / (2√13) = 1/√26 ≈ {expected:.4f}.")
