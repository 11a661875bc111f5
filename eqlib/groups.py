"""Finite groups: elements, products, inverses, generators.

A :class:`FiniteGroup` is stored as its Cayley table (``table[a, b]`` is the index of
``a @ b``), checked against the group axioms when it is built. Elements are light
handles (:class:`GroupElement`) that compose with ``@`` and invert with ``~``.

Chapter: *Groups and actions* (book/part1/02_groups_and_actions).
"""
from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Hashable, Iterator, Sequence

import numpy as np

__all__ = [
    "GroupElement",
    "FiniteGroup",
    "cyclic",
    "dihedral",
    "flip",
    "symmetric",
    "from_permutations",
]


class GroupElement:
    """One element of a :class:`FiniteGroup`: ``a @ b`` composes, ``~a`` inverts.

    Chapter: *Groups and actions*.
    """

    __slots__ = ("group", "index")

    def __init__(self, group: "FiniteGroup", index: int):
        self.group = group
        self.index = int(index)

    def __matmul__(self, other: "GroupElement") -> "GroupElement":
        return self.group.compose(self, other)

    def __invert__(self) -> "GroupElement":
        return self.group.inverse(self)

    def __pow__(self, n: int) -> "GroupElement":
        result, base = self.group.identity, self if n >= 0 else ~self
        for _ in range(abs(n)):
            result = result @ base
        return result

    @property
    def name(self) -> str:
        return self.group.names[self.index]

    @property
    def order(self) -> int:
        """Smallest k > 0 with a^k = e."""
        k, a = 1, self
        while a != self.group.identity:
            a, k = a @ self, k + 1
        return k

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, GroupElement)
            and other.index == self.index
            and other.group == self.group
        )

    def __hash__(self) -> int:
        return hash((self.group.name, self.index))

    def __int__(self) -> int:
        return self.index

    def __index__(self) -> int:
        return self.index

    def __repr__(self) -> str:
        return f"{self.group.name}[{self.name}]"


class FiniteGroup:
    """A finite group given by its Cayley table.

    Args:
        table: integer array of shape (n, n); ``table[a, b]`` is the index of ``a @ b``.
        names: one readable name per element (default ``"g0"``, ``"g1"``, ...).
        generators: indices of a generating set (default: all non-identity elements).
        name: the group's name, used in reprs and test ids.

    Raises:
        ValueError: if the table is not a group table (not closed, no two-sided
            identity, an element without inverse, or not associative), or if the
            generators do not generate the group.

    Chapter: *Groups and actions* (book/part1/02_groups_and_actions).
    """

    def __init__(
        self,
        table: np.ndarray | Sequence[Sequence[int]],
        names: Sequence[str] | None = None,
        generators: Sequence[int] | None = None,
        name: str = "G",
    ):
        table = np.asarray(table)
        self.name = name
        self._check_table(table)
        self.table = table.astype(np.int64)
        n = len(table)
        self.names = list(names) if names is not None else [f"g{i}" for i in range(n)]
        if len(self.names) != n or len(set(self.names)) != n:
            raise ValueError(f"{name}: need {n} distinct element names, got {self.names!r}")
        rows_equal_identity = np.all(self.table == np.arange(n)[None, :], axis=1)
        self._identity = int(np.flatnonzero(rows_equal_identity)[0])
        self._inverse = np.argmax(self.table == self._identity, axis=1)
        self._elements = [GroupElement(self, i) for i in range(n)]
        if generators is None:
            generators = [i for i in range(n) if i != self._identity]
        self._generators = [self._elements[int(i)] for i in generators]
        self.words = self._words_in_generators()

    @staticmethod
    def _check_table(table: np.ndarray) -> None:
        if table.ndim != 2 or table.shape[0] != table.shape[1] or table.shape[0] == 0:
            raise ValueError(f"a group table must be square and non-empty, got shape {table.shape}")
        if not np.issubdtype(table.dtype, np.integer):
            raise ValueError("a group table must hold integer element indices")
        n = len(table)
        if table.min() < 0 or table.max() >= n:
            raise ValueError(
                f"not closed: the table has entries outside 0..{n - 1} "
                f"(min {table.min()}, max {table.max()})"
            )
        ar = np.arange(n)
        left = np.flatnonzero(np.all(table == ar[None, :], axis=1))
        right = np.flatnonzero(np.all(table == ar[:, None], axis=0))
        identities = np.intersect1d(left, right)
        if len(identities) == 0:
            raise ValueError("no identity: no element e with e@a = a@e = a for every a")
        e = identities[0]
        # every element needs a two-sided inverse: some b with a@b = e = b@a
        has_inverse = np.any((table == e) & (table.T == e), axis=1)
        if not has_inverse.all():
            bad = np.flatnonzero(~has_inverse)[:5].tolist()
            raise ValueError(f"elements {bad} have no inverse")
        # associativity, vectorized: (a@b)@c == a@(b@c) for all a, b, c
        lhs = table[table[:, :, None], ar[None, None, :]]
        rhs = table[ar[:, None, None], table[None, :, :]]
        if not np.array_equal(lhs, rhs):
            a, b, c = np.argwhere(lhs != rhs)[0]
            raise ValueError(
                f"not associative: (g{a} @ g{b}) @ g{c} = g{lhs[a, b, c]} "
                f"but g{a} @ (g{b} @ g{c}) = g{rhs[a, b, c]}"
            )

    def _words_in_generators(self) -> list[tuple[int, ...]]:
        """Shortest word (tuple of generator positions) for every element, by BFS."""
        words: list[tuple[int, ...] | None] = [None] * self.order
        words[self._identity] = ()
        frontier = [self._identity]
        while frontier:
            nxt = []
            for a in frontier:
                for k, s in enumerate(self._generators):
                    b = int(self.table[a, s.index])
                    if words[b] is None:
                        words[b] = words[a] + (k,)
                        nxt.append(b)
            frontier = nxt
        missing = [self.names[i] for i, w in enumerate(words) if w is None]
        if missing:
            raise ValueError(f"{self.name}: the generators do not reach {missing[:5]}")
        return words  # type: ignore[return-value]

    # -- the group interface ---------------------------------------------------------
    @property
    def elements(self) -> list[GroupElement]:
        return list(self._elements)

    @property
    def identity(self) -> GroupElement:
        return self._elements[self._identity]

    @property
    def order(self) -> int:
        return len(self._elements)

    @property
    def generators(self) -> list[GroupElement]:
        return list(self._generators)

    def __len__(self) -> int:
        return self.order

    def __iter__(self) -> Iterator[GroupElement]:
        return iter(self._elements)

    def __getitem__(self, key: int | str) -> GroupElement:
        """An element by index or by name."""
        if isinstance(key, str):
            try:
                return self._elements[self.names.index(key)]
            except ValueError:
                raise KeyError(f"{self.name} has no element named {key!r}; names: {self.names}") from None
        return self._elements[int(key)]

    def _own(self, a: GroupElement | int) -> int:
        if isinstance(a, GroupElement):
            if a.group != self:
                raise ValueError(f"{a!r} is not an element of {self.name}")
            return a.index
        return int(a)

    def compose(self, a: GroupElement | int, b: GroupElement | int) -> GroupElement:
        """The product ``a @ b`` (apply b first, then a, when acting)."""
        return self._elements[int(self.table[self._own(a), self._own(b)])]

    def inverse(self, a: GroupElement | int) -> GroupElement:
        return self._elements[int(self._inverse[self._own(a)])]

    def testing_elements(self) -> list[GroupElement]:
        """A small set for tests: every element for groups up to order 24, else the
        identity, the generators and a few products."""
        if self.order <= 24:
            return self.elements
        picked = [self.identity, *self.generators]
        for a, b in itertools.islice(itertools.product(self.generators, repeat=2), 8):
            picked.append(a @ b)
        return list(dict.fromkeys(picked))

    def sample(self, n: int = 1, seed: int | None = 0) -> list[GroupElement]:
        """``n`` elements drawn uniformly with a seeded generator."""
        rng = np.random.default_rng(seed)
        return [self._elements[i] for i in rng.integers(0, self.order, size=n)]

    def __eq__(self, other: object) -> bool:
        return other is self or (
            isinstance(other, FiniteGroup) and other.name == self.name and np.array_equal(other.table, self.table)
        )

    def __hash__(self) -> int:
        return hash((self.name, self.order))

    def is_abelian(self) -> bool:
        return bool(np.array_equal(self.table, self.table.T))

    def __repr__(self) -> str:
        return f"FiniteGroup({self.name}, order={self.order})"


def _table_from_product(elements: Sequence[Hashable], product: Callable[[Hashable, Hashable], Hashable]) -> np.ndarray:
    index = {e: i for i, e in enumerate(elements)}
    n = len(elements)
    table = np.empty((n, n), dtype=np.int64)
    for i, a in enumerate(elements):
        for j, b in enumerate(elements):
            ab = product(a, b)
            if ab not in index:
                raise ValueError(f"not closed: the product of {a!r} and {b!r} is {ab!r}, not in the set")
            table[i, j] = index[ab]
    return table


def from_permutations(
    generators: Sequence[Sequence[int]], name: str = "G", max_order: int = 5040
) -> FiniteGroup:
    """The group generated by permutations (each a sequence p with p[i] the image of i).

    Elements compose like functions: ``(a @ b)[i] = a[b[i]]``. The attribute
    ``permutations`` of the result holds every element as a permutation.

    Raises:
        ValueError: if a generator is not a permutation of 0..n-1, or the group has
            more than ``max_order`` elements.

    Chapter: *Groups and actions*.
    """
    gens = [tuple(int(i) for i in p) for p in generators]
    if not gens:
        raise ValueError("need at least one generator")
    n = len(gens[0])
    for p in gens:
        if len(p) != n or sorted(p) != list(range(n)):
            raise ValueError(f"{p} is not a permutation of 0..{n - 1}")
    identity = tuple(range(n))
    compose = lambda a, b: tuple(a[i] for i in b)  # noqa: E731
    elements, frontier = [identity], [identity]
    seen = {identity}
    while frontier:
        nxt = []
        for a in frontier:
            for s in gens:
                b = compose(a, s)
                if b not in seen:
                    seen.add(b)
                    elements.append(b)
                    nxt.append(b)
                    if len(elements) > max_order:
                        raise ValueError(f"the generated group has more than {max_order} elements")
        frontier = nxt
    table = _table_from_product(elements, compose)
    names = ["e" if p == identity else "(" + " ".join(map(str, p)) + ")" for p in elements]
    group = FiniteGroup(table, names, [elements.index(p) for p in gens], name)
    group.permutations = np.array(elements, dtype=np.int64)
    return group


@functools.lru_cache(maxsize=None)
def cyclic(n: int) -> FiniteGroup:
    """The cyclic group C_n = {r^k}: rotations of a regular n-gon.

    Chapter: *Groups and actions*.
    """
    if n < 1:
        raise ValueError(f"cyclic(n) needs n >= 1, got {n}")
    table = (np.arange(n)[:, None] + np.arange(n)[None, :]) % n
    names = ["e"] + ["r" if k == 1 else f"r{k}" for k in range(1, n)]
    return FiniteGroup(table, names, [1] if n > 1 else [], f"C{n}")


@functools.lru_cache(maxsize=None)
def dihedral(n: int) -> FiniteGroup:
    """The dihedral group D_n of order 2n: rotations r^k and reflections r^k s.

    Element k < n is r^k; element n + k is r^k s. Relations: r^n = s^2 = e and
    s r s = r^{-1}. ``dihedral(4)`` is the symmetry group of a square image.

    Chapter: *Groups and actions*.
    """
    if n < 1:
        raise ValueError(f"dihedral(n) needs n >= 1, got {n}")
    elements = [(k, f) for f in (0, 1) for k in range(n)]  # r^k s^f

    def product(a, b):
        (k1, f1), (k2, f2) = a, b
        return ((k1 + (-k2 if f1 else k2)) % n, f1 ^ f2)

    table = _table_from_product(elements, product)

    def name(k, f):
        r = "" if k == 0 else ("r" if k == 1 else f"r{k}")
        return (r + ("s" if f else "")) or "e"

    names = [name(k, f) for k, f in elements]
    gens = [1 % n, n] if n > 1 else [n]
    return FiniteGroup(table, names, gens, f"D{n}")


@functools.lru_cache(maxsize=None)
def flip() -> FiniteGroup:
    """The mirror group Z2 = {e, m}, m^2 = e.

    Chapter: *Groups and actions*.
    """
    return FiniteGroup([[0, 1], [1, 0]], ["e", "m"], [1], "Z2")


@functools.lru_cache(maxsize=None)
def symmetric(n: int) -> FiniteGroup:
    """The symmetric group S_n of all permutations of n objects (n! elements).

    Generated by the transposition (0 1) and the cycle (0 1 ... n-1).

    Chapter: *Groups and actions*.
    """
    if n < 1:
        raise ValueError(f"symmetric(n) needs n >= 1, got {n}")
    if n == 1:
        group = FiniteGroup([[0]], ["e"], [], "S1")
        group.permutations = np.zeros((1, 1), dtype=np.int64)
        return group
    transposition = [1, 0] + list(range(2, n))
    cycle = list(range(1, n)) + [0]
    return from_permutations([transposition, cycle], name=f"S{n}")
