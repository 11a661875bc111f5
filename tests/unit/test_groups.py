"""eqlib.groups: every factory satisfies the group axioms; non-groups are rejected."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from eqlib import groups
from eqlib.groups import FiniteGroup

FACTORIES = {
    "C1": (lambda: groups.cyclic(1), 1),
    "C5": (lambda: groups.cyclic(5), 5),
    "D1": (lambda: groups.dihedral(1), 2),
    "D3": (lambda: groups.dihedral(3), 6),
    "D4": (lambda: groups.dihedral(4), 8),
    "Z2": (lambda: groups.flip(), 2),
    "S1": (lambda: groups.symmetric(1), 1),
    "S3": (lambda: groups.symmetric(3), 6),
    "S4": (lambda: groups.symmetric(4), 24),
    "perm-C2xC2": (lambda: groups.from_permutations([[1, 0, 2, 3], [0, 1, 3, 2]], name="V4"), 4),
    "perm-C4": (lambda: groups.from_permutations([[1, 2, 3, 0]], name="C4p"), 4),
}


@pytest.fixture(params=list(FACTORIES), ids=list(FACTORIES))
def group_and_order(request):
    make, order = FACTORIES[request.param]
    return make(), order


def test_order(group_and_order):
    G, order = group_and_order
    assert G.order == len(G) == len(G.elements) == order


def _reference(G):
    """A faithful model of G built without its table: (element -> concrete object, product)."""
    name = G.name
    if hasattr(G, "permutations"):  # symmetric groups and from_permutations: compose the maps
        perms = {g: tuple(int(v) for v in G.permutations[g.index]) for g in G}
        return perms.__getitem__, lambda p, q: tuple(p[q[i]] for i in range(len(q)))
    if name.startswith("C") or name == "Z2":  # rotations by 2πk/n as residues k mod n
        n = G.order
        k = {g: (0 if g.name == "e" else int(g.name.lstrip("rm") or 1)) for g in G}
        return k.__getitem__, lambda a, b: (a + b) % n
    if name.startswith("D"):  # r^k s^f as 2×2 integer-rounded matrices R^k S^f
        n = G.order // 2
        R = np.array([[np.cos(2 * np.pi / n), -np.sin(2 * np.pi / n)], [np.sin(2 * np.pi / n), np.cos(2 * np.pi / n)]])
        S = np.diag([1.0, -1.0])

        def mat(g):
            word = "" if g.name == "e" else g.name
            f = word.endswith("s")
            word = word.removesuffix("s")
            k = 0 if not word else int(word[1:] or 1)
            return np.linalg.matrix_power(R, k) @ (S if f else np.eye(2))

        key = lambda m: tuple(np.round(m, 6).ravel() + 0.0)
        mats = {g: mat(g) for g in G}
        table = {key(m): m for m in mats.values()}
        return (lambda g: key(mats[g])), (lambda a, b: key(table[a] @ table[b]))
    raise AssertionError(f"no reference for {name}")


def test_multiplication_matches_an_independent_model(group_and_order):
    """g ↦ ref(g) is injective and ref(a·b) = ref(a)·ref(b): the table is the table of a
    concrete group (permutations composed by hand, residues mod n, plane symmetries), so
    identity, inverses and associativity hold because they hold there."""
    G, _ = group_and_order
    ref, product = _reference(G)
    assert len({ref(g) for g in G}) == G.order
    for a, b in itertools.product(G, repeat=2):
        assert ref(a @ b) == product(ref(a), ref(b)), f"{a} @ {b} = {a @ b} disagrees with the model"


def test_reference_catches_a_wrong_table():
    """The model above is not a tautology: relabelling two elements of C5 breaks it."""
    G = groups.cyclic(5)
    ref, product = _reference(G)
    swapped = {G[1]: ref(G[2]), G[2]: ref(G[1])}
    bad = lambda g: swapped.get(g, ref(g))
    assert any(bad(a @ b) != product(bad(a), bad(b)) for a, b in itertools.product(G, repeat=2))


def test_identity(group_and_order):
    G, _ = group_and_order
    e = G.identity
    for a in G:
        assert e @ a == a and a @ e == a
    assert e.order == 1


def test_inverses(group_and_order):
    G, _ = group_and_order
    for a in G:
        assert a @ ~a == G.identity and ~a @ a == G.identity
        assert ~~a == a


def test_generators_generate_and_words_evaluate(group_and_order):
    G, _ = group_and_order
    for g, word in zip(G, G.words):
        value = G.identity
        for k in word:
            value = value @ G.generators[k]
        assert value == g, f"word {word} of {g} evaluates to {value}"


def test_element_order_divides_group_order(group_and_order):
    G, _ = group_and_order
    for a in G:
        assert G.order % a.order == 0
        assert a ** a.order == G.identity
        assert a ** -1 == ~a


def test_names_index_and_lookup(group_and_order):
    G, _ = group_and_order
    for a in G:
        assert G[a.name] == a and G[int(a)] == a
    with pytest.raises(KeyError, match="no element named"):
        G["not-a-name"]


def test_testing_elements_and_sample(group_and_order):
    G, _ = group_and_order
    assert G.testing_elements() == G.elements  # every element for groups up to order 24
    draws = G.sample(6000, seed=1)
    assert draws == G.sample(6000, seed=1)
    if G.order > 1:
        assert draws[:20] != G.sample(20, seed=2)
    counts = np.bincount([g.index for g in draws], minlength=G.order)
    p = 1 / G.order  # uniform: every count within 5 standard deviations of 6000 p
    assert np.all(np.abs(counts - 6000 * p) <= 5 * np.sqrt(6000 * p * (1 - p)) + 1e-9), counts


def test_testing_elements_of_a_large_group():
    G = groups.symmetric(5)  # order 120 > 24: identity, generators and a few products
    picked = G.testing_elements()
    assert picked[0] == G.identity and set(G.generators) <= set(picked)
    assert len(picked) == len(set(picked)) < G.order


@pytest.mark.parametrize("G,abelian", [(groups.cyclic(6), True), (groups.flip(), True),
                                       (groups.dihedral(3), False), (groups.symmetric(3), False)],
                         ids=["C6", "Z2", "D3", "S3"])
def test_abelian(G, abelian):
    assert G.is_abelian() is abelian


def test_dihedral_relations():
    G = groups.dihedral(4)
    r, s = G["r"], G["s"]
    assert r.order == 4 and s.order == 2
    assert s @ r @ s == ~r
    assert G["r3s"] == r ** 3 @ s


def test_from_permutations_composes_like_functions():
    G = groups.from_permutations([[1, 2, 0], [1, 0, 2]], name="S3p")
    P = G.permutations
    for a, b in itertools.product(G, repeat=2):
        assert P[(a @ b).index].tolist() == P[a.index][P[b.index]].tolist()


# -- non-groups -------------------------------------------------------------------------
# A loop of order 5 (identity, every element its own inverse, Latin square) that is not associative.
LOOP5 = [[0, 1, 2, 3, 4],
         [1, 0, 3, 4, 2],
         [2, 4, 0, 1, 3],
         [3, 2, 4, 0, 1],
         [4, 3, 1, 2, 0]]

NON_GROUPS = {
    "not-closed": ([[0, 1], [1, 2]], "not closed"),
    "no-identity": ([[0, 0], [1, 1]], "no identity"),  # a@b = a: associative, closed
    "no-inverse": ([[0, 1], [1, 1]], "no inverse"),
    "not-associative": (LOOP5, "not associative"),
    "not-square": ([[0, 1]], "square"),
    "empty": (np.zeros((0, 0), dtype=int), "square and non-empty"),
    "not-integer": ([[0.0, 1.0], [1.0, 0.0]], "integer"),
}


@pytest.mark.parametrize("table,message", list(NON_GROUPS.values()), ids=list(NON_GROUPS))
def test_non_groups_rejected(table, message):
    with pytest.raises((ValueError, TypeError), match=message):
        FiniteGroup(table)


def test_generators_that_do_not_generate():
    table = groups.cyclic(4).table
    with pytest.raises(ValueError, match="do not reach"):
        FiniteGroup(table, generators=[2])


def test_bad_names():
    with pytest.raises(ValueError, match="distinct element names"):
        FiniteGroup([[0, 1], [1, 0]], names=["e", "e"])


@pytest.mark.parametrize("gens,message", [([[0, 0, 1]], "not a permutation"), ([], "at least one")],
                         ids=["repeated-point", "no-generators"])
def test_from_permutations_rejects(gens, message):
    with pytest.raises(ValueError, match=message):
        groups.from_permutations(gens)


def test_from_permutations_too_big():
    with pytest.raises(ValueError, match="more than 10 elements"):
        groups.from_permutations([[1, 0, 2, 3], [1, 2, 3, 0]], max_order=10)


@pytest.mark.parametrize("factory", [groups.cyclic, groups.dihedral, groups.symmetric],
                         ids=["cyclic", "dihedral", "symmetric"])
def test_factories_reject_n_below_one(factory):
    with pytest.raises(ValueError, match=r"n must be an integer .*got 0"):
        factory(0)


@pytest.mark.parametrize("factory", [groups.cyclic, groups.dihedral, groups.symmetric],
                         ids=["cyclic", "dihedral", "symmetric"])
@pytest.mark.parametrize("bad", [2.5, float("nan"), True, "3", None, 10**6])
def test_factories_name_the_argument_for_bad_n(factory, bad):
    with pytest.raises((ValueError, TypeError), match=r"^n must be an integer"):
        factory(bad)


def test_factories_take_integral_floats_as_the_same_group():
    assert groups.cyclic(4.0) is groups.cyclic(4)


def test_symmetric_7_is_built_without_cubic_memory():
    """S7 (order 5040, the documented maximum) was an n³ allocation (954 GiB)."""
    import subprocess
    import sys

    # the peak memory of building S7 alone, in a fresh interpreter: this process's peak
    # depends on every test that ran before, and a child's ru_maxrss inherits it on Linux,
    # so read the child's own high-water mark VmHWM (kB) from /proc
    code = ("import os, re, time; from eqlib import groups; t = time.perf_counter(); "
            "s7 = groups.symmetric(7); assert s7.order == 5040; f = '/proc/self/status'; "
            "hwm = re.search(r'VmHWM:\\s*(\\d+)', open(f).read() if os.path.exists(f) else ''); "
            "print(time.perf_counter() - t, hwm.group(1) if hwm else 'nan')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    seconds, peak_kib = map(float, out.stdout.split())
    assert seconds < 60
    assert not peak_kib >= 4e6  # < 4 GB peak (not measured where /proc is missing)
    s7 = groups.symmetric(7)
    rng = np.random.default_rng(0)
    a, b, c = rng.integers(0, 5040, size=(3, 200))
    t = s7.table
    assert np.array_equal(t[t[a, b], c], t[a, t[b, c]])  # associativity on random triples
    p = s7.permutations
    assert np.array_equal(p[t[a, b]], np.take_along_axis(p[a], p[b], axis=1))  # (ab)[i] = a[b[i]]


def test_lights_test_catches_non_associativity_with_few_generators():
    # LOOP5 is generated by element 1 alone; Light's test over it must still catch it
    with pytest.raises(ValueError, match="not associative"):
        FiniteGroup(LOOP5, generators=[1, 2, 3, 4])


@pytest.mark.parametrize("generators,message", [
    ([], "at least one"),
    ([[]], "n >= 1"),
    ([[0, 1], [1, 1]], r"generators\[1\] = \(1, 1\) is not a permutation"),
    ([[0, 1], [7, 3]], "is not a permutation"),
    ([[0.5, 1]], r"generators\[0\]\[0\] must be an integer"),
    ("01", "must be a sequence"),
])
def test_from_permutations_rejects_bad_generators(generators, message):
    with pytest.raises((ValueError, TypeError), match=message):
        groups.from_permutations(generators)


def test_bad_element_index_and_exponent_name_the_problem():
    G = groups.cyclic(3)
    with pytest.raises(ValueError, match="element index of C3"):
        G.compose(0, 5)
    with pytest.raises(ValueError, match="key must be an integer"):
        G[7]
    with pytest.raises(ValueError, match="exponent"):
        G["r"] ** 1.5
    with pytest.raises(ValueError, match=r"n must be an integer in 0\.\.10000000, got -1"):
        G.sample(-1)


def test_elements_of_another_group_are_rejected():
    with pytest.raises(ValueError, match="not an element of"):
        groups.cyclic(3).compose(groups.cyclic(4)["r"], groups.cyclic(3)["r"])
