"""Checkers for the exercises of *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns).

Chapter: *ReLU CNNs and GCNNs*.
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from . import ExerciseError, passed, require, variants

__all__ = ["given", "check_filter_distance_by_hand", "check_gcnn_projection"]

_BOOK_FILTERS = ((1, 2, 0), (0, 2, 2))


def _filter_distances(filters) -> tuple[float, list[tuple[float, str]]]:
    """ch10-ex1's d(W) for the two 1×3 ``filters`` (π_out the swap, π_in = id), and the
    values of the common mistakes, each with what it says."""
    W = torch.tensor(filters, dtype=torch.float64)[:, None, None, :]
    swap = torch.tensor([1, 0])
    TW = W.flip(-1)[swap]
    d = float((W - TW).norm() / (W.norm() + TW.norm()))
    half = ("TW needs both steps: flip every filter, then swap the two channels (TW[0] is "
            "channel 1's filter flipped); a flip alone or a swap alone gives this value")
    mistakes = [
        (float((W - W[swap]).norm() / (2 * W.norm())), half),
        (float((W - W.flip(-1)).norm() / (2 * W.norm())), half),
        (float((W - TW).norm() / W.norm()),
         "you divided by ‖W‖ alone; the denominator is ‖W‖ + ‖TW‖ = 2‖W‖"),
        (d ** 2, "this is the square of the right value: is a square root missing?"),
    ]
    return d, mistakes


def _draw_filters(gen: torch.Generator) -> tuple[tuple[int, ...], ...]:
    """Two 1×3 filters of integers 0-3, redrawn until each is non-zero, W ≠ TW, and d(W)
    is at least 0.01 away from the book's d and from every common mistake's value."""
    book, _ = _filter_distances(_BOOK_FILTERS)
    while True:
        W = torch.randint(0, 4, (2, 3), generator=gen)
        filters = tuple(tuple(int(a) for a in row) for row in W)
        if not all(any(row) for row in filters):
            continue
        d, mistakes = _filter_distances(filters)
        if d >= 0.01 and abs(d - book) >= 0.01 and all(abs(d - v) >= 0.01 for v, _ in mistakes):
            return filters


def given() -> dict:
    """The numbers this copy's exercises give (see ``eqlib.exercises.variants``).

    - ``"filters"`` (ch10-ex1): the two 1×3 filters ``(W[0], W[1])`` of the conv weight with
      two output channels and one input channel, as tuples of integers. The book's:
      ``((1, 2, 0), (0, 2, 2))``. A variant draws six integers from 0 to 3 (its own stream
      ``"ch10-ex1"``), again until each filter is non-zero, W ≠ TW, and d(W) is at least 0.01
      away from the book's d and from the value of each mistake the checker names.

    With no variant (the book), the book's numbers.

    Chapter: *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns).
    """
    gen = variants.parameter_generator("ch10-ex1")
    return {"filters": _BOOK_FILTERS if gen is None else _draw_filters(gen)}


def _involution(n: int, gen: torch.Generator) -> torch.Tensor:
    """A random involution of n channels with at least one 2-cycle."""
    order = torch.randperm(n, generator=gen)
    pairs = int(torch.randint(1, n // 2 + 1, (), generator=gen))
    pi = torch.arange(n)
    for a, b in order[:2 * pairs].view(pairs, 2).tolist():
        pi[a], pi[b] = b, a
    return pi


def check_gcnn_projection(project: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check ``project(W, pi_out, pi_in)``: the orthogonal projection of a conv weight W (C_out, C_in, k, k)
    onto the mirror-GCNN constraint W[o, i, :, ::-1] = W[π_out(o), π_in(i), :, :].

    Its inputs (W and the involutions) are the book's, or drawn per variant.

    Chapter: *ReLU CNNs and GCNNs*.
    """
    gen = variants.input_generator("ch10-ex3", book=3)
    w = torch.randn(6, 4, 3, 3, generator=gen)
    v = torch.randn(6, 4, 3, 3, generator=gen)
    if variants.current() is None:
        pi_out = torch.tensor([1, 0, 3, 2, 4, 5])
        pi_in = torch.tensor([1, 0, 2, 3])
    else:
        pi_out, pi_in = _involution(6, gen), _involution(4, gen)
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
    are ``given()["filters"]`` (the book's: (1, 2, 0) and (0, 2, 2)), with π_out the swap of
    the two channels and π_in = id (TW = W flipped horizontally, output channels permuted by
    π_out).

    Chapter: *ReLU CNNs and GCNNs* (book/part3/10_relu_cnns_gcnns).
    """
    expected, mistakes = _filter_distances(given()["filters"])
    if isinstance(answer, torch.Tensor) and answer.numel() == 1:
        answer = answer.item()
    elif type(answer).__module__ == "numpy" and getattr(answer, "size", 0) == 1:
        answer = answer.item()  # a NumPy scalar or one-element array
    require(isinstance(answer, (int, float)) and not isinstance(answer, bool),
            f"give d as a number (a float), got {type(answer).__name__}")
    got = float(answer)
    if abs(got - expected) >= 5e-4:
        for value, message in mistakes:
            if abs(got - value) < 5e-4:
                raise ExerciseError(f"{got:.4g}: {message}")
    require(abs(got - expected) < 5e-4,
            f"{got:.4g} is not d(W). Write TW (flip each filter, then swap the two channels), "
            "then ‖W − TW‖ and ‖W‖ = ‖TW‖ as square roots of sums of squares")
    filters = given()["filters"]
    tw = [tuple(reversed(f)) for f in filters[::-1]]
    diff = sum((a - b) ** 2 for f, g in zip(filters, tw) for a, b in zip(f, g))
    norm = sum(a * a for f in filters for a in f)
    passed(f"Correct: TW has filters {tw[0]} and {tw[1]}, ‖W − TW‖ = √{diff}, ‖W‖ = ‖TW‖ = "
           f"√{norm}, so d = √{diff} / (2√{norm}) ≈ {got:.4f}.")
