"""Checkers for the exercises of *Parameter symmetries* (book/part1/04_parameter_symmetries)."""
from __future__ import annotations

import itertools
import operator
from collections.abc import Callable

import numpy as np
import torch

from ..models.mlp import MLP
from ..symmetries import SymmetryGroup
from . import ExerciseError, passed, require, variants

__all__ = ["given", "check_transform", "relu_intertwiner_cases", "check_relu_intertwiner_test",
           "check_linear_gelu_pair", "check_parameter_orbit"]

#: The numbers the book's exercises give (no variant).
_BOOK = {"theta_W1": (1, -1, 2), "theta_b1": (0.5, -0.5, 0.0), "theta_W2": (1, -1, 3)}
#: The clone classes (sizes) of the hidden neurons a variant of ch04-ex4 draws from; the
#: stabilizer has prod(m!) elements. The book's 3 neurons as a pair and a single (24, 2)
#: are left out, so every variant's counts differ from the book's.
_CLONE_CLASSES = ((3,), (2, 1, 1), (2, 2), (3, 1), (4,))


def given() -> dict:
    """The numbers this copy's exercises give, for the current variant
    (``eqlib.exercises.variants.current()``).

    - ``"theta_W1"``, ``"theta_b1"``, ``"theta_W2"`` (ch04-ex4): the parameter
      θ = (W1, b1, W2) of a 1 -> d -> 1 tanh network, d = ``len(given()["theta_W1"])``,
      whose orbit and stabilizer under the 2^d d! signed permutations of the hidden neurons
      are asked (W1 and W2 integers, b1 multiples of 0.5). Book: W1 = (1, -1, 2),
      b1 = (0.5, -0.5, 0), W2 = (1, -1, 3) (d = 3; neurons 0 and 1 are negated clones:
      orbit 24, stabilizer 2). A variant draws d and the clone classes from (3), (2, 1, 1),
      (2, 2), (3, 1), (4) (the sizes of the groups of neurons that are clones of each other
      up to sign), each class a row (w, b) with w, the outgoing weight u from ±1, ±2, ±3
      and b from ±0.5, ±1, ±1.5, every member c·(w, b) with outgoing weight c·u for a
      random sign c, rows of different classes not equal up to sign, the neurons in random
      order. The stabilizer is then the product of m! over the classes: at least 2, and
      never the book's counts.

    Examples:
        >>> given()["theta_W1"]              # the book: no variant
        (1, -1, 2)

    Chapter: *Parameter symmetries*.
    """
    numbers = dict(_BOOK)
    gen = variants.parameter_generator("ch04-ex4")
    if gen is None:
        return numbers

    def draw(choices):
        return choices[int(torch.randint(len(choices), (1,), generator=gen))]

    classes = draw(_CLONE_CLASSES)
    rows: list[tuple[int, float, int]] = []            # (w, b, u) of each class
    while len(rows) < len(classes):
        w, b, u = draw((1, -1, 2, -2, 3, -3)), draw((0.5, -0.5, 1.0, -1.0, 1.5, -1.5)), \
            draw((1, -1, 2, -2, 3, -3))
        if all((w, b) != (v, c) and (w, b) != (-v, -c) for v, c, _ in rows):
            rows.append((w, b, u))
    neurons = []
    for (w, b, u), size in zip(rows, classes):
        for member in range(size):
            c = 1 if member == 0 else draw((1, -1))
            neurons.append((c * w, c * b, c * u))
    order = torch.randperm(len(neurons), generator=gen).tolist()
    numbers["theta_W1"] = tuple(neurons[i][0] for i in order)
    numbers["theta_b1"] = tuple(float(neurons[i][1]) for i in order)
    numbers["theta_W2"] = tuple(neurons[i][2] for i in order)
    return numbers


def check_transform(transform: Callable) -> None:
    """Exercise ch04-ex1: ``transform(W1, b1, W2, k)`` with k a (d, d) signed permutation
    matrix returns (k W1, k b1, W2 k^{-1}).

    Chapter: *Parameter symmetries*.
    """
    for seed in range(3):
        drawn = variants.input_seed("ch04-ex1", book=seed)   # the book: 0, 1, 2
        net = MLP([4, 6 + seed, 3], "tanh", seed=drawn)
        W1, b1, W2 = (t.detach().clone() for t in (net.layers[0].weight, net.layers[0].bias, net.layers[1].weight))
        k = SymmetryGroup("signed_permutation", W1.shape[0]).sample(drawn).matrix()
        try:
            out = transform(W1.clone(), b1.clone(), W2.clone(), k.clone())
        except NotImplementedError:
            raise ExerciseError("transform is not implemented yet") from None
        require(isinstance(out, (tuple, list)) and len(out) == 3, "transform must return a tuple (W1, b1, W2)")
        W1n, b1n, W2n = (torch.as_tensor(t, dtype=torch.float32) for t in out)
        for name, got, want in (("W1", W1n, k @ W1), ("b1", b1n, k @ b1), ("W2", W2n, W2 @ k.T)):
            require(got.shape == want.shape, f"{name} has shape {tuple(got.shape)}, expected {tuple(want.shape)}")
            require(torch.allclose(got, want, atol=1e-5),
                    f"seed {seed}: {name} is not right (max error {float((got - want).abs().max()):.3g}); "
                    "remember k^{-1} = kᵀ for a signed permutation")
    passed("Correct: (k W1, k b1, W2 kᵀ) computes the same function for tanh.")


def relu_intertwiner_cases() -> list[tuple[torch.Tensor, bool, str]]:
    """The matrices that :func:`check_relu_intertwiner_test` feeds to the answer, with the
    answer the statement of exercise ch04-ex2 asks for: ``True`` exactly when A is
    invertible and relu(A z) = A relu(z) for all z.

    The singular cases satisfy the identity (a nonnegative matrix with at most one nonzero
    entry per row does) but are not invertible, so the answer is ``False``; the unit tests
    check every expected answer against the literal statement by an independent test on
    random points and a rank computation.

    Chapter: *Parameter symmetries* (book/part1/04_parameter_symmetries).
    """
    gen = variants.input_generator("ch04-ex2", book=0)
    seeds = [variants.input_seed("ch04-ex2", book=seed) for seed in (1, 2, 3)]  # the book: 1, 2, 3
    scaled = SymmetryGroup("scaled_permutation", 5).sample(seeds[0]).matrix()
    signed = SymmetryGroup("signed_permutation", 5).sample(seeds[1]).matrix()
    signed[0] = signed[0].abs()
    signed[1] = -signed[1].abs()  # certainly one negative entry
    return [
        (torch.eye(4), True, "the identity"),
        (scaled, True, "a positively scaled permutation"),
        (SymmetryGroup("permutation", 6).sample(seeds[2]).matrix(), True, "a permutation"),
        (signed, False, "a signed permutation with a −1"),
        (torch.randn(4, 4, generator=gen), False, "a random dense matrix"),
        (torch.diag(torch.tensor([1.0, 2.0, 0.0])), False,
         "diag(1, 2, 0) (it satisfies the identity, but it is singular)"),
        (torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]]), False,
         "[[1, 0, 0], [1, 0, 0], [0, 0, 2]] (it satisfies the identity, but it is singular)"),
        (torch.tensor([[1.0, 1.0], [0.0, 1.0]]), False, "a shear (positive but not monomial)"),
        (torch.tensor([[1.0, 1.0], [0.0, 0.0]]), False,
         "[[1, 1], [0, 0]] (one nonzero entry per column, but two in row 0: singular, and "
         "relu(A z) ≠ A relu(z) at z = (1, −1))"),
    ]


def check_relu_intertwiner_test(is_relu_intertwiner: Callable) -> None:
    """Exercise ch04-ex2: ``is_relu_intertwiner(A)`` says whether the square matrix A is
    invertible and satisfies relu(A z) = A relu(z) for all z, i.e. whether A lies in ReLU's
    intertwiner group (a permutation times a positive diagonal).

    Chapter: *Parameter symmetries* (book/part1/04_parameter_symmetries).
    """
    for A, want, what in relu_intertwiner_cases():
        try:
            got = is_relu_intertwiner(A.clone())
        except NotImplementedError:
            raise ExerciseError("is_relu_intertwiner is not implemented yet") from None
        require(isinstance(got, (bool, np.bool_)) or (torch.is_tensor(got) and got.numel() == 1),
                f"is_relu_intertwiner must return a bool, got {type(got).__name__}")
        require(bool(got) == want, f"wrong answer for {what}: your function returned {bool(got)}")
    passed("Correct: ReLU's intertwiner group consists of the positively scaled permutations.")


def check_linear_gelu_pair(W1, W2) -> None:
    """Exercise ch04-ex3: weights W1 (2, 1) and W2 (1, 2) of a bias-free GELU network
    x ↦ W2 gelu(W1 x) that computes f(x) = 3x exactly.

    Chapter: *Parameter symmetries*.
    """
    W1, W2 = torch.as_tensor(W1, dtype=torch.float32), torch.as_tensor(W2, dtype=torch.float32)
    require(W1.shape == (2, 1), f"W1 must have shape (2, 1), got {tuple(W1.shape)}")
    require(W2.shape == (1, 2), f"W2 must have shape (1, 2), got {tuple(W2.shape)}")
    net = MLP([1, 2, 1], "gelu", bias=False)
    with torch.no_grad():
        net.layers[0].weight.copy_(W1)
        net.layers[1].weight.copy_(W2)
        x = torch.linspace(-5, 5, 201)[:, None]
        err = float((net(x) - 3 * x).abs().max())
    require(err < 1e-4, f"x ↦ W2 gelu(W1 x) differs from 3x by up to {err:.3g} on [−5, 5]; "
            "use gelu(t) − gelu(−t) = t")
    passed("Correct: two GELU neurons pass a linear signal, so the latent map need not be a permutation.")


def check_parameter_orbit(orbit_size, stabilizer_size) -> None:
    """Exercise ch04-ex4: the orbit and stabilizer sizes of the 1 -> d -> 1 tanh parameter
    θ = (``given()["theta_W1"]``, ``given()["theta_b1"]``, ``given()["theta_W2"]``) (the
    book: W1 = (1, -1, 2)^T, b1 = (0.5, -0.5, 0), W2 = (1, -1, 3)) under the 2^d d! signed
    permutations of the hidden neurons.

    Chapter: *Parameter symmetries*.
    """
    counts = []
    for name, value in (("orbit_size", orbit_size), ("stabilizer_size", stabilizer_size)):
        require(value is not None, f"{name} is None: did you replace `raise NotImplementedError()`?")
        # an integer of any kind: int, a NumPy integer, an integer 0-dim tensor
        is_bool = isinstance(value, (bool, np.bool_)) or (torch.is_tensor(value) and value.dtype == torch.bool)
        try:
            counts.append(None if is_bool else operator.index(value))
        except TypeError:
            counts.append(None)
        require(counts[-1] is not None, f"{name} must be an integer, got {type(value).__name__}")
    orbit_size, stabilizer_size = counts
    numbers = given()
    W1 = torch.tensor(numbers["theta_W1"], dtype=torch.float32)[:, None]
    b1 = torch.tensor(numbers["theta_b1"], dtype=torch.float32)
    W2 = torch.tensor(numbers["theta_W2"], dtype=torch.float32)[None, :]
    d = W1.shape[0]
    group = [torch.diag(torch.tensor(s)) @ torch.eye(d)[list(p)]
             for s in itertools.product((1.0, -1.0), repeat=d)
             for p in itertools.permutations(range(d))]
    vectors = [tuple(torch.cat([(k @ W1).flatten(), k @ b1, (W2 @ k.T).flatten()]).tolist())
               for k in group]
    theta = tuple(torch.cat([W1.flatten(), b1, W2.flatten()]).tolist())
    orbit, stab = len(set(vectors)), vectors.count(theta)
    require(orbit_size * stabilizer_size == len(group),
            f"orbit_size · stabilizer_size = {orbit_size * stabilizer_size}, but the orbit-stabilizer "
            f"theorem says it is the group order {len(group)} (2^{d} · {d}!)")
    require(stabilizer_size != 1, "your stabilizer is trivial; is there a k ≠ I with k·θ = θ? Look for clones.")
    require((orbit_size, stabilizer_size) == (orbit, stab),
            f"({orbit_size}, {stabilizer_size}) is not right; count the distinct vectors k·θ")
    passed(f"Correct: the orbit has {orbit_size} parameter vectors and the stabilizer {stabilizer_size} elements.")
