"""Measuring linear equivariance of features by least squares (Lenc & Vedaldi style).

Fit an unconstrained linear map A with ``A f(y) ≈ f(g·y)`` on one half of the samples
and report, on the other half, the median relative error
``‖f(g·y) − A f(y)‖ / ‖f(y)‖``. A small error says the features carry a *linear*
action of g; comparing A with the nearest signed permutation says whether that action
lies in the layer's symmetry group.

Solvers: ``"gelsd"`` (:func:`torch.linalg.lstsq` with the SVD driver; correct on
rank-deficient problems such as networks with dead units; the CPU default) and
``"normal"`` (the normal equations ``(XᵀX/n + ridge·I) Aᵀ = XᵀY/n`` solved through an
eigendecomposition with a relative cut-off, so rank deficiency is handled like a
pseudo-inverse; the GPU default, and the fast choice: one d×d Gram matmul). The CPU
default driver ``gelsy`` of :func:`torch.linalg.lstsq` is *not* used: it returns wrong
fits on rank-deficient problems.

Features of Gaussian inputs (:func:`paired_features`): for a prefix whose first layer is
dense, σ(W y + b), f(g·y) is computed from y with the acted-on weight W ρ(g) (the
adjunction ⟨w, ρ(g) y⟩ = ⟨ρ(g)ᵀ w, y⟩), the activations written straight into the outputs;
with ``sampling="row_space"`` the pair u = [W; W ρ(g)] y is drawn directly in its law
(:func:`row_space_factor`, proof there), which saves a third of the work for the first
CIFAR-10 layer (2d = 2048 < D = 3072).

Chapter: *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps); used in *Reproducing the
CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..actions import Action
from ..groups import GroupElement
from ..models.base import Model
from ..models.mlp import MLP, Dense
from ..seeds import torch_generator
from ..validation import check_bool, check_choice, check_float, check_int, check_tensor
from .result import dense_action

__all__ = ["LinearFit", "SAMPLINGS", "fit_linear_action", "linear_equivariance_error", "paired_features",
           "recover_by_lstsq", "relative_errors", "row_space_factor"]

Tensor = torch.Tensor


@dataclass
class LinearFit:
    """Result of :func:`fit_linear_action`.

    Attributes:
        A: (d, d) map with ``A f(y) ≈ f(g y)`` (i.e. ``features_transformed ≈ features @ A.T``).
        median_error: median relative error on the held-out samples.
        errors: (n_test,) relative error of every held-out sample.
        fit_median_error: median relative error on the fitting samples.
        n_fit, n_test: the sizes of the two halves.
        solver: ``"gelsd"`` or ``"normal"``.

    Chapter: *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps).
    """

    A: Tensor
    median_error: float
    errors: Tensor
    fit_median_error: float
    n_fit: int
    n_test: int
    solver: str

    def __repr__(self) -> str:
        return (f"LinearFit(d={self.A.shape[0]}, median_error={self.median_error:.4g} on {self.n_test} held-out "
                f"samples, fit error {self.fit_median_error:.4g} on {self.n_fit}, solver={self.solver})")


def relative_errors(A: Tensor, X: Tensor, Y: Tensor, chunk: int = 65536) -> Tensor:
    """``‖Y_n − A X_n‖ / ‖X_n‖`` for every row n (chunked to bound memory): (N,).

    Chapter: *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps).
    """
    chunk = check_int("chunk", chunk, 1)
    check_tensor("A", A, ndim=2, dtype="real"), check_tensor("X", X, ndim=2, dtype="real")
    check_tensor("Y", Y, ndim=2, dtype="real")
    if X.shape[1] != A.shape[1]:
        raise ValueError(f"X must have rows of length {A.shape[1]} (the columns of A, shape {tuple(A.shape)}), "
                         f"got X of shape {tuple(X.shape)}")
    if tuple(Y.shape) != (X.shape[0], A.shape[0]):
        raise ValueError(f"Y must have shape ({X.shape[0]}, {A.shape[0]}) (one row A X_n per row of X), "
                         f"got {tuple(Y.shape)}")
    dt = _compute_dtype(A, X, Y)  # one float dtype (integers exact, half precisions in float32)
    A, X, Y = A.to(dt), X.to(dt), Y.to(dt)
    out = []
    At = A.T
    for s in range(0, X.shape[0], chunk):
        x, y = X[s:s + chunk], Y[s:s + chunk]
        out.append(torch.addmm(y, x, At, alpha=-1).norm(dim=1) / x.norm(dim=1).clamp_min(1e-12))
    return torch.cat(out) if out else X.new_zeros(0)


def _compute_dtype(*tensors: Tensor) -> torch.dtype:
    """The float dtype to compute in: the promoted dtype of ``tensors``, float32 at least
    (integers are cast exactly, float16 / bfloat16 have no CPU lstsq or QR)."""
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = torch.promote_types(dt, t.dtype)
    return torch.float64 if dt == torch.float64 else torch.float32


def _solve_normal(X: Tensor, Y: Tensor, ridge: float, rcond: float) -> Tensor:
    """Aᵀ from the normal equations (Gram matrix in the features' dtype, solve in float64).

    Features with (numerically) zero energy (dead units) are dropped (their rows of Aᵀ
    are zero, as in the minimum-norm solution); the rest is solved by Cholesky, and, if
    that fails (other rank deficiency, e.g. collinear units), by an eigendecomposition
    with a relative cut-off (a pseudo-inverse). Cholesky first because a float64
    ``eigh`` of a 1024 × 1024 matrix is tens of times slower on CPU.
    """
    n, d = X.shape
    G = (X.T @ X).double() / n
    R = (X.T @ Y).double() / n
    if ridge > 0:
        G = G + ridge * torch.eye(d, dtype=G.dtype, device=G.device)
    diag = torch.diagonal(G)
    live = diag > rcond * diag.max().clamp_min(1e-300)
    out = torch.zeros(d, Y.shape[1], dtype=G.dtype, device=G.device)
    Gl, Rl = G[live][:, live], R[live]
    Lc, info = torch.linalg.cholesky_ex(Gl)
    if int(info) == 0:
        sol = torch.cholesky_solve(Rl, Lc)
        # a Cholesky factor with a tiny pivot means near-singularity: use the pseudo-inverse
        piv = torch.diagonal(Lc) ** 2
        if bool(torch.isfinite(sol).all()) and float(piv.min()) > 1e3 * rcond * float(piv.max()):
            out[live] = sol
            return out
    evals, evecs = torch.linalg.eigh(Gl)
    keep = evals > rcond * evals.max().clamp_min(1e-300)
    inv = torch.where(keep, 1.0 / evals.clamp_min(1e-300), torch.zeros_like(evals))
    out[live] = (evecs * inv) @ (evecs.T @ Rl)
    return out


def fit_linear_action(
    features: Tensor,
    features_transformed: Tensor,
    *, fit_fraction: float = 0.5,
    ridge: float = 0.0,
    solver: str | None = None,
    rcond: float = 1e-10,
) -> LinearFit:
    """Fit A with ``A f(y) ≈ f(g y)`` on the first part of the samples; score on the rest.

    Args:
        features: (N, d) rows f(y_n).
        features_transformed: (N, d) rows f(g·y_n).
        fit_fraction: share of the rows (the first ones) used to fit; the error is
            reported on the others (if ``fit_fraction == 1`` on the same rows).
        ridge: λ in ``min ‖X Aᵀ − Y‖²/n + λ‖A‖²`` (forces the normal-equation solver).
        solver: ``"gelsd"`` or ``"normal"``; default ``"gelsd"`` on CPU without ridge,
            ``"normal"`` otherwise (CUDA's lstsq has no rank-revealing driver).
        rcond: relative eigenvalue cut-off of the normal-equation solver.

    Returns:
        :class:`LinearFit`.

    Raises:
        ValueError: on mismatched shapes, a bad fraction, too few samples or an
            unknown solver.

    Chapter: *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps).
    """
    X, Y = features, features_transformed
    check_tensor("features", X, ndim=2, dtypes="float", finite=True)
    check_tensor("features_transformed", Y, ndim=2, dtypes="float", finite=True)
    check_float("fit_fraction", fit_fraction, 0.0, 1.0, low_open=True)
    check_float("ridge", ridge, 0.0), check_float("rcond", rcond, 0.0)
    check_choice("solver", solver, (None, "gelsd", "normal"))
    if X.shape != Y.shape:
        raise ValueError(f"features_transformed must have the shape of features, {tuple(X.shape)} "
                         f"(one row f(g y_n) per row f(y_n)), got {tuple(Y.shape)}")
    if not 0 < fit_fraction <= 1:
        raise ValueError(f"fit_fraction must be in (0, 1], got {fit_fraction}")
    if ridge < 0:
        raise ValueError(f"ridge must be >= 0, got {ridge}")
    N, d = X.shape
    n_fit = int(round(N * fit_fraction))
    if n_fit < 1 or (fit_fraction < 1 and n_fit >= N):
        raise ValueError(f"features must have enough rows (samples) to split with fit_fraction={fit_fraction}, "
                         f"got {N} rows")
    dt = _compute_dtype(X, Y)
    X, Y = X.detach().to(dt), Y.detach().to(dt)  # a measurement: no graph through the fit
    if solver is None:
        solver = "gelsd" if (X.device.type == "cpu" and ridge == 0) else "normal"
    if solver not in ("gelsd", "normal"):
        raise ValueError(f"solver must be 'gelsd' or 'normal', got {solver!r}")
    if solver == "gelsd" and (ridge > 0 or X.device.type != "cpu"):
        raise ValueError("solver='gelsd' needs ridge=0 and CPU tensors; use solver='normal'")
    Xf, Yf = X[:n_fit], Y[:n_fit]
    if solver == "gelsd":
        At = torch.linalg.lstsq(Xf, Yf, driver="gelsd").solution
    else:
        At = _solve_normal(Xf, Yf, ridge, rcond)
    A = At.T.to(dt).contiguous()
    fit_err = relative_errors(A, Xf, Yf)
    if fit_fraction < 1:
        errors = relative_errors(A, X[n_fit:], Y[n_fit:])
    else:
        errors = fit_err
    return LinearFit(A, float(errors.median()), errors, float(fit_err.median()), n_fit, len(errors), solver)


def _adjoint_first_layer(model_prefix: Callable[[Tensor], Tensor], act: Action, g: GroupElement,
                         shape: tuple[int, ...]) -> tuple[Tensor, Tensor | None, list] | None:
    """For a sequential prefix whose first layer is a :class:`~eqlib.models.mlp.Dense`
    σ(W y + b) on flat inputs: the stacked weight [W; W ρ(g)], the stacked bias and the
    remaining layers, so that f(y) and f(ρ(g) y) come from matmuls on y (the adjunction
    ⟨w, ρ(g) y⟩ = ⟨ρ(g)ᵀ w, y⟩: act on the d weight rows, not on the N inputs). None when
    the prefix is not of that form."""
    if getattr(type(model_prefix), "forward", None) not in (Model.forward, MLP.forward) or shape != (act.dim,):
        return None
    layers = list(model_prefix.layers)
    first = layers[0] if layers else None
    if not isinstance(first, Dense) or first.weight.shape[1] != act.dim:
        return None
    W = first.weight.detach()
    # act(g, I) has rows ρ(g) e_i, i.e. it is ρ(g)ᵀ; W ρ(g) = W act(g, I)ᵀ
    eye = torch.eye(act.dim, device=W.device, dtype=W.dtype)
    Wg = W @ act.act(g, eye).reshape(act.dim, act.dim).T
    b = first.bias.detach() if first.bias is not None else None
    return torch.cat([W, Wg]), (torch.cat([b, b]) if b is not None else None), [first, *layers[1:]]


#: the ``sampling`` choices of :func:`paired_features` (generated inputs or the row space)
SAMPLINGS = ("inputs", "row_space", "auto")


def row_space_factor(M: Tensor) -> Tensor:
    """R (r × m, r = min(m, D)) with ``Rᵀ z ~ M y`` in law for z ~ N(0, σ² I_r), y ~ N(0, σ² I_D).

    For an (m × D) matrix M: the Householder QR ``Mᵀ = Q R`` (Q: D × r with orthonormal
    columns) gives ``M y = Rᵀ (Qᵀ y)``, and ``Qᵀ y`` ~ N(0, σ² QᵀQ) = N(0, σ² I_r). So
    drawing z ~ N(0, σ² I_r) and setting ``u = Rᵀ z`` (rows: ``u = z R``) samples exactly
    the law N(0, σ² M Mᵀ) of M y (a linear image of a Gaussian is Gaussian with covariance
    Rᵀ (σ² I_r) R = σ² Rᵀ QᵀQ R = σ² (QR)ᵀ(QR) = σ² M Mᵀ), whatever the rank of M: nothing is
    inverted, so the argument needs no rank condition (e.g. M = [W; P W] of a planted
    equivariant layer, rank d < 2d). Independent rows z give independent rows u. Computed in
    M's dtype (float32 for float16 / bfloat16, which have no QR; Householder QR is backward
    stable: RᵀR = M Mᵀ up to the rounding of a matmul in that dtype); only R is formed, not Q.

    Use in :func:`paired_features`: with M = [W; W ρ(g)], f(y) = σ(u₁ + b) and
    f(g·y) = σ(W ρ(g) y + b) = σ(u₂ + b) are functions of u = (u₁, u₂) = M y (deeper layers
    are functions of these), so drawing u as z R gives pairs (f(y), f(g·y)) with exactly
    their joint law: equal in distribution, not sample by sample.

    Raises:
        ValueError: if M is not a finite floating-point matrix.

    Chapter: *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps).
    """
    check_tensor("M", M, dtypes="float", finite=True, nonempty=True)
    if M.ndim != 2:
        raise ValueError(f"M must be a matrix (m, D), got shape {tuple(M.shape)}")
    return torch.linalg.qr(M.T.to(_compute_dtype(M)), mode="r").R


def paired_features(
    model_prefix: Callable[[Tensor], Tensor],
    act: Action,
    g: GroupElement,
    samples: int | Tensor = 100_000,
    *, seed: int = 0,
    noise_scale: float = 1.0,
    chunk_size: int = 8192,
    device: torch.device | str | None = None,
    input_shape: tuple[int, ...] | None = None,
    use_adjoint: bool = True,
    sampling: str = "inputs",
) -> tuple[Tensor, Tensor]:
    """Features f(y) and f(g·y) of Gaussian noise (or given) inputs, computed in chunks.

    Args:
        model_prefix: the map f = f_{≤i} (any callable on batches, e.g. ``model.prefix(i)``).
        act: the input action ρ_in (acts on flat vectors or on ``act.shape``).
        g: the group element.
        samples: a number of N(0, noise_scale²) inputs (seeded), or an (N, ...) tensor.
        seed, noise_scale: of the generated inputs.
        chunk_size: inputs per forward pass.
        device: where inputs are made; default the model's device (or CPU).
        input_shape: shape of one generated input; default flat ``(act.dim,)`` (what
            an MLP prefix takes); pass ``act.shape`` for a CNN.
        use_adjoint: when the prefix is a sequential model whose first layer is dense on
            flat inputs, compute f(g·y) from y with the first weight acted on,
            W ρ(g) (two (d × D) matmuls written straight into the outputs; the N inputs
            are never permuted). Same numbers up to float rounding.
        sampling: how generated inputs are drawn. ``"inputs"`` (default): y ~ N(0, σ² I_D)
            itself. ``"row_space"``: f(y) and f(g·y) depend on y only through
            u = M y with M = [W; W ρ(g)] (2d × D), so u is drawn directly as ``Rᵀ z``,
            z ~ N(0, σ² I_r), r = min(2d, D) (proof in
            :func:`~eqlib.latent.lstsq.row_space_factor`): the same law, exactly, but a
            different random stream (equal in distribution, not sample by sample); N × r
            draws and an N × r × 2d matmul instead of N × D and N × D × 2d, plus one QR.
            Needs generated samples and a dense first layer (the adjoint path).
            ``"auto"``: ``"row_space"`` when it applies and 2d < D, else ``"inputs"``.

    Returns:
        (F, F_g), each (N, d) on that device.

    Raises:
        ValueError: for bad sizes or seeds, an unknown ``sampling``, or
            ``sampling="row_space"`` with given samples or without a dense first layer.

    Chapter: *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps).
    """
    device = _prefix_device(model_prefix, device)
    shape = tuple(input_shape) if input_shape is not None else (act.dim,)
    check_int("seed", seed, 0), check_int("chunk_size", chunk_size, 1)
    check_float("noise_scale", noise_scale, 0.0, low_open=True)
    check_choice("sampling", sampling, SAMPLINGS), check_bool("use_adjoint", use_adjoint)
    samples, N, gen = _sample_source(samples, seed, device)
    with torch.no_grad():
        adjoint, row_space = _adjoint_plan(model_prefix, act, g, shape, gen is not None, use_adjoint, sampling)
        if adjoint is None:
            return _paired_generic(model_prefix, act, g, samples, N, shape, gen, noise_scale, chunk_size, device)
        return _paired_adjoint(adjoint, row_space, samples, N, gen, noise_scale, chunk_size, device)


def _prefix_device(model_prefix, device: torch.device | str | None) -> torch.device:
    """``device``, or by default the device of the prefix's first parameter (CPU without one)."""
    if device is None:
        params = getattr(model_prefix, "parameters", None)
        first = next(params(), None) if params else None
        device = first.device if first is not None else torch.device("cpu")
    return torch.device(device)


def _sample_source(samples: int | Tensor, seed: int, device: torch.device
                   ) -> tuple[int | Tensor, int, torch.Generator | None]:
    """(samples, N, generator): a number of generated samples with the seeded generator that
    draws them, or given inputs (N, ...) and None."""
    if not isinstance(samples, torch.Tensor):
        samples = check_int("samples", samples, 2)
        return samples, samples, torch_generator(seed, device=device)
    check_tensor("samples", samples, dtypes="float", nonempty=True, finite=True)
    if samples.ndim == 0:
        raise ValueError("samples must be a number of samples or a batch (N, ...) of inputs, got a 0-d tensor")
    return samples, samples.shape[0], None


def _adjoint_plan(model_prefix, act: Action, g: GroupElement, shape: tuple[int, ...], generated: bool,
                  use_adjoint: bool, sampling: str) -> tuple[tuple | None, bool]:
    """(adjoint, row_space): the stacked first layer of ``_adjoint_first_layer`` when
    :func:`paired_features` takes the adjoint path (None: the generic path), and whether it
    draws u = M y in its row space (``sampling``)."""
    adjoint = (_adjoint_first_layer(model_prefix, act, g, shape)
               if use_adjoint or sampling != "inputs" else None)
    if sampling == "row_space" and (not generated or adjoint is None):
        why = "samples are given" if not generated else \
            "the prefix's first layer is not a Dense layer on flat inputs of size act.dim"
        raise ValueError(f"sampling='row_space' needs generated Gaussian inputs and a dense "
                         f"first layer ({why}); use sampling='inputs'")
    row_space = generated and adjoint is not None and (
        sampling == "row_space" or (sampling == "auto" and adjoint[0].shape[0] < adjoint[0].shape[1]))
    if not (row_space or use_adjoint):
        adjoint = None
    return adjoint, row_space


def _paired_adjoint(adjoint: tuple, row_space: bool, samples, N: int, gen: torch.Generator | None,
                    noise_scale: float, chunk_size: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """f(y) and f(g·y) from the stacked first layer [W; W ρ(g)] of ``_adjoint_first_layer``
    (two matmuls on y per chunk, written straight into the outputs when there is no deeper
    layer), on generated inputs (``gen``; in the row space with ``row_space``) or given ones."""
    M, b2, layers = adjoint
    d = M.shape[0] // 2
    if row_space:
        # u = z R with z ~ N(0, σ² I_r): fold σ into R (one scaling of an r × 2d matrix)
        Mt = row_space_factor(M) * noise_scale
        in_dim = Mt.shape[0]
    else:
        Mt = M.T
        in_dim = M.shape[1]
    first, rest = layers[0], layers[1:]
    b = b2[:d] if b2 is not None else None
    feats = feats_g = pair = None
    for s in range(0, N, chunk_size):
        n = min(chunk_size, N - s)
        if gen is not None:
            y = torch.randn(n, in_dim, generator=gen, device=device)
            if noise_scale != 1 and not row_space:
                y.mul_(noise_scale)
            y = y.to(M.dtype)
        else:
            y = samples[s:s + n].to(device=device, dtype=M.dtype).reshape(n, -1)
        if not rest:  # write σ(y Wᵀ + b) and σ(y (Wρ(g))ᵀ + b) straight into the outputs
            if feats is None:
                feats, feats_g = y.new_empty(N, d), y.new_empty(N, d)
            halves = (feats[s:s + n], feats_g[s:s + n])
        else:
            pair = y.new_empty(2 * n, d)
            halves = (pair[:n], pair[n:])
        for k, out in enumerate(halves):
            Mk = Mt[:, k * d:(k + 1) * d]
            if b is None:
                torch.mm(y, Mk, out=out)
            else:
                torch.addmm(b, y, Mk, out=out)
            first.sigma.apply_(out)
        if rest:
            for layer in rest:
                pair = layer(pair)
            pair = pair.reshape(2 * n, -1)
            if feats is None:
                feats, feats_g = pair.new_empty(N, pair.shape[1]), pair.new_empty(N, pair.shape[1])
            feats[s:s + n], feats_g[s:s + n] = pair[:n], pair[n:]
    return feats, feats_g


def _paired_generic(model_prefix, act, g, samples, N, shape, gen, noise_scale, chunk_size, device):
    """f(y) and f(g·y) by running the prefix on y and on the acted-on inputs g·y."""
    feats, feats_g = None, None
    for s in range(0, N, chunk_size):
        n = min(chunk_size, N - s)
        if gen is not None:
            y = torch.randn(n, *shape, generator=gen, device=device) * noise_scale
        else:
            y = samples[s:s + n].to(device)
        pair = model_prefix(torch.cat([y, act.act(g, y)])).reshape(2 * n, -1)
        if feats is None:
            feats, feats_g = pair.new_empty(N, pair.shape[1]), pair.new_empty(N, pair.shape[1])
        feats[s:s + n], feats_g[s:s + n] = pair[:n], pair[n:]
    return feats, feats_g


def linear_equivariance_error(
    model_prefix: Callable[[Tensor], Tensor],
    act: Action,
    g: GroupElement,
    samples: int | Tensor = 100_000,
    *, fit_fraction: float = 0.5,
    ridge: float = 0.0,
    solver: str | None = None,
    seed: int = 0,
    noise_scale: float = 1.0,
    chunk_size: int = 8192,
    input_shape: tuple[int, ...] | None = None,
    sampling: str = "inputs",
) -> LinearFit:
    """How linearly equivariant the features ``f = model_prefix`` are for g.

    Computes f(y) and f(g·y) on the samples (:func:`paired_features`) and fits
    ``A f(y) ≈ f(g y)`` (:func:`fit_linear_action`): fit on the first ``fit_fraction``
    of the samples, median relative error on the rest. Arguments as in
    :func:`paired_features` and :func:`fit_linear_action`.

    Examples:
        >>> from eqlib.actions import trivial
        >>> from eqlib.groups import flip
        >>> from eqlib.images import mirror
        >>> from eqlib.latent import plant_equivariant
        >>> G = flip()
        >>> net, _ = plant_equivariant(G, mirror((1, 2, 2)), trivial(G, 2), [4, 6, 2], seed=0)
        >>> fit = linear_equivariance_error(net.prefix(1), mirror((1, 2, 2)), G["m"], 2000)
        >>> fit.median_error < 1e-4
        True

    Chapter: *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps); used in *Reproducing the
    CIFAR-10 experiment* (book/part3/11_cifar_mlp).
    """
    F, Fg = paired_features(model_prefix, act, g, samples, seed=seed, noise_scale=noise_scale,
                            chunk_size=chunk_size,
                            input_shape=input_shape, sampling=sampling)
    return fit_linear_action(F, Fg, fit_fraction=fit_fraction, ridge=ridge, solver=solver)


def recover_by_lstsq(model, rho_in: Action, groups, *, samples: int | Tensor = 100_000, seed: int = 0,
                     noise_scale: float = 1.0, sampling: str = "inputs", fit_fraction: float = 0.5,
                     ridge: float = 0.0, solver: str | None = None):
    """Fit, for every hidden layer i and g, an unconstrained linear A_i(g) with
    ``A_i f_{≤i}(y) ≈ f_{≤i}(g y)`` on noise samples (:func:`paired_features`,
    :func:`fit_linear_action`).

    Args:
        model: an MLP (Dense layers) of depth L.
        rho_in: the input action.
        groups: per hidden layer its group K_i, or None for a linear layer (no distance
            to K_i is measured).
        samples, seed, noise_scale, sampling: of :func:`paired_features`.
        fit_fraction, ridge, solver: of :func:`fit_linear_action`.

    Returns:
        (actions, residuals, distances): one dense action per hidden layer; per hidden
        layer the max over g of the held-out median relative error; per hidden layer the
        max over g of the relative Frobenius distance of A_i(g) to K_i.

    Chapter: *MLPs: tanh, ReLU, GELU* (book/part2/07_mlps).
    """
    G = rho_in.group
    actions, residuals, distances = [], [], []
    for i, K in enumerate(groups, start=1):
        mats, worst, dist = [], 0.0, 0.0
        prefix = model.prefix(i)
        for g in G:
            F, Fg = paired_features(prefix, rho_in, g, samples, seed=seed, noise_scale=noise_scale,
                                    sampling=sampling)
            fit = fit_linear_action(F, Fg, fit_fraction=fit_fraction, ridge=ridge, solver=solver)
            mats.append(fit.A.cpu())
            worst = max(worst, fit.median_error)
            if K is not None:
                dist = max(dist, K.project(fit.A)[1] / float(fit.A.norm().clamp_min(1e-12)))
        actions.append(dense_action(G, torch.stack(mats)))
        residuals.append(worst)
        distances.append(dist)
    return actions, residuals, distances
