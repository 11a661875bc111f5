"""Per-student variants of the exercises of chapters 6-9 (issue #22 item 4).

For every exercise with variant numbers, over five ``Variant(student, course)`` pairs:
the answer computed from the variant's ``given()`` passes the fresh checker under that
variant; the book's answer fails wherever the variant's numbers differ from the book's;
two students of one course get different numbers; and the drawn numbers keep the
exercise's teaching point.
"""
import pytest
import torch

from eqlib.exercises import ExerciseError, fresh, variants
from eqlib.exercises.variants import Variant

COURSES = ["0123456789abcdef", "fedcba9876543210", "00112233445566778899aabbccddeeff",
           "0f1e2d3c4b5a6978", "abcdefabcdefabcd"]
PAIRS = [Variant(f"s{i}", course) for i, course in enumerate(COURSES)]


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
    for chapter in ("ch09",):
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
