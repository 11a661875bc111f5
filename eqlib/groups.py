"""Finite groups: elements, products, inverses, generators.

A :class:`FiniteGroup` is stored as its Cayley table (``table[a, b]`` is the index of
``a @ b``), checked against the group axioms when it is built. Elements are light
handles (:class:`GroupElement`) that compose with ``@`` and invert with ``~``.

Chapter: *Groups and actions* (book/part1/02_groups_and_actions).
"""
from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator, Sequence

import numpy as np

from .seeds import numpy_rng
from .validation import check_bool, check_int, check_sequence, show

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
        if not isinstance(other, GroupElement):
            return NotImplemented
        if other.group != self.group:
            raise ValueError(f"other = {other!r} is not an element of {self.group.name}, the group of {self!r}")
        return self.group.compose(self, other)

    def __invert__(self) -> "GroupElement":
        return self.group.inverse(self)

    def __pow__(self, n: int) -> "GroupElement":
        """a^n for any integer n (negative: powers of a⁻¹). The exponent is first reduced
        modulo the order of a, so ``a ** 10**100`` costs at most |G| products."""
        n = check_int("the exponent n", n)
        if abs(n) > self.group.order:  # a^order = e (order <= |G|); % gives 0 <= n < order
            n %= self.order
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
        check_associativity: verify (ab)c = a(bc) by Light's test over the generators
            (``|generators|`` · n² products); False for tables known to be associative,
            such as compositions of permutations.

    Raises:
        ValueError: if the table is not a group table (not closed, no two-sided
            identity, an element without inverse, or not associative), or if the
            generators do not generate the group.
        TypeError: if the table does not hold integers, or the name is not a string.

    Chapter: *Groups and actions* (book/part1/02_groups_and_actions).
    """

    def __init__(
        self,
        table: np.ndarray | Sequence[Sequence[int]],
        names: Sequence[str] | None = None,
        generators: Sequence[int] | None = None,
        name: str = "G",
        *, check_associativity: bool = True,
    ):
        if not isinstance(name, str):
            raise TypeError(f"name must be a string, got {show(name)}")
        check_bool("check_associativity", check_associativity)
        try:
            table = np.asarray(table)
        except ValueError as exc:  # ragged rows
            raise ValueError(f"table must be a square integer array, got {show(table)} ({exc})") from None
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
        if isinstance(generators, (str, bytes)) or not hasattr(generators, "__iter__"):
            raise TypeError(f"generators must be a sequence of element indices, got {show(generators)}")
        generators = [check_int(f"generators[{k}]", i, 0, n - 1) for k, i in enumerate(generators)]
        self._generators = [self._elements[i] for i in generators]
        self.words = self._words_in_generators()
        if check_associativity:
            self._check_associative(generators)

    @staticmethod
    def _check_table(table: np.ndarray) -> None:
        if table.ndim != 2 or table.shape[0] != table.shape[1] or table.shape[0] == 0:
            raise ValueError(f"table must be a square and non-empty array (a group table), got shape {table.shape}")
        if not np.issubdtype(table.dtype, np.integer):
            raise TypeError(f"table must hold integer element indices, got dtype {table.dtype}")
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
            raise ValueError("table is not a group table: no identity (no element e with e@a = a@e = a for every a)")
        e = identities[0]
        # every element needs a two-sided inverse: some b with a@b = e = b@a
        has_inverse = np.any((table == e) & (table.T == e), axis=1)
        if not has_inverse.all():
            bad = np.flatnonzero(~has_inverse)[:5].tolist()
            raise ValueError(f"elements {bad} have no inverse")

    def _check_associative(self, generators: Sequence[int]) -> None:
        """Light's test: (a@s)@b == a@(s@b) for every generator s and all a, b.

        The elements s passing it are closed under products (if s and t pass,
        (a@(s@t))@b = ((a@s)@t)@b = (a@s)@(t@b) = a@(s@(t@b)) = a@((s@t)@b)), so when
        the generators pass, every element does: n² products per generator, not n³.
        """
        t = self.table
        for s in generators:
            lhs = t[t[:, s], :]  # (a@s)@b
            rhs = t[:, t[s, :]]  # a@(s@b)
            if not np.array_equal(lhs, rhs):
                a, b = np.argwhere(lhs != rhs)[0]
                raise ValueError(
                    f"not associative: (g{a} @ g{s}) @ g{b} = g{lhs[a, b]} "
                    f"but g{a} @ (g{s} @ g{b}) = g{rhs[a, b]}"
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
                raise KeyError(f"key {key!r}: {self.name} has no element named {key!r}; names: {self.names}") from None
        return self._elements[check_int("key", key, -self.order, self.order - 1)]

    def _own(self, a: GroupElement | int, name: str = "a") -> int:
        if isinstance(a, GroupElement):
            if a.group != self:
                raise ValueError(f"{name} = {a!r} is not an element of {self.name}")
            return a.index
        return check_int(f"{name} (an element index of {self.name})", a, 0, self.order - 1)

    def compose(self, a: GroupElement | int, b: GroupElement | int) -> GroupElement:
        """The product ``a @ b`` (apply b first, then a, when acting)."""
        return self._elements[int(self.table[self._own(a), self._own(b, "b")])]

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
        """``n`` elements drawn uniformly with a seeded generator (None: the default seed 0)."""
        n = check_int("n", n, 0, SAMPLE_MAX)
        rng = numpy_rng(seed)
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


def _permutation_table(perms: np.ndarray, block_entries: int = 1 << 22) -> np.ndarray:
    """Cayley table of distinct permutations (n, k) closed under composition,
    ``table[a, b]`` = index of ``perms[a][perms[b]]``, in blocks of rows (no n³ arrays).

    Products are found by a random integer hash of each row, then compared entry by
    entry with the permutation found, so a hash collision cannot go unnoticed."""
    n, k = perms.shape
    if k ** k <= 1 << 25:  # exact keys: p ↦ Σ_i p[i] k^i, a lookup table of k^k entries
        base = k ** np.arange(k, dtype=np.int64)
        lookup = np.full(k ** k, -1, dtype=np.int64)
        lookup[perms @ base] = np.arange(n)
        table = np.empty((n, n), dtype=np.int64)
        rows = max(1, block_entries // max(1, n))
        for start in range(0, n, rows):
            a = perms[start:start + rows]  # (rows, k)
            key = np.zeros((len(a), n), dtype=np.int64)
            for i in range(k):  # (a∘b)[i] = a[b[i]] for every b at once
                key += np.take(a, perms[:, i], axis=1) * base[i]
            found = lookup[key]
            if (found < 0).any():
                bad = np.argwhere(found < 0)[0]
                raise ValueError(f"not closed: the product of permutations {start + bad[0]} and {bad[1]} "
                                 "is not in the set")
            table[start:start + rows] = found
        return table
    weights = np.random.default_rng(0).integers(1, 2**61, size=k, dtype=np.int64)
    codes = perms @ weights  # wraps around modulo 2^64: a hash
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    if np.any(sorted_codes[1:] == sorted_codes[:-1]):  # pragma: no cover - about 2^-40 for 5040
        index = {p.tobytes(): i for i, p in enumerate(perms)}
        return np.array([[index[perms[a][perms[b]].tobytes()] for b in range(n)] for a in range(n)])
    table = np.empty((n, n), dtype=np.int64)
    rows = max(1, block_entries // max(1, n * k))
    for start in range(0, n, rows):
        prod = perms[start:start + rows][:, perms]  # (rows, n, k): prod[i, b] = a_i[b]
        pos = np.searchsorted(sorted_codes, prod @ weights).clip(0, n - 1)
        found = order[pos]
        if not np.array_equal(perms[found], prod):
            bad = np.argwhere(np.any(perms[found] != prod, axis=-1))[0]
            raise ValueError(f"not closed: the product of permutations {start + bad[0]} and {bad[1]} "
                             "is not in the set")
        table[start:start + rows] = found
    return table


#: the most elements :meth:`FiniteGroup.sample` draws at once (more would exhaust memory)
SAMPLE_MAX = 10**7


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
    max_order = check_int("max_order", max_order, 1)
    if isinstance(generators, (str, bytes)) or not hasattr(generators, "__iter__"):
        raise TypeError(f"generators must be a sequence of permutations, got {show(generators)}")
    generators = check_sequence("generators", generators)
    gens = []
    for k, p in enumerate(generators):
        if isinstance(p, (str, bytes)) or not hasattr(p, "__iter__"):
            raise TypeError(f"generators[{k}] must be a sequence of integers, got {show(p)}")
        gens.append(tuple(check_int(f"generators[{k}][{i}]", v) for i, v in enumerate(p)))
    if not gens:
        raise ValueError("generators must hold at least one permutation, got none")
    n = len(gens[0])
    if n == 0:
        raise ValueError("generators must be permutations of 0..n-1 with n >= 1, got empty ones")
    for k, p in enumerate(gens):
        if len(p) != n or sorted(p) != list(range(n)):
            raise ValueError(f"generators[{k}] = {p} is not a permutation of 0..{n - 1}")
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
    table = _permutation_table(np.array(elements, dtype=np.int64))
    names = ["e" if p == identity else "(" + " ".join(map(str, p)) + ")" for p in elements]
    # composition of maps is associative: no need to check the table
    group = FiniteGroup(table, names, [elements.index(p) for p in gens], name, check_associativity=False)
    group.permutations = np.array(elements, dtype=np.int64)
    return group


#: the largest group order the factories build (the Cayley table has MAX_ORDER² entries)
MAX_ORDER = 5040


def cyclic(n: int) -> FiniteGroup:
    """The cyclic group C_n = {r^k}: rotations of a regular n-gon (1 <= n <= 5040).

    Examples:
        >>> G = cyclic(4)
        >>> G.order, [g.name for g in G]
        (4, ['e', 'r', 'r2', 'r3'])
        >>> G["r"] @ G["r3"] == G.identity
        True

    Chapter: *Groups and actions*.
    """
    return _cyclic(check_int("n", n, 1, MAX_ORDER))


@functools.lru_cache(maxsize=None)
def _cyclic(n: int) -> FiniteGroup:
    table = (np.arange(n)[:, None] + np.arange(n)[None, :]) % n
    names = ["e"] + ["r" if k == 1 else f"r{k}" for k in range(1, n)]
    return FiniteGroup(table, names, [1] if n > 1 else [], f"C{n}")


def dihedral(n: int) -> FiniteGroup:
    """The dihedral group D_n of order 2n: rotations r^k and reflections r^k s
    (1 <= n <= 2520).

    Element k < n is r^k; element n + k is r^k s. Relations: r^n = s^2 = e and
    s r s = r^{-1}. ``dihedral(4)`` is the symmetry group of a square image.

    Examples:
        >>> D4 = dihedral(4)
        >>> [g.name for g in D4]
        ['e', 'r', 'r2', 'r3', 's', 'rs', 'r2s', 'r3s']
        >>> D4["s"] @ D4["r"] @ D4["s"] == ~D4["r"]
        True

    Chapter: *Groups and actions*.
    """
    return _dihedral(check_int("n", n, 1, MAX_ORDER // 2))


@functools.lru_cache(maxsize=None)
def _dihedral(n: int) -> FiniteGroup:
    elements = [(k, f) for f in (0, 1) for k in range(n)]  # r^k s^f
    # (r^k1 s^f1)(r^k2 s^f2) = r^(k1 ± k2) s^(f1 xor f2), minus when f1 = 1 (s r s = r^-1)
    k, f = np.arange(2 * n) % n, np.arange(2 * n) // n
    k_ab = (k[:, None] + np.where(f[:, None] == 1, -k[None, :], k[None, :])) % n
    table = (f[:, None] ^ f[None, :]) * n + k_ab

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


def symmetric(n: int) -> FiniteGroup:
    """The symmetric group S_n of all permutations of n objects (n! elements, 1 <= n <= 7).

    Generated by the transposition (0 1) and the cycle (0 1 ... n-1).

    Chapter: *Groups and actions*.
    """
    return _symmetric(check_int("n", n, 1, 7))


@functools.lru_cache(maxsize=None)
def _symmetric(n: int) -> FiniteGroup:
    if n == 1:
        group = FiniteGroup([[0]], ["e"], [], "S1")
        group.permutations = np.zeros((1, 1), dtype=np.int64)
        return group
    transposition = [1, 0] + list(range(2, n))
    cycle = list(range(1, n)) + [0]
    return from_permutations([transposition, cycle], name=f"S{n}")
