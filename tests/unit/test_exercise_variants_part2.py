"""Per-student variants of the exercises of chapters 6-9 (issue #22 item 4).

For every exercise with variant numbers, over five ``Variant(student, course)`` pairs:
the answer computed from the variant's ``given()`` passes the fresh checker under that
variant; the book's answer fails wherever the variant's numbers differ from the book's;
two students of one course get different numbers; and the drawn numbers keep the
exercise's teaching point.
"""
import itertools

import pytest
import torch

from eqlib.exercises import ExerciseError, fresh, variants
from eqlib.exercises.variants import Variant

COURSES = ["0123456789abcdef", "fedcba9876543210", "00112233445566778899aabbccddeeff",
           "0f1e2d3c4b5a6978", "abcdefabcdefabcd"]
PAIRS = [Variant(f"s{i}", course) for i, course in enumerate(COURSES)]
MANY = [Variant(f"s{i}", COURSES[i % 5]) for i in range(100)]   # cheap checks of answers


def _given(chapter, v):
    with variants.variant(v):
        return fresh(chapter).given()


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if torch.is_tensor(a):
        return torch.is_tensor(b) and a.shape == b.shape and torch.equal(a, b)
    return a == b


def _numbers(chapter, keys, v):
    g = _given(chapter, v)
    return {k: g[k] for k in keys}


def _students_differ(chapter, keys):
    """(c): for at least 4 of the 5 courses, students s0 and s1 get different numbers."""
    differ = sum(not _same(_numbers(chapter, keys, Variant("s0", c)),
                           _numbers(chapter, keys, Variant("s1", c))) for c in COURSES)
    assert differ >= 4, f"{chapter} {keys}: only {differ} of 5 pairs of students differ"


def _book_fails(chapter, keys, v, run_book):
    """(b): the book's answer fails under ``v`` when ``v``'s numbers differ from the book's."""
    if _same(_numbers(chapter, keys, None), _numbers(chapter, keys, v)):
        return
    with variants.variant(v), pytest.raises(ExerciseError):
        run_book()


def test_no_variant_gives_the_book_numbers():
    for chapter in ("ch06", "ch07", "ch08", "ch09"):
        assert variants.current() is None
        assert _same(fresh(chapter).given(), fresh(chapter).given())


# ---- chapter 9 ------------------------------------------------------------------------

def test_ch09_book_numbers():
    g = fresh("ch09").given()
    gen = torch.Generator().manual_seed(9)
    assert torch.equal(g["ex1_lambda"], torch.randn(3, 2, generator=gen))
    assert torch.equal(g["ex1_gamma"], torch.randn(3, 2, generator=gen))
    assert torch.equal(g["ex1_bias"], torch.randn(2, generator=gen))
    assert g["ex2_slope"] == 0.2
    assert torch.equal(g["ex2_W1"], torch.randn(5, 2, generator=torch.Generator().manual_seed(4)))


def _ch09_ex1_answer(g):
    return (-g["ex1_lambda"], g["ex1_gamma"] + g["ex1_lambda"], g["ex1_bias"])


@pytest.mark.parametrize("v", PAIRS, ids=str)
def test_ch09_ex1_variants(v):
    keys = ["ex1_lambda", "ex1_gamma", "ex1_bias"]
    book = fresh("ch09").given()
    g = _given("ch09", v)
    assert float(g["ex1_lambda"].abs().min()) > 0                  # (d) Λ ≠ 0: Π·θ ≠ θ
    data = (g["ex1_lambda"], g["ex1_gamma"], g["ex1_bias"])
    with variants.variant(v):                                      # (a)
        fresh("ch09").check_sum_pair_adjunction(*data, _ch09_ex1_answer(g))
    book_data = (book["ex1_lambda"], book["ex1_gamma"], book["ex1_bias"])
    _book_fails("ch09", keys, v, lambda: fresh("ch09").check_sum_pair_adjunction(
        *book_data, _ch09_ex1_answer(book)))                       # (b), the book's copy
    _book_fails("ch09", keys, v, lambda: fresh("ch09").check_sum_pair_adjunction(
        *data, _ch09_ex1_answer(book)))                            # (b), this copy's data


@pytest.mark.parametrize("v", PAIRS, ids=str)
def test_ch09_ex2_variants(v):
    keys = ["ex2_slope", "ex2_W1"]
    book = fresh("ch09").given()
    g = _given("ch09", v)
    a, W1 = g["ex2_slope"], g["ex2_W1"]
    assert 0 < a < 1 and round(a * 20) == a * 20                   # (d) a leaky ReLU
    assert int(torch.linalg.matrix_rank(W1)) == 2                  # (d) W_1^+ W_1 = I
    with variants.variant(v):                                      # (a)
        fresh("ch09").check_residual_invariant(-2 / (1 + a) * torch.linalg.pinv(W1), W1,
                                               slope=a)
    W2_book = -2 / (1 + book["ex2_slope"]) * torch.linalg.pinv(book["ex2_W1"])
    _book_fails("ch09", keys, v, lambda: fresh("ch09").check_residual_invariant(
        W2_book, book["ex2_W1"], slope=book["ex2_slope"]))


def test_ch09_students_differ():
    _students_differ("ch09", ["ex1_lambda", "ex1_gamma", "ex1_bias"])
    _students_differ("ch09", ["ex2_slope", "ex2_W1"])


def test_ch09_book_answers_pass_without_variant():
    g = fresh("ch09").given()
    fresh("ch09").check_sum_pair_adjunction(g["ex1_lambda"], g["ex1_gamma"], g["ex1_bias"],
                                            _ch09_ex1_answer(g))
    a, W1 = g["ex2_slope"], g["ex2_W1"]
    fresh("ch09").check_residual_invariant(-2 / (1 + a) * torch.linalg.pinv(W1), W1, slope=a)


# ---- chapter 8 ------------------------------------------------------------------------

def _ch08_conv(W):
    from eqlib.models.convnet import SameConv

    conv = SameConv(1, 1, 6, 3, seed=0)
    with torch.no_grad():
        conv.weight.copy_(W.reshape(1, 1, 3, 3))
    return conv


def _ch08_turned(W):
    """The notebook's solution: (rot_r⁻¹ W)_ij = W_{2−j, i}, entry by entry."""
    return torch.tensor([[float(W[2 - j, i]) for j in range(3)] for i in range(3)])


def test_ch08_book_numbers():
    g = fresh("ch08").given()
    assert torch.equal(g["ex2_filter"], torch.arange(1.0, 10.0).reshape(3, 3))
    assert g["ex4_head_perm"] == (2, 1, 0, 4, 3) and g["ex4_seed"] == 7
    assert torch.equal(_ch08_turned(g["ex2_filter"]),
                       torch.tensor([[7.0, 4.0, 1.0], [8.0, 5.0, 2.0], [9.0, 6.0, 3.0]]))


@pytest.mark.parametrize("v", PAIRS, ids=str)
def test_ch08_ex2_variants(v):
    from eqlib.groups import cyclic

    r = cyclic(4)["r"]
    book = fresh("ch08").given()["ex2_filter"]
    W = _given("ch08", v)["ex2_filter"]
    assert sorted(W.flatten().tolist()) == list(range(1, 10))      # (d) 1..9, distinct
    with variants.variant(v):                                      # (a)
        fresh("ch08").check_turned_filter(_ch08_conv(W), r, _ch08_turned(W))
    _book_fails("ch08", ["ex2_filter"], v, lambda: fresh("ch08").check_turned_filter(
        _ch08_conv(book), r, _ch08_turned(book)))                  # (b), the book's copy
    _book_fails("ch08", ["ex2_filter"], v, lambda: fresh("ch08").check_turned_filter(
        _ch08_conv(W), r, _ch08_turned(book)))                     # (b), this copy's layer


def _ch08_planted(g):
    import numpy as np

    from eqlib.latent.attention import patch_mirror_action, plant_attention_equivariant

    mirror = patch_mirror_action((1, 8, 12), 4)
    planted = plant_attention_equivariant(
        mirror, np.array([[0, 1, 2, 3, 4], g["ex4_head_perm"]]), d_k=4, d_v=4,
        seed=g["ex4_seed"])
    return mirror, planted


def _ch08_tau(mirror, planted):
    """The notebook's solution: match heads by their attention maps; returns τ and the
    best and second-best distances of every head."""
    from eqlib.images import patchify

    images = torch.randn(8, 1, 8, 12, generator=torch.Generator().manual_seed(0))
    X, m = patchify(images, 4), mirror.group["m"]
    with torch.no_grad():
        A = planted.layer.attention_maps(X)
        A_m = planted.layer.attention_maps(mirror.act(m, X))
    rows = mirror.permute_tokens(m, A)
    moved = mirror.permute_tokens(m, rows.transpose(-1, -2)).transpose(-1, -2)
    dist = torch.stack([(A_m - moved[:, h:h + 1]).flatten(2).norm(dim=2).sum(0)
                        for h in range(A.shape[1])])
    return dist.argmin(1).tolist(), dist.sort(1).values[:, :2]


@pytest.mark.parametrize("v", PAIRS, ids=str)
def test_ch08_ex4_variants(v):
    book = fresh("ch08").given()
    g = _given("ch08", v)
    tau0 = g["ex4_head_perm"]
    assert sorted(tau0) == list(range(5)) and tau0 != tuple(range(5))       # (d) τ_m ≠ id,
    assert all(tau0[tau0[h]] == h for h in range(5))                        # an involution
    mirror, planted = _ch08_planted(g)
    tau, best = _ch08_tau(mirror, planted)
    assert tau == planted.head_perm["m"].tolist()                           # (d) the maps
    assert float(best[:, 0].max()) < 1e-3 < float(best[:, 1].min())         # decide it
    with variants.variant(v):                                               # (a)
        fresh("ch08").check_head_permutation(tau, planted)
    _, book_planted = _ch08_planted(book)
    book_tau = book_planted.head_perm["m"].tolist()
    keys = ["ex4_head_perm", "ex4_seed"]
    _book_fails("ch08", keys, v, lambda: fresh("ch08").check_head_permutation(
        book_tau, book_planted))                                            # (b) book's copy
    if book_tau != tau:                                                     # (b) this copy
        _book_fails("ch08", keys, v, lambda: fresh("ch08").check_head_permutation(
            book_tau, planted))


def test_ch08_ex4_answer_never_printed_nor_the_books_100_students():
    """The true τ_m is neither the printed ex4_head_perm nor the book's τ_m."""
    from eqlib.exercises.ch08 import _hidden_perm

    book = fresh("ch08").given()
    book_tau = tuple(_hidden_perm(book["ex4_head_perm"], book["ex4_seed"]).tolist())
    assert book_tau == (3, 4, 2, 0, 1)
    for v in MANY:
        g = _given("ch08", v)
        tau = tuple(_hidden_perm(g["ex4_head_perm"], g["ex4_seed"]).tolist())
        assert tau not in (tuple(g["ex4_head_perm"]), book_tau), v


def test_ch08_students_differ():
    _students_differ("ch08", ["ex2_filter"])
    _students_differ("ch08", ["ex4_head_perm", "ex4_seed"])


def test_ch08_book_answers_pass_without_variant():
    from eqlib.groups import cyclic

    g = fresh("ch08").given()
    fresh("ch08").check_turned_filter(_ch08_conv(g["ex2_filter"]), cyclic(4)["r"],
                                      _ch08_turned(g["ex2_filter"]))
    mirror, planted = _ch08_planted(g)
    tau, _ = _ch08_tau(mirror, planted)
    assert tau == [3, 4, 2, 0, 1]
    fresh("ch08").check_head_permutation(tau, planted)


# ---- chapter 7 ------------------------------------------------------------------------

def _ch07_ex1_answer(g):
    s = torch.tensor(g["ex1_signs"], dtype=torch.float32)
    return torch.diag(s), (1 - s) / 2


def _ch07_ex4_answer(g):
    """The notebook's solution: row j of W_1 r is row π(j) of W_1, k[j, π(j)] = 1."""
    W1 = g["ex4_W1"]
    return (W1 @ g["ex4_rotation"] @ W1.T > 0.5).float()


def test_ch07_book_numbers():
    g = fresh("ch07").given()
    assert g["ex1_signs"] == (-1, -1, -1)
    D, c = _ch07_ex1_answer(g)
    assert torch.equal(D, -torch.eye(3)) and torch.equal(c, torch.ones(3))
    assert torch.equal(g["ex4_W1"], torch.cat([torch.eye(2), -torch.eye(2)]))
    assert torch.equal(g["ex4_rotation"], torch.tensor([[0.0, -1.0], [1.0, 0.0]]))
    k = torch.zeros(4, 4)
    k[[0, 1, 2, 3], [3, 0, 1, 2]] = 1.0
    assert torch.equal(_ch07_ex4_answer(g), k)


@pytest.mark.parametrize("v", PAIRS, ids=str)
def test_ch07_ex1_variants(v):
    book = fresh("ch07").given()
    g = _given("ch07", v)
    s = g["ex1_signs"]
    assert 3 <= len(s) <= 5 and set(s) <= {-1, 1} and -1 in s      # (d) affine, not linear
    with variants.variant(v):                                        # (a)
        fresh("ch07").check_sigmoid_flip(*_ch07_ex1_answer(g))
    _book_fails("ch07", ["ex1_signs"], v,
                lambda: fresh("ch07").check_sigmoid_flip(*_ch07_ex1_answer(book)))


@pytest.mark.parametrize("v", PAIRS, ids=str)
def test_ch07_ex4_variants(v):
    from eqlib.actions import from_matrices
    from eqlib.groups import cyclic
    from eqlib.latent import latent_actions
    from eqlib.models import MLP

    book = fresh("ch07").given()
    g = _given("ch07", v)
    W1, r = g["ex4_W1"], g["ex4_rotation"]
    k = _ch07_ex4_answer(g)
    # (d) the rows are ±e_1, ±e_2 and r a quarter turn: the network passes, k in K_1
    assert sorted(map(tuple, W1.tolist())) == [(-1.0, 0.0), (0.0, -1.0), (0.0, 1.0), (1.0, 0.0)]
    assert torch.equal(r @ r, -torch.eye(2))
    C4 = cyclic(4)
    rot4 = from_matrices(C4, {C4["r"]: r})
    net = MLP([2, 4, 2], "gelu")
    with torch.no_grad():
        net.layers[0].weight.copy_(W1)
        net.layers[0].bias.zero_()
        net.layers[1].weight.copy_(W1.T)
        net.layers[1].bias.zero_()
    res = latent_actions(net, rot4, rot4)
    assert res.ok and torch.allclose(res.matrix(1, C4["r"]), k)
    with variants.variant(v):                                        # (a)
        fresh("ch07").check_bypass_c4(k)
    _book_fails("ch07", ["ex4_W1", "ex4_rotation"], v,
                lambda: fresh("ch07").check_bypass_c4(_ch07_ex4_answer(book)))


def test_ch07_answers_never_the_books_100_students():
    book = fresh("ch07").given()
    book_k = _ch07_ex4_answer(book)
    for v in MANY:
        g = _given("ch07", v)
        assert g["ex1_signs"] != book["ex1_signs"], v       # so D, c differ from the book's
        assert not torch.equal(_ch07_ex4_answer(g), book_k), v


def test_ch07_students_differ():
    _students_differ("ch07", ["ex1_signs"])
    _students_differ("ch07", ["ex4_W1", "ex4_rotation"])


def test_ch07_bypass_weights_inputs_per_variant():
    """ch07-ex2 is a construction (no numbers): only its test inputs depend on the variant."""
    W1 = torch.tensor([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    W2 = torch.tensor([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, -1.0]])
    for v in PAIRS:
        with variants.variant(v):
            fresh("ch07").check_bypass_weights(W1, W2)
            with pytest.raises(ExerciseError):
                fresh("ch07").check_bypass_weights(W1, -W2)


# ---- chapter 6 ------------------------------------------------------------------------

def _ch06_ex1_answer(g):
    """The notebook's solution: match the rows of [W_1 ρ_in(m) | b_1] with those of
    [W_1 | b_1] up to sign; also returns ρ_out(m) read off W_2 k_1(m) = ±W_2."""
    B = torch.cat([g["ex1_W1"], g["ex1_b1"][:, None]], 1)
    A = torch.cat([g["ex1_W1"].flip(1), g["ex1_b1"][:, None]], 1)
    same, opposite = (A[:, None] == B[None]).all(2), (A[:, None] == -B[None]).all(2)
    assert bool(((same | opposite).sum(1) == 1).all())          # (d) a unique match
    perm = (same | opposite).float().argmax(1).tolist()
    signs = [1 if bool(same[j, i]) else -1 for j, i in enumerate(perm)]
    k = torch.zeros(3, 3)
    k[range(3), perm] = torch.tensor(signs, dtype=torch.float32)
    W2 = g["ex1_W2"]
    rho = 1 if torch.equal(W2 @ k, W2) else -1
    assert torch.equal(W2 @ k, rho * W2)                         # (d) f(m x) = ±f(x)
    return perm, signs, rho


def test_ch06_book_numbers():
    g = fresh("ch06").given()
    assert torch.equal(g["ex1_W1"], torch.tensor([[1.0, -1.0], [3.0, -1.0], [-1.0, 3.0]]))
    assert torch.equal(g["ex1_b1"], torch.tensor([0.0, 0.4, 0.4]))
    assert torch.equal(g["ex1_W2"], torch.tensor([[1.0, 0.5, -0.5]]))
    assert _ch06_ex1_answer(g) == ([0, 2, 1], [-1, 1, 1], -1)
    assert (g["ex4_unit"], g["ex4_position"], g["ex4_sign"]) == (1, 3, 1)


@pytest.mark.parametrize("v", PAIRS, ids=str)
def test_ch06_ex1_variants(v):
    from eqlib.images import mirror
    from eqlib.groups import flip
    from eqlib.models import MLP

    book = fresh("ch06").given()
    g = _given("ch06", v)
    W1, b1 = g["ex1_W1"], g["ex1_b1"]
    assert torch.equal(W1, W1.round()) and torch.equal((b1 * 5).round() / 5, b1)   # (d)
    B = torch.cat([W1, b1[:, None]], 1)
    assert bool((B.abs().sum(1) > 0).all())                      # (d) nonzero rows, no two
    for i in range(3):                                           # equal or opposite
        for j in range(i):
            assert not torch.equal(B[i], B[j]) and not torch.equal(B[i], -B[j])
    perm, signs, rho = _ch06_ex1_answer(g)
    net = MLP([2, 3, 1], "tanh", seed=0)                         # (d) f(m x) = ρ f(x)
    with torch.no_grad():
        net.layers[0].weight.copy_(W1)
        net.layers[0].bias.copy_(b1)
        net.layers[1].weight.copy_(g["ex1_W2"])
        net.layers[1].bias.zero_()
        xs = torch.randn(100, 2, generator=torch.Generator().manual_seed(0))
        assert torch.allclose(net(mirror((1, 1, 2)).act(flip()["m"], xs)), rho * net(xs),
                              atol=1e-6)
    with variants.variant(v):                                    # (a)
        fresh("ch06").check_swap_action(perm, signs)
    book_perm, book_signs, _ = _ch06_ex1_answer(book)
    if (book_perm, book_signs) != (perm, signs):                 # (b)
        _book_fails("ch06", ["ex1_W1", "ex1_b1", "ex1_W2"], v,
                    lambda: fresh("ch06").check_swap_action(book_perm, book_signs))


def _ch06_small():
    from eqlib.models import MLP

    small = MLP([2, 2, 2, 1], "tanh", seed=0)
    weights = [([[2.0, -1.0], [1.0, -2.0]], [0.5, -0.5]),
               ([[1.0, 0.5], [-0.5, -1.0]], [0.3, 0.3]),
               ([[1.0, 1.0]], [0.2])]
    with torch.no_grad():
        for layer, (W, b) in zip(small.layers, weights):
            layer.weight.copy_(torch.tensor(W))
            layer.bias.copy_(torch.tensor(b))
    return small


def _ch06_cloned(small, g):
    """The notebook's solution: small's units in order, a copy of unit ex4_unit times
    c = ex4_sign at ex4_position, the original keeping half its outgoing column and the
    copy getting c/2 times it."""
    from eqlib.models import MLP

    unit = g["ex4_unit"] - 1
    order = [0, 1]
    order.insert(g["ex4_position"] - 1, unit)
    sign = torch.ones(3)
    sign[g["ex4_position"] - 1] = g["ex4_sign"]
    share = torch.tensor([0.5 if j == unit else 1.0 for j in order]) * sign
    cloned = MLP([2, 3, 2, 1], "tanh", seed=0)
    with torch.no_grad():
        cloned.layers[0].weight.copy_(small.layers[0].weight[order] * sign[:, None])
        cloned.layers[0].bias.copy_(small.layers[0].bias[order] * sign)
        cloned.layers[1].weight.copy_(small.layers[1].weight[:, order] * share)
        cloned.layers[1].bias.copy_(small.layers[1].bias)
        cloned.layers[2].weight.copy_(small.layers[2].weight)
        cloned.layers[2].bias.copy_(small.layers[2].bias)
    return cloned


def _ch06_lift(g):
    from eqlib.actions import trivial
    from eqlib.groups import flip
    from eqlib.images import mirror
    from eqlib.latent import latent_actions

    G = flip()
    small = _ch06_small()
    cloned = _ch06_cloned(small, g)
    swap, rout = mirror((1, 1, 2)), trivial(G, 1)
    return small, cloned, swap, rout, G["m"], latent_actions(cloned, swap, rout).matrix(1, G["m"])


@pytest.mark.parametrize("v", PAIRS, ids=str)
def test_ch06_ex4_variants(v):
    from eqlib.symmetries import symmetry_group

    book = fresh("ch06").given()
    g = _given("ch06", v)
    assert g["ex4_unit"] in (1, 2) and g["ex4_position"] in (1, 2, 3) and g["ex4_sign"] in (1, -1)
    small, cloned, swap, rout, m, lift = _ch06_lift(g)
    assert sorted((lift != 0).sum(1).tolist()) == [1, 1, 3]       # (d) a clone's row,
    assert not symmetry_group("tanh", 3).contains(lift)           # so not in K_1
    with variants.variant(v):                                     # (a)
        fresh("ch06").check_clone_lift(small, cloned, swap, rout, m, lift)
    _, book_cloned, *_, book_lift = _ch06_lift(book)
    keys = ["ex4_unit", "ex4_position", "ex4_sign"]
    _book_fails("ch06", keys, v, lambda: fresh("ch06").check_clone_lift(
        small, book_cloned, swap, rout, m, book_lift))            # (b), the book's copy
    if not torch.equal(book_lift, lift):                          # (b), this copy
        _book_fails("ch06", keys, v, lambda: fresh("ch06").check_clone_lift(
            small, cloned, swap, rout, m, book_lift))


def test_ch06_students_differ():
    _students_differ("ch06", ["ex1_W1", "ex1_b1", "ex1_W2"])
    _students_differ("ch06", ["ex4_unit", "ex4_position", "ex4_sign"])


def test_ch06_ex4_lift_formula_every_layout():
    """given()'s redraw rule computes the lift by formula; it is latent_actions' lift for
    all 12 layouts (unit, position of the copy, sign), and the 8 layouts left after the
    redraw give 6 lifts, none the book's."""
    from eqlib.exercises.ch06 import _clone_lift

    book = _ch06_lift(fresh("ch06").given())[-1]
    others = set()
    for unit, position, sign in itertools.product((1, 2), (1, 2, 3), (1, -1)):
        g = {"ex4_unit": unit, "ex4_position": position, "ex4_sign": sign}
        lift = _ch06_lift(g)[-1]
        assert torch.equal(lift, _clone_lift(unit, position, sign)), g
        if not torch.equal(lift, book):
            others.add(tuple(lift.flatten().tolist()))
    assert len(others) == 6


def test_ch06_ex4_answer_never_the_books_100_students():
    from eqlib.exercises.ch06 import _clone_lift

    book = _clone_lift(1, 3, 1)
    for v in MANY:
        g = _given("ch06", v)
        assert not torch.equal(_clone_lift(g["ex4_unit"], g["ex4_position"], g["ex4_sign"]),
                               book), v


def test_ch06_row_matcher_inputs_per_variant():
    """ch06-ex2 is a construction: only its random instances depend on the variant, and a
    wrong matcher's message shows no expected permutation."""
    from eqlib.actions import trivial
    from eqlib.groups import flip
    from eqlib.images import mirror
    from eqlib.latent import latent_actions, match_units, plant_equivariant

    G = flip()
    rin, rout = mirror((1, 4, 4)), trivial(G, 3)
    net, _ = plant_equivariant(G, rin, rout, [16, 12, 3], activation="tanh", seed=0)
    res = latent_actions(net, rin, rout)

    def right(A, B):
        perm, signs, _ = match_units(A, B, signed=True)
        return perm, signs

    def unsigned(A, B):
        perm, _ = right(A, B)
        return perm, torch.ones(len(perm))

    for v in PAIRS[:2]:
        with variants.variant(v):
            fresh("ch06").check_row_matcher(right, net, rin, res)
            with pytest.raises(ExerciseError) as err:
                fresh("ch06").check_row_matcher(unsigned, net, rin, res)
        assert "signs [1.0" in str(err.value) and "-1.0" not in str(err.value)
