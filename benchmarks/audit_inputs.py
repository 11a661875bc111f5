"""An input audit of eqlib's public API (not a test): every public function and class of the
library's core modules called with bad inputs (wrong dtypes, meta tensors, truthy non-bool
flags, sets and strings for sequences, non-integral / negative / huge numbers, NaN and inf,
empty inputs, mismatched shapes) and with legitimate unusual inputs (float64, strided
tensors, a batch of one, tensors that require gradients) that must give correct results.

Each call runs in a forked child with a 10 s limit. Outcomes:

- ``clear``: a TypeError or ValueError (or the case's own expected exception) whose message
  names the argument;
- ``obscure``: any other exception, or a message that does not name the argument;
- ``silent``: a bad input accepted (no error), or a legitimate input giving a wrong result;
- ``hang``: still running after 10 s (or killed for memory);
- ``correct``: a legitimate input giving the right result.

Run from the repository root::

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 python benchmarks/audit_inputs.py [-v] [-k SUBSTRING]

It prints one line per call that is not clear/correct (all with ``-v``) and the table.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("EQLIB_CACHE", tempfile.mkdtemp(prefix="eqlib-audit-cache-"))
os.environ.setdefault("EQLIB_PROGRESS", "0")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from eqlib import actions, groups, images, io, matching, seeds, submodels, symmetries  # noqa: E402
from eqlib import device as devmod  # noqa: E402
from eqlib import train as tr  # noqa: E402
from eqlib.analysis import probes, tables  # noqa: E402
from eqlib.analysis import filters  # noqa: E402
from eqlib.latent import attention as latt, conv as lconv, generalized as lgen, lstsq  # noqa: E402
from eqlib.latent import plant, result as lres, units, weights as lw  # noqa: E402
from eqlib.latent.core import latent_actions  # noqa: E402
from eqlib.models import MLP  # noqa: E402
from eqlib.models.attention import AttentionNetwork, MultiHeadAttention  # noqa: E402
from eqlib.models.cnn import VGG, MirrorGCNN, channel_involution, flip_filters, mirror_invariance_error, \
    warm_batchnorm  # noqa: E402
from eqlib.models.convnet import SameConv, conv_net  # noqa: E402
from eqlib.models.equivariant import EquivariantDense, EquivariantMLP  # noqa: E402
from eqlib.models.sets import DeepSetsLayer, GraphLayer, ResidualBlock, adjunction_fit, cycle_automorphisms, \
    cycle_graph, plant_residual_invariant  # noqa: E402

BAD, LEGIT = [], []


def bad(label: str, arg: str, fn, exc: tuple = ()):
    """A bad call: ``fn()`` must raise TypeError/ValueError (or one of ``exc``) naming ``arg``."""
    BAD.append((label, arg, fn, exc))


def legit(label: str, fn, check):
    """A legitimate call: ``check(fn())`` must be true."""
    LEGIT.append((label, fn, check))


# -- fixtures (built in the parent; each child gets its own copy) ---------------------------------
C3, D4, S3 = groups.cyclic(3), groups.dihedral(4), groups.symmetric(3)
REG3 = actions.regular(C3)
ROT = actions.from_matrices(C3, {g: torch.tensor([[math.cos(2 * math.pi * g.index / 3),
                                                    -math.sin(2 * math.pi * g.index / 3)],
                                                   [math.sin(2 * math.pi * g.index / 3),
                                                    math.cos(2 * math.pi * g.index / 3)]])
                                 for g in C3.elements})
G1 = C3.elements[1]
NET = MLP([3, 4, 3], seed=0)
VGGN = VGG([4, "M", 4], image_size=8, num_classes=3, seed=0)
VGGB = VGG([4, "M", 4], image_size=8, num_classes=3, seed=1)
X3 = torch.rand(5, 3)
IMG8 = torch.randint(0, 256, (4, 3, 8, 8), dtype=torch.uint8)
IMG32 = torch.randint(0, 256, (4, 3, 8, 8), dtype=torch.uint8)  # small images for the trainer
IMG8N = images.prepare_images(IMG8)
LAB = torch.tensor([0, 1, 2, 1])
K = symmetries.SymmetryElement([1, 0, 2], [1.0, 2.0, 0.5])
MHA = MultiHeadAttention(4, 3, 3, 2, seed=0)
SPEC = matching.permutation_spec(VGGN)
META = torch.zeros(5, 3, device="meta")
NAN3 = torch.tensor([[0.1, math.nan, 0.2]] * 5)
INF3 = torch.tensor([[0.1, math.inf, 0.2]] * 5)
CFG = dict(epochs=1, batch_size=2, seed=0)


def tiny_cfg(**kw):
    return tr.TrainConfig(**{**CFG, **kw})


def tiny_vgg():
    return VGG([2, "M"], num_classes=3, image_size=8, seed=0)


#: the image preset of the trainer's 8×8 inputs: the mirror symmetry and Normalize
P8 = tr.image_preset((3, 8, 8))


def vgg_train(data, config=None, **kw):
    """``train`` a tiny VGG on ``data`` under the 8×8 image preset (``kw`` overrides it)."""
    return tr.train(tiny_vgg(), data, tiny_cfg() if config is None else config, **{"progress": False, **P8, **kw})


# == groups ========================================================================================
for v, kind in ((0, "zero"), (-3, "negative"), (2.5, "float"), ("3", "string"), (True, "bool"), (None, "None"),
                (10**12, "huge")):
    bad(f"cyclic({kind})", "n", lambda v=v: groups.cyclic(v))
    bad(f"dihedral({kind})", "n", lambda v=v: groups.dihedral(v))
bad("symmetric(huge 20)", "n", lambda: groups.symmetric(20))
bad("symmetric(-1)", "n", lambda: groups.symmetric(-1))
bad("FiniteGroup(non-latin table)", "table", lambda: groups.FiniteGroup([[0, 0], [0, 0]]))
bad("FiniteGroup(ragged table)", "table", lambda: groups.FiniteGroup([[0, 1], [1]]))
bad("FiniteGroup(float table)", "table", lambda: groups.FiniteGroup([[0.0, 1.5], [1.5, 0.0]]))
bad("FiniteGroup(names wrong length)", "names", lambda: groups.FiniteGroup([[0, 1], [1, 0]], names=["e"]))
bad("FiniteGroup(check_associativity='no')", "check_associativity",
    lambda: groups.FiniteGroup([[0, 1], [1, 0]], check_associativity="no"))
bad("from_permutations(set)", "generators", lambda: groups.from_permutations({(1, 0, 2)}))
bad("from_permutations(not a permutation)", "generators", lambda: groups.from_permutations([[0, 0, 1]]))
bad("from_permutations(max_order=0)", "max_order", lambda: groups.from_permutations([[1, 0]], max_order=0))
bad("from_permutations(max_order=2.5)", "max_order", lambda: groups.from_permutations([[1, 0]], max_order=2.5))
bad("G[out of range]", "key", lambda: C3[7], exc=(IndexError, KeyError))
bad("G[unknown name]", "key", lambda: C3["zz"], exc=(KeyError,))
bad("g ** 2.5", "exponent", lambda: G1 ** 2.5)
bad("g @ element of another group", "other", lambda: G1 @ D4.elements[1])
bad("G.sample(n=-1)", "n", lambda: C3.sample(-1))
bad("G.sample(n=2.5)", "n", lambda: C3.sample(2.5))
bad("G.sample(n=10**12)", "n", lambda: C3.sample(10**12))
bad("G.sample(seed=-1)", "seed", lambda: C3.sample(2, seed=-1))
bad("G.sample(seed=2**70)", "seed", lambda: C3.sample(2, seed=2**70))
bad("G.compose(index 9)", "a", lambda: C3.compose(9, 0), exc=(IndexError,))
legit("cyclic(np.int64(3))", lambda: groups.cyclic(np.int64(3)).order, lambda o: o == 3)
legit("g ** -1 is the inverse", lambda: (G1 ** -1) @ G1 == C3.identity, bool)
legit("g ** 3 (n = order)", lambda: G1 ** 3 == C3.identity, bool)

# == actions =======================================================================================
bad("MatrixAction(wrong matrix count)", "matrices", lambda: actions.MatrixAction(C3, torch.eye(2).repeat(2, 1, 1)))
bad("MatrixAction(complex)", "matrices", lambda: actions.MatrixAction(C3, torch.eye(2, dtype=torch.cfloat)
                                                                       .repeat(3, 1, 1)))
bad("MatrixAction(NaN matrices)", "matrices", lambda: actions.MatrixAction(C3, torch.full((3, 2, 2), math.nan)))
bad("MatrixAction(meta)", "matrices", lambda: actions.MatrixAction(C3, torch.zeros(3, 2, 2, device="meta")))
bad("MatrixAction(list)", "matrices", lambda: actions.MatrixAction(C3, [[1.0]]))
bad("MatrixAction(group=None)", "group", lambda: actions.MatrixAction(None, torch.eye(2).repeat(3, 1, 1)))
bad("MatrixAction(not square)", "matrices", lambda: actions.MatrixAction(C3, torch.zeros(3, 2, 3)))
bad("from_matrices(missing element)", "matrices", lambda: actions.from_matrices(C3, {C3.identity: torch.eye(2)}))
bad("from_matrices(list)", "matrices", lambda: actions.from_matrices(C3, [torch.eye(2)] * 3))
bad("act(x meta)", "x", lambda: ROT.act(G1, torch.zeros(1, 2, device="meta")))
bad("act(x wrong dim)", "x", lambda: ROT.act(G1, torch.zeros(1, 3)))
bad("act(x list)", "x", lambda: ROT.act(G1, [1.0, 0.0]))
bad("act(g of another group)", "g", lambda: ROT.act(D4.elements[1], torch.zeros(1, 2)))
bad("act(g int)", "g", lambda: ROT.act(1, torch.zeros(1, 2)))
bad("PermutationAction(non-permutation)", "index",
    lambda: actions.PermutationAction(C3, np.array([[0, 1, 2], [0, 0, 1], [2, 0, 1]])))
bad("PermutationAction(float index)", "index",
    lambda: actions.PermutationAction(C3, np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1]], dtype=float) + 0.5))
bad("PermutationAction(signs=2)", "signs",
    lambda: actions.PermutationAction(C3, np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1]]), signs=np.full((3, 3), 2.0)))
bad("PermutationAction(not a homomorphism)", "index",
    lambda: actions.PermutationAction(C3, np.array([[0, 1, 2], [1, 0, 2], [2, 0, 1]])))
bad("permutation(points=set)", "points", lambda: actions.permutation(C3, {(0, 1, 2)}))
bad("signed_permutation(signs nan)", "signs",
    lambda: actions.signed_permutation(C3, np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1]]), np.full((3, 3), math.nan)))
bad("trivial(dim=0)", "dim", lambda: actions.trivial(C3, 0))
bad("trivial(dim=2.5)", "dim", lambda: actions.trivial(C3, 2.5))
bad("trivial(dim=10**12)", "dim", lambda: actions.trivial(C3, 10**12))
bad("trivial(group='C3')", "group", lambda: actions.trivial("C3"))
bad("regular(symmetric(7))", "group", lambda: actions.regular(groups.symmetric(7)))
bad("regular(None)", "group", lambda: actions.regular(None))
bad("mirror(shape 2 entries)", "shape", lambda: images.mirror((3, 8)))
bad("mirror(shape 0)", "shape", lambda: images.mirror((3, 0, 8)))
bad("mirror(shape float)", "shape", lambda: images.mirror((3, 8.5, 8)))
bad("mirror(axis='diag')", "axis", lambda: images.mirror((3, 8, 8), axis="diag"))
bad("mirror(shape huge)", "shape", lambda: images.mirror((3, 10**6, 10**6)))
bad("image_rotations(non-square)", "shape", lambda: images.image_rotations((3, 8, 6)))
bad("image_dihedral(set)", "shape", lambda: images.image_dihedral({3, 8}))
bad("mirror_images(x 1-D)", "x", lambda: images.mirror_images(torch.zeros(5)))
bad("token_permutation(n_tokens=0)", "n_tokens", lambda: actions.token_permutation(C3, 0, 2))
bad("token_permutation(token_dim=-1)", "token_dim", lambda: actions.token_permutation(C3, 3, -1))
bad("token_permutation(n_tokens wrong for group)", "n_tokens", lambda: actions.token_permutation(C3, 2, 2))
bad("DirectSum(no parts)", "parts", lambda: actions.DirectSum())
bad("DirectSum(other groups)", "parts", lambda: actions.DirectSum(REG3, actions.regular(D4)))
bad("DirectSum(tensor part)", "parts", lambda: actions.DirectSum(REG3, torch.eye(3)))
bad("check_homomorphism(num_probes=0)", "num_probes", lambda: actions.check_homomorphism(REG3, 0))
bad("check_homomorphism(num_probes=10**9)", "num_probes", lambda: actions.check_homomorphism(REG3, 10**9))
bad("check_homomorphism(seed='a')", "seed", lambda: actions.check_homomorphism(REG3, 2, seed="a"))
bad("check_homomorphism(rho=None)", "rho", lambda: actions.check_homomorphism(None))
bad("check_equivariance(x int)", "x", lambda: actions.check_equivariance(NET, REG3, REG3, torch.ones(2, 3,
                                                                                                  dtype=torch.long)))
bad("check_equivariance(x nan)", "x", lambda: actions.check_equivariance(NET, REG3, REG3, NAN3))
bad("check_equivariance(x wrong dim)", "x", lambda: actions.check_equivariance(NET, REG3, REG3, torch.rand(2, 4)))
bad("check_equivariance(elements=set)", "elements",
    lambda: actions.check_equivariance(NET, REG3, REG3, X3, elements={G1}))
bad("check_equivariance(elements generator)", "elements",
    lambda: actions.check_equivariance(NET, REG3, REG3, X3, elements=(g for g in C3.elements)))
bad("check_equivariance(f not callable)", "f", lambda: actions.check_equivariance(3, REG3, REG3, X3))
bad("check_equivariance(x empty)", "x", lambda: actions.check_equivariance(NET, REG3, REG3, torch.zeros(0, 3)))
bad("check_equivariance(rho_out other group)", "rho_out",
    lambda: actions.check_equivariance(lambda v: v, actions.regular(D4), REG3, torch.rand(2, 8)))
bad("equivariance_residual(g other group)", "g",
    lambda: actions.equivariance_residual(NET, REG3, REG3, X3, g=D4.elements[1]))
bad("equivariance_residual(fx wrong shape)", "fx",
    lambda: actions.equivariance_residual(NET, REG3, REG3, X3, g=G1, fx=torch.zeros(2, 2)))
bad("equivariant_basis(tol=nan)", "tol", lambda: actions.equivariant_basis(REG3, REG3, tol=math.nan))
bad("equivariant_basis(tol=-1)", "tol", lambda: actions.equivariant_basis(REG3, REG3, tol=-1))
bad("equivariant_basis(rho_out other group)", "rho_out",
    lambda: actions.equivariant_basis(REG3, actions.regular(D4)))
bad("reynolds(W wrong shape)", "W", lambda: actions.reynolds(torch.ones(2, 3), REG3, REG3))
bad("reynolds(W nan)", "W", lambda: actions.reynolds(torch.full((3, 3), math.nan), REG3, REG3))
bad("intertwiner_dimension(None)", "rho_in", lambda: actions.intertwiner_dimension(None, REG3))
bad("equivariant_projector(huge)", "rho_in",
    lambda: actions.equivariant_projector(actions.trivial(C3, 4000), actions.trivial(C3, 4000)))
legit("MatrixAction.act float64 keeps precision", lambda: ROT.act(G1, torch.tensor([[2.0, 0.0]], dtype=torch.float64)),
      lambda y: y.dtype == torch.float64 and torch.allclose(y, torch.tensor([[-1.0, math.sqrt(3)]], dtype=torch.float64),
                                                            atol=1e-6))
legit("MatrixAction.act non-contiguous", lambda: (ROT.act(G1, torch.rand(2, 4)[:, ::2]),),
      lambda y: y[0].shape == (2, 2))
legit("PermutationAction.act int input exact", lambda: REG3.act(G1, torch.tensor([[10, 20, 30]])),
      lambda y: sorted(y.flatten().tolist()) == [10, 20, 30] and y.dtype == torch.long)
legit("check_equivariance requires_grad x", lambda: actions.check_equivariance(
    lambda v: v, REG3, REG3, torch.rand(2, 3, requires_grad=True)), lambda r: max(r.values()) < 1e-6)
legit("reynolds float64 W", lambda: actions.reynolds(torch.rand(3, 3, dtype=torch.float64), REG3, REG3),
      lambda W: W.dtype == torch.float64 and torch.allclose(REG3.matrix(G1).double() @ W, W @ REG3.matrix(G1).double()))

# == symmetries ====================================================================================
bad("SymmetryElement(perm not a permutation)", "perm", lambda: symmetries.SymmetryElement([0, 0, 1]))
bad("SymmetryElement(perm float)", "perm", lambda: symmetries.SymmetryElement([0.5, 1.0, 2.0]))
bad("SymmetryElement(perm set)", "perm", lambda: symmetries.SymmetryElement({0, 1, 2}))
bad("SymmetryElement(scale 0)", "scale", lambda: symmetries.SymmetryElement([0, 1], [1.0, 0.0]))
bad("SymmetryElement(scale nan)", "scale", lambda: symmetries.SymmetryElement([0, 1], [1.0, math.nan]))
bad("SymmetryElement(scale 1e-45)", "scale", lambda: symmetries.SymmetryElement([0, 1], [1.0, 1e-45]))
bad("SymmetryElement(scale wrong length)", "scale", lambda: symmetries.SymmetryElement([0, 1], [1.0]))
bad("SymmetryElement(scale complex)", "scale",
    lambda: symmetries.SymmetryElement([0, 1], torch.ones(2, dtype=torch.cfloat)))
bad("SymmetryElement.identity(-1)", "dim", lambda: symmetries.SymmetryElement.identity(-1))
bad("SymmetryElement.identity(2.5)", "dim", lambda: symmetries.SymmetryElement.identity(2.5))
bad("SymmetryElement.from_matrix(not monomial)", "matrix", lambda: symmetries.SymmetryElement.from_matrix(
    torch.ones(2, 2)))
bad("SymmetryElement.act(wrong dim)", "z", lambda: K.act(torch.rand(2, 4)))
bad("SymmetryElement.act(meta)", "z", lambda: K.act(torch.zeros(2, 3, device="meta")))
bad("SymmetryElement.left(wrong rows)", "weight", lambda: K.left(torch.rand(4, 2)))
bad("SymmetryElement.right(wrong cols)", "weight", lambda: K.right(torch.rand(2, 4)))
bad("SymmetryElement @ other dim", "other", lambda: K @ symmetries.SymmetryElement.identity(2))
bad("SymmetryElement.allclose(tol=nan)", "tol", lambda: K.allclose(K, tol=math.nan))
bad("SymmetryGroup(kind='foo')", "kind", lambda: symmetries.SymmetryGroup("foo", 3))
bad("SymmetryGroup(dim=0)", "dim", lambda: symmetries.SymmetryGroup("permutation", 0))
bad("symmetry_group('nope')", "activation", lambda: symmetries.symmetry_group("nope", 3))
bad("symmetry_group(dim=2.5)", "dim", lambda: symmetries.symmetry_group("relu", 2.5))
bad("SymmetryGroup.sample(log_scale=nan)", "log_scale", lambda: symmetries.symmetry_group("relu", 3).sample(
    0, log_scale=math.nan))
bad("SymmetryGroup.sample(log_scale=1e6)", "log_scale", lambda: symmetries.symmetry_group("relu", 3).sample(
    0, log_scale=1e6))
bad("SymmetryGroup.sample(seed=2**64)", "seed", lambda: symmetries.symmetry_group("relu", 3).sample(2**64))
bad("SymmetryGroup.contains(tol=nan)", "tol", lambda: symmetries.symmetry_group("relu", 3).contains(
    torch.eye(3), tol=math.nan))
bad("SymmetryGroup.project(nan)", "matrix", lambda: symmetries.symmetry_group("relu", 3).project(
    torch.full((3, 3), math.nan)))
bad("intertwining_error(z int)", "z", lambda: symmetries.intertwining_error("relu", K, torch.ones(2, 3,
                                                                                                 dtype=torch.long)))
bad("intertwining_error(z wrong dim)", "z", lambda: symmetries.intertwining_error("relu", K, torch.ones(2, 4)))
bad("intertwines(tol=nan)", "tol", lambda: symmetries.intertwines("relu", K, torch.rand(2, 3), tol=math.nan))
bad("intertwines(tol=-1)", "tol", lambda: symmetries.intertwines("relu", K, torch.rand(2, 3), tol=-1.0))
bad("act_on_layer(bias wrong length)", "bias", lambda: symmetries.act_on_layer(torch.ones(3, 3), torch.ones(2), K))
bad("act_on_layer(k_out wrong dim)", "k_out", lambda: symmetries.act_on_layer(torch.ones(2, 3), None, K))
bad("apply_symmetry(ks wrong length)", "ks", lambda: symmetries.apply_symmetry(NET, [K, K]))
bad("apply_symmetry(ks set)", "ks", lambda: symmetries.apply_symmetry(MLP([3, 3, 3]), {None}))
bad("apply_symmetry(check='no')", "check", lambda: symmetries.apply_symmetry(NET, [None], check="no"))
bad("apply_symmetry(model=VGG)", "model", lambda: symmetries.apply_symmetry(VGGN, [None]))
bad("layer_symmetry_groups(None)", "model", lambda: symmetries.layer_symmetry_groups(None))
bad("sample_attention_symmetry(log_scale=inf)", "log_scale",
    lambda: symmetries.sample_attention_symmetry(MHA, 0, log_scale=math.inf))
bad("sample_attention_symmetry(layer=MLP)", "layer", lambda: symmetries.sample_attention_symmetry(NET))
bad("apply_attention_symmetry(element=3)", "element", lambda: symmetries.apply_attention_symmetry(MHA, 3))
legit("act_on_layer float64 weights", lambda: symmetries.act_on_layer(torch.rand(3, 3, dtype=torch.float64),
                                                                      torch.rand(3, dtype=torch.float64), K),
      lambda wb: wb[0].dtype == torch.float64 and wb[1].dtype == torch.float64)
legit("SymmetryElement.act float64", lambda: K.act(torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)),
      lambda y: y.dtype == torch.float64 and torch.allclose(y, (torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)
                                                               @ K.matrix().double().T)))
legit("SymmetryElement.act strided", lambda: (K.act(torch.rand(2, 6)[:, ::2]), ), lambda y: y[0].shape == (2, 3))
legit("SymmetryElement(perm np.int32)", lambda: symmetries.SymmetryElement(np.array([1, 0, 2], dtype=np.int32)).dim,
      lambda d: d == 3)

# == submodels =====================================================================================
bad("find_inactive(tol=nan)", "tol", lambda: submodels.find_inactive(NET, tol=math.nan))
bad("find_inactive(tol=-1)", "tol", lambda: submodels.find_inactive(NET, tol=-1))
bad("find_inactive(model=VGG)", "model", lambda: submodels.find_inactive(VGGN))
bad("find_clones(tol='x')", "tol", lambda: submodels.find_clones(NET, tol="x"))
bad("reduce(max_passes=0)", "max_passes", lambda: submodels.reduce(NET, max_passes=0))
bad("reduce(max_passes=2.5)", "max_passes", lambda: submodels.reduce(NET, max_passes=2.5))
bad("reduce(model=None)", "model", lambda: submodels.reduce(None))
bad("reduce(tol=inf)", "tol", lambda: submodels.reduce(NET, tol=math.inf))
bad("plant_degenerate(n_dead=10**9)", "n_dead", lambda: submodels.plant_degenerate(NET, n_dead=10**9))
bad("plant_degenerate(n_dead=-1)", "n_dead", lambda: submodels.plant_degenerate(NET, n_dead=-1))
bad("plant_degenerate(n_clones=1.5)", "n_clones", lambda: submodels.plant_degenerate(NET, n_clones=1.5))
bad("plant_degenerate(shuffle='no')", "shuffle", lambda: submodels.plant_degenerate(NET, shuffle="no"))
bad("plant_degenerate(seed=-5)", "seed", lambda: submodels.plant_degenerate(NET, seed=-5))
bad("Reduction.embed(wrong width)", "h", lambda: submodels.reduce(NET).embed(1, torch.rand(2, 9)))
bad("Reduction.diagram_errors(x int)", "x",
    lambda: submodels.reduce(NET).diagram_errors(torch.ones(2, 3, dtype=torch.long)))
bad("Reduction.diagram_errors(x wrong dim)", "x", lambda: submodels.reduce(NET).diagram_errors(torch.rand(2, 5)))
legit("reduce on a float64 MLP", lambda: submodels.reduce(MLP([3, 4, 3], seed=1).double()).diagram_errors(
    torch.rand(4, 3, dtype=torch.float64)), lambda d: max(d.values()) < 1e-9)

# == matching ======================================================================================
bad("invert_permutation(repeats)", "p", lambda: matching.invert_permutation(torch.tensor([0, 0, 1])))
bad("invert_permutation(float)", "p", lambda: matching.invert_permutation(torch.tensor([1.0, 0.0])))
bad("invert_permutation(2-D)", "p", lambda: matching.invert_permutation(torch.tensor([[1, 0]])))
bad("invert_permutation(out of range)", "p", lambda: matching.invert_permutation(torch.tensor([0, 5])))
bad("involution_distance(repeats)", "p", lambda: matching.involution_distance(torch.tensor([0, 0])))
bad("involution_distance(float)", "p", lambda: matching.involution_distance(torch.tensor([0.5, 1.0])))
bad("interpolate(alpha=nan)", "alpha", lambda: matching.interpolate(VGGN, VGGB, math.nan))
bad("interpolate(alpha='0.5')", "alpha", lambda: matching.interpolate(VGGN, VGGB, "0.5"))
bad("interpolate(different architectures)", "model_b", lambda: matching.interpolate(VGGN, NET, 0.5))
bad("repair(alpha=5)", "alpha", lambda: matching.repair(VGGN, VGGN, VGGB, IMG8N, alpha=5))
bad("repair(eps=-1)", "eps", lambda: matching.repair(VGGN, VGGN, VGGB, IMG8N, eps=-1))
bad("repair(images empty)", "images", lambda: matching.repair(VGGN, VGGN, VGGB, IMG8N[:0]))
bad("repair(images nan)", "images", lambda: matching.repair(VGGN, VGGN, VGGB,
                                                            torch.full((2, 3, 8, 8), math.nan)))
bad("repair(batch_size=0)", "batch_size", lambda: matching.repair(VGGN, VGGN, VGGB, IMG8N, batch_size=0))
bad("reset_bn(images empty)", "images", lambda: matching.reset_bn(VGGN, IMG8N[:0]))
bad("reset_bn(images 255 float)", "images", lambda: matching.reset_bn(VGGN, IMG8.float()))
bad("reset_bn(batch_size=1.5)", "batch_size", lambda: matching.reset_bn(VGGN, IMG8N, batch_size=1.5))
bad("reset_bn(images meta)", "images", lambda: matching.reset_bn(VGGN, torch.zeros(2, 3, 8, 8, device="meta")))
bad("channel_correlations(images wrong size)", "images",
    lambda: matching.channel_correlations(VGGN, VGGB, torch.randint(0, 256, (2, 3, 6, 6), dtype=torch.uint8)))
bad("channel_correlations(images int64)", "images",
    lambda: matching.channel_correlations(VGGN, VGGB, IMG8.long()))
bad("match_activations(return_correlations='no')", "return_correlations",
    lambda: matching.match_activations(VGGN, VGGB, IMG8N, return_correlations="no"))
bad("match_activations(batch_size=-1)", "batch_size", lambda: matching.match_activations(VGGN, VGGB, IMG8N,
                                                                                         batch_size=-1))
bad("channel_statistics(images 3-D)", "images", lambda: matching.channel_statistics(VGGN, IMG8N[0]))
bad("random_permutations(seed=-1)", "seed", lambda: matching.random_permutations(SPEC, seed=-1))
bad("random_permutations(spec=VGG)", "spec", lambda: matching.random_permutations(VGGN))
bad("apply_permutation(perm wrong size)", "perms",
    lambda: matching.apply_permutation(VGGN, {k: torch.arange(v + 1) for k, v in SPEC.sizes.items()}))
bad("apply_permutation(perm not a permutation)", "perms",
    lambda: matching.apply_permutation(VGGN, {k: torch.zeros(v, dtype=torch.long) for k, v in SPEC.sizes.items()}))
bad("apply_permutation(unknown key)", "perms", lambda: matching.apply_permutation(VGGN, {"zz": torch.arange(2)}))
bad("apply_permutation(float perm)", "perms",
    lambda: matching.apply_permutation(VGGN, {k: torch.arange(v).float() for k, v in SPEC.sizes.items()}))
bad("permutation_spec(unsupported)", "model", lambda: matching.permutation_spec(torch.nn.Linear(2, 2)))
bad("identity_permutations(None)", "spec", lambda: matching.identity_permutations(None))
legit("invert_permutation int32", lambda: matching.invert_permutation(torch.tensor([2, 0, 1], dtype=torch.int32)),
      lambda q: q.tolist() == [1, 2, 0])
legit("invert_permutation non-contiguous", lambda: matching.invert_permutation(torch.tensor([2, 9, 0, 9, 1])[::2]),
      lambda q: q.tolist() == [1, 2, 0])
legit("interpolate(alpha=np.float64)", lambda: matching.interpolate(VGGN, VGGN, np.float64(0.3)),
      lambda m: all(torch.allclose(a, b) for a, b in zip(m.state_dict().values(), VGGN.state_dict().values())))
legit("apply then invert random permutations is the identity function", lambda: (
    lambda p: matching.apply_permutation(matching.apply_permutation(VGGN.eval(), p),
                                         {k: matching.invert_permutation(v) for k, v in p.items()}))(
    matching.random_permutations(SPEC, 3)).eval()(images.prepare_images(IMG8)),
    lambda y: torch.allclose(y, VGGN.eval()(images.prepare_images(IMG8)), atol=1e-5))

# == models ========================================================================================
bad("MLP(widths generator)", "widths", lambda: MLP(w for w in [3, 4]))
bad("MLP(widths string)", "widths", lambda: MLP("343"))
bad("MLP(widths 0)", "widths", lambda: MLP([3, 0, 2]))
bad("MLP(widths huge)", "widths", lambda: MLP([3, 10**12, 2]))
bad("MLP(one width)", "widths", lambda: MLP([3]))
bad("MLP(activation unknown)", "activations", lambda: MLP([3, 2], activations="swish"))
bad("MLP(activations wrong count)", "activations", lambda: MLP([3, 2, 2], activations=["relu"] * 5))
bad("MLP(bias='no')", "bias", lambda: MLP([3, 2], bias="no"))
bad("MLP(seed=2**70)", "seed", lambda: MLP([3, 2], seed=2**70))
bad("MLP(seed=-1)", "seed", lambda: MLP([3, 2], seed=-1))
bad("MLP(seed=1.5)", "seed", lambda: MLP([3, 2], seed=1.5))
bad("MLP forward(int x)", "x", lambda: NET(torch.ones(2, 3, dtype=torch.int32)))
bad("MLP forward(complex x)", "x", lambda: NET(torch.ones(2, 3, dtype=torch.cfloat)))
bad("MLP forward(wrong features)", "x", lambda: NET(torch.ones(2, 5)))
bad("MLP forward(numpy)", "x", lambda: NET(np.ones((2, 3), dtype=np.float32)))
bad("MLP latents(upto=9)", "upto", lambda: NET.latents(X3, upto=9))
bad("MLP latents(upto=1.5)", "upto", lambda: NET.latents(X3, upto=1.5))
bad("MLP prefix(0)", "i", lambda: NET.prefix(0))
bad("MLP prefix('1')", "i", lambda: NET.prefix("1"))
bad("VGG(config set)", "config", lambda: VGG({4, 8}))
bad("VGG(config unknown name)", "config", lambda: VGG("huge"))
bad("VGG(config bad entry)", "config", lambda: VGG([4, "X"]))
bad("VGG(width=nan)", "width", lambda: VGG([4], width=math.nan))
bad("VGG(width=0)", "width", lambda: VGG([4], width=0))
bad("VGG(width=1e9)", "width", lambda: VGG([4], width=1e9))
bad("VGG(num_classes=0)", "num_classes", lambda: VGG([4], num_classes=0))
bad("VGG(image_size=1.5)", "image_size", lambda: VGG([4], image_size=1.5))
bad("VGG(batchnorm=1)", "batchnorm", lambda: VGG([4], batchnorm=1))
bad("VGG forward(wrong image size)", "x", lambda: VGGN(torch.rand(2, 3, 6, 6)))
bad("VGG forward(uint8)", "x", lambda: VGGN(IMG8))
bad("VGG forward(3-D)", "x", lambda: VGGN(torch.rand(3, 8, 8)))
bad("MirrorGCNN(fixed_fraction=2)", "fixed_fraction", lambda: MirrorGCNN([4], image_size=8, fixed_fraction=2.0))
bad("MirrorGCNN(fixed_fraction=nan)", "fixed_fraction",
    lambda: MirrorGCNN([4], image_size=8, fixed_fraction=math.nan))
bad("channel_involution(fixed > channels)", "fixed", lambda: channel_involution(4, 6))
bad("channel_involution(odd pairs)", "fixed", lambda: channel_involution(4, 1))
bad("channel_involution(channels=-2)", "channels", lambda: channel_involution(-2, 0))
bad("flip_filters(MLP)", "model", lambda: flip_filters(NET))
bad("mirror_invariance_error(x int)", "x", lambda: mirror_invariance_error(VGGN, IMG8))
bad("warm_batchnorm(batches=0)", "batches", lambda: warm_batchnorm(VGGN, batches=0))
bad("warm_batchnorm(scale=nan)", "scale", lambda: warm_batchnorm(VGGN, scale=math.nan))
bad("warm_batchnorm(batch_size=10**9)", "batch_size", lambda: warm_batchnorm(VGGN, batch_size=10**9))
bad("SameConv(kernel=4)", "kernel", lambda: SameConv(2, 2, 8, kernel=4))
bad("SameConv(kernel=0)", "kernel", lambda: SameConv(2, 2, 8, kernel=0))
bad("conv_net(channels set)", "channels", lambda: conv_net({2, 3}, 8))
bad("conv_net(size=0)", "size", lambda: conv_net([2, 3], 0))
bad("MultiHeadAttention(heads=0)", "heads", lambda: MultiHeadAttention(4, 3, 3, 0))
bad("MultiHeadAttention(d_k=-1)", "d_k", lambda: MultiHeadAttention(4, 3, 3, 2, d_k=-1))
bad("MultiHeadAttention(positional='no')", "positional", lambda: MultiHeadAttention(4, 3, 3, 2, positional="no"))
bad("MultiHeadAttention forward(int)", "x", lambda: MHA(torch.ones(2, 4, 3, dtype=torch.long)))
bad("MultiHeadAttention forward(wrong tokens)", "x", lambda: MHA(torch.ones(2, 5, 3)))
bad("MultiHeadAttention forward(meta)", "x", lambda: MHA(torch.ones(2, 4, 3, device="meta")))
bad("MultiHeadAttention attention_maps(int)", "x", lambda: MHA.attention_maps(torch.ones(2, 4, 3, dtype=torch.long)))
bad("AttentionNetwork(heads wrong count)", "heads", lambda: AttentionNetwork(4, [3, 3, 3], heads=[2]))
bad("AttentionNetwork(dims set)", "dims", lambda: AttentionNetwork(4, {3, 5}))
bad("EquivariantDense(rho_out other group)", "rho_out", lambda: EquivariantDense(REG3, actions.regular(D4)))
bad("EquivariantDense(bias='yes')", "bias", lambda: EquivariantDense(REG3, REG3, bias="yes"))
bad("EquivariantMLP(actions set)", "actions", lambda: EquivariantMLP({REG3}))
bad("EquivariantMLP(one action)", "actions", lambda: EquivariantMLP([REG3]))
bad("DeepSetsLayer(n=0)", "n", lambda: DeepSetsLayer(0, 2, 2))
bad("DeepSetsLayer forward(int)", "x", lambda: DeepSetsLayer(3, 2, 2)(torch.ones(1, 3, 2, dtype=torch.long)))
bad("GraphLayer(non-square adjacency)", "adjacency", lambda: GraphLayer(torch.ones(3, 4), 2, 2))
bad("GraphLayer(adjacency nan)", "adjacency", lambda: GraphLayer(torch.full((3, 3), math.nan), 2, 2))
bad("cycle_graph(n=2)", "n", lambda: cycle_graph(2))
bad("cycle_graph(n=10**6)", "n", lambda: cycle_graph(10**6))
bad("cycle_automorphisms(n=2.5)", "n", lambda: cycle_automorphisms(2.5))
bad("adjunction_fit(x int)", "x", lambda: adjunction_fit(DeepSetsLayer(3, 2, 2), actions.token_permutation(
    groups.symmetric(3), 3, 2), groups.symmetric(3).elements[1], torch.ones(4, 3, 2, dtype=torch.long)))
bad("ResidualBlock(hidden=0)", "hidden", lambda: ResidualBlock(3, 0))
bad("plant_residual_invariant(d=0)", "d", lambda: plant_residual_invariant(0, 2))
legit("MLP float64 input", lambda: NET(X3.double()), lambda y: y.dtype == torch.float32 and torch.allclose(
    y, NET(X3), atol=1e-6))
legit("MLP batch of one", lambda: NET(X3[:1]), lambda y: torch.allclose(y, NET(X3)[:1], atol=1e-6))
legit("MLP strided input", lambda: NET(torch.cat([X3, X3], 1)[:, ::2]),
      lambda y: torch.allclose(y, NET(torch.cat([X3, X3], 1)[:, ::2].contiguous()), atol=1e-6))
legit("MLP 1-D input (one vector)", lambda: NET(X3[0]), lambda y: y.shape in ((3,), (1, 3)))
legit("VGG batch of one in eval", lambda: VGGN.eval()(torch.rand(1, 3, 8, 8)), lambda y: y.shape == (1, 3))
legit("VGG channels-last input", lambda: VGGN.eval()(torch.rand(2, 3, 8, 8).to(memory_format=torch.channels_last)),
      lambda y: y.shape == (2, 3))
legit("MHA float64 input", lambda: MHA(torch.rand(2, 4, 3, dtype=torch.float64)), lambda y: y.shape == (2, 4, 3))
legit("MLP under a cpu default device", lambda: (torch.set_default_device("cpu"), NET(X3))[1],
      lambda y: torch.allclose(y, NET(X3)))

# == latent ========================================================================================
bad("latent_actions(method='nope')", "method", lambda: latent_actions(NET, REG3, REG3, method="nope"))
bad("latent_actions(rho_in wrong dim)", "rho_in", lambda: latent_actions(MLP([4, 3, 3]), REG3, REG3))
bad("latent_actions(x int)", "x", lambda: latent_actions(NET, REG3, REG3, method="activations",
                                                         x=torch.ones(4, 3, dtype=torch.long)))
bad("latent_actions(reduce='no')", "reduce", lambda: latent_actions(NET, REG3, REG3, reduce="no"))
bad("latent_actions(tol=nan)", "tol", lambda: latent_actions(NET, REG3, REG3, tol=math.nan))
bad("latent_actions(model=None)", "model", lambda: latent_actions(None, REG3, REG3))
bad("hidden_representation(signed='yes')", "signed", lambda: plant.hidden_representation(C3, 3, "yes"))
bad("hidden_representation(dim=2.5)", "dim", lambda: plant.hidden_representation(C3, 2.5, True))
bad("equivariant_weight(method='x')", "method", lambda: plant.equivariant_weight(REG3, REG3, method="x"))
bad("plant_equivariant(widths floats)", "widths", lambda: plant.plant_equivariant(C3, REG3, REG3, [3, 4.5, 3]))
bad("plant_equivariant(widths set)", "widths", lambda: plant.plant_equivariant(C3, REG3, REG3, {3, 6}))
bad("plant_equivariant(gain=nan)", "gain", lambda: plant.plant_equivariant(C3, REG3, REG3, [3, 6, 3], gain=math.nan))
bad("plant_equivariant(bias_scale=-1)", "bias_scale",
    lambda: plant.plant_equivariant(C3, REG3, REG3, [3, 6, 3], bias_scale=-1.0))
bad("plant_equivariant(hide=1)", "hide", lambda: plant.plant_equivariant(C3, REG3, REG3, [3, 6, 3], hide=1))
bad("plant_equivariant(widths mismatch rho_in)", "widths",
    lambda: plant.plant_equivariant(C3, REG3, REG3, [4, 6, 3]))
bad("plant_equivariant(hidden unknown)", "hidden",
    lambda: plant.plant_equivariant(C3, REG3, REG3, [3, 6, 3], hidden="weird"))
bad("rotate(non-square)", "x", lambda: lconv.rotate(torch.ones(1, 2, 4, 3), groups.cyclic(4)[1]))
bad("rotate(g of C3)", "g", lambda: lconv.rotate(torch.ones(1, 2, 4, 4), G1))
bad("c4_channel_action(blocks unknown)", "blocks", lambda: lconv.c4_channel_action(["zz"]))
bad("c4_channel_action(blocks string)", "blocks", lambda: lconv.c4_channel_action("regular"))
bad("plant_c4_conv(size=0)", "size", lambda: lconv.plant_c4_conv([["trivial"], ["regular"]], size=0))
bad("plant_c4_conv(kernel=2)", "kernel", lambda: lconv.plant_c4_conv([["trivial"], ["regular"]], kernel=2))
bad("plant_c4_conv(hide='no')", "hide", lambda: lconv.plant_c4_conv([["trivial"], ["regular"]], hide="no"))
bad("act_on_images(x 3-D)", "x", lambda: lconv.act_on_images(groups.cyclic(4)[1], None, torch.ones(2, 4, 4)))
bad("recover_conv_actions(tol=nan)", "tol", lambda: lconv.recover_conv_actions(
    lconv.plant_c4_conv([["trivial"], ["regular"]]).model, torch.rand(2, 1, 7, 7), tol=math.nan))
bad("recover_conv_actions(x int)", "x", lambda: lconv.recover_conv_actions(
    lconv.plant_c4_conv([["trivial"], ["regular"]]).model, torch.ones(2, 1, 7, 7, dtype=torch.long)))
bad("pair_set_symmetries(d=0)", "d", lambda: lgen.pair_set_symmetries(0))
bad("pair_set_symmetries(d=10**4)", "d", lambda: lgen.pair_set_symmetries(10**4))
bad("token_channel_candidates(n=-1)", "n", lambda: lgen.token_channel_candidates(-1, 2))
bad("token_channel_candidates(huge)", "n", lambda: lgen.token_channel_candidates(12, 12))
bad("relating_sequences(layers length mismatch)", "layers_prime",
    lambda: lgen.relating_sequences([NET], [NET, NET], [torch.eye(3)], X3))
bad("relating_sequences(candidates set)", "candidates",
    lambda: lgen.relating_sequences(list(NET.layers), list(NET.layers), {1}, X3))
bad("relating_sequences(tol=nan)", "tol", lambda: lgen.relating_sequences([NET], [NET], [], X3,
                                                                         tol=math.nan))
bad("fit_linear_action(int features)", "features",
    lambda: lstsq.fit_linear_action(torch.ones(10, 3, dtype=torch.long), torch.ones(10, 3, dtype=torch.long)))
bad("fit_linear_action(shape mismatch)", "features_transformed",
    lambda: lstsq.fit_linear_action(torch.rand(10, 3), torch.rand(9, 3)))
bad("fit_linear_action(fit_fraction=0)", "fit_fraction",
    lambda: lstsq.fit_linear_action(torch.rand(10, 3), torch.rand(10, 3), fit_fraction=0))
bad("fit_linear_action(fit_fraction=nan)", "fit_fraction",
    lambda: lstsq.fit_linear_action(torch.rand(10, 3), torch.rand(10, 3), fit_fraction=math.nan))
bad("fit_linear_action(ridge=-1)", "ridge", lambda: lstsq.fit_linear_action(torch.rand(10, 3), torch.rand(10, 3),
                                                                             ridge=-1))
bad("fit_linear_action(solver='x')", "solver", lambda: lstsq.fit_linear_action(torch.rand(10, 3), torch.rand(10, 3),
                                                                                solver="x"))
bad("fit_linear_action(nan features)", "features",
    lambda: lstsq.fit_linear_action(torch.full((10, 3), math.nan), torch.rand(10, 3)))
bad("fit_linear_action(empty)", "features", lambda: lstsq.fit_linear_action(torch.rand(0, 3), torch.rand(0, 3)))
bad("linear_equivariance_error(samples=0)", "samples",
    lambda: lstsq.linear_equivariance_error(NET, REG3, G1, samples=0))
bad("linear_equivariance_error(samples=2.5)", "samples",
    lambda: lstsq.linear_equivariance_error(NET, REG3, G1, samples=2.5))
bad("linear_equivariance_error(sampling='x')", "sampling",
    lambda: lstsq.linear_equivariance_error(NET, REG3, G1, samples=20, sampling="x"))
bad("linear_equivariance_error(noise_scale=nan)", "noise_scale",
    lambda: lstsq.linear_equivariance_error(NET, REG3, G1, samples=20, noise_scale=math.nan))
bad("linear_equivariance_error(chunk_size=0)", "chunk_size",
    lambda: lstsq.linear_equivariance_error(NET, REG3, G1, samples=20, chunk_size=0))
bad("linear_equivariance_error(samples int tensor)", "samples",
    lambda: lstsq.linear_equivariance_error(NET, REG3, G1, samples=torch.ones(20, 3, dtype=torch.long)))
bad("paired_features(use_adjoint='no')", "use_adjoint",
    lambda: lstsq.paired_features(NET, REG3, G1, samples=20, use_adjoint="no"))
bad("paired_features(g other group)", "g", lambda: lstsq.paired_features(NET, REG3, D4.elements[1], samples=20))
bad("relative_errors(chunk=0)", "chunk", lambda: lstsq.relative_errors(torch.eye(3), torch.rand(4, 3),
                                                                        torch.rand(4, 3), chunk=0))
bad("relative_errors(shape mismatch)", "X", lambda: lstsq.relative_errors(torch.eye(3), torch.rand(4, 2),
                                                                           torch.rand(4, 3)))
bad("row_space_factor(1-D)", "M", lambda: lstsq.row_space_factor(torch.rand(3)))
bad("assign(similarity 1-D)", "similarity", lambda: units.assign(torch.rand(3), True))
bad("assign(signed='no')", "signed", lambda: units.assign(torch.rand(3, 3), "no"))
bad("assign(similarity nan)", "similarity", lambda: units.assign(torch.full((3, 3), math.nan), True))
bad("match_units(shape mismatch)", "B", lambda: units.match_units(torch.rand(3, 4), torch.rand(2, 4)))
bad("match_units(scaled='yes')", "scaled", lambda: units.match_units(torch.rand(3, 4), torch.rand(3, 4),
                                                                     scaled="yes"))
bad("match_units(int)", "A", lambda: units.match_units(torch.ones(3, 4, dtype=torch.long),
                                                       torch.ones(3, 4, dtype=torch.long)), exc=())
bad("maybe_degenerate(cos_tol=nan)", "cos_tol", lambda: lw.maybe_degenerate(NET, cos_tol=math.nan))
bad("recover_by_weights(check_clones='no')", "check_clones",
    lambda: lw.recover_by_weights(NET, REG3, REG3, check_clones="no"))
bad("recover_by_weights(tol=-1)", "tol", lambda: lw.recover_by_weights(NET, REG3, REG3, tol=-1))
bad("layer_kind('zz')", "activation", lambda: lw.layer_kind("zz"))
bad("mlp_layers(VGG)", "model", lambda: lw.mlp_layers(VGGN))
bad("MonomialAction(perm wrong shape)", "perm", lambda: lres.MonomialAction(C3, torch.zeros(2, 3, dtype=torch.long),
                                                                            torch.ones(2, 3)))
bad("MonomialAction(perm not permutations)", "perm",
    lambda: lres.MonomialAction(C3, torch.zeros(3, 3, dtype=torch.long), torch.ones(3, 3)))
bad("homomorphism_error(num_probes=-1)", "num_probes", lambda: lres.homomorphism_error(REG3, num_probes=-1))
bad("layer_errors(hidden wrong count)", "hidden", lambda: lres.layer_errors(NET, REG3, REG3, [], x=X3))
bad("layer_errors(x int)", "x", lambda: lres.layer_errors(NET, REG3, REG3, [REG3], x=torch.ones(2, 3,
                                                                                              dtype=torch.long)))
bad("patchify(patch=3 not dividing)", "patch", lambda: images.patchify(torch.rand(2, 3, 8, 8), 3))
bad("patchify(patch=0)", "patch", lambda: images.patchify(torch.rand(2, 3, 8, 8), 0))
bad("patchify(images 2-D)", "images", lambda: images.patchify(torch.rand(8, 8), 2))
bad("unpatchify(shape mismatch)", "tokens", lambda: images.unpatchify(torch.rand(2, 16, 12), (3, 8, 6), 2))
bad("patch_mirror_action(patch=5)", "patch", lambda: latt.patch_mirror_action((3, 8, 8), 5))
bad("TokenAction(token_perms wrong count)", "token_perms",
    lambda: latt.TokenAction(C3, None, token_dim=2, token_perms=np.array([[0, 1, 2]])))
bad("TokenAction(token_dim=0)", "token_dim",
    lambda: latt.TokenAction(C3, None, token_dim=0, token_perms=np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1]])))
bad("recover_token_permutation(shape mismatch)", "maps_gx",
    lambda: latt.recover_token_permutation(torch.rand(2, 4, 4), torch.rand(2, 3, 3)))
bad("hide_attention_network(log_scale=nan)", "log_scale",
    lambda: latt.hide_attention_network(AttentionNetwork(4, [3, 3]), log_scale=math.nan))
bad("hide_attention_network(heads='no')", "heads",
    lambda: latt.hide_attention_network(AttentionNetwork(4, [3, 3]), heads="no"))
bad("plant_attention_equivariant(d_k=0)", "d_k", lambda: latt.plant_attention_equivariant(
    latt.patch_mirror_action((3, 4, 4), 2), np.array([[0, 1], [1, 0]]), d_k=0))
bad("plant_attention_equivariant(positional='yes')", "positional", lambda: latt.plant_attention_equivariant(
    latt.patch_mirror_action((3, 4, 4), 2), np.array([[0, 1], [1, 0]]), positional="yes"))
bad("recover_attention_action(x int)", "x", lambda: latt.recover_attention_action(
    MultiHeadAttention(4, 12, 12, 2), latt.patch_mirror_action((3, 4, 4), 2), torch.ones(3, 4, 12,
                                                                                       dtype=torch.long)))
legit("fit_linear_action float64 exact", lambda: (lambda X: lstsq.fit_linear_action(
    X, X @ torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=torch.float64)))(
    torch.rand(40, 2, dtype=torch.float64)), lambda f: f.median_error < 1e-8)
legit("match_units non-contiguous", lambda: units.match_units(torch.rand(6, 3).T[:, :], torch.rand(6, 3).T),
      lambda r: len(r) == 3)
legit("plant_equivariant then latent_actions recovers", lambda: latent_actions(
    *((lambda mh: (mh[0], REG3, REG3))(plant.plant_equivariant(C3, REG3, REG3, [3, 6, 3], seed=2)))),
    lambda la: la.ok)
legit("rotate float64", lambda: lconv.rotate(torch.rand(1, 1, 4, 4, dtype=torch.float64), groups.cyclic(4)[1]),
      lambda y: y.dtype == torch.float64)

# == train =========================================================================================
bad("TrainConfig(epochs=0)", "epochs", lambda: tiny_cfg(epochs=0))
bad("TrainConfig(lr=nan)", "lr", lambda: tiny_cfg(lr=math.nan))
bad("TrainConfig(lr=1e30)", "lr", lambda: tiny_cfg(lr=1e30))
bad("TrainConfig(batch_size=2.5)", "batch_size", lambda: tiny_cfg(batch_size=2.5))
bad("TrainConfig(augment_mirror='no')", "augment_mirror", lambda: tiny_cfg(augment_mirror="no"))
bad("TrainConfig(seed=2**64)", "seed", lambda: tiny_cfg(seed=2**64))
bad("image_preset(std contains 0)", "std", lambda: tr.image_preset((3, 8, 8), std=(0.2, 0.0, 0.2)))
bad("image_preset(mean set)", "mean", lambda: tr.image_preset((3, 8, 8), mean={0.1, 0.2, 0.3}))
bad("image_preset(axis='diag')", "axis", lambda: tr.image_preset((3, 8, 8), axis="diag"))
bad("Normalize(mean and std of other lengths)", "mean", lambda: tr.Normalize((0.5, 0.5), (0.2, 0.2, 0.2)))
bad("TrainConfig(schedule='x')", "schedule", lambda: tiny_cfg(schedule="x"))
bad("TrainConfig(penalty_samples=-1)", "penalty_samples", lambda: tiny_cfg(penalty_samples=-1))
bad("TrainConfig(noise_std=0)", "noise_std", lambda: tiny_cfg(noise_std=0.0))
bad("TrainConfig(first_weight_decay=nan)", "first_weight_decay", lambda: tiny_cfg(first_weight_decay=math.nan))
bad("TrainConfig(penalty_noise without penalty)", "penalty_noise", lambda: tiny_cfg(penalty_noise=1.0))
bad("TrainConfig(after_step=3)", "after_step", lambda: tiny_cfg(after_step=3))
bad("TrainConfig(epochs=10**12)", "epochs", lambda: vgg_train((IMG32, LAB), tiny_cfg(epochs=10**12)))
bad("train(config dict)", "config", lambda: vgg_train((IMG32, LAB), dict(CFG)))
bad("train(data 1 tensor)", "data", lambda: vgg_train(IMG32))
bad("train(labels float)", "labels", lambda: vgg_train((IMG32, LAB.float())))
bad("train(labels negative)", "labels", lambda: vgg_train((IMG32, LAB - 1)))
bad("train(labels >= classes)", "labels", lambda: vgg_train((IMG32, LAB + 5)))
bad("train(labels wrong count)", "labels", lambda: vgg_train((IMG32, LAB[:3])))
bad("train(images int64)", "images", lambda: vgg_train((IMG32.long(), LAB)))
bad("train(images 0..255 float)", "images", lambda: vgg_train((IMG32.float(), LAB)))
bad("train(images nan)", "images", lambda: vgg_train((torch.full((4, 3, 8, 8), math.nan), LAB)))
bad("train(images empty)", "images", lambda: vgg_train((IMG32[:0], LAB[:0])))
bad("train(images meta)", "images", lambda: vgg_train((torch.zeros(4, 3, 8, 8, device="meta"), LAB)))
bad("train(images of another shape than the symmetry's)", "images",
    lambda: vgg_train((IMG32, LAB), symmetry=tr.image_preset((3, 4, 4))["symmetry"]))
bad("train(device='cpu:3')", "device", lambda: vgg_train((IMG32, LAB), device="cpu:3"))
bad("train(device='meta')", "device", lambda: vgg_train((IMG32, LAB), device="meta"))
bad("train(device='tpu')", "device", lambda: vgg_train((IMG32, LAB), device="tpu"))
bad("train(progress='no')", "progress", lambda: vgg_train((IMG32, LAB), progress="no"))
bad("train(checkpoint_every=0)", "checkpoint_every", lambda: vgg_train((IMG32, LAB), checkpoint_every=0))
bad("train(eval_data 1 tensor)", "eval_data", lambda: vgg_train((IMG32, LAB), eval_data=IMG32))
bad("train(eval_data labels float)", "eval labels", lambda: vgg_train((IMG32, LAB), eval_data=(IMG32, LAB.float())))
bad("train(hooks after_epoch=3)", "hooks", lambda: vgg_train((IMG32, LAB), hooks={"after_epoch": 3}))
bad("train(hooks unknown key)", "hooks", lambda: vgg_train((IMG32, LAB), hooks={"before": print}))
bad("train(after-step hook without its name)", "after_step",
    lambda: vgg_train((IMG32, LAB), hooks={"after_step": lambda model, step: None}))
bad("train(preprocess=3)", "preprocess", lambda: vgg_train((IMG32, LAB), preprocess=3))
bad("train(augmentation without symmetry)", "symmetry",
    lambda: vgg_train((IMG32, LAB), tiny_cfg(augment_mirror=True), symmetry=None))
bad("train(model=None)", "model", lambda: tr.train(None, (IMG32, LAB), tiny_cfg(), progress=False, **P8))
bad("train(symmetry 1 action)", "symmetry", lambda: tr.train(NET, (X3, None), tiny_cfg(task="autoencode"),
                                                             progress=False, symmetry=REG3))
bad("train(lr diverging: 1e6)", "lr", lambda: vgg_train((IMG32, LAB), tiny_cfg(lr=1e6, epochs=3)),
    exc=(FloatingPointError, RuntimeError))
bad("evaluate_accuracy(batch_size=0)", "batch_size", lambda: tr.evaluate_accuracy(tiny_vgg(), IMG32, LAB,
                                                                                  batch_size=0))
bad("evaluate_accuracy(labels int32 >= K)", "labels",
    lambda: tr.evaluate_accuracy(tiny_vgg(), IMG32, (LAB + 7).int()))
bad("evaluate_accuracy(labels float)", "labels", lambda: tr.evaluate_accuracy(tiny_vgg(), IMG32, LAB.float()))
bad("evaluate_accuracy(images empty)", "images", lambda: tr.evaluate_accuracy(tiny_vgg(), IMG32[:0], LAB[:0]))
bad("evaluate_accuracy(images 255 float)", "images", lambda: tr.evaluate_accuracy(tiny_vgg(), IMG32.float(), LAB))
bad("evaluate_accuracy(device='meta')", "device", lambda: tr.evaluate_accuracy(tiny_vgg(), IMG32, LAB,
                                                                               device="meta"))
bad("evaluate_accuracy(mean wrong length)", "mean", lambda: tr.evaluate_accuracy(tiny_vgg(), IMG32, LAB,
                                                                                 mean=(0.5, 0.5)))
bad("evaluate_accuracy(std=0)", "std", lambda: tr.evaluate_accuracy(tiny_vgg(), IMG32, LAB, std=(0, 0, 0)))
bad("prepare_images(int64)", "images", lambda: images.prepare_images(IMG32.long()))
bad("prepare_images(bool)", "images", lambda: images.prepare_images(IMG32.bool()))
bad("prepare_images(complex)", "images", lambda: images.prepare_images(IMG32.to(torch.cfloat)))
bad("prepare_images(0..255 float)", "images", lambda: images.prepare_images(IMG32.float()))
bad("prepare_images(2-D)", "images", lambda: images.prepare_images(IMG32[0, 0]))
bad("prepare_images(1 channel uint8)", "images", lambda: images.prepare_images(IMG32[:, :1]))
bad("prepare_images(mean nan)", "mean", lambda: images.prepare_images(IMG32, mean=(math.nan, 0.5, 0.5)))
bad("prepare_images(std negative)", "std", lambda: images.prepare_images(IMG32, std=(-1.0, 1.0, 1.0)))
bad("prepare_images(meta)", "images", lambda: images.prepare_images(torch.zeros(2, 3, 4, 4, device="meta")))
bad("mirror_images(axis='diag')", "axis", lambda: images.mirror_images(torch.rand(2, 3, 4, 4), "diag"))
bad("mirror_images(2-D not 3072 wide)", "x", lambda: images.mirror_images(torch.rand(3, 4)))
bad("penalty_term(kind='x')", "kind", lambda: tr.penalty_term(tiny_vgg(), torch.rand(2, 3, 8, 8), "x"))
bad("learning_rate_at(progress=nan)", "progress", lambda: tr.learning_rate_at(tiny_cfg(), math.nan))
bad("learning_rate_at(progress=2)", "progress", lambda: tr.learning_rate_at(tiny_cfg(), 2.0))
bad("penalty_weight_at(progress='a')", "progress", lambda: tr.penalty_weight_at(tiny_cfg(), "a"))
bad("cached_train(build_model not callable)", "build_model",
    lambda: tr.cached_train(tiny_vgg(), tiny_cfg(), (IMG32, LAB), progress=False, **P8))
bad("cached_train(data 3-tuple)", "data",
    lambda: tr.cached_train(tiny_vgg, tiny_cfg(), (IMG32, LAB, LAB), progress=False, **P8))
bad("cached_train(cache_key_extra set)", "cache_key_extra",
    lambda: tr.cached_train(tiny_vgg, tiny_cfg(), (IMG32, LAB), cache_key_extra={"a": {1, 2}}, progress=False,
                            **P8))
bad("cached_train(labels float)", "labels",
    lambda: tr.cached_train(tiny_vgg, tiny_cfg(), (IMG32, LAB.float()), progress=False, **P8))
bad("cached_train(preprocess without a key)", "preprocess",
    lambda: tr.cached_train(tiny_vgg, tiny_cfg(), (IMG32, LAB), progress=False, symmetry=P8["symmetry"],
                            preprocess=lambda x: x.float() / 255))
legit("train with requires_grad float images", lambda: vgg_train(
    ((IMG32.float() / 255).requires_grad_(), LAB)).history,
    lambda h: all(math.isfinite(v) for v in h["loss"]))
legit("train with int32 labels = int64 labels", lambda: (
    vgg_train((IMG32, LAB.int())).model.state_dict(), vgg_train((IMG32, LAB)).model.state_dict()),
    lambda ab: all(torch.equal(ab[0][k], ab[1][k]) for k in ab[0]))
legit("train with a batch of one image", lambda: vgg_train((IMG32[:1], LAB[:1]), tiny_cfg(batch_size=1)).history,
      lambda h: len(h["loss"]) == 1)
legit("train on non-contiguous images", lambda: (
    vgg_train((IMG32.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2), LAB)).model.state_dict(),
    vgg_train((IMG32, LAB)).model.state_dict()),
    lambda ab: all(torch.allclose(ab[0][k].float(), ab[1][k].float(), atol=1e-5) for k in ab[0]))
legit("train with flattened images under the preset = (N, C, H, W)", lambda: (
    tr.train(MLP([192, 4, 3], seed=0), (IMG32.float().div(255).flatten(1), LAB), tiny_cfg(augment_mirror=True),
             progress=False, symmetry=P8["symmetry"]).model.state_dict(),
    tr.train(MLP([192, 4, 3], seed=0), (IMG32.float().div(255), LAB), tiny_cfg(augment_mirror=True),
             progress=False, symmetry=P8["symmetry"]).model.state_dict()),
    lambda ab: all(torch.allclose(ab[0][k], ab[1][k], atol=1e-6) for k in ab[0]))
legit("evaluate_accuracy float [0,1] = uint8", lambda: (
    tr.evaluate_accuracy(tiny_vgg(), IMG32, LAB), tr.evaluate_accuracy(tiny_vgg(), IMG32.float() / 255, LAB)),
    lambda ab: ab[0] == ab[1])
legit("evaluate_accuracy float64 [0,1] images", lambda: tr.evaluate_accuracy(tiny_vgg(), IMG32.double() / 255, LAB),
      lambda a: 0 <= a <= 1)
legit("evaluate_accuracy batch_size 1 = 1000", lambda: (
    tr.evaluate_accuracy(tiny_vgg(), IMG32, LAB, batch_size=1), tr.evaluate_accuracy(tiny_vgg(), IMG32, LAB)),
    lambda ab: ab[0] == ab[1])
legit("prepare_images float64 in [0,1]", lambda: images.prepare_images(IMG32.double() / 255),
      lambda y: torch.allclose(y, images.prepare_images(IMG32), atol=1e-5))
legit("prepare_images strided uint8", lambda: images.prepare_images(IMG32[:, :, ::2, ::2]),
      lambda y: torch.allclose(y, images.prepare_images(IMG32[:, :, ::2, ::2].contiguous())))
legit("cached_train tiny, second call from cache with same weights", lambda: (
    tr.cached_train(tiny_vgg, tiny_cfg(), (IMG32, LAB), progress=False, **P8),
    tr.cached_train(tiny_vgg, tiny_cfg(), (IMG32, LAB), progress=False, **P8)),
    lambda ab: ab[1].from_cache and all(torch.equal(ab[0].model.state_dict()[k], ab[1].model.state_dict()[k])
                                        for k in ab[0].model.state_dict()))
legit("cached_train: transposed images are another run", lambda: (
    tr.cached_train(tiny_vgg, tiny_cfg(), (IMG32, LAB), progress=False, **P8),
    tr.cached_train(tiny_vgg, tiny_cfg(), (IMG32.transpose(2, 3), LAB), progress=False, **P8)),
    lambda ab: not ab[1].from_cache)

# == analysis ======================================================================================
bad("end_to_end_error(0..255 float)", "images", lambda: probes.end_to_end_error(tiny_vgg(), IMG32.float(),
                                                                                "classify"))
bad("end_to_end_error(task='x')", "task", lambda: probes.end_to_end_error(tiny_vgg(), IMG32, "x"))
bad("end_to_end_error(axis='x')", "axis", lambda: probes.end_to_end_error(tiny_vgg(), IMG32, "classify", "x"))
bad("end_to_end_error(images empty)", "images", lambda: probes.end_to_end_error(tiny_vgg(), IMG32[:0], "classify"))
bad("end_to_end_error(model=None)", "model", lambda: probes.end_to_end_error(None, IMG32, "classify"))
bad("input_spectrum(max_images=0)", "max_images", lambda: probes.input_spectrum(IMG8, max_images=0))
bad("input_spectrum(max_images=2.5)", "max_images", lambda: probes.input_spectrum(IMG8, max_images=2.5))
bad("input_spectrum(0..255 float)", "images", lambda: probes.input_spectrum(IMG8.float()))
bad("input_spectrum(list)", "images", lambda: probes.input_spectrum([1, 2]))
bad("mirror_symmetric_spectrum(axis='x')", "axis", lambda: probes.mirror_symmetric_spectrum(IMG8, axis="x"))
bad("mirror_symmetric_spectrum(max_images=-1)", "max_images",
    lambda: probes.mirror_symmetric_spectrum(IMG8, max_images=-1))
bad("whitening(eps=nan)", "eps", lambda: probes.whitening(torch.ones(3), torch.eye(3), eps=math.nan))
bad("whitening(eps='a')", "eps", lambda: probes.whitening(torch.ones(3), torch.eye(3), eps="a"))
bad("whitening(shape mismatch)", "evecs", lambda: probes.whitening(torch.ones(3), torch.eye(4)))
bad("whitening(evals nan)", "evals", lambda: probes.whitening(torch.full((3,), math.nan), torch.eye(3)))
bad("paired_latents(axes unknown)", "axes", lambda: probes.paired_latents(tiny_vgg(), torch.rand(2, 3, 8, 8),
                                                                          [1], ["diag"]))
bad("paired_latents(layers set)", "layers", lambda: probes.paired_latents(tiny_vgg(), torch.rand(2, 3, 8, 8),
                                                                          {1}, ["horizontal"]))
bad("paired_latents(layers 0)", "layers", lambda: probes.paired_latents(tiny_vgg(), torch.rand(2, 3, 8, 8),
                                                                        [0], ["horizontal"]))
bad("paired_latents(chunk=0)", "chunk", lambda: probes.paired_latents(tiny_vgg(), torch.rand(2, 3, 8, 8),
                                                                      [1], ["horizontal"], chunk=0))
bad("paired_latents(y int)", "y", lambda: probes.paired_latents(tiny_vgg(), IMG32, [1], ["horizontal"]))
bad("probe_inputs(kind='x')", "kind", lambda: probes.probe_inputs("x", 2, None, None, s=None))
bad("probe_inputs(n=0)", "n", lambda: probes.probe_inputs("noise", 0, None, None, s=None))
bad("table_lookup(missing row)", "network", lambda: tables.table_lookup([], "vgg", 1, "horizontal"),
    exc=(KeyError, LookupError))
bad("table_text(rows set)", "rows", lambda: tables.table_text({1}))
bad("html_table(align_right_from=-1)", "align_right_from", lambda: tables.html_table(["a"], [[1]], -1))
bad("html_table(ragged rows)", "rows", lambda: tables.html_table(["a", "b"], [[1]]))
bad("filter_pairing(W1 int)", "W1", lambda: filters.filter_pairing(torch.ones(4, 3, 3, 3, dtype=torch.long)))
bad("filter_pairing(threshold=nan)", "threshold", lambda: filters.filter_pairing(torch.rand(4, 3072),
                                                                                 threshold=math.nan))
bad("filter_pairing(threshold=2)", "threshold", lambda: filters.filter_pairing(torch.rand(4, 3072), threshold=2))
bad("filter_pairing(W1 3-D)", "W1", lambda: filters.filter_pairing(torch.rand(4, 3, 3)))
bad("filter_pairing(axis='x')", "axis", lambda: filters.filter_pairing(torch.rand(4, 3072), axis="x"))
bad("filter_pairing(W1 nan)", "W1", lambda: filters.filter_pairing(torch.full((4, 3072), math.nan)))
legit("end_to_end_error float [0,1] = uint8", lambda: (
    probes.end_to_end_error(tiny_vgg(), IMG32, "classify"),
    probes.end_to_end_error(tiny_vgg(), IMG32.float() / 255, "classify")), lambda ab: abs(ab[0] - ab[1]) < 1e-5)
legit("end_to_end_error batch of one", lambda: probes.end_to_end_error(tiny_vgg(), IMG32[:1], "classify"),
      lambda e: math.isfinite(e) and e >= 0)
legit("whitening float64", lambda: probes.whitening(torch.ones(3, dtype=torch.float64),
                                                    torch.eye(3, dtype=torch.float64)),
      lambda Z: torch.allclose(Z.double(), torch.eye(3, dtype=torch.float64) / math.sqrt(1.01)))
legit("filter_pairing float64 filters", lambda: filters.filter_pairing(torch.rand(4, 3072, dtype=torch.float64)),
      lambda f: len(f.perm) == 4)

# == seeds, device, io =============================================================================
bad("torch_generator(seed=-1)", "seed", lambda: seeds.torch_generator(-1))
bad("torch_generator(seed=2**64)", "seed", lambda: seeds.torch_generator(2**64))
bad("torch_generator(seed=1.5)", "seed", lambda: seeds.torch_generator(1.5))
bad("torch_generator(seed='0')", "seed", lambda: seeds.torch_generator("0"))
bad("torch_generator(seed=True)", "seed", lambda: seeds.torch_generator(True))
bad("torch_generator(device='meta')", "device", lambda: seeds.torch_generator(0, device="meta"))
bad("numpy_rng(seed=-1)", "seed", lambda: seeds.numpy_rng(-1))
bad("numpy_rng(seed=nan)", "seed", lambda: seeds.numpy_rng(math.nan))
bad("numpy_rng(seed torch.Generator)", "seed", lambda: seeds.numpy_rng(torch.Generator()))
bad("default_device('cpu:1')", "device", lambda: devmod.default_device("cpu:1"))
bad("default_device('gpu')", "device", lambda: devmod.default_device("gpu"))
bad("default_device('meta')", "device", lambda: devmod.default_device("meta"))
bad("default_device('cuda') without cuda", "device", lambda: devmod.default_device("cuda"))
bad("default_device(3.5)", "device", lambda: devmod.default_device(3.5))
bad("config_hash(int keys)", "config", lambda: io.config_hash({1: "a"}))
bad("config_hash(set value)", "config", lambda: io.config_hash({"a": {1, 2}}))
bad("config_hash(nan value)", "config", lambda: io.config_hash({"a": math.nan}))
bad("config_hash(tensor value)", "config", lambda: io.config_hash({"a": torch.zeros(3)}))
bad("config_hash(not a mapping)", "config", lambda: io.config_hash([1, 2]))
bad("config_hash(length=0)", "length", lambda: io.config_hash({"a": 1}, length=0))
bad("config_hash(length=1000)", "length", lambda: io.config_hash({"a": 1}, length=1000))
bad("content_hash(length=-1)", "length", lambda: io.content_hash(torch.zeros(2), length=-1))
bad("content_hash(meta tensor)", "x", lambda: io.content_hash(torch.zeros(2, device="meta")))
bad("content_hash(generator)", "x", lambda: io.content_hash(i for i in range(3)))
bad("content_hash(set)", "x", lambda: io.content_hash({1, 2}))
bad("cache_dir('..')", "parts", lambda: io.cache_dir(".."))
bad("cache_dir('a/b')", "parts", lambda: io.cache_dir("a/../../b"))
bad("cache_dir(3)", "parts", lambda: io.cache_dir(3))
bad("atomic_write(write not callable)", "write", lambda: io.atomic_write(tempfile.mktemp(), b"abc"))
bad("atomic_write(path is a directory)", "path", lambda: io.atomic_write(tempfile.mkdtemp(), lambda f: f.write(b"x")),
    exc=(IsADirectoryError, OSError))
bad("atomic_write(path None)", "path", lambda: io.atomic_write(None, lambda f: f.write(b"x")))
bad("load_torch(missing)", "/nonexistent/file.pt", lambda: io.load_torch("/nonexistent/file.pt"), exc=(FileNotFoundError,))
bad("load_torch(map_location='bogus')", "map_location",
    lambda: io.load_torch(io.save_torch({"a": torch.ones(2)}, tempfile.mktemp(suffix=".pt")), map_location="bogus"))
bad("save_torch(path None)", "path", lambda: io.save_torch({"a": 1}, None))
legit("torch_generator np.int64 seed", lambda: seeds.torch_generator(np.int64(5)).initial_seed(), lambda s: s == 5)
legit("torch_generator seed MAX_SEED", lambda: seeds.torch_generator(seeds.MAX_SEED), lambda g: g is not None)
legit("config_hash key order irrelevant", lambda: (io.config_hash({"a": 1, "b": 2}), io.config_hash({"b": 2, "a": 1})),
      lambda ab: ab[0] == ab[1])
legit("config_hash 1 vs 1.0 vs '1' differ", lambda: (io.config_hash({"a": "1"}), io.config_hash({"a": 1})),
      lambda ab: ab[0] != ab[1])
legit("content_hash strided = contiguous", lambda: (io.content_hash(torch.arange(10.0)[::2]),
                                                    io.content_hash(torch.arange(10.0)[::2].contiguous())),
      lambda ab: ab[0] == ab[1])
legit("content_hash float32 != float64 of the same values", lambda: (io.content_hash(torch.zeros(3)),
                                                                      io.content_hash(torch.zeros(3).double())),
      lambda ab: ab[0] != ab[1])
legit("content_hash transposed differs", lambda: (io.content_hash(torch.arange(6.0).view(2, 3)),
                                                  io.content_hash(torch.arange(6.0).view(2, 3).T.contiguous())),
      lambda ab: ab[0] != ab[1])
legit("save/load roundtrip unicode path", lambda: (lambda p: io.load_torch(io.save_torch({"w": torch.arange(3)}, p)))(
    os.path.join(tempfile.mkdtemp(), "é π ✓.pt")), lambda d: torch.equal(d["w"], torch.arange(3)))
legit("default_device(None) exists", lambda: devmod.default_device(None), lambda d: d.type in ("cpu", "cuda", "mps"))
legit("default_device(torch.device('cpu'))", lambda: devmod.default_device(torch.device("cpu")),
      lambda d: d == torch.device("cpu"))


# -- integer, bool and complex inputs that are legitimate: cast exactly (never truncated) -----------
RT3 = math.sqrt(3)
legit("g ** 10**30 (reduced modulo the order)", lambda: G1 ** (10**30), lambda h: h == G1 ** (10**30 % 3))
legit("MatrixAction(int matrices) = float matrices", lambda: actions.MatrixAction(
    groups.cyclic(2), torch.tensor([[[1, 0], [0, 1]], [[0, 1], [1, 0]]])).act(groups.cyclic(2)[1],
                                                                             torch.tensor([[0.5, 2.0]])),
    lambda y: torch.allclose(y, torch.tensor([[2.0, 0.5]])))
legit("MatrixAction.act int x is rotated exactly", lambda: ROT.act(G1, torch.tensor([[2, 0]])),
      lambda y: y.is_floating_point() and torch.allclose(y, torch.tensor([[-1.0, RT3]]), atol=1e-6))
legit("MatrixAction.act bool x", lambda: ROT.act(G1, torch.tensor([[True, False]])),
      lambda y: torch.allclose(y, torch.tensor([[-0.5, RT3 / 2]]), atol=1e-6))
legit("PermutationAction.act complex x keeps complex values",
      lambda: (REG3.act(G1, torch.tensor([[1 + 2j, 3j, 4.0]])), torch.tensor([[1 + 2j, 3j, 4.0]])),
      lambda yz: yz[0].is_complex() and sorted(map(abs, yz[0].flatten().tolist())) ==
      sorted(map(abs, yz[1].flatten().tolist())))
legit("mirror_images int images = flip", lambda: images.mirror_images(torch.arange(8).view(1, 2, 2, 2)),
      lambda y: torch.equal(y, torch.arange(8).view(1, 2, 2, 2).flip(-1)))
legit("mirror_images one image (C, H, W) = flip", lambda: images.mirror_images(torch.arange(8).view(2, 2, 2)),
      lambda y: torch.equal(y, torch.arange(8).view(2, 2, 2).flip(-1)))
legit("reynolds int W = reynolds float W", lambda: (actions.reynolds(torch.arange(9).view(3, 3), REG3, REG3),
                                                    actions.reynolds(torch.arange(9.0).view(3, 3), REG3, REG3)),
      lambda ab: torch.allclose(ab[0].float(), ab[1]))
legit("SymmetryElement.from_matrix int", lambda: symmetries.SymmetryElement.from_matrix(
    torch.tensor([[0, 2], [1, 0]])).matrix(), lambda m: torch.allclose(m.float(), torch.tensor([[0.0, 2.0], [1.0, 0.0]])))
legit("SymmetryElement.act int z exact", lambda: K.act(torch.tensor([[2, 0, 1]])),
      lambda y: torch.allclose(y.float(), torch.tensor([[2.0, 0.0, 1.0]]) @ K.matrix().float().T))
legit("SymmetryElement.right int weight", lambda: K.right(torch.ones(2, 3, dtype=torch.long)),
      lambda y: torch.allclose(y.float(), torch.ones(2, 3) @ K.matrix().float()) or
      torch.allclose(y.float(), torch.ones(2, 3) @ torch.linalg.inv(K.matrix().float())))
legit("SymmetryGroup.contains int matrix", lambda: symmetries.symmetry_group("relu", 3).contains(
    torch.tensor([[0, 2, 0], [1, 0, 0], [0, 0, 3]])), lambda r: r is True)
legit("act_on_layer int weight = float weight", lambda: (
    symmetries.act_on_layer(torch.arange(9).view(3, 3), None, K)[0],
    symmetries.act_on_layer(torch.arange(9.0).view(3, 3), None, K)[0]), lambda ab: torch.allclose(ab[0].float(), ab[1]))
legit("invert_permutation(list)", lambda: matching.invert_permutation([2, 0, 1]), lambda q: list(q) == [1, 2, 0])
legit("rotate int images = rot90", lambda: lconv.rotate(torch.arange(4).view(1, 1, 2, 2), groups.cyclic(4)[1]),
      lambda y: sorted(y.flatten().tolist()) == [0, 1, 2, 3] and not torch.equal(y, torch.arange(4).view(1, 1, 2, 2)))
legit("whitening int evals", lambda: probes.whitening(torch.ones(3, dtype=torch.long), torch.eye(3)),
      lambda Z: torch.allclose(Z, torch.eye(3) / math.sqrt(1.01)))
legit("clean_stale_temporaries(missing folder) cleans nothing", lambda: io.clean_stale_temporaries("/nonexistent/d"),
      lambda r: list(r) == [])
legit("mirror_symmetric_spectrum on 8x8 images", lambda: probes.mirror_symmetric_spectrum(IMG8),
      lambda ev: ev[0].shape == (192,))


legit("homomorphism_error of a failed recovery (NaN scales) is inf", lambda: lres.homomorphism_error(
    lres.MonomialAction(C3, torch.arange(3).repeat(3, 1), torch.full((3, 3), math.nan))), lambda e: e == math.inf)
legit("hidden_representation(dim=0) acts on R^0", lambda: plant.hidden_representation(C3, 0, True).dim,
      lambda d: d == 0)
legit("SymmetryGroup.contains(matrix of another size) is False", lambda: symmetries.symmetry_group("relu", 3).contains(
    torch.eye(2)), lambda r: r is False)
legit("GraphLayer(adjacency as nested lists) = tensor", lambda: (
    GraphLayer([[0, 1, 1], [1, 0, 1], [1, 1, 0]], 2, 2)(torch.ones(1, 3, 2)),
    GraphLayer(torch.tensor([[0.0, 1, 1], [1, 0, 1], [1, 1, 0]]), 2, 2)(torch.ones(1, 3, 2))),
    lambda ab: torch.equal(ab[0], ab[1]))

# -- the runner ---------------------------------------------------------------------------------
def names_arg(message: str, arg: str) -> bool:
    return re.search(r"(?<![A-Za-z0-9_])" + re.escape(arg) + r"(?![A-Za-z0-9_])", message) is not None


def classify_bad(arg, fn, exc):
    try:
        fn()
    except (TypeError, ValueError, *exc) as e:  # noqa: B030
        msg = f"{type(e).__name__}: {e}"
        return ("clear" if names_arg(str(e), arg) else "obscure"), msg
    except Exception as e:  # noqa: BLE001
        return "obscure", f"{type(e).__name__}: {e} @ {traceback.extract_tb(e.__traceback__)[-1].filename}"
    return "silent", "no error"


def classify_legit(fn, check):
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001
        tb = traceback.extract_tb(e.__traceback__)[-1]
        return "obscure", f"{type(e).__name__}: {e} @ {tb.filename}:{tb.lineno}"
    try:
        ok = bool(check(out))
    except Exception as e:  # noqa: BLE001
        ok, out = False, f"check raised {type(e).__name__}: {e}"
    return ("correct", "ok") if ok else ("silent", f"wrong result: {str(out)[:120]}")


def run_one(job, timeout=10.0):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
        except (ValueError, OSError):
            pass
        try:
            sys.stderr = open(os.devnull, "w")
            import warnings
            warnings.simplefilter("ignore")
            out = job()
        except BaseException as e:  # noqa: BLE001
            out = ("obscure", f"{type(e).__name__}: {e}")
        with os.fdopen(w, "w") as f:
            f.write(json.dumps(list(out)))
        os._exit(0)
    os.close(w)
    start = time.monotonic()
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - start > timeout:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            return "hang", f"still running after {timeout:.0f} s"
        time.sleep(0.01)
    with os.fdopen(r) as f:
        text = f.read()
    if not text:
        return "hang", f"child died (status {status}; killed for memory?)"
    return tuple(json.loads(text))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-v", action="store_true", help="print every call, not only the failures")
    ap.add_argument("-k", default="", help="only calls whose label contains this")
    args = ap.parse_args()
    counts = {"bad": Counter(), "legit": Counter()}
    for kind, cases in (("bad", BAD), ("legit", LEGIT)):
        for case in cases:
            label = case[0]
            if args.k not in label:
                continue
            if kind == "bad":
                _, arg, fn, exc = case
                outcome, msg = run_one(lambda: classify_bad(arg, fn, exc))
            else:
                _, fn, check = case
                outcome, msg = run_one(lambda: classify_legit(fn, check), timeout=60.0)
            counts[kind][outcome] += 1
            if args.v or outcome not in ("clear", "correct"):
                print(f"[{kind:5}] {outcome:8} {label}: {msg[:230]}")
    b, g = counts["bad"], counts["legit"]
    nb, ng = sum(b.values()), sum(g.values())
    print()
    print("| set | calls | clear | obscure | silent / wrong | hang | correct |")
    print("|---|---|---|---|---|---|---|")
    print(f"| bad inputs | {nb} | {b['clear']} | {b['obscure']} | {b['silent']} | {b['hang']} | — |")
    print(f"| legitimate unusual inputs | {ng} | — | {g['obscure']} | {g['silent']} | {g['hang']} | {g['correct']} |")
    if nb:
        print(f"\nclear errors on bad inputs: {100 * b['clear'] / nb:.1f} %")


if __name__ == "__main__":
    main()
