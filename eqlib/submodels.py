"""Inactive and redundant neurons of an MLP, and the submodel they reduce to.

A hidden neuron j of layer i (output h_j = σ(w_j · h_{i-1} + b_j)) can be removed
without changing the function when it is

* **dead**: its outgoing column W_{i+1}[:, j] is zero (its value is never used).
  :func:`reduce` removes more: *dead classes*, a neuron with its clones whose outgoing
  columns are non-zero but cancel in the class sum Σ_q c_q W_{i+1}[:, q], and neurons
  whose columns are non-zero only in the rows of dead neurons of layer i+1 (the
  cascade);
* **constant**: its incoming row w_j is zero, so it outputs the constant σ(b_j); the
  next layer absorbs it: b_{i+1} ← b_{i+1} + W_{i+1}[:, j] σ(b_j);
* a **clone** of a neuron a: (w_j, b_j) = c (w_a, b_a) with c in the one-dimensional
  intertwiner group of σ (c = 1 always; c = ±1 for odd σ, the *negated clones*;
  c > 0 for ReLU; c ≠ 0 for the identity). Then h_j = σ(c z) = c σ(z) = c h_a, and the
  two merge: W_{i+1}[:, a] ← W_{i+1}[:, a] + c W_{i+1}[:, j]. (The sigmoid's negated
  clones, σ(−z) = 1 − σ(z), are redundant too, merged with b_{i+1} ← b_{i+1} +
  W_{i+1}[:, j] as well; :func:`find_clones` and :func:`reduce` do not merge them.)

Removing neurons can create new degeneracies (merged columns may make rows of the next
layer equal, dropped rows may leave columns zero), so :func:`reduce` repeats the search
on the reduced network until nothing changes. Its result is a :class:`Reduction`
holding the smaller MLP and the embedding maps of the commuting diagram (the course's
own construction, checked numerically in chapter 3).

**The diagram** (every hidden layer i = 1..L−1; α_0, α_L are identities). The course
counts a submodel only when α_i and α*_i are *affine* (α*_i ∘ α_i = id): affine because
a constant unit outputs σ(b), which α_i must reproduce; restricted because with
arbitrary maps the GELU bypass network (W_1 = [A; −A], W_2 = [B, −B]) would have the
linear network u ↦ B A u as a submodel via α(u) = (GELU(u), GELU(−u)), α*(h) = h₊ − h₋,
with a nonlinear induced action α M α*. That bypass parameter is not identifiable for
m ≥ 2 (proved in chapter 4, ch04-prop-bypass part 2); that it is not weakly identifiable
relative to affine submodels either is only a proof sketch there (part 3; chapter 7 proves
a version for one instance relative to a rotation action, ch07-prop-bypass). Each neuron
of V_i is a member of a *live class* t (h_j = c_j h̃_t), a *constant* (h_j = v_j) or a
member of a *dead class*. Then

* α_i: Ṽ_i → V_i, α_i(h̃) = A_i h̃ + v_i with A_i[j, t] = c_j for j in live class t,
  v_i the constants' values, zero on dead neurons;
* α*_i: V_i → Ṽ_i reads each live class's representative (c = 1): α*_i ∘ α_i = id;
* β: Θ̃ → Θ sets, for a submodel parameter θ̃, every representative's class sums of
  the full weights to θ̃'s weights (and 0 for dead classes), constants' incoming class
  sums to 0, biases minus the constants' contribution, and each class member's
  incoming row (and bias) to c_j × its representative's plus θ's deviation
  D_j = θ_j − c_j θ_rep; everything else (dead-class representatives' rows, members'
  outgoing columns, constants' biases) is kept from the original θ, so that
  β(reduce(θ)) = θ up to the tolerance. D_j is zero for clones found in the first pass;
  for clones that a later pass finds (their rows agree only in class sums) D_j has zero
  sums over every class of layer i−1 and vanishes at v_{i−1}, so it changes no
  pre-activation on the latents below.
* For every θ̃ and h̃ ∈ Ṽ_{i-1}:  J_i f_i(α_{i-1}(h̃); β(θ̃)_i) = α_i(f̃_i(h̃; θ̃_i)),
  where the diagonal 0/1 matrix J_i zeroes the dead coordinates (J_L = I), and, after
  J_{i+1}, the next layer ignores them on the latents the network reaches:
  J_{i+1} f_{i+1}(J_i y) = J_{i+1} f_{i+1}(y) for y = f_{≤i}(x; β(θ̃)) (members of a dead
  class equal c_q times their representative there, and dead neurons of layer i may
  feed dead neurons of layer i+1); hence f(·; β(θ̃)) = f̃(·; θ̃).

Chapter: *Models, latent spaces and submodels* (book/part1/03_models_and_submodels).
"""
from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from .models.base import Model
from .models.activation import activation_record
from .models.mlp import MLP
from .seeds import torch_generator
from .validation import check_bool, check_float, check_int, check_tensor

__all__ = ["find_inactive", "find_clones", "Reduction", "reduce", "plant_degenerate"]

Tensor = torch.Tensor
_LIVE, _CONST, _DEAD = 0, 1, 2


def _require_mlp(model, what: str) -> None:
    if not isinstance(model, MLP):
        if isinstance(model, Model):
            raise TypeError(f"model must be an eqlib MLP: {what} works on eqlib MLPs (layers σ(Wx + b)); got {type(model).__name__}, "
                            "whose latent coordinates are not scalar neurons")
        raise TypeError(f"model must be an eqlib MLP ({what}), got {type(model).__name__}")
    model.check_finite()


def _check_tol(tol: float) -> float:
    return check_float("tol", tol, 0.0)


def _sigma(act: str, z: Tensor) -> Tensor:
    return activation_record(act).fn(z)


@dataclass
class _Layer:
    """Classification of the neurons of one hidden layer of the full model."""

    status: Tensor  # (d,) long: _LIVE, _CONST or _DEAD
    rep: Tensor  # (d,) long: index of the class representative (self for constants)
    ratio: Tensor  # (d,) float: h_j = ratio_j h_rep
    value: Tensor = field(default=None)  # (d,) float: constants' values (0 elsewhere)

    @classmethod
    def trivial(cls, d: int) -> "_Layer":
        return cls(torch.zeros(d, dtype=torch.long), torch.arange(d), torch.ones(d), torch.zeros(d))

    def live_reps(self) -> Tensor:
        idx = torch.arange(self.status.numel())
        return idx[(self.status == _LIVE) & (self.rep == idx)]

    def class_reps(self) -> Tensor:
        """Representatives of live and dead classes (live first)."""
        idx = torch.arange(self.status.numel())
        dead = idx[(self.status == _DEAD) & (self.rep == idx)]
        return torch.cat([self.live_reps(), dead])

    def class_matrix(self, reps: Tensor) -> Tensor:
        """(d, len(reps)): [j, t] = ratio_j if j is a live/dead member of class reps[t]."""
        d = self.status.numel()
        m = torch.zeros(d, reps.numel(), dtype=self.ratio.dtype)
        pos = torch.full((d,), -1, dtype=torch.long)
        pos[reps] = torch.arange(reps.numel())
        member = (self.status != _CONST) & (pos[self.rep] >= 0)
        j = torch.arange(d)[member]
        m[j, pos[self.rep[j]]] = self.ratio[j]
        return m


class _Structure:
    """Classification of every hidden layer plus the maps it induces (from θ)."""

    def __init__(self, model: MLP):
        self.model = model
        self.L = model.depth
        self.has_bias = model.layers[0].bias is not None
        self.layers = [_Layer.trivial(d) for d in model.dims[1:-1]]

    # maps -------------------------------------------------------------------------
    def alpha(self, i: int) -> tuple[Tensor, Tensor]:
        """(A_i, v_i) for latent i in 0..L."""
        d = self.model.dims[i]
        if i == 0 or i == self.L:
            return torch.eye(d), torch.zeros(d)
        lay = self.layers[i - 1]
        return lay.class_matrix(lay.live_reps()), lay.value

    def update_values(self) -> None:
        """Constants' values v_i[j] = σ(b_i[j] + W_i[j] v_{i-1}), layer by layer, from θ."""
        with torch.no_grad():
            for i in range(1, self.L):
                lay, layer = self.layers[i - 1], self.model.layers[i - 1]
                _, v_prev = self.alpha(i - 1)
                z = layer.weight @ v_prev.to(layer.weight)
                if layer.bias is not None:
                    z = z + layer.bias
                const = lay.status == _CONST
                lay.value = torch.where(const, _sigma(layer.activation, z), torch.zeros_like(z))

    def reduced_parameters(self) -> list[tuple[Tensor, Tensor | None]]:
        """(W̃_i, b̃_i) = (W_i[reps] A_{i-1}, b_i[reps] + W_i[reps] v_{i-1})."""
        out = []
        with torch.no_grad():
            for i in range(1, self.L + 1):
                layer = self.model.layers[i - 1]
                rows = self.layers[i - 1].live_reps() if i < self.L else torch.arange(layer.out_dim)
                W = layer.weight[rows]
                if i == 1:  # α_0 = id
                    out.append((W.clone(), None if layer.bias is None else layer.bias[rows].clone()))
                    continue
                A, v = self.alpha(i - 1)
                b = None if layer.bias is None else layer.bias[rows] + W @ v
                out.append((W @ A, b))
        return out


def _clone_groups(rows: Tensor, activation: str, tol: float) -> list[list[tuple[int, float]]]:
    """Groups of rows related by a scalar of the 1-d intertwiner group of σ.

    Returns lists [(index, c), ...], the representative first with c = 1, meaning
    row_index = c · row_rep. Only groups of two or more.
    """
    n = rows.shape[0]
    if n < 2:
        return []
    kind = activation_record(activation).kind
    r = rows.double()
    norms = r.abs().amax(dim=1)
    scaled = kind in ("scaled_permutation", "nonzero_scaled_permutation")
    signed = kind in ("signed_permutation", "nonzero_scaled_permutation")
    base = r / norms.clamp_min(1e-300)[:, None] if scaled else r
    def close(a: Tensor, b: Tensor) -> Tensor:
        # max-abs distance ≤ tol implies Euclidean ≤ tol·√m: a fast (matrix-product) filter,
        # then the exact max-abs test on the few candidate pairs
        bound = tol * base.shape[1] ** 0.5 + 1e-9 * (1 + a.norm(dim=1).max().item())
        cand = torch.nonzero(torch.cdist(a, b, compute_mode="use_mm_for_euclid_dist") <= bound)
        out = torch.zeros(n, n, dtype=torch.bool)
        if len(cand):
            ok = (a[cand[:, 0]] - b[cand[:, 1]]).abs().amax(dim=1) <= tol
            out[cand[ok, 0], cand[ok, 1]] = True
        return out

    close_plus = close(base, base)
    close_minus = close(base, -base) if signed else torch.zeros_like(close_plus)
    nonzero = norms > tol
    assigned = torch.zeros(n, dtype=torch.bool)
    groups = []
    for a in range(n):
        if assigned[a] or not nonzero[a]:
            continue
        partners = (close_plus[a] | close_minus[a]) & ~assigned & nonzero
        partners[a] = False
        idx = torch.nonzero(partners).flatten().tolist()
        if not idx:
            continue
        assigned[a] = True
        group = [(a, 1.0)]
        for b in idx:
            sign = 1.0 if close_plus[a, b] else -1.0
            mag = float(norms[b] / norms[a]) if scaled else 1.0
            group.append((b, sign * mag))
            assigned[b] = True
        groups.append(group)
    return groups


def _detect(params: list[tuple[Tensor, Tensor | None]], activations: list[str], tol: float, foldable: bool):
    """One pass over every hidden layer: constant rows, dead columns, clone groups."""
    found = []
    for i in range(1, len(params)):
        W, b = params[i - 1]
        W_next = params[i][0]
        act = activations[i - 1]
        const = W.abs().amax(dim=1) <= tol if W.shape[1] else torch.ones(W.shape[0], dtype=torch.bool)
        if not foldable and b is None and float(_sigma(act, torch.zeros(()))) != 0.0:
            const = torch.zeros_like(const)
        dead = W_next.abs().amax(dim=0) <= tol
        const = const & ~dead
        rest = torch.nonzero(~const & ~dead).flatten()
        rows = W[rest] if b is None else torch.cat([W[rest], b[rest, None]], dim=1)
        groups = [[(int(rest[a]), c) for a, c in g] for g in _clone_groups(rows, act, tol)]
        found.append({"dead": torch.nonzero(dead).flatten(), "constant": torch.nonzero(const).flatten(),
                      "clones": groups})
    return found


def _in_model_dtype(fn):
    """Run ``fn`` with the default float dtype set to the MLP's own (float64 networks are
    reduced in float64: the maps α, α* and the constants are built in that dtype)."""
    @functools.wraps(fn)
    def wrapper(first, *args, **kwargs):
        model = first.original if isinstance(first, Reduction) else first
        param = next(model.parameters(), None) if isinstance(model, torch.nn.Module) else None
        dtype = param.dtype if param is not None else None
        if dtype not in (torch.float32, torch.float64) or dtype == torch.get_default_dtype():
            return fn(first, *args, **kwargs)
        old = torch.get_default_dtype()
        torch.set_default_dtype(dtype)
        try:
            return fn(first, *args, **kwargs)
        finally:
            torch.set_default_dtype(old)
    return wrapper


def find_inactive(model: MLP, tol: float = 1e-6) -> list[dict[str, Tensor]]:
    """Inactive neurons of each hidden layer, in one pass over the given parameters.

    Returns:
        For hidden layers 1..L−1, a dict with ``"dead"`` (LongTensor of neurons whose
        outgoing column is zero: max-abs of W_{i+1}[:, j] ≤ tol) and ``"constant"`` (neurons
        whose incoming row is zero, max-abs of W_i[j, :] ≤ tol, and that are not dead: they
        output σ(b_j), which the next bias can absorb).

    Raises:
        TypeError: not an MLP.  ValueError: NaN/inf parameters or a negative tol.

    Chapter: *Models, latent spaces and submodels* (book/part1/03_models_and_submodels).
    """
    _require_mlp(model, "find_inactive")
    tol = _check_tol(tol)
    params = [(l.weight.detach(), None if l.bias is None else l.bias.detach()) for l in model.layers]
    found = _detect(params, model.activations, tol, foldable=model.layers[0].bias is not None)
    return [{"dead": f["dead"], "constant": f["constant"]} for f in found]


def find_clones(model: MLP, tol: float = 1e-6) -> list[list[list[tuple[int, float]]]]:
    """Redundant neurons of each hidden layer, in one pass over the given parameters.

    Neuron j is a clone of neuron a when (w_j, b_j) = c (w_a, b_a) up to tol (max-abs)
    for a scalar c with σ(c z) = c σ(z): c = 1; c = ±1 for odd σ (tanh, identity);
    c > 0 for ReLU (compared after normalising rows); c ≠ 0 for the identity.
    Inactive neurons (zero rows or zero outgoing columns) are left out.

    Returns:
        For hidden layers 1..L−1, a list of groups; a group is [(a, 1.0), (j, c), ...]
        with its representative a first.

    Chapter: *Models, latent spaces and submodels*.
    """
    _require_mlp(model, "find_clones")
    tol = _check_tol(tol)
    params = [(l.weight.detach(), None if l.bias is None else l.bias.detach()) for l in model.layers]
    return [f["clones"] for f in _detect(params, model.activations, tol, foldable=model.layers[0].bias is not None)]


@dataclass
class Reduction:
    """The result of :func:`reduce`: a submodel and its embedding into the full model.

    Lists are indexed by latent space i = 0..L (entries 0 and L are identities).

    Attributes:
        model: the reduced MLP f̃.
        original: the full MLP f (not copied).
        alpha: A_i, shape (d_i, d̃_i); α_i(h̃) = A_i h̃ + alpha_offset[i].
        alpha_offset: v_i, shape (d_i,): the constant neurons' values.
        alpha_star: shape (d̃_i, d_i), reads the representatives: α*_i ∘ α_i = id.
        live: bool (d_i,), False on dead neurons (J_i keeps the live ones).
        kinds: per latent space, a list of "live", "constant" or "dead" per neuron.

    Chapter: *Models, latent spaces and submodels* (book/part1/03_models_and_submodels).
    """

    model: MLP
    original: MLP
    alpha: list[Tensor]
    alpha_offset: list[Tensor]
    alpha_star: list[Tensor]
    live: list[Tensor]
    kinds: list[list[str]]
    _structure: object = field(repr=False, default=None)  # the private _Structure

    def class_sizes(self, i: int) -> Tensor:
        """(d̃_i,) long: the number of units of V_i in each live class (1 = no clones).

        Chapter: *The main theorem* (book/part2/06_main_theorem): a lifted action lies in
        K_i exactly when it fixes every class of size > 1.
        """
        return (self.alpha[i] != 0).sum(0)

    def embed(self, i: int, h: Tensor) -> Tensor:
        """α_i(h̃) for h̃ of shape (..., d̃_i)."""
        h = self._latent("h", i, h, self.alpha[check_int("i", i, 0, len(self.alpha) - 1)].shape[1])
        return h @ self.alpha[i].T.to(h) + self.alpha_offset[i].to(h)

    def project(self, i: int, h: Tensor) -> Tensor:
        """α*_i(h) for h of shape (..., d_i)."""
        h = self._latent("h", i, h, self.alpha_star[check_int("i", i, 0, len(self.alpha_star) - 1)].shape[1])
        return h @ self.alpha_star[i].T.to(h)

    @staticmethod
    def _latent(name: str, i: int, h: Tensor, d: int) -> Tensor:
        check_tensor(name, h, dtype="float")
        if h.ndim == 0 or h.shape[-1] != d:
            raise ValueError(f"{name} must have shape (..., {d}) (latent space {i}), got {tuple(h.shape)}")
        return h

    @_in_model_dtype
    def beta(self, sub: MLP | None = None) -> MLP:
        """β(θ̃): full-size MLP parameters from submodel parameters (default: ``self.model``).

        f(·; β(θ̃)) = f̃(·; θ̃) exactly for every θ̃ (not only the reduced one), and
        β(reduce(θ)) = θ up to the reduction's tolerance, also when a later pass finds
        clones whose rows agree only in their class sums (a member's row is c_j × its
        representative's plus θ's deviation D_j, whose class sums are zero).

        Raises:
            TypeError: if ``sub`` is not an MLP.
            ValueError: if ``sub`` does not have the submodel's widths and activations.
        """
        sub = self.model if sub is None else sub
        if not isinstance(sub, MLP):
            raise TypeError(f"β takes an eqlib MLP, got {type(sub).__name__}")
        if sub.widths != self.model.widths or sub.activations != self.model.activations:
            raise ValueError(f"β takes an MLP with widths {self.model.widths} and activations "
                             f"{self.model.activations}")
        sub.check_finite()
        st = self._structure
        full = copy.deepcopy(self.original)
        L = full.depth
        with torch.no_grad():
            for i in range(1, L + 1):
                layer, sl, orig = full.layers[i - 1], sub.layers[i - 1], self.original.layers[i - 1]
                W = layer.weight.detach().clone()
                b = None if layer.bias is None else layer.bias.detach().clone()
                d = W.shape[0]
                if i < L:
                    lay = st.layers[i - 1]
                    idx = torch.arange(d)
                    reps = lay.live_reps()
                    rows = torch.cat([reps, idx[lay.status == _CONST]])
                    target = torch.zeros(rows.numel(), sl.weight.shape[1])
                    target[: reps.numel()] = sl.weight
                    target_b = None if b is None else torch.cat([sl.bias, b[idx[lay.status == _CONST]]])
                    n_live = reps.numel()
                else:
                    rows, target, target_b, n_live = torch.arange(d), sl.weight.detach(), (
                        None if b is None else sl.bias.detach()), d
                if i == 1:
                    W[rows] = target
                    if b is not None:
                        b[rows] = target_b
                else:
                    prev = st.layers[i - 2]
                    creps = prev.class_reps()
                    n_prev_live = prev.live_reps().numel()
                    C = prev.class_matrix(creps)  # (d_{i-1}, classes)
                    goal = torch.zeros(rows.numel(), creps.numel())
                    goal[:, :n_prev_live] = target
                    W[rows[:, None], creps[None, :]] += goal - W[rows] @ C
                    if b is not None:
                        b_rows = target_b.clone()
                        b_rows[:n_live] = target_b[:n_live] - W[rows[:n_live]] @ prev.value
                        b[rows] = b_rows
                if i < L:
                    # each class member's row becomes c_j × its representative's new row plus
                    # θ's deviation D_j = θ_j − c_j θ_rep (zero for clones found in the first
                    # pass; for clones found later only D_j's class sums vanish, so D_j adds
                    # nothing to (a) or (b), and β(reduce(θ)) = θ keeps holding)
                    lay = st.layers[i - 1]
                    members = torch.nonzero((lay.status != _CONST) & (lay.rep != torch.arange(d))).flatten()
                    heads, c = lay.rep[members], lay.ratio[members]
                    W0 = orig.weight.detach()
                    W[members] = W0[members] + c[:, None] * (W[heads] - W0[heads])
                    if b is not None:
                        b0 = orig.bias.detach()
                        b[members] = b0[members] + c * (b[heads] - b0[heads])
                layer.weight.copy_(W)
                if b is not None:
                    layer.bias.copy_(b)
        return full

    @_in_model_dtype
    def diagram_errors(self, x: Tensor, sub: MLP | None = None) -> dict[str, float]:
        """Check the commuting diagram numerically on inputs x (N, d_0).

        Returns max-abs errors: ``"alpha_star_alpha"`` (α*∘α − id over all i),
        ``"layers"`` (J_i f_i(α_{i-1} h̃; β θ̃) − α_i f̃_i(h̃; θ̃), on the submodel's own
        latents h̃), ``"end_to_end"`` (f(x; β θ̃) − f̃(x; θ̃)) and ``"beta_roundtrip"``
        (β(reduce θ) − θ, over all parameters).
        """
        check_tensor("x", x, dtypes="float", nonempty=True, finite=True)
        sub = self.model if sub is None else sub
        x = sub.check_input(x)  # another float precision: the submodel's dtype (and its device)
        full = self.beta(sub)
        with torch.no_grad():
            errs = {"alpha_star_alpha": max(float((s @ a - torch.eye(a.shape[1])).abs().amax()) if a.numel() else 0.0
                                            for a, s in zip(self.alpha, self.alpha_star))}
            h_sub = [x.flatten(1) if x.dim() > 2 else x] + sub.latents(x)
            layer_err = 0.0
            for i in range(1, full.depth + 1):
                lhs = full.layers[i - 1](self.embed(i - 1, h_sub[i - 1])) * self.live[i].to(x)
                rhs = self.embed(i, h_sub[i])
                layer_err = max(layer_err, float((lhs - rhs).abs().max()))
            errs["layers"] = layer_err
            errs["end_to_end"] = float((full(x) - sub(x)).abs().max())
            back = self.beta(self.model)
            errs["beta_roundtrip"] = max(float((p - q).abs().max()) for p, q in
                                         zip(back.parameters(), self.original.parameters()))
        return errs


@_in_model_dtype
def reduce(model: MLP, tol: float = 1e-6, max_passes: int = 100) -> Reduction:
    """Remove dead and constant neurons and merge clones until none is left.

    Each pass detects, on the current reduced parameters, constant neurons (zero
    incoming row; folded into the next bias), dead neurons (zero outgoing column) and
    clones (see :func:`find_clones`), in every hidden layer; passes repeat until one
    changes nothing, so reducing a reduced network changes nothing (idempotence).

    Args:
        model: an eqlib MLP.
        tol: max-abs tolerance for "zero" and "equal".

    Returns:
        A :class:`Reduction` (``.model`` the smaller MLP, ``.alpha``, ``.alpha_star``,
        ``.beta`` the embedding maps).

    Raises:
        TypeError: if ``model`` is not an MLP.
        ValueError: NaN/inf parameters (naming the parameter), a negative tol, or a
            hidden layer whose neurons are all inactive (the network is constant in
            that layer's input and has no submodel with that layer).

    Chapter: *Models, latent spaces and submodels* (book/part1/03_models_and_submodels).
    """
    _require_mlp(model, "reduce")
    tol = _check_tol(tol)
    max_passes = check_int("max_passes", max_passes, 1)
    st = _Structure(model)
    acts = model.activations
    for _ in range(max_passes):
        st.update_values()
        params = st.reduced_parameters()
        found = _detect(params, acts, tol, foldable=st.has_bias)
        changed = False
        for i, f in enumerate(found, start=1):
            lay = st.layers[i - 1]
            reps = lay.live_reps()
            if f["dead"].numel() + f["constant"].numel() >= reps.numel():
                raise ValueError(f"every neuron of hidden layer {i} is inactive (dead or constant): the network's "
                                 "output does not depend on its input through this layer, and no submodel keeps "
                                 "the layer")
            for t in f["dead"].tolist():
                members = lay.rep == reps[t]
                lay.status[members & (lay.status == _LIVE)] = _DEAD
                changed = True
            for t in f["constant"].tolist():
                members = (lay.rep == reps[t]) & (lay.status == _LIVE)
                lay.status[members] = _CONST
                lay.rep[members] = torch.nonzero(members).flatten()
                lay.ratio[members] = 1.0
                changed = True
            for group in f["clones"]:
                head = reps[group[0][0]]
                for t, c in group[1:]:
                    members = (lay.rep == reps[t]) & (lay.status == _LIVE)
                    lay.rep[members] = head
                    lay.ratio[members] = lay.ratio[members] * c
                    changed = True
        if not changed:
            break
    else:  # pragma: no cover - each pass removes a neuron, so this needs > max_passes neurons
        raise RuntimeError(f"reduce did not reach a fixed point in {max_passes} passes")
    st.update_values()
    params = st.reduced_parameters()
    widths = [model.dims[0]] + [W.shape[0] for W, _ in params]
    sub = MLP(widths, activations=acts, bias=st.has_bias, seed=0)
    with torch.no_grad():
        for layer, (W, b) in zip(sub.layers, params):
            layer.weight.copy_(W)
            if b is not None:
                layer.bias.copy_(b)
    sub = sub.to(model.device)
    alpha, offset, alpha_star, live, kinds = [], [], [], [], []
    names = {_LIVE: "live", _CONST: "constant", _DEAD: "dead"}
    for i in range(model.depth + 1):
        A, v = st.alpha(i)
        alpha.append(A)
        offset.append(v)
        if 0 < i < model.depth:
            lay = st.layers[i - 1]
            reps = lay.live_reps()
            S = torch.zeros(reps.numel(), A.shape[0])
            S[torch.arange(reps.numel()), reps] = 1.0
            alpha_star.append(S)
            live.append(lay.status != _DEAD)
            kinds.append([names[int(s)] for s in lay.status])
        else:
            alpha_star.append(torch.eye(A.shape[0]))
            live.append(torch.ones(A.shape[0], dtype=torch.bool))
            kinds.append(["live"] * A.shape[0])
    return Reduction(sub, model, alpha, offset, alpha_star, live, kinds, st)


def plant_degenerate(model: MLP, *, n_dead: int = 1, n_constant: int = 1, n_clones: int = 1, n_negated: int = 0,
                     seed: int | torch.Generator | None = 0, shuffle: bool = True) -> MLP:
    """A wider MLP with the same function: adds degenerate neurons to every hidden layer.

    Per hidden layer: ``n_dead`` neurons with random incoming weights and a zero
    outgoing column; ``n_constant`` neurons with a zero incoming row and random bias
    (the next bias compensates their output σ(b)); ``n_clones`` copies of random
    existing neurons (the outgoing column is split t : 1 − t between the two);
    ``n_negated`` negated copies (−w, −b) for odd σ (the original's column takes the
    compensating +u). With ``shuffle`` the neurons of each layer are then permuted.

    Raises:
        TypeError: if ``mlp`` is not an MLP.
        ValueError: for negated clones of a non-odd activation, constant neurons
            without biases, or a count below 0 or above the narrowest hidden width.

    Chapter: *Models, latent spaces and submodels* (book/part1/03_models_and_submodels).
    """
    _require_mlp(model, "plant_degenerate")
    counts = dict(n_dead=n_dead, n_constant=n_constant, n_clones=n_clones, n_negated=n_negated)
    # each count is at most the narrowest hidden width (a larger one would only loop for
    # long: plant_degenerate(n_dead=10**6) built a million neurons per layer)
    cap = min(model.widths[1:-1], default=None)
    for k, v in counts.items():
        if check_int(k, v, 0) > (cap if cap is not None else v):
            raise ValueError(f"{k} must be an integer in 0..{cap} (at most the narrowest hidden layer's "
                             f"width, {cap}), got {v}")
    check_bool("shuffle", shuffle)
    has_bias = model.layers[0].bias is not None
    if n_constant and not has_bias:
        raise ValueError("constant neurons need biases (their output is folded into the next bias)")
    if n_negated:
        odd = [a for a in model.activations[:-1] if not activation_record(a).odd]
        if odd:
            raise ValueError(f"negated clones need odd activations (σ(−z) = −σ(z)); got {sorted(set(odd))}")
    gen = torch_generator(seed)
    Ws = [l.weight.detach().clone() for l in model.layers]
    bs = [None if l.bias is None else l.bias.detach().clone() for l in model.layers]
    for i in range(model.depth - 1):  # hidden layer i+1: rows of Ws[i], columns of Ws[i+1]
        W, b, Wn, bn = Ws[i], bs[i], Ws[i + 1], bs[i + 1]
        d, d_in = W.shape
        act = model.activations[i]
        new_rows, new_b, new_cols = [], [], []
        for _ in range(n_dead):
            new_rows.append(torch.randn(d_in, generator=gen) / d_in ** 0.5)
            new_b.append(torch.randn((), generator=gen))
            new_cols.append(torch.zeros(Wn.shape[0]))
        for _ in range(n_constant):
            beta = 0.5 * torch.randn((), generator=gen)
            u = torch.randn(Wn.shape[0], generator=gen) / d ** 0.5
            new_rows.append(torch.zeros(d_in))
            new_b.append(beta)
            new_cols.append(u)
            bn -= u * _sigma(act, beta)
        for _ in range(n_clones):
            a = int(torch.randint(0, d, (), generator=gen))
            t = float(torch.rand((), generator=gen)) * 0.6 + 0.2
            new_rows.append(W[a].clone())
            new_b.append(torch.zeros(()) if b is None else b[a].clone())
            new_cols.append((1 - t) * Wn[:, a])
            Wn[:, a] *= t
        for _ in range(n_negated):
            a = int(torch.randint(0, d, (), generator=gen))
            u = torch.randn(Wn.shape[0], generator=gen) / d ** 0.5
            new_rows.append(-W[a])
            new_b.append(torch.zeros(()) if b is None else -b[a])
            new_cols.append(u)
            Wn[:, a] += u
        if new_rows:
            W = torch.cat([W, torch.stack(new_rows)])
            if b is not None:
                b = torch.cat([b, torch.stack(new_b)])
            Wn = torch.cat([Wn, torch.stack(new_cols, dim=1)], dim=1)
        if shuffle:
            p = torch.randperm(W.shape[0], generator=gen)
            W, Wn = W[p], Wn[:, p]
            b = None if b is None else b[p]
        Ws[i], bs[i], Ws[i + 1], bs[i + 1] = W, b, Wn, bn
    widths = [model.dims[0]] + [W.shape[0] for W in Ws]
    new = MLP(widths, activations=model.activations, bias=has_bias, seed=0)
    with torch.no_grad():
        for layer, W, b in zip(new.layers, Ws, bs):
            layer.weight.copy_(W)
            if b is not None:
                layer.bias.copy_(b)
    return new.to(model.device)
