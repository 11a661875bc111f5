"""Checkers for the exercises of *The main theorem* (book/part2/06_main_theorem)."""
from __future__ import annotations

import torch

from ..seeds import torch_generator
from . import passed, require, variants

__all__ = ["given", "check_transported_weight", "check_latent_action", "check_swap_action",
           "check_row_matcher", "check_clone_lift"]

_STEPS = (0.5, 1.0, 1.5)


def given() -> dict:
    """The numbers this copy's exercises give, for the current variant
    (``eqlib.exercises.variants``).

    - ``"ex1_W1"`` (3×2), ``"ex1_b1"`` (3,) and ``"ex1_W2"`` (1×3): the weights of
      ``ex_net`` (2→3→1, tanh, b_2 = 0) in ch06-ex1. Book: W_1 = ((1, −1), (3, −1), (−1, 3)),
      b_1 = (0, 0.4, 0.4), W_2 = (1, 0.5, −0.5). A variant draws a network of the same kind:
      swapping the inputs maps every row of [W_1 | b_1] to plus or minus another (one unit
      matched to itself, two to each other, in a random order), no two rows equal or
      opposite (so k_1(m) is unique), integer weights, biases in steps of 0.2, and W_2 with
      W_2 k_1(m) = ±W_2 (so f(m x) = ±f(x)).
    - ``"ex4_unit"``, ``"ex4_position"`` and ``"ex4_sign"``: in ch06-ex4, the unit of
      ``small``'s first layer that is cloned, the position (1 to 3) of the copy in the
      cloned network's first layer (``small``'s two units keep their order around it) and
      the sign c = ±1 of the copy (c times the original's row of W_1 and bias, c/2 times
      its outgoing column; tanh is odd, so the copy is c times the original). Book:
      unit 1, position 3, c = 1. A variant draws all three, and redraws them while the
      lifted k_1(m) (the answer) is the book's; the layouts left give six different
      lifts.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    gen = variants.parameter_generator("ch06-ex1")
    if gen is None:
        W1 = torch.tensor([[1.0, -1.0], [3.0, -1.0], [-1.0, 3.0]])
        b1, W2 = torch.tensor([0.0, 0.4, 0.4]), torch.tensor([[1.0, 0.5, -0.5]])
    else:
        W1, b1, W2 = _draw_swap_net(gen)
    gen = variants.parameter_generator("ch06-ex4")
    layout = _BOOK_CLONE
    while gen is not None and torch.equal(_clone_lift(*layout), _clone_lift(*_BOOK_CLONE)):
        layout = (int(torch.randint(1, 3, (), generator=gen)),
                  int(torch.randint(1, 4, (), generator=gen)),
                  int(torch.randint(0, 2, (), generator=gen)) * 2 - 1)
    return {"ex1_W1": W1, "ex1_b1": b1, "ex1_W2": W2, "ex4_unit": layout[0],
            "ex4_position": layout[1], "ex4_sign": layout[2]}


_BOOK_CLONE = (1, 3, 1)                  # ch06-ex4 in the book: unit 1, position 3, c = 1
_SMALL_K1 = torch.tensor([[0.0, -1.0], [-1.0, 0.0]])   # k~_1(m) of the chapter's `small`


def _clone_layout(unit: int, position: int, sign: int):
    """ch06-ex4's first layer: ``order[j]`` is the unit of ``small`` at position j + 1,
    ``signs[j]`` its sign (c at the copy, 1 elsewhere)."""
    order = [0, 1]
    order.insert(position - 1, unit - 1)
    signs = torch.ones(3)
    signs[position - 1] = float(sign)
    return order, signs


def _clone_lift(unit: int, position: int, sign: int) -> torch.Tensor:
    """The lift A k~ A* + I - A A* of ch06-ex4 for this layout: ``reduce`` keeps the first
    unit of the cloned class in layer order as its representative, so the reduced unit t
    is D_t = ±1 times ``small``'s and k~ = D k~_small D (a unit test checks this formula
    against ``latent_actions`` for every layout)."""
    order, signs = _clone_layout(unit, position, sign)
    A, A_star, D = torch.zeros(3, 2), torch.zeros(2, 3), torch.zeros(2, 2)
    for j in range(3):
        rep = order.index(order[j])              # the first unit of j's class
        A[j, order[j]] = signs[j] * signs[rep]
        A_star[order[j], rep] = 1.0
        D[order[j], order[j]] = signs[rep]
    return A @ D @ _SMALL_K1 @ D @ A_star + torch.eye(3) - A @ A_star


def _draw_swap_net(gen: torch.Generator):
    """A 2→3→1 tanh network equivariant under swapping its inputs (see ``given``)."""
    def pick(values):
        return values[int(torch.randint(0, len(values), (), generator=gen))]

    out_sign, pair_sign = pick((-1.0, 1.0)), pick((-1.0, 1.0))
    a = pick((-3.0, -2.0, -1.0, 1.0, 2.0, 3.0))
    # the unit matched to itself: (a, a) keeps its row (sign +1), (a, −a) negates it,
    # which its bias allows only when it is 0
    rows = [(a, out_sign * a)]
    biases = [pick((-0.6, -0.4, -0.2, 0.0, 0.2, 0.4, 0.6)) if out_sign > 0 else 0.0]
    p, q = pick(((1.0, 2.0), (1.0, 3.0), (2.0, 3.0), (2.0, 1.0), (3.0, 1.0), (3.0, 2.0)))
    p, q = p * pick((-1.0, 1.0)), q * pick((-1.0, 1.0))
    c = pick((0.2, 0.4, 0.6, 0.8)) * pick((-1.0, 1.0))
    rows += [(p, q), (pair_sign * q, pair_sign * p)]   # each the other's swap, up to sign
    biases += [c, pair_sign * c]
    w0, w1 = pick(_STEPS) * pick((-1.0, 1.0)), pick(_STEPS) * pick((-1.0, 1.0))
    outgoing = [w0, w1, out_sign * pair_sign * w1]     # W_2 k_1(m) = out_sign W_2
    order = torch.randperm(3, generator=gen)
    return (torch.tensor(rows)[order], torch.tensor(biases)[order],
            torch.tensor([outgoing])[:, order])


def _swap_setting():
    """``ex_net`` of ch06-ex1 built from ``given()``, the swap of its two inputs and m."""
    from ..images import mirror
    from ..groups import flip
    from ..models import MLP

    numbers = given()
    net = MLP([2, 3, 1], "tanh", seed=0)
    with torch.no_grad():
        net.layers[0].weight.copy_(numbers["ex1_W1"])
        net.layers[0].bias.copy_(numbers["ex1_b1"])
        net.layers[1].weight.copy_(numbers["ex1_W2"])
        net.layers[1].bias.zero_()
    return net, mirror((1, 1, 2)), flip()["m"]


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
    """Step 2 of the worked example (*The theorem by hand*): k_1(g) as (perm, signs) with
    f_1(ρ_in(g) x) = k_1(g) f_1(x).

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    err = _latent_action_error(model, rho_in, g, perm, signs, torch_generator(5))
    passed(f"Correct: layer 1 is equivariant under your k_1(g) (error {err:.1e})")


def check_swap_action(perm, signs) -> None:
    """Exercise ch06-ex1: k_1(m) of ``ex_net`` (built from ``given()``, whatever the
    notebook holds) as (perm, signs), with f_1(m x) = k_1(m) f_1(x), m swapping the inputs.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    net, swap, m = _swap_setting()
    err = _latent_action_error(net, swap, m, perm, signs,
                               variants.input_generator("ch06-ex1", book=5))
    passed(f"Correct: layer 1 is equivariant under your k_1(m) (error {err:.1e})")


def _latent_action_error(model, rho_in, g, perm, signs, gen) -> float:
    d = model.layers[0].out_dim
    perm, signs = torch.as_tensor(perm).long(), torch.as_tensor(signs, dtype=torch.float32)
    require(perm.shape == (d,) and signs.shape == (d,), f"perm and signs must both have shape ({d},)")
    require(torch.equal(torch.sort(perm).values, torch.arange(d)), "perm is not a permutation of 0..d-1")
    require(bool((signs.abs() == 1).all()), "signs must be ±1 (tanh's symmetry group is signed permutations)")
    x = torch.randn(64, rho_in.dim, generator=gen)
    f1 = model.layers[0]
    with torch.no_grad():
        lhs = f1(rho_in.act(g, x))
        rhs = f1(x)[:, perm] * signs
    err = float((lhs - rhs).norm() / lhs.norm())
    require(err < 1e-4, f"f_1(ρ_in(g) x) ≠ k f_1(x): relative error {err:.3g}. Match the rows of "
                        "[W_1 ρ_in(g) | b_1] with those of [W_1 | b_1] up to sign")
    return err


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
    It is tried on random signed permutations of random rows (with a little noise; the
    inputs come from ``variants.input_generator("ch06-ex2")``) and
    then on layer 1 of ``model``, where for every g of ``result.group`` it must give the
    k_1(g) that ``latent_actions`` found (``result``).

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    require(callable(match_rows), f"match_rows must be a function, got {type(match_rows).__name__}")
    gen = variants.input_generator("ch06-ex2", book=61)
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
                f"perm {torch.as_tensor(got[0]).tolist()}, signs {torch.as_tensor(got[1]).tolist()}, "
                "not the expected perm and signs of that instance. Score pairs by |cos| "
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

    ``cloned`` must compute the same function as ``model`` with one more unit in layer 1
    (under a variant: the copy of unit ``given()["ex4_unit"]``, times
    ``given()["ex4_sign"]``, at position ``given()["ex4_position"]``), and ``answer`` must be the (d+1)x(d+1) lift k_1(g) that
    ``latent_actions`` returns.

    Chapter: *The main theorem* (book/part2/06_main_theorem).
    """
    from ..latent import latent_actions
    from ..symmetries import layer_symmetry_groups

    d = model.dims[1]
    require(list(cloned.dims) == [model.dims[0], d + 1] + list(model.dims[2:]),
            f"the cloned network must have widths {[model.dims[0], d + 1] + list(model.dims[2:])}, "
            f"got {list(cloned.dims)}")
    numbers = given()
    unit, position, sign = numbers["ex4_unit"], numbers["ex4_position"], numbers["ex4_sign"]
    if variants.current() is not None:
        order = list(range(d))
        order.insert(position - 1, unit - 1)
        signs = torch.ones(d + 1)
        signs[position - 1] = float(sign)
        W1, b1 = model.layers[0].weight.detach(), model.layers[0].bias.detach()
        require(torch.equal(cloned.layers[0].weight.detach(), W1[order] * signs[:, None])
                and torch.equal(cloned.layers[0].bias.detach(), b1[order] * signs),
                f"layer 1 of the cloned network must hold the units of the network in their "
                f"order with a copy of unit {unit} (its row of W_1 and bias, times c = {sign}) "
                f"at position {position}: given[\"ex4_unit\"], given[\"ex4_position\"] and "
                "given[\"ex4_sign\"]")
    x = torch.randn(256, model.dims[0], generator=variants.input_generator("ch06-ex4", book=62))
    with torch.no_grad():
        gap = float((cloned(x) - model(x)).abs().max())
    require(gap < 1e-5, f"the cloned network computes a different function (gap {gap:.3g}): "
                        "copy the row and bias of a unit (times c), and split its outgoing "
                        "column between the original (1/2) and the copy (c/2)")
    require(isinstance(answer, torch.Tensor) and tuple(answer.shape) == (d + 1, d + 1),
            f"give k_1(g) as a ({d + 1}, {d + 1}) tensor")
    res = latent_actions(cloned, rho_in, rho_out)
    require(res.ok and res.weak, "latent_actions does not find a weakly identifiable network")
    # the extra unit must be a clone (a dead or constant unit also keeps the function)
    require(res.reduction is not None and int(res.reduction.class_sizes(1).max()) > 1,
            "no unit of layer 1 is a clone (a dead or constant unit keeps the function "
            f"too): give the unit at position {position} the row of W_1 and the bias of unit "
            f"{unit} of the network, times c = {sign}, and give the original 1/2 of its "
            f"outgoing column and the copy c/2 = {sign / 2:g} of it (a copy with a zero column "
            "is dead)")
    expected = res.matrix(1, g)
    wrong = [j for j in range(d + 1)
             if not torch.allclose(answer[j].float(), expected[j], atol=1e-5)]
    require(not wrong,
            f"not the lift: row(s) {[j + 1 for j in wrong]} of your k_1(g) (counted from 1, as "
            "the positions) are wrong. The lift is A k~ A* + I - A A*; a clone's row mixes "
            "the clone with its representative's image")
    group = layer_symmetry_groups(cloned)[0]
    if group.contains(expected, tol=1e-5):
        passed("Correct: here k~_1(g) fixes the clone's class, so the lift k_1(g) is in K_1")
    else:
        counts = [int((expected[j].abs() > 1e-6).sum()) for j in range(d + 1)]
        j = max(range(d + 1), key=lambda r: counts[r])
        passed(f"Correct: row {j + 1} of k_1(g) (a clone's row, counted from 1) has "
               f"{counts[j]} nonzero entries, "
               "so k_1(g) is not in K_1")
