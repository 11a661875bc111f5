"""A property-based tensor battery over eqlib's public API (issue 21, item 5).

``ENTRIES`` lists every public entry point that takes a tensor, each with one valid float32
(or integer, where the argument holds indices or pixels) input built from drawn sizes and
seeds. Hypothesis then changes one tensor argument at a time: its dtype, its layout
(transposed, strided, expanded, channels-last, an empty or single batch), its container
(NumPy array, list, tuple, 0-d tensor), its device (meta; cuda when present) or
``requires_grad``. The property: the call returns the result of the same values given as a
plain contiguous tensor (within a tolerance for the dtype; an integer input never gives
another answer than its float cast), or raises TypeError / ValueError naming the argument.
Never another exception, never a different answer.

``test_every_public_tensor_function_is_in_the_table`` walks the modules of
``book/reference/api.md`` and fails on a public function taking a tensor that is neither in
``ENTRIES`` nor in ``EXEMPT`` (with its reason).
"""
from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import math
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from eqlib import actions, analysis, data, groups, latent, matching, submodels, symmetries
from eqlib import images as images_mod
from eqlib import train as T
from eqlib.experiments import cifar_mlp, gcnn_barrier
from eqlib.latent import attention as latt
from eqlib.latent import conv as lconv
from eqlib.latent import generalized as lgen
from eqlib.latent import lstsq, result as lres, units, weights as lweights
from eqlib.models import MLP, VGG, AttentionNetwork, Dense, DeepSetsLayer, EquivariantDense, MultiHeadAttention
from eqlib.models import activation, base as mbase, cnn, convnet, equivariant, mlp, sets
from eqlib.plots import filters as pfilters, merging as pmerging

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = 4  # hypothesis examples per entry (the file stays well under a minute on one core)


# -- inputs ------------------------------------------------------------------------------------------
def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def rn(seed, *shape):
    return torch.randn(*shape, generator=gen(seed))


def un(seed, *shape):
    return torch.rand(*shape, generator=gen(seed))


def u8(seed, *shape):
    return torch.randint(0, 256, shape, generator=gen(seed), dtype=torch.uint8)


def perm(seed, n):
    return torch.randperm(n, generator=gen(seed))


C3, Z2, C4 = groups.cyclic(3), groups.flip(), groups.cyclic(4)
REG3 = actions.regular(C3)


def rotation_matrices() -> torch.Tensor:
    c, s = math.cos(2 * math.pi / 3), math.sin(2 * math.pi / 3)
    r = torch.tensor([[c, -s], [s, c]])
    return torch.stack([torch.eye(2), r, r @ r])


def rotations() -> actions.MatrixAction:
    return actions.MatrixAction(C3, rotation_matrices())


def seeded(seed: int, make: Callable) -> Any:
    """``make()`` under torch's global seed ``seed`` (for layers without a seed argument)."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return make()


def token_action() -> latt.TokenAction:
    G = groups.from_permutations([[1, 2, 0]], name="C3")
    feat = actions.PermutationAction.from_generators(G, {G.generators[0]: [1, 2, 0, 4, 5, 3]})
    return latt.TokenAction(G, feat)


def planted_attention(seed):
    act = token_action()
    tau = np.stack([np.concatenate([p, [3]]) for p in act.group.permutations])
    return act, latt.plant_attention_equivariant(act, tau, d_k=3, d_v=3, seed=seed % 7)


def vgg(seed):
    return VGG([4, "M", 4], image_size=8, num_classes=3, seed=seed % 97)


def sym_el(seed, d):
    return symmetries.SymmetryElement(perm(seed, d), un(seed + 1, d) * 2 + 0.5)


def planted_mirror(seed):
    rin, rout = images_mod.mirror((1, 2, 2)), actions.trivial(Z2, 2)
    net, _ = latent.plant_equivariant(Z2, rin, rout, [4, 6, 2], activation="tanh", seed=seed % 7)
    return net, rin, rout


def reduction(seed):
    return submodels.reduce(submodels.plant_degenerate(MLP([3, 4, 3], activations="tanh", seed=seed % 97),
                                                       n_clones=1, seed=seed % 97))


# -- the table: target function -> builder (n, seed) -> (call, kwargs) ---------------------------------
@dataclasses.dataclass
class Entry:
    """One public entry point: ``target`` is the function object the walk finds; ``build(n, seed)``
    returns a fresh ``(call, kwargs)`` with ``call(**kwargs)`` the valid call; ``batch`` names the
    arguments whose first axis is a batch (sliced together for the empty / single batch);
    ``tol``: relative tolerance of float32-vs-float64 computation; ``low`` the tolerance for
    float16/bfloat16 (None: compare only that a result or a clear error comes)."""
    target: Callable
    build: Callable[[int, int], tuple[Callable, dict]]
    batch: tuple[str, ...] = ()
    tol: float = 1e-4
    low: float | None = 5e-2
    examples: int = EXAMPLES

    @property
    def name(self) -> str:
        return self.target.__qualname__


def E(target, build, batch=(), **kw) -> Entry:
    return Entry(target, build, tuple(batch), **kw)


def _mha(n, s):
    return MultiHeadAttention(4, 3, 3, 2, seed=s % 97)


ENTRIES: list[Entry] = [
    # -- actions -------------------------------------------------------------------------------------
    E(actions.Action.act_transpose, lambda n, s: (lambda g, x: token_action().act_transpose(g, x),
                                                  {"g": token_action().group.elements[1], "x": rn(s, n, 3, 6)}), "x"),
    E(actions.MatrixAction.__init__, lambda n, s: (lambda group, matrices: vars(actions.MatrixAction(group, matrices)),
                                                   {"group": C3, "matrices": rotation_matrices()})),
    E(actions.MatrixAction.act, lambda n, s: (rotations().act, {"g": C3.elements[1], "x": rn(s, n, 2)}), "x"),
    E(actions.MatrixAction.act_transpose, lambda n, s: (rotations().act_transpose,
                                                        {"g": C3.elements[1], "x": rn(s, n, 2)}), "x"),
    E(actions.PermutationAction.act, lambda n, s: (REG3.act, {"g": C3.elements[1], "x": rn(s, n, 3)}), "x"),
    E(actions.PermutationAction.act_transpose, lambda n, s: (REG3.act_transpose,
                                                             {"g": C3.elements[2], "x": rn(s, n, 3)}), "x"),
    E(actions.DirectSum.act, lambda n, s: (actions.DirectSum(REG3, rotations()).act,
                                           {"g": C3.elements[1], "x": rn(s, n, 5)}), "x"),
    E(actions.DirectSum.act_transpose, lambda n, s: (actions.DirectSum(REG3, rotations()).act_transpose,
                                                     {"g": C3.elements[1], "x": rn(s, n, 5)}), "x"),
    E(actions.equivariance_residual, lambda n, s: (actions.equivariance_residual, {
        "f": MLP([3, 4, 3], seed=s % 97), "rho_in": REG3, "rho_out": REG3, "x": rn(s, n, 3),
        "g": C3.elements[1]}), "x"),
    E(actions.check_equivariance, lambda n, s: (actions.check_equivariance, {
        "f": MLP([3, 4, 3], seed=s % 97), "rho_in": REG3, "rho_out": REG3, "x": rn(s, n, 3)}), "x"),
    E(actions.reynolds, lambda n, s: (actions.reynolds, {"W": rn(s, 3, 3), "rho_in": REG3, "rho_out": REG3})),
    E(images_mod.mirror_images, lambda n, s: (images_mod.mirror_images, {"x": rn(s, n, 3, 4, 4)}), "x"),
    # -- models ----------------------------------------------------------------------------------------
    E(activation.Activation.__call__, lambda n, s: (activation.activation_record("gelu"), {"z": rn(s, n, 3)}), "z"),
    E(activation.Activation.apply_, lambda n, s: (  # in place: on a copy, so the caller's tensor is kept
        lambda z: activation.activation_record("tanh").apply_(z.clone() if isinstance(z, torch.Tensor) else z),
        {"z": rn(s, n, 3)}), "z"),
    E(MultiHeadAttention.check_input, lambda n, s: (_mha(n, s).check_input, {"x": rn(s, n, 4, 3)}), "x"),
    E(MultiHeadAttention.attention_maps, lambda n, s: (_mha(n, s).attention_maps, {"x": rn(s, n, 4, 3)}), "x"),
    E(MultiHeadAttention.head_values, lambda n, s: (_mha(n, s).head_values, {"x": rn(s, n, 4, 3)}), "x"),
    E(MultiHeadAttention.head_outputs, lambda n, s: (_mha(n, s).head_outputs, {"x": rn(s, n, 4, 3)}), "x"),
    E(MultiHeadAttention.forward, lambda n, s: (_mha(n, s).forward, {"x": rn(s, n, 4, 3)}), "x"),
    E(convnet.SameConv.preactivation, lambda n, s: (convnet.SameConv(2, 3, 5, seed=s % 97).preactivation,
                                                    {"x": rn(s, n, 2, 5, 5)}), "x"),
    E(convnet.SameConv.forward, lambda n, s: (convnet.SameConv(2, 3, 5, seed=s % 97).forward,
                                              {"x": rn(s, n, 2, 5, 5)}), "x"),
    E(mbase.Model.check_input, lambda n, s: (vgg(s).check_input, {"x": rn(s, n, 3, 8, 8)}), "x"),
    E(mbase.Model.forward, lambda n, s: (vgg(s).eval().forward, {"x": rn(s, n, 3, 8, 8)}), "x"),
    E(mbase.Model.latents, lambda n, s: (vgg(s).eval().latents, {"x": rn(s, n, 3, 8, 8)}), "x"),
    E(cnn.ConvLayer.preactivation, lambda n, s: (seeded(s, lambda: cnn.ConvLayer(3, 4, 8)).eval().preactivation,
                                                 {"x": rn(s, n, 3, 8, 8)}), "x"),
    E(cnn.ConvLayer.activate, lambda n, s: (seeded(s, lambda: cnn.ConvLayer(3, 4, 8, pool=True)).eval().activate,
                                            {"z": rn(s, n, 4, 8, 8)}), "z"),
    E(cnn.ConvLayer.forward, lambda n, s: (seeded(s, lambda: cnn.ConvLayer(3, 4, 8)).eval().forward,
                                        {"x": rn(s, n, 3, 8, 8)}), "x"),
    E(cnn.PoolHead.forward, lambda n, s: (seeded(s, lambda: cnn.PoolHead(4, 2, 3)).forward,
                                      {"x": rn(s, n, 4, 2, 2)}), "x"),
    E(cnn.VGG.check_input, lambda n, s: (vgg(s).check_input, {"x": rn(s, n, 3, 8, 8)}), "x"),
    E(cnn.mirror_invariance_error, lambda n, s: (cnn.mirror_invariance_error,
                                                 {"model": vgg(s), "x": rn(s, n + 1, 3, 8, 8)}), "x"),
    E(equivariant.IntertwinerProjection.__init__, lambda n, s: (
        lambda basis: equivariant.IntertwinerProjection(basis).forward(torch.ones(3, 3)),
        {"basis": actions.equivariant_basis(REG3, REG3)})),
    E(equivariant.IntertwinerProjection.forward, lambda n, s: (
        equivariant.IntertwinerProjection(actions.equivariant_basis(REG3, REG3)).forward, {"W": rn(s, 3, 3)})),
    E(equivariant.IntertwinerProjection.right_inverse, lambda n, s: (
        equivariant.IntertwinerProjection(actions.equivariant_basis(REG3, REG3)).right_inverse, {"W": rn(s, 3, 3)})),
    E(EquivariantDense.preactivation, lambda n, s: (EquivariantDense(REG3, REG3, "tanh", seed=s % 97).preactivation,
                                                   {"x": rn(s, n, 3)}), "x"),
    E(EquivariantDense.forward, lambda n, s: (EquivariantDense(REG3, REG3, "tanh", seed=s % 97).forward,
                                             {"x": rn(s, n, 3)}), "x"),
    E(mbase.EquivariantLayer.check_equivariance, lambda n, s: (
        EquivariantDense(REG3, REG3, "tanh", seed=s % 97).check_equivariance, {"x": rn(s, n, 3)}), "x"),
    E(Dense.preactivation, lambda n, s: (Dense(4, 3, "tanh", seed=s % 97).preactivation, {"x": rn(s, n, 4)}), "x"),
    E(Dense.forward, lambda n, s: (Dense(4, 3, "tanh", seed=s % 97).forward, {"x": rn(s, n, 4)}), "x"),
    E(mlp.FlatModel.forward, lambda n, s: (MLP([4, 5, 3], seed=s % 97).forward, {"x": rn(s, n, 4)}), "x"),
    E(mlp.FlatModel.latents, lambda n, s: (MLP([4, 5, 3], seed=s % 97).latents, {"x": rn(s, n, 4)}), "x"),
    E(DeepSetsLayer.preactivation, lambda n, s: (DeepSetsLayer(3, 2, 2, seed=s % 97).preactivation,
                                                 {"x": rn(s, n, 3, 2)}), "x"),
    E(DeepSetsLayer.forward, lambda n, s: (DeepSetsLayer(3, 2, 2, seed=s % 97).forward, {"x": rn(s, n, 3, 2)}), "x"),
    E(sets.GraphLayer.__init__, lambda n, s: (lambda adjacency: sets.GraphLayer(adjacency, 2, 2, seed=s % 97)(
        rn(s, 2, 4, 2)), {"adjacency": sets.cycle_graph(4)})),
    E(sets.GraphLayer.preactivation, lambda n, s: (sets.GraphLayer(sets.cycle_graph(4), 2, 2, seed=s % 97)
                                                   .preactivation, {"x": rn(s, n, 4, 2)}), "x"),
    E(sets.GraphLayer.forward, lambda n, s: (sets.GraphLayer(sets.cycle_graph(4), 2, 2, seed=s % 97).forward,
                                             {"x": rn(s, n, 4, 2)}), "x"),
    E(sets.adjunction_fit, lambda n, s: (sets.adjunction_fit, {
        "layer": DeepSetsLayer(3, 2, 2, seed=s % 97), "rho_in": actions.token_permutation(groups.symmetric(3), 3, 2),
        "g": groups.symmetric(3).elements[1], "x": rn(s, 6 + n, 3, 2),
        "rho_out": actions.token_permutation(groups.symmetric(3), 3, 2)}), "x", tol=1e-3),
    E(sets.ResidualBlock.inner, lambda n, s: (sets.ResidualBlock(3, 4, seed=s % 97).inner, {"x": rn(s, n, 3)}), "x"),
    E(sets.ResidualBlock.latent, lambda n, s: (sets.ResidualBlock(3, 4, seed=s % 97).latent, {"x": rn(s, n, 3)}), "x"),
    E(sets.ResidualBlock.forward, lambda n, s: (sets.ResidualBlock(3, 4, seed=s % 97).forward, {"x": rn(s, n, 3)}),
      "x"),
    # -- symmetries ------------------------------------------------------------------------------------
    E(symmetries.SymmetryElement.__init__, lambda n, s: (lambda perm, scale: symmetries.SymmetryElement(
        perm, scale).matrix(), {"perm": perm(s, 4), "scale": un(s, 4) + 0.5})),
    # unchecked is in the table, not EXEMPT: it skips the *values* check (a recovered element may
    # have zero scales), but it checks the kind of its arguments (integer perm, real scale, 1-D,
    # one length, data), which reads no entry, so it must pass the battery like every entry point
    E(symmetries.SymmetryElement.unchecked.__func__, lambda n, s: (lambda perm, scale: symmetries.SymmetryElement
                                                                  .unchecked(perm, scale).matrix(),
                                                                  {"perm": perm(s, 4), "scale": un(s, 4) + 0.5})),
    E(symmetries.SymmetryElement.from_matrix.__func__, lambda n, s: (
        lambda matrix: symmetries.SymmetryElement.from_matrix(matrix).matrix(), {"matrix": sym_el(s, 4).matrix()})),
    E(symmetries.SymmetryElement.act, lambda n, s: (sym_el(s, 3).act, {"z": rn(s, n, 3)}), "z"),
    E(symmetries.SymmetryElement.left, lambda n, s: (sym_el(s, 3).left, {"weight": rn(s, 3, n + 1)})),
    E(symmetries.SymmetryElement.right, lambda n, s: (sym_el(s, 3).right, {"weight": rn(s, n, 3)}), "weight"),
    E(symmetries.SymmetryElement.right_inverse, lambda n, s: (sym_el(s, 3).right_inverse, {"weight": rn(s, n, 3)}),
      "weight"),
    E(symmetries.SymmetryGroup.contains, lambda n, s: (symmetries.symmetry_group("tanh", 4).contains,
                                                       {"matrix": sym_el(s, 4).matrix()})),
    E(symmetries.SymmetryGroup.project, lambda n, s: (symmetries.symmetry_group("tanh", 4).project,
                                                      {"matrix": sym_el(s, 4).matrix() + 0.01 * rn(s, 4, 4)})),
    E(symmetries.intertwining_error, lambda n, s: (symmetries.intertwining_error, {
        "activation": "tanh", "k": sym_el(s, 3), "z": rn(s, n, 3)}), "z"),
    E(symmetries.intertwines, lambda n, s: (symmetries.intertwines, {
        "activation": "tanh", "k": symmetries.SymmetryElement(perm(s, 3), torch.ones(3)), "z": rn(s, n, 3)}), "z"),
    E(symmetries.act_on_layer, lambda n, s: (symmetries.act_on_layer, {
        "weight": rn(s, 3, 4), "bias": rn(s + 1, 3), "k_out": sym_el(s, 3), "k_in": sym_el(s + 2, 4)})),
    E(symmetries.AttentionSymmetry.__init__, lambda n, s: (lambda perm, A, B: vars(symmetries.AttentionSymmetry(
        perm, A, B)), {"perm": perm(s, 2), "A": rn(s, 2, 3, 3), "B": rn(s + 1, 2, 3, 3)})),
    # -- submodels -------------------------------------------------------------------------------------
    E(submodels.Reduction.embed, lambda n, s: (lambda i, h: reduction(s).embed(i, h), {
        "i": 1, "h": rn(s, n, reduction(s).model.widths[1])}), "h"),
    E(submodels.Reduction.project, lambda n, s: (reduction(s).project, {"i": 1, "h": rn(s, n, 5)}), "h"),
    E(submodels.Reduction.diagram_errors, lambda n, s: (reduction(s).diagram_errors, {"x": rn(s, n, 3)}), "x",
      tol=1e-3, low=None),
    # -- latent ----------------------------------------------------------------------------------------
    E(latent.activations.recover_by_activations, lambda n, s: (lambda x: _summary(
        latent.activations.recover_by_activations(planted_mirror(s)[0], planted_mirror(s)[1], x)),
        {"x": rn(s, 40, 4)}), low=None),
    E(latt.TokenAction.permute_tokens, lambda n, s: (token_action().permute_tokens,
                                                     {"g": token_action().group.elements[1], "x": rn(s, n, 3, 6)}),
      "x"),
    E(latt.TokenAction.act, lambda n, s: (token_action().act, {"g": token_action().group.elements[1],
                                                               "x": rn(s, n, 3, 6)}), "x"),
    E(images_mod.patchify, lambda n, s: (images_mod.patchify, {"images": rn(s, n, 1, 4, 6), "patch": 2}), "images"),
    E(images_mod.unpatchify, lambda n, s: (images_mod.unpatchify, {"tokens": rn(s, n, 6, 4), "shape": (1, 4, 6), "patch": 2}),
      "tokens"),
    E(latt.transport_parameters, lambda n, s: (latt.transport_parameters, {
        "layer": planted_attention(s)[1].layer, "action_in": token_action(), "g": token_action().group.elements[1],
        "out_features": torch.eye(6)})),
    E(latt.match_heads, lambda n, s: (latt.match_heads, {
        "layer": planted_attention(s)[1].layer, "action_in": token_action(), "g": token_action().group.elements[1],
        "out_features": torch.eye(6)}), low=None),
    E(latt.recover_token_permutation, lambda n, s: (latt.recover_token_permutation, _maps(s)), low=None),
    E(latt.recover_attention_action, lambda n, s: (lambda x: _summary(latt.recover_attention_action(
        planted_attention(s)[1].layer, token_action(), x)), {"x": rn(s, 4, 3, 6)}), low=None, tol=1e-3),
    E(latt.recover_attention_network, lambda n, s: (lambda x: [_summary(r) for r in latt.recover_attention_network(
        AttentionNetwork(3, [6, 6], heads=2, seed=s % 97), token_action(), x)], {"x": rn(s, 4, 3, 6)}),
      low=None, tol=1e-3),
    E(lconv.rotate, lambda n, s: (lconv.rotate, {"x": rn(s, n, 2, 4, 4), "g": C4.elements[1]}), "x"),
    E(lconv.act_on_images, lambda n, s: (lconv.act_on_images, {"g": C4.elements[1], "channels": None,
                                                              "x": rn(s, n, 2, 4, 4)}), "x"),
    E(lconv.recover_conv_actions, lambda n, s: (lambda x: _summary(lconv.recover_conv_actions(
        lconv.plant_c4_conv([["trivial"], ["regular"]], seed=s % 7).model, x)), {"x": rn(s, 2, 1, 7, 7)}),
      low=None, tol=1e-3),
    E(lgen.relating_sequences, lambda n, s: _relating(s), low=None),
    E(latent.core.latent_actions, lambda n, s: (lambda x: _summary(latent.latent_actions(
        planted_mirror(s)[0], planted_mirror(s)[1], planted_mirror(s)[2], method="activations", x=x)),
        {"x": rn(s, 40, 4)}), low=None, tol=1e-3),
    E(lstsq.relative_errors, lambda n, s: (lstsq.relative_errors, {"A": rn(s, 3, 3), "X": rn(s + 1, n, 3),
                                                                  "Y": rn(s + 2, n, 3)}), ("X", "Y")),
    E(lstsq.fit_linear_action, lambda n, s: (lambda features, features_transformed: vars(lstsq.fit_linear_action(
        features, features_transformed)), {"features": rn(s, 12, 3), "features_transformed": rn(s + 1, 12, 3)}),
      tol=1e-3),
    E(lstsq.row_space_factor, lambda n, s: (lambda M: lstsq.row_space_factor(M).T @ lstsq.row_space_factor(M),
                                            {"M": rn(s, 3, 4)}), tol=1e-3),
    E(lstsq.recover_by_lstsq, lambda n, s: (lambda samples: lstsq.recover_by_lstsq(
        MLP([4, 3, 2], activations="tanh", seed=s % 97), images_mod.mirror((1, 2, 2)),
        [symmetries.symmetry_group("tanh", 3)], samples=samples), {"samples": rn(s, 12, 4)}), tol=1e-3, low=None),
    E(lstsq.paired_features, lambda n, s: (lstsq.paired_features, {
        "model_prefix": MLP([4, 3], seed=s % 97), "act": images_mod.mirror((1, 2, 2)), "g": Z2["m"],
        "samples": rn(s, 6, 4)})),
    E(lstsq.linear_equivariance_error, lambda n, s: (lambda samples: vars(lstsq.linear_equivariance_error(
        MLP([4, 3], seed=s % 97), images_mod.mirror((1, 2, 2)), Z2["m"], samples=samples)), {"samples": rn(s, 12, 4)}),
      tol=1e-3, low=None),
    E(lres.MonomialAction.__init__, lambda n, s: (lambda group, perm, scales: vars(lres.MonomialAction(
        group, perm, scales)), _monomial_args(s))),
    E(lres.MonomialAction.act, lambda n, s: (lres.MonomialAction(**_monomial_args(s)).act,
                                             {"g": C3.elements[1], "x": rn(s, n, 3)}), "x"),
    E(lres.MonomialAction.act_transpose, lambda n, s: (lres.MonomialAction(**_monomial_args(s)).act_transpose,
                                                       {"g": C3.elements[1], "x": rn(s, n, 3)}), "x"),
    E(lres.layer_errors, lambda n, s: (lres.layer_errors, {
        "model": MLP([3, 3, 3], seed=s % 97), "rho_in": REG3, "rho_out": REG3, "hidden": [REG3],
        "x": rn(s, n + 1, 3)}), "x"),
    E(lres.dense_action, lambda n, s: (lambda group, matrices: lres.dense_action(group, matrices).matrix(
        C3.elements[1]), {"group": C3, "matrices": rotation_matrices()})),
    E(units.assign, lambda n, s: (units.assign, {"similarity": rn(s, 4, 4), "signed": True}), low=None),
    E(units.match_units, lambda n, s: (units.match_units, {"A": rn(s, 4, 3), "B": rn(s, 4, 3)[perm(s, 4)] * 2}),
      low=None),
    E(lweights.right_multiply, lambda n, s: (lweights.right_multiply, {"W": rn(s, n, 3), "k": sym_el(s, 3)}), "W"),
    E(lweights.left_multiply, lambda n, s: (lweights.left_multiply, {"k": sym_el(s, 3), "W": rn(s, 3, n + 1)})),
    E(lweights.lift_action, lambda n, s: (lambda action, alpha, alpha_star: lweights.lift_action(
        action, alpha, alpha_star).matrix(C3.elements[1]), {"action": REG3, "alpha": torch.eye(4)[:, :3],
                                                           "alpha_star": torch.eye(4)[:3]})),
    # -- matching --------------------------------------------------------------------------------------
    E(matching.invert_permutation, lambda n, s: (matching.invert_permutation, {"p": perm(s, n + 3)})),
    E(matching.involution_distance, lambda n, s: (matching.involution_distance, {"p": perm(s, n + 3)})),
    E(matching.channel_correlations, lambda n, s: (matching.channel_correlations, {
        "model_a": vgg(s), "model_b": vgg(s + 1), "images": rn(s, n + 3, 3, 8, 8)}), "images", tol=1e-3),
    E(matching.match_activations, lambda n, s: (matching.match_activations, {
        "model_a": vgg(s), "model_b": vgg(s + 1), "images": rn(s, n + 3, 3, 8, 8)}), "images", low=None),
    E(matching.reset_bn, lambda n, s: (lambda images: matching.reset_bn(vgg(s), images).state_dict(),
                                       {"images": rn(s, n + 3, 3, 8, 8)}), "images", tol=1e-3),
    E(matching.channel_statistics, lambda n, s: (matching.channel_statistics, {
        "model": vgg(s), "images": rn(s, n + 3, 3, 8, 8)}), "images", tol=1e-3),
    E(matching.repair, lambda n, s: (lambda images: matching.repair(vgg(s + 2), vgg(s), vgg(s + 1), images)
                                     .state_dict(), {"images": rn(s, n + 3, 3, 8, 8)}), "images", tol=1e-3),
    # -- data and train --------------------------------------------------------------------------------
    E(data.CIFAR10.__init__, lambda n, s: (lambda images, labels: vars(data.CIFAR10(images, labels)), {
        "images": u8(s, n + 1, 3, 32, 32), "labels": torch.randint(0, 10, (n + 1,), generator=gen(s))}),
      ("images", "labels")),
    E(images_mod.random_mirror, lambda n, s: (images_mod.random_mirror, {"x": un(s, n, 3, 4, 4), "generator": s}), "x"),
    E(images_mod.rotate90, lambda n, s: (images_mod.rotate90, {"x": un(s, n, 3, 4, 4)}), "x"),
    E(images_mod.normalize, lambda n, s: (images_mod.normalize, {"x": u8(s, n, 3, 4, 4)}), "x"),
    E(images_mod.prepare_images, lambda n, s: (images_mod.prepare_images, {"images": u8(s, n, 3, 4, 4)}), "images"),
    E(T.Normalize.__call__, lambda n, s: (T.Normalize().__call__, {"x": u8(s, n, 3, 4, 4)}), "x"),
    E(T.penalty_term, lambda n, s: (T.penalty_term, {"model": MLP([12, 5, 12], seed=s % 97), "x": rn(s, n + 1, 12),
                                                     "kind": "equivariance", "axis": "horizontal"}), "x", tol=1e-3),
    E(T.evaluate_accuracy, lambda n, s: (T.evaluate_accuracy, {
        "model": MLP([3072, 4, 3], seed=s % 97), "images": u8(s, n + 2, 3, 32, 32),
        "labels": torch.randint(0, 3, (n + 2,), generator=gen(s))}), ("images", "labels"), low=None),
    E(T.train, lambda n, s: (lambda images, labels: T.train(
        MLP([3072, 4, 3], seed=s % 97), (images, labels), T.TrainConfig(epochs=1, batch_size=4), device="cpu",
        progress=False, **T.image_preset()).model.state_dict(), {"images": u8(s, 8, 3, 32, 32),
                                             "labels": torch.randint(0, 3, (8,), generator=gen(s))}),
      ("images", "labels"), tol=1e-3, low=None, examples=3),
    E(symmetries.best_assignment, lambda n, s: (symmetries.best_assignment, {"score": rn(s, n + 2, n + 2)}),
      low=None),
    # -- analysis --------------------------------------------------------------------------------------
    E(analysis.filters.filter_pairing, lambda n, s: (lambda W1: vars(analysis.filters.filter_pairing(W1)),
                                                     {"W1": rn(s, 4, 3072)}), low=None),
    E(analysis.filters.negated_copies, lambda n, s: (lambda weight, bias: vars(analysis.filters.negated_copies(
        weight, bias)), {"weight": torch.cat([rn(s, n + 2, 8), -rn(s, 1, 8)]), "bias": rn(s + 1, n + 3)}), low=None),
    E(analysis.structure.paired_projection, lambda n, s: (lambda weight, bias: vars(analysis.structure.paired_projection(
        weight, bias, shape=(3, 4, 4))), {"weight": rn(s, n + 2, 48), "bias": rn(s + 1, n + 2)}), low=None),
    E(analysis.structure.involutive_matching, lambda n, s: (analysis.structure.involutive_matching, {
        "score": (lambda r: r + r.T)(rn(s, n + 2, n + 2))}), low=None),
    E(analysis.structure.filter_localisation, lambda n, s: (analysis.structure.filter_localisation, {
        "weight": rn(s, n + 1, 3072)}), "weight", tol=1e-3),
    E(analysis.probes.paired_latents, lambda n, s: (analysis.probes.paired_latents, {
        "model": MLP([3072, 4, 3], seed=s % 97), "y": rn(s, n + 1, 3072), "layers": [1], "axes": ["horizontal"]}),
      "y"),
    E(analysis.probes.input_spectrum, lambda n, s: (lambda images: analysis.probes.input_spectrum(images)[0],
                                                    {"images": u8(s, n + 4, 3, 4, 4)}), tol=1e-3),
    E(analysis.probes.end_to_end_error, lambda n, s: (analysis.probes.end_to_end_error, {
        "model": MLP([3072, 4, 3], seed=s % 97), "images": u8(s, n + 1, 3, 32, 32), "task": "classify"}),
      "images", tol=1e-3),
    E(analysis.probes.mirror_symmetric_spectrum, lambda n, s: (
        lambda images: analysis.probes.mirror_symmetric_spectrum(images)[0], {"images": u8(s, n + 4, 3, 4, 4)}),
      tol=1e-3),
    E(analysis.probes.whitening, lambda n, s: (analysis.probes.whitening, {
        "evals": un(s, 3) + 0.1, "evecs": torch.linalg.qr(rn(s, 3, 3))[0]})),
    # -- experiments and plots -------------------------------------------------------------------------
    E(cifar_mlp.PatchAttentionAutoencoder.tokens, lambda n, s: (cifar_mlp.PatchAttentionAutoencoder(
        patch=8, heads=2, seed=s % 97).tokens, {"x": rn(s, n, 3, 32, 32)}), "x"),
    E(cifar_mlp.PatchAttentionAutoencoder.forward, lambda n, s: (cifar_mlp.PatchAttentionAutoencoder(
        patch=8, heads=2, seed=s % 97).forward, {"x": rn(s, n, 3, 32, 32)}), "x", tol=1e-3),
    E(gcnn_barrier.MergeData.from_images.__func__, lambda n, s: (
        lambda match_images, test_images, test_labels: vars(gcnn_barrier.MergeData.from_images(
            match_images, test_images, test_labels)), {
            "match_images": u8(s, n + 1, 3, 32, 32), "test_images": u8(s + 1, n + 1, 3, 32, 32),
            "test_labels": torch.randint(0, 10, (n + 1,), generator=gen(s))})),
    E(gcnn_barrier.normalize_kernels, lambda n, s: (gcnn_barrier.normalize_kernels, {"weight": rn(s, 4, 3, 3, 3)})),
    E(gcnn_barrier.filter_distance, lambda n, s: (gcnn_barrier.filter_distance, {
        "weight": rn(s, 6, 4, 3, 3), "pi_out": torch.tensor([1, 0, 3, 2, 4, 5]),
        "pi_in": torch.tensor([1, 0, 2, 3])})),
    E(pfilters.filter_image, lambda n, s: (pfilters.filter_image, {"w": rn(s, 3072)})),
    E(pmerging.filter_image, lambda n, s: (pmerging.filter_image, {"w": rn(s, 3, 3, 3)})),
]


def _summary(res: Any) -> Any:
    """The numbers of a result object (dataclass / plain object), without its methods."""
    return res


def _maps(s):
    layer = _mha(0, s)
    x = rn(s, 2, 4, 3)
    g = perm(s, 4)
    return {"maps_x": layer.attention_maps(x).detach(), "maps_gx": layer.attention_maps(x[:, g]).detach()}


def _relating(s):
    net = MLP([3, 3, 2], activations="tanh", seed=s % 97)
    K1 = symmetries.symmetry_group("tanh", 3)
    k = K1.sample(s)
    moved = symmetries.apply_symmetry(net, [k])
    cands = [torch.stack([k.matrix(), torch.eye(3)])]
    return (lgen.relating_sequences, {"layers": list(net.layers), "layers_prime": list(moved.layers),
                                      "candidates": cands, "x": rn(s, 5, 3)})


def _monomial_args(s):
    return {"group": C3, "perm": torch.stack([torch.arange(3), torch.tensor([1, 2, 0]), torch.tensor([2, 0, 1])]),
            "scales": torch.ones(3, 3)}


# -- what the walk finds but the table does not call ----------------------------------------------------
EXEMPT: dict[str, str] = {
    # a method of negated_copies' result (in the table); it checks its tensor itself
    "NegatedCopies.outgoing_cosines": "checks next_weight with check_tensor (test_negated_copies)",
    # the trainer's preprocess: train() gates the batches it feeds it (train is in the table)
    "Normalize.__call__": "called by train on batches train has gated",
    "Normalize.check": "a gate itself: it raises on bad images",
    # an experiment's run, like filter_search: its tensors come from load_search_data
    "search_train": "the filter search's training run (train, in the table, gates its data)",
    # a gate, like check_finite
    "check_unit_range": "the range gate prepare_images uses; prepare_images is in the table",
    "Normalize.check": "the data gate train calls (Normalize.__call__ and train are in the table)",
    # abstract: the subclasses' own act is in the table
    "Action.act": "abstract (raises NotImplementedError); every concrete act is in the table",
    # abstract base of private parametrizations; MirrorGCNN's forward (Model.forward) runs them
    "GroupAverage.images": "abstract",
    "GroupAverage.forward": "runs only through private subclasses inside MirrorGCNN",
    # result records built by the library's own functions (which are in the table), not by users
    "AdjunctionFit.__init__": "result record of adjunction_fit",
    "Reduction.__init__": "result record of reduce",
    "AttentionLatentAction.__init__": "result record of recover_attention_action",
    "ConvLatentActions.__init__": "result record of recover_conv_actions",
    "LinearFit.__init__": "result record of fit_linear_action",
    "TrainResult.__init__": "result record of train",
    "PairedLayer.__init__": "result record of paired_projection",
    "MergeData.__init__": "plain record; MergeData.from_images (in the table) is the entry point",
    "Activation.__init__": "a record of callables (Tensor appears only inside fn's Callable type)",
    # figures: no number to compare; their tensor inputs go through functions of the table
    "plot_attention_maps": "figure", "plot_conv_filters": "figure", "plot_filters": "figure",
    "plot_filter_partners": "figure", "plot_attention_heads": "figure", "image_grid": "figure",
    "orbit": "figure", "action_on_image": "figure", "filter_pairs_figure": "figure",
    "same_function": "figure", "intertwining": "figure", "search_figures": "figures of trained weights",
    # whole experiments and caches: minutes of training per call; train (in the table) is their core
    "filter_search": "a whole experiment (trains many networks)",
    "search_train": "one training run of the filter search; train (in the table) is its core",
    "cached_train": "train (in the table) behind a disk cache",
    # exercise checkers: they take a student's function, run fixed tensors through it
    "check_d4_equivariant_map": "exercise checker (takes a callable)",
    "check_gcnn_projection": "exercise checker (takes a callable)",
    "check_mirror_partner": "exercise checker (takes a callable)",
    "check_equivariance_penalty": "exercise checker (takes a callable)",
    # tensors only inside a dict of channel permutations; filter_distance (in the table) is
    # what they compute per layer, with the same permutation arguments
    "gcnn_filter_distance": "tensors only inside the perms dict (filter_distance is in the table)",
    "min_scaled_filter_distance": "tensors only inside the start dict (filter_distance is in the table)",
    # the gate itself: its own tests are in test_tensor_gate.py
    "check_finite": "the gate (tests/unit/test_tensor_gate.py)",
}


# -- the walk -------------------------------------------------------------------------------------------
def _takes_tensor(fn) -> bool:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    for p in sig.parameters.values():
        a = p.annotation
        if a is not inspect.Parameter.empty and "Tensor" in (a if isinstance(a, str) else repr(a)):
            return True
        if a is not inspect.Parameter.empty and re.search(r"\bT\b", a if isinstance(a, str) else ""):
            return True
    return False


def public_tensor_functions() -> dict[int, str]:
    """id(function) -> qualname of every public function or method (own, not inherited) of the
    modules documented in book/reference/api.md whose signature annotates a Tensor."""
    names = re.findall(r"automodule:: (\S+)", (ROOT / "book/reference/api.md").read_text())
    found: dict[int, tuple[Callable, str]] = {}
    for m in names:
        mod = importlib.import_module(m)
        for name, obj in vars(mod).items():
            if name.startswith("_") or not str(getattr(obj, "__module__", "")).startswith("eqlib"):
                continue
            if inspect.isfunction(obj):
                if _takes_tensor(obj):
                    found[id(obj)] = (obj, obj.__qualname__)
            elif inspect.isclass(obj):
                for an, att in vars(obj).items():
                    if an.startswith("_") and an not in ("__init__", "__call__"):
                        continue
                    f = att.__func__ if isinstance(att, (staticmethod, classmethod)) else att
                    if inspect.isfunction(f) and _takes_tensor(f):
                        found[id(f)] = (f, f.__qualname__)
    return {k: v[1] for k, v in found.items()}


def test_every_public_tensor_function_is_in_the_table():
    found = public_tensor_functions()
    table = {id(e.target) for e in ENTRIES}
    exempt = set(EXEMPT)
    missing = sorted(q for k, q in found.items() if k not in table and q not in exempt
                     and q.split(".")[-1] not in exempt)
    assert not missing, f"public functions taking a tensor, neither in ENTRIES nor EXEMPT: {missing}"
    stale = sorted(e.name for e in ENTRIES if id(e.target) not in found)
    assert not stale, f"ENTRIES not found by the walk (renamed or no Tensor annotation?): {stale}"
    print(f"\n[coverage] {len(found)} public tensor functions: {len(table)} in the table, "
          f"{len(found) - len(table)} exempt")


# -- comparing results ----------------------------------------------------------------------------------
def leaves(value: Any, depth: int = 0) -> list:
    """The numbers of a result, in order: tensors (detached, on cpu), arrays, scalars, strings."""
    if depth > 6:
        return []
    if isinstance(value, torch.Tensor):
        return [value.detach()]
    if isinstance(value, np.ndarray):
        return [torch.as_tensor(value)] if value.dtype != object else leaves(value.tolist(), depth + 1)
    if isinstance(value, (bool, int, float, complex, str, type(None), np.generic)):
        return [value]
    if isinstance(value, torch.nn.Module):
        return leaves(value.state_dict(), depth + 1)
    if isinstance(value, dict):
        return [x for k in sorted(value, key=repr) for x in [repr(k)] + leaves(value[k], depth + 1)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in leaves(v, depth + 1)]
    if dataclasses.is_dataclass(value):
        return leaves({f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, depth + 1)
    if hasattr(value, "__dict__") and not isinstance(value, (groups.FiniteGroup, groups.GroupElement)):
        return leaves({k: v for k, v in vars(value).items() if not k.startswith("_")}, depth + 1)
    return [repr(value)]


def same(got: Any, want: Any, tol: float | None, where: str) -> None:
    a, b = leaves(got), leaves(want)
    assert len(a) == len(b), f"{where}: {len(a)} numbers, the reference {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
        if tol is None:  # only the kinds must match
            assert type(x) is type(y) or isinstance(x, torch.Tensor) == isinstance(y, torch.Tensor), where
            continue
        if isinstance(y, torch.Tensor) or isinstance(x, torch.Tensor):
            assert isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor), f"{where}[{i}]: {x!r} vs {y!r}"
            assert x.shape == y.shape, f"{where}[{i}]: shape {tuple(x.shape)} vs {tuple(y.shape)}"
            assert x.device.type == "cpu" or x.device.type == y.device.type, where
            x, y = x.cpu(), y.cpu()
            if x.dtype == torch.bool or y.dtype == torch.bool or not (x.is_floating_point() or y.is_floating_point()):
                assert torch.equal(x, y.to(x.dtype)), f"{where}[{i}]: {x} vs {y}"
                continue
            x, y = x.to(torch.complex128 if x.is_complex() else torch.float64), y.to(torch.float64)
            scale = max(1.0, float(y.abs().max())) if y.numel() else 1.0
            torch.testing.assert_close(x, y.to(x.dtype), rtol=tol, atol=tol * scale, equal_nan=True,
                                       msg=lambda m: f"{where}[{i}]: {m}")
        elif isinstance(y, float) and isinstance(x, (float, int, np.floating)):
            assert math.isclose(x, y, rel_tol=tol, abs_tol=tol) or (math.isnan(x) and math.isnan(y)), \
                f"{where}[{i}]: {x} vs {y}"
        else:
            assert x == y or (isinstance(x, float) and isinstance(y, float) and math.isclose(x, y, rel_tol=tol)), \
                f"{where}[{i}]: {x!r} vs {y!r}"


# -- variants of one tensor argument -----------------------------------------------------------------------
FLOAT_LOW = (torch.float16, torch.bfloat16)
DTYPES = [torch.float16, torch.bfloat16, torch.float64, torch.float32, torch.int32, torch.int64, torch.bool,
          torch.complex64, torch.uint8]
LAYOUTS = ["transpose", "stride", "expand", "channels_last", "empty", "one"]
CONTAINERS = ["numpy", "list", "tuple", "0-d"]
DEVICES = ["meta"] + (["cuda"] if torch.cuda.is_available() else [])


def variant(kind: str, how: Any, t: torch.Tensor) -> tuple[Any, torch.Tensor | None]:
    """(what the call gets, the plain tensor holding the same values, or None if they are not
    comparable). Raises ``LookupError`` when the variant does not apply to ``t``."""
    if kind == "dtype":
        if how == t.dtype or (how == torch.uint8 and t.is_floating_point()):
            raise LookupError
        v = t.to(how)
        back = v.real if v.is_complex() else v
        return v, back.to(t.dtype)
    if kind == "layout":
        if how == "transpose" and t.ndim >= 2:
            v = t.transpose(-1, -2).contiguous().transpose(-1, -2)
        elif how == "stride" and t.ndim >= 1 and t.numel():
            big = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype)
            big[..., ::2] = t
            v = big[..., ::2]
        elif how == "expand" and t.ndim >= 1 and t.shape[0] > 1:
            v = t[:1].expand_as(t)
        elif how == "channels_last" and t.ndim == 4:
            v = t.contiguous(memory_format=torch.channels_last)
        else:
            raise LookupError
        return v, v.contiguous()
    if kind == "container":
        if how == "0-d":
            if t.ndim == 0 or not t.numel():
                raise LookupError
            v = t.reshape(-1)[0].clone()
            return v, v
        if t.dtype == torch.bfloat16:
            raise LookupError
        v = {"numpy": t.numpy(), "list": t.tolist(), "tuple": _tuples(t.tolist())}[how]
        return v, t
    if kind == "device":
        return t.to(how), t
    if kind == "grad":
        if not t.is_floating_point():
            raise LookupError
        return t.clone().requires_grad_(True), t
    raise AssertionError(kind)


def _tuples(v):
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def run(call: Callable) -> tuple[bool, Any]:
    try:
        return True, call()
    except Exception as exc:  # noqa: BLE001 - every exception is judged below
        return False, exc


def clear(exc: BaseException, name: str) -> bool:
    return isinstance(exc, (TypeError, ValueError)) and name in str(exc)


VARIANTS = st.one_of(
    st.tuples(st.just("dtype"), st.sampled_from(DTYPES)),
    st.tuples(st.just("layout"), st.sampled_from(LAYOUTS)),
    st.tuples(st.just("container"), st.sampled_from(CONTAINERS)),
    st.tuples(st.just("device"), st.sampled_from(DEVICES)),
    st.tuples(st.just("grad"), st.just(True)),
)


def tag(kind: str, how: Any) -> str:
    """The class of a variant, as KNOWN lists them."""
    if kind == "dtype":
        return {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float64: "float64",
                torch.float32: "float32", torch.bool: "bool", torch.complex64: "complex"}.get(how, "int")
    if kind == "container":
        return "0-d" if how == "0-d" else "container"
    if kind == "device":
        return str(how)
    return kind  # layout, grad


def check_entry(entry: Entry, n: int, seed: int, kind: str, how: Any, pick: int) -> str:
    """The property for one entry and one variant (a defect listed in KNOWN is reported, not failed)."""
    try:
        return _check_entry(entry, n, seed, kind, how, pick)
    except AssertionError:
        if tag(kind, how) in KNOWN.get(entry.name, ()):
            return "known defect"
        raise


def _check_entry(entry: Entry, n: int, seed: int, kind: str, how: Any, pick: int) -> str:
    call, kwargs = entry.build(n, seed)
    names = [k for k, v in kwargs.items() if isinstance(v, torch.Tensor)]
    assert names, f"{entry.name}: the builder passes no tensor"
    if kind == "layout" and how in ("empty", "one"):
        if not entry.batch:
            return "n/a"
        sl = slice(0, 0) if how == "empty" else slice(0, 1)
        got_args = {k: (v[sl] if k in entry.batch else v) for k, v in kwargs.items()}
        ref_args = {k: (v.contiguous() if isinstance(v, torch.Tensor) else v) for k, v in got_args.items()}
        name = entry.batch[0]
        tol = entry.tol
    else:
        name = names[pick % len(names)]
        try:
            got, plain = variant(kind, how, kwargs[name])
        except LookupError:
            return "n/a"
        got_args = dict(kwargs, **{name: got})
        ref_args = dict(kwargs, **{name: plain})
        tol = entry.tol
        if kind == "dtype" and how in FLOAT_LOW:
            tol = entry.low
    call2, fresh = entry.build(n, seed)  # fresh objects: no state shared with the variant's call
    ref_args = {k: (ref_args[k] if k == name or (kind == "layout" and k in entry.batch) else fresh[k])
                for k in ref_args}
    ok_ref, want = run(lambda: call2(**ref_args))
    ok, got_result = run(lambda: call(**got_args))
    label = f"{entry.name}({name}: {kind} {how})"
    if not ok:
        assert clear(got_result, name) or (not ok_ref and isinstance(got_result, (TypeError, ValueError))), \
            f"{label}: not a clear error: {type(got_result).__name__}: {got_result}"
        return "refused"
    if kind == "device" and how == "meta":
        outs = [x for x in leaves(got_result) if isinstance(x, torch.Tensor)]
        assert outs and all(x.is_meta for x in outs), f"{label}: a result from a meta tensor: {got_result!r}"[:400]
        return "meta result"
    assert ok_ref, f"{label}: the variant gives a result but the plain tensor raised {want!r}"
    same(got_result, want, tol, label)
    return "equal"


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_tensor_variants_give_the_same_result_or_a_clear_error(entry):
    @settings(max_examples=entry.examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
    @given(n=st.integers(1, 3), seed=st.integers(0, 2**16), variant=VARIANTS, pick=st.integers(0, 7))
    def prop(n, seed, variant, pick):
        check_entry(entry, n, seed, *variant, pick)
    prop()


# -- defects the battery found and not yet fixed -------------------------------------------------------
#: entry -> classes of variants (see ``tag``) that still give an obscure error or a wrong result.
#: Empty: every defect the battery found is fixed. A new one goes here only with a reason, and its
#: line goes when the defect is fixed.
KNOWN: dict[str, set[str]] = {}


# -- defects found by the battery and fixed here (the failing inputs, kept as plain tests) --------------
def test_intertwiner_projection_gates_its_weight():
    """A meta W gave uninitialised numbers (a silently wrong weight), a list W was stored as
    the weight by right_inverse, and float16 W crashed in einsum."""
    proj = equivariant.IntertwinerProjection(actions.equivariant_basis(REG3, REG3))
    W = rn(0, 3, 3)
    with pytest.raises(ValueError, match="W is a meta tensor"):
        proj(W.to("meta"))
    with pytest.raises(TypeError, match="W must be a torch.Tensor"):
        proj.right_inverse(W.tolist())
    with pytest.raises(ValueError, match=r"W must have shape \(3, 3\)"):
        proj(rn(0, 3, 4))
    torch.testing.assert_close(proj(W.half()), proj(W.half().float()))
    check_entry(ENTRIES[[e.target for e in ENTRIES].index(equivariant.IntertwinerProjection.forward)],
                2, 0, "device", "meta", 0)


def test_merge_data_gates_the_test_split():
    """MergeData.from_images stored a list or a meta tensor as the test images / labels, and
    its match_images errors named 'images'."""
    imgs, labels = u8(0, 2, 3, 32, 32), torch.tensor([1, 2])
    with pytest.raises(TypeError, match="test_images must be a torch.Tensor"):
        gcnn_barrier.MergeData.from_images(imgs, imgs.tolist(), labels)
    with pytest.raises(ValueError, match="test_labels is a meta tensor"):
        gcnn_barrier.MergeData.from_images(imgs, imgs, labels.to("meta"))
    with pytest.raises(ValueError, match="test_labels must hold one label per test image"):
        gcnn_barrier.MergeData.from_images(imgs, imgs, labels[:1])
    with pytest.raises(ValueError, match="match_images: float images must lie in"):
        gcnn_barrier.MergeData.from_images(imgs.float(), imgs, labels)


def test_layer_gate_fast_path_and_casts():
    """The layers' gate returns a right input itself (no copy); other float precisions are cast
    to the weights' dtype; integers, bool, complex, lists and meta tensors are refused by name."""
    layer = Dense(4, 3, "tanh", seed=0)
    x = rn(0, 2, 4)
    assert layer._input(x, layer.weight) is x
    torch.testing.assert_close(layer(x.double()), layer(x))
    torch.testing.assert_close(layer(x.half()), layer(x.half().float()))
    for bad, kind in ((x.long(), TypeError), (x.bool(), TypeError), (x.to(torch.complex64), TypeError),
                      (x.tolist(), TypeError), (x.to("meta"), ValueError), (x[0, 0], ValueError)):
        with pytest.raises(kind, match="x"):
            layer(bad)
    conv = seeded(0, lambda: cnn.ConvLayer(3, 4, 8)).eval()
    with pytest.raises(ValueError, match=r"x must have shape \(N, 3, \*, \*\)"):
        conv(rn(0, 2, 5, 8, 8))


def test_symmetries_never_truncate_or_drop_parts():
    """AttentionSymmetry truncated a float head permutation (as_tensor(..., long)); SymmetryElement
    applied to a complex weight kept it complex; from_matrix dropped an imaginary part."""
    A = torch.eye(3).repeat(2, 1, 1)
    with pytest.raises(TypeError, match="perm"):
        symmetries.AttentionSymmetry(torch.tensor([1.7, 0.2]), A, A)
    with pytest.raises(TypeError, match="A must"):
        symmetries.AttentionSymmetry(torch.tensor([1, 0]), A.tolist(), A)
    k = sym_el(0, 3)
    with pytest.raises(TypeError, match="z must be a real tensor"):
        k.act(rn(0, 2, 3).to(torch.complex64))
    with pytest.raises(TypeError, match="matrix"):
        symmetries.SymmetryElement.from_matrix(k.matrix().to(torch.complex64))
    with pytest.raises(TypeError, match="perm"):
        symmetries.SymmetryElement.unchecked(torch.tensor([1.0, 0.0]), torch.ones(2))
    zero = symmetries.SymmetryElement.unchecked(torch.tensor([1, 0], dtype=torch.int32), torch.tensor([0, 2]))
    assert zero.perm.dtype == torch.long and zero.scale.tolist() == [0.0, 2.0]  # values are not checked


def test_dense_actions_never_in_integer_arithmetic():
    """A dense action (recovered, lifted) applied to an integer x cast its matrices to int."""
    rot = lres.dense_action(C3, rotation_matrices())
    x = torch.tensor([[2, 0]])
    torch.testing.assert_close(rot.act(C3.elements[1], x), rot.act(C3.elements[1], x.float()))
    W = torch.tensor([[2, 0], [0, 1]])
    k = rotation_matrices()[1]
    torch.testing.assert_close(lweights.right_multiply(W, k), W.float() @ k)
