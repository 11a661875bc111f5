"""Checkers for the exercises of *Parameter symmetries* (book/part1/04_parameter_symmetries)."""
from __future__ import annotations

import itertools
import operator
from collections.abc import Callable

import numpy as np
import torch

from ..models.mlp import MLP
from ..symmetries import SymmetryGroup
from ..seeds import torch_generator
from . import ExerciseError, passed, require

__all__ = ["check_transform", "relu_intertwiner_cases", "check_relu_intertwiner_test",
           "check_linear_gelu_pair", "check_parameter_orbit"]


def check_transform(transform: Callable) -> None:
    """Exercise ch04-ex1: ``transform(W1, b1, W2, k)`` with k a (d, d) signed permutation
    matrix returns (k W1, k b1, W2 k^{-1}).

    Chapter: *Parameter symmetries*.
    """
    for seed in range(3):
        net = MLP([4, 6 + seed, 3], "tanh", seed=seed)
        W1, b1, W2 = (t.detach().clone() for t in (net.layers[0].weight, net.layers[0].bias, net.layers[1].weight))
        k = SymmetryGroup("signed_permutation", W1.shape[0]).sample(seed).matrix()
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
    gen = torch_generator(0)
    scaled = SymmetryGroup("scaled_permutation", 5).sample(1).matrix()
    signed = SymmetryGroup("signed_permutation", 5).sample(2).matrix()
    signed[0] = signed[0].abs()
    signed[1] = -signed[1].abs()  # certainly one negative entry
    return [
        (torch.eye(4), True, "the identity"),
        (scaled, True, "a positively scaled permutation"),
        (SymmetryGroup("permutation", 6).sample(3).matrix(), True, "a permutation"),
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
        require(bool(got) == want, f"wrong answer for {what}: expected {want}, got {bool(got)}")
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
    """Exercise ch04-ex4: the orbit and stabilizer sizes of the 1 -> 3 -> 1 tanh parameter
    W1 = (1, -1, 2)^T, b1 = (0.5, -0.5, 0), W2 = (1, -1, 3) under the 48 signed
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
    W1, b1 = torch.tensor([[1.0], [-1.0], [2.0]]), torch.tensor([0.5, -0.5, 0.0])
    W2 = torch.tensor([[1.0, -1.0, 3.0]])
    group = [torch.diag(torch.tensor(s)) @ torch.eye(3)[list(p)]
             for s in itertools.product((1.0, -1.0), repeat=3)
             for p in itertools.permutations(range(3))]
    vectors = [tuple(torch.cat([(k @ W1).flatten(), k @ b1, (W2 @ k.T).flatten()]).tolist())
               for k in group]
    orbit, stab = len(set(vectors)), vectors.count(vectors[group.index(next(
        k for k in group if torch.equal(k, torch.eye(3))))])
    require(orbit_size * stabilizer_size == len(group),
            f"orbit_size · stabilizer_size = {orbit_size * stabilizer_size}, but the orbit-stabilizer "
            f"theorem says it is the group order {len(group)} (2³ · 3!)")
    require(stabilizer_size != 1, "your stabilizer is trivial; is there a k ≠ I with k·θ = θ? Look for clones.")
    require((orbit_size, stabilizer_size) == (orbit, stab),
            f"({orbit_size}, {stabilizer_size}) is not right; count the distinct vectors k·θ")
    passed(f"Correct: the orbit has {orbit} parameter vectors and the stabilizer {stab} elements.")
