"""Checkers for the exercises of *Where the theorem does not apply* (book/part2/09_where_it_fails).

Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
"""
from __future__ import annotations

import copy
import operator

import torch

from ..latent.generalized import pair_set_symmetries, relating_sequences
from ..models.sets import DeepSetsLayer, pair_swap_parameters
from ..seeds import torch_generator
from . import ExerciseError, passed, require, variants

__all__ = ["given", "check_sum_pair_adjunction", "check_residual_invariant", "check_relating_count",
           "check_unrelated_layer"]


def given() -> dict:
    """The numbers this copy's exercises give, for the current variant
    (``eqlib.exercises.variants``).

    - ``"ex1_lambda"``, ``"ex1_gamma"`` (3×2) and ``"ex1_bias"`` (2,): the parameters
      ``Lam_s, Gam_s, b_s`` of the sum-pooling layer of ch09-ex1. Book: three draws of
      ``torch.randn`` from one generator seeded with 9.
    - ``"ex2_slope"``: the slope a of the leaky ReLU of ch09-ex2 (book: 0.2), and
      ``"ex2_W1"`` (5×2): its first weight ``W1_ex`` (book: ``torch.randn(5, 2)`` seeded
      with 4).

    A variant draws the layer of ch09-ex1 from ``torch.randn`` (so Λ ≠ 0 and Π·θ ≠ θ),
    the slope among 0.05, 0.10, …, 0.50 (a leaky ReLU: 0 < a < 1) and ``W1_ex`` from
    ``torch.randn`` (full column rank, so ``W_1^+ W_1 = I``), each exercise from its own
    stream.

    Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
    """
    out = {}
    gen = variants.parameter_generator("ch09-ex1") or torch_generator(9)
    out["ex1_lambda"] = torch.randn(3, 2, generator=gen)
    out["ex1_gamma"] = torch.randn(3, 2, generator=gen)
    out["ex1_bias"] = torch.randn(2, generator=gen)
    gen = variants.parameter_generator("ch09-ex2")
    if gen is None:
        out["ex2_slope"] = 0.2
        gen = torch_generator(4)
    else:
        out["ex2_slope"] = int(torch.randint(1, 11, (), generator=gen)) / 20
    out["ex2_W1"] = torch.randn(5, 2, generator=gen)
    return out


def _require_given(pairs) -> None:
    """Under a variant, the exercise's data must be this copy's ``given()`` values (a
    copy with the book's numbers, or another student's, does not answer it)."""
    if variants.current() is None:
        return
    numbers = given()
    for name, value, key in pairs:
        want = numbers[key]
        same = (torch.is_tensor(value) and tuple(value.shape) == tuple(want.shape)
                and torch.allclose(value.detach().to(want.dtype), want)
                if torch.is_tensor(want) else value == want)
        require(bool(same), f"{name} is not this copy's given[{key!r}]: run the exercise "
                            "cells from the top (the variant cell defines given)")


def _tensor(x, name: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise ExerciseError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    return x.detach().to(torch.get_default_dtype())


def check_residual_invariant(W2, W1, x=None, slope: float = 0.0) -> None:
    """ch09-ex2: with the leaky ReLU σ_a(z) = max(z, a z) of slope ``a = slope`` (ReLU for
    0), f(x) = x + W2 σ_a(W1 x) must satisfy f(−x) = f(x) on x (None: 50 random inputs
    the checker draws). Under a variant, ``W1`` and ``slope`` must be the copy's
    ``given()["ex2_W1"]`` and ``given()["ex2_slope"]``.

    Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
    """
    W2, W1 = _tensor(W2, "W2"), _tensor(W1, "W1")
    _require_given([("W1_ex", W1, "ex2_W1"), ("the slope", float(slope), "ex2_slope")])
    if x is None:
        x = torch.randn(50, W1.shape[1], generator=variants.input_generator("ch09-ex2", book=92))
    require(tuple(W2.shape) == (W1.shape[1], W1.shape[0]),
            f"W2 must have shape {(W1.shape[1], W1.shape[0])}, got {tuple(W2.shape)}")
    a = float(slope)

    def f(z):
        return z + torch.nn.functional.leaky_relu(z @ W1.T, a) @ W2.T

    with torch.no_grad():
        # relative to ‖x‖: f(−x) − f(x) = −2x − (1 + a) W2 W1 x is linear in x, so a scaled-up
        # wrong answer cannot pass by inflating ‖f(x)‖
        err = float((f(-x) - f(x)).norm() / x.norm().clamp_min(1e-12))
    require(err < 1e-4, f"f(−x) ≠ f(x) (relative error {err:.3g}); hint: compute "
                        f"σ_a(z) − σ_a(−z) for z > 0 and for z ≤ 0 (slope a = {a:g})")
    passed("Correct: the block is invariant ((1 + a) W2 W1 = −2 I).")


def check_sum_pair_adjunction(Lam, Gam, b, answer) -> None:
    """ch09-ex1: for a sum-pooling layer on sets of two, σ(X_i Λ + (X_1 + X_2) Γ + b),
    ``answer = (Λ', Γ', b')`` must satisfy f(Π X; θ) = f(X; θ') with Π the swap. Under a
    variant, ``Lam, Gam, b`` must be the copy's ``given()["ex1_lambda"]``, ``["ex1_gamma"]``
    and ``["ex1_bias"]``.

    Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
    """
    _require_given([("Lam_s", Lam, "ex1_lambda"), ("Gam_s", Gam, "ex1_gamma"), ("b_s", b, "ex1_bias")])
    require(isinstance(answer, (tuple, list)) and len(answer) == 3,
            "give the answer as a tuple (Lam_prime, Gam_prime, b_prime)")
    Lp, Gp, bp = (_tensor(t, n) for t, n in zip(answer, ("Lam_prime", "Gam_prime", "b_prime")))
    require(Lp.shape == Lam.shape and Gp.shape == Gam.shape and bp.shape == b.shape,
            f"θ' has the shapes of θ: {tuple(Lam.shape)}, {tuple(Gam.shape)}, {tuple(b.shape)}")

    def layer(X, L, G, c):
        return torch.tanh(X @ L + X.sum(-2, keepdim=True) @ G + c)

    X = torch.randn(64, 2, Lam.shape[0], generator=variants.input_generator("ch09-ex1", book=91))
    want, got = layer(X.flip(-2), Lam, Gam, b), layer(X, Lp, Gp, bp)
    err = float((got - want).norm() / want.norm())
    require(err < 1e-5, f"f(X; θ') ≠ f(Π X; θ) (relative error {err:.3g}). Write row 1 of the "
                        "pre-activation as X_1(Λ + Γ) + X_2 Γ + b and ask which (Λ', Γ') "
                        "exchanges the two coefficients")
    passed("Correct: with a sum, Π·θ = (−Λ, Γ + Λ, b); with the course's mean it is (−Λ, Γ + 2Λ, b)")


def _swapped(layer):
    """The layer with θ replaced by Π·θ = (−Λ, Γ + 2Λ, b) (sets of two elements)."""
    new = copy.deepcopy(layer)
    with torch.no_grad():
        for name, value in pair_swap_parameters(layer).items():
            getattr(new, name).copy_(value)
    return new


def _relates(k, layers, layers_prime, x, y, tol: float = 1e-5) -> bool:
    """Whether (id, k, id) relates θ' to θ for a two-layer network: the first relation
    f_1(x; θ'_1) = k f_1(x; θ_1) on the input probes x, the second
    f_2(k y; θ'_2) = f_2(y; θ_2) on *random* y ∈ V_1 (the definition's "for every y"),
    not only on the latents the network reaches."""
    (f1, f2), (g1, g2) = layers, layers_prime

    def rel(a, b):
        return float((a - b).norm() / b.norm().clamp_min(1e-12))

    with torch.no_grad():
        out = f1(x)
        first = rel(g1(x).reshape(len(x), -1), out.reshape(len(x), -1) @ k.T)
        moved = (y.reshape(len(y), -1) @ k.T).reshape(y.shape)
        second = rel(g2(moved), f2(y))
    return first <= tol and second <= tol


def _random_latents(layer1, count: int = 64) -> torch.Tensor:
    n, d = layer1.out_shape
    return torch.randn(count, n, d, generator=variants.input_generator("ch09-ex4", book=93))


def _count(answer) -> int:
    """An integer-like answer (int, NumPy integer, 0-d integer tensor) as an int."""
    if isinstance(answer, bool):
        raise ExerciseError(f"give the count as an integer, got {answer!r}")
    if isinstance(answer, torch.Tensor):
        if answer.numel() != 1 or answer.dtype.is_floating_point or answer.dtype == torch.bool:
            raise ExerciseError(f"give the count as an integer, got {answer!r}")
        return int(answer.item())
    try:
        return operator.index(answer)
    except TypeError:
        raise ExerciseError(f"give the count as an integer, got {answer!r}") from None


def check_relating_count(answer, layer1, layer2, x) -> None:
    """ch09-ex4, part 1: the number of symmetries k of V_1 (``pair_set_symmetries``)
    with which (id, k, id) relates θ^Π to θ for the two-layer pair network
    ``(layer1, layer2)``, in the sense of the chapter's definition: the relation of the
    second layer must hold for every y ∈ V_1, which the checker tests on random y
    (:func:`~eqlib.latent.generalized.relating_sequences` tests reached latents only).

    Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
    """
    answer = _count(answer)
    K1 = pair_set_symmetries(layer1.Lam.shape[1])
    layers, primed = [layer1, layer2], [_swapped(layer1), _swapped(layer2)]
    reached = relating_sequences(layers, primed, [K1], x)
    y = _random_latents(layer1)
    truth = sum(_relates(K1[j], layers, primed, x, y) for (j,) in reached)
    if answer != truth and answer == len(reached):
        raise ExerciseError(
            f"{answer} symmetries relate θ^Π to θ on the latents the network reaches; the "
            "definition asks the relation for every y ∈ V_1: test each candidate on random y")
    require(answer == truth,
            f"{answer} is not the number of relating symmetries: run relating_sequences with the "
            "candidates pair_set_symmetries(d), then test each candidate it returns on random y ∈ V_1")
    passed(f"Correct: {truth} symmetr{'y' if truth == 1 else 'ies'} of V_1 relate(s) θ^Π to θ "
           "for every y ∈ V_1")


def check_unrelated_layer(layer1, layer2, other) -> None:
    """ch09-ex4, part 2: ``other`` is a second layer such that the network
    ``(layer1, other)`` computes the function of ``(layer1, layer2)`` while no symmetry k
    of V_1 (``pair_set_symmetries``) relates the two parameters by (id, k, id); checked
    on random inputs and, for the second layer, on random y ∈ V_1.

    Chapter: *Where the theorem does not apply* (book/part2/09_where_it_fails).
    """
    require(isinstance(other, DeepSetsLayer),
            f"q2_other must be a DeepSetsLayer, got {type(other).__name__}")
    require(other.in_shape == layer2.in_shape and other.out_shape == layer2.out_shape,
            f"q2_other must map {layer2.in_shape} to {layer2.out_shape} like q2, got "
            f"{other.in_shape} to {other.out_shape}")
    x = torch.randn(256, *layer1.in_shape, generator=variants.input_generator("ch09-ex4b", book=94))
    with torch.no_grad():
        want, got = layer2(layer1(x)), other(layer1(x))
    err = float((got - want).norm() / want.norm())
    require(err < 1e-5, f"(q1, q2_other) does not compute the function of (q1, q2) (relative "
                        f"error {err:.3g}): with Λ_1 = 0 the two rows of f_1(X) are equal; what "
                        "does the second layer then see of Λ_2 and Γ_2?")
    K1 = pair_set_symmetries(layer1.Lam.shape[1])
    y = _random_latents(layer1)
    related = [j for j in range(len(K1)) if _relates(K1[j], [layer1, layer2], [layer1, other], x, y)]
    require(not related,
            f"{len(related)} symmetr{'y' if len(related) == 1 else 'ies'} of V_1 relate(s) "
            "(q1, q2_other) to (q1, q2), so this θ' does not show that existence fails: change "
            "Λ_2 and Γ_2 in a way that no symmetry does")
    passed("Correct: same function, and no symmetry of V_1 relates the two parameters: "
           "θ is not identifiable because existence fails")
