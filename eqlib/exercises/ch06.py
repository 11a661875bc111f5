"""Checkers for the exercises of *The main theorem* (book/part2/06_main_theorem)."""
from __future__ import annotations

import torch

from ..seeds import torch_generator
from . import passed, require

__all__ = ["check_transported_weight", "check_latent_action", "check_row_matcher",
           "check_clone_lift"]


def check_transported_weight(model, rho_in, g, answer) -> None:
    """Step 1 of the worked example (*The theorem by hand*): the first-layer weight of θ^g,
    W_1 ρ_in(g).

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    W = model.layers[0].weight.detach()
    require(isinstance(answer, torch.Tensor), f"return a torch.Tensor, got {type(answer).__name__}")
    require(tuple(answer.shape) == tuple(W.shape), f"W_1 ρ_in(g) has shape {tuple(W.shape)}, got {tuple(answer.shape)}")
    expected = W @ rho_in.matrix(g)
    err = float((answer - expected).norm() / expected.norm())
    require(err < 1e-5, f"relative error {err:.3g}: the first layer of θ^g should satisfy "
                        "f_1(x; θ^g) = f_1(ρ_in(g) x; θ), i.e. its weight is W_1 ρ_in(g)")
    passed("Correct: f_1(ρ_in(g) x; θ_1) = f_1(x; θ_1^g)")


def check_latent_action(model, rho_in, g, perm, signs) -> None:
    """Exercise ch06-ex1 and step 2 of the worked example: k_1(g) as (perm, signs) with
    f_1(ρ_in(g) x) = k_1(g) f_1(x).

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    d = model.layers[0].out_dim
    perm, signs = torch.as_tensor(perm).long(), torch.as_tensor(signs, dtype=torch.float32)
    require(perm.shape == (d,) and signs.shape == (d,), f"perm and signs must both have shape ({d},)")
    require(torch.equal(torch.sort(perm).values, torch.arange(d)), "perm is not a permutation of 0..d-1")
    require(bool((signs.abs() == 1).all()), "signs must be ±1 (tanh's symmetry group is signed permutations)")
    x = torch.randn(64, rho_in.dim, generator=torch_generator(5))
    f1 = model.layers[0]
    with torch.no_grad():
        lhs = f1(rho_in.act(g, x))
        rhs = f1(x)[:, perm] * signs
    err = float((lhs - rhs).norm() / lhs.norm())
    require(err < 1e-4, f"f_1(ρ_in(g) x) ≠ k f_1(x): relative error {err:.3g}. Match the rows of "
                        "[W_1 ρ_in(g) | b_1] with those of [W_1 | b_1] up to sign")
    passed(f"Correct: layer 1 is equivariant under your k_1(g) (error {err:.1e})")


def _monomial(perm, signs, name: str):
    perm = torch.as_tensor(perm).long().reshape(-1)
    signs = torch.as_tensor(signs, dtype=torch.float32).reshape(-1)
    d = len(perm)
    require(signs.shape == (d,), f"{name}: perm and signs must have the same length, "
                                 f"got {d} and {len(signs)}")
    require(torch.equal(torch.sort(perm).values, torch.arange(d)),
            f"{name}: perm must be a permutation of 0..{d - 1}, got {perm.tolist()}")
    k = torch.zeros(d, d)
    k[torch.arange(d), perm] = signs
    return k


def check_row_matcher(match_rows, model, rho_in, result) -> None:
    """Exercise ch06-ex2: a hand-written signed row matcher ``match_rows(A, B)``.

    ``match_rows(A, B)`` must return ``(perm, signs)`` with ``A[j] ≈ signs[j] B[perm[j]]``.
    It is tried on random signed permutations of random rows (with a little noise) and
    then on layer 1 of ``model``, where for every g of ``result.group`` it must give the
    k_1(g) that ``latent_actions`` found (``result``).

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    require(callable(match_rows), f"match_rows must be a function, got {type(match_rows).__name__}")
    gen = torch_generator(61)
    for n in (1, 3, 8):
        B = torch.randn(n, 5, generator=gen)
        perm, signs = torch.randperm(n, generator=gen), torch.randint(0, 2, (n,), generator=gen) * 2 - 1.0
        A = signs[:, None] * B[perm] + 1e-4 * torch.randn(n, 5, generator=gen)
        got = match_rows(A, B)
        require(isinstance(got, tuple) and len(got) == 2,
                "match_rows(A, B) must return a pair (perm, signs)")
        k = _monomial(*got, name="match_rows")
        expected = _monomial(perm, signs, name="test instance")
        require(torch.equal(k, expected),
                f"on a random {n}x5 instance with A[j] = s_j B[perm_j] your matcher returned "
                f"perm {torch.as_tensor(got[0]).tolist()}, signs {torch.as_tensor(got[1]).tolist()}; "
                f"expected perm {perm.tolist()}, signs {signs.tolist()}. Score pairs by |cos| "
                "(signs allowed), maximise with linear_sum_assignment, read the sign of cos")
    layer = model.layers[0]
    W, b = layer.weight.detach(), layer.bias.detach()[:, None]
    B = torch.cat([W, b], 1)
    for g in result.group:
        A = torch.cat([W @ rho_in.matrix(g), b], 1)
        k = _monomial(*match_rows(A, B), name="match_rows")
        require(torch.allclose(k, result.matrix(1, g), atol=1e-5),
                f"for g = {g.name} your matcher gives a k_1(g) different from latent_actions'")
    passed(f"Correct: your matcher recovers k_1(g) for all {result.group.order} elements")


def check_clone_lift(model, cloned, rho_in, rho_out, g, answer) -> None:
    """Exercise ch06-ex4: the lifted k_1(g) of a network with one cloned unit.

    ``cloned`` must compute the same function as ``model`` with one more unit in layer 1,
    and ``answer`` must be the (d+1)x(d+1) lift k_1(g) that ``latent_actions`` returns.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    from ..latent import latent_actions
    from ..symmetries import layer_symmetry_groups

    d = model.dims[1]
    require(list(cloned.dims) == [model.dims[0], d + 1] + list(model.dims[2:]),
            f"the cloned network must have widths {[model.dims[0], d + 1] + list(model.dims[2:])}, "
            f"got {list(cloned.dims)}")
    x = torch.randn(256, model.dims[0], generator=torch_generator(62))
    with torch.no_grad():
        gap = float((cloned(x) - model(x)).abs().max())
    require(gap < 1e-5, f"the cloned network computes a different function (gap {gap:.3g}): "
                        "copy the row and bias of a unit, and split its outgoing column in two")
    require(isinstance(answer, torch.Tensor) and tuple(answer.shape) == (d + 1, d + 1),
            f"give k_1(g) as a ({d + 1}, {d + 1}) tensor")
    res = latent_actions(cloned, rho_in, rho_out)
    require(res.ok and res.weak, "latent_actions does not find a weakly identifiable network")
    # the extra unit must be a clone (a dead or constant unit also keeps the function)
    require(res.reduction is not None and int(res.reduction.class_sizes(1).max()) > 1,
            "no unit of layer 1 is a clone (a dead or constant unit keeps the function "
            "too): give unit 3 the same row of W_1 and the same bias as unit 1")
    expected = res.matrix(1, g)
    wrong = [j for j in range(d + 1)
             if not torch.allclose(answer[j].float(), expected[j], atol=1e-5)]
    require(not wrong,
            f"not the lift: row(s) {wrong} of your k_1(g) are wrong. The lift is "
            "A k~ A* + I - A A*; a clone's row mixes the clone with its representative's "
            "image (read it off latent_actions(...).matrix(1, g))")
    group = layer_symmetry_groups(cloned)[0]
    if group.contains(expected, tol=1e-5):
        passed("Correct: here k~_1(g) fixes the clone's class, so the lift k_1(g) is in K_1")
    else:
        counts = [int((expected[j].abs() > 1e-6).sum()) for j in range(d + 1)]
        j = max(range(d + 1), key=lambda r: counts[r])
        passed(f"Correct: row {j} of k_1(g) (a clone's row) has {counts[j]} nonzero entries, "
               "so k_1(g) is not in K_1")
