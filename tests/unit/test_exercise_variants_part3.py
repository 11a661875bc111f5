"""Per-student variants of part 3's exercises (chapters 10 and 11; issue #22 item 4).

Chapter 10's Exercise 1 (a computed answer) takes its filters from ``ch10.given()``: the
book's with no variant, drawn per student otherwise. The function exercises (10.3, 11.1,
11.2, 11.4) keep their statements and are tested on inputs drawn per variant. Chapter 11
has no computed-answer exercise, so no ``given()``.
"""
import pytest
import torch

from eqlib.exercises import ExerciseError, ch10, fresh, variants
from eqlib.exercises.variants import Variant
from eqlib.images import mirror_images
from test_exercises_ch11 import _partner  # the notebook's solution of Exercise 11.1

COURSES = ["0123456789abcdef", "fedcba9876543210", "00112233445566778899aabbccddeeff",
           "a1b2c3d4e5f60718", "5555aaaa5555aaaa"]
PAIRS = [Variant(f"s{i}", course) for i, course in enumerate(COURSES)]
BOOK_FILTERS = ((1, 2, 0), (0, 2, 2))


def _filters(v):
    with variants.variant(v):
        return fresh("ch10").given()["filters"]


def _d_by_hand(filters):
    """The notebook's solution of Exercise 10.1 (plain arithmetic on given["filters"])."""
    w0, w1 = filters
    tw0, tw1 = w1[::-1], w0[::-1]  # flip every filter, then swap the two channels
    diff = sum((a - b) ** 2 for a, b in zip(w0 + w1, tw0 + tw1))
    norm = sum(a * a for a in w0 + w1)
    return diff ** 0.5 / (2 * norm ** 0.5)


def test_ch10_book_numbers_unchanged():
    assert variants.current() is None
    assert ch10.given() == {"filters": BOOK_FILTERS}
    assert _d_by_hand(BOOK_FILTERS) == 2 ** 0.5 / (2 * 13 ** 0.5)  # the book's solution
    fresh("ch10").check_filter_distance_by_hand(26 ** -0.5)


@pytest.mark.parametrize("v", PAIRS, ids=[v.student for v in PAIRS])
def test_ch10_ex1_variant_right_passes_book_answer_fails(v):
    book_answer = _d_by_hand(ch10.given()["filters"])
    filters = _filters(v)
    right = _d_by_hand(filters)
    with variants.variant(v):
        fresh("ch10").check_filter_distance_by_hand(right)                 # (a)
        fresh("ch10").check_filter_distance_by_hand(round(right, 3))       # rounded by hand
        if filters != BOOK_FILTERS:                                        # (b)
            with pytest.raises(ExerciseError, match="is not d"):
                fresh("ch10").check_filter_distance_by_hand(book_answer)
        # the checker's hints still name the common mistakes of this student's numbers
        with pytest.raises(ExerciseError, match="denominator"):
            fresh("ch10").check_filter_distance_by_hand(2 * right)
        with pytest.raises(ExerciseError, match="square root"):
            fresh("ch10").check_filter_distance_by_hand(right ** 2)


def test_ch10_ex1_students_get_different_numbers():                        # (c)
    differ = sum(_filters(Variant("s0", c)) != _filters(Variant("s1", c)) for c in COURSES)
    assert differ >= 4
    assert sum(_filters(v) != BOOK_FILTERS for v in PAIRS) >= 4
    assert _filters(PAIRS[0]) == _filters(PAIRS[0])  # deterministic per variant


@pytest.mark.parametrize("v", PAIRS + [Variant(f"t{i}", "0123456789abcdef") for i in range(20)],
                         ids=lambda v: v.student)
def test_ch10_ex1_drawn_numbers_keep_the_teaching_point(v):                # (d)
    filters = _filters(v)
    # two 1×3 filters of small non-negative integers (a computation by hand), none zero
    assert len(filters) == 2 and all(len(f) == 3 for f in filters)
    assert all(isinstance(a, int) and 0 <= a <= 3 for f in filters for a in f)
    assert all(any(f) for f in filters)
    # the channels are not exactly mirror images: d > 0, and d is not the book's d
    d, mistakes = ch10._filter_distances(filters)
    tw = (filters[1][::-1], filters[0][::-1])
    assert tw != filters and d >= 0.01 and abs(d - 26 ** -0.5) >= 0.01
    # a right answer is never taken for a named mistake (each is 0.01 away at least)
    assert all(abs(d - value) >= 0.01 for value, _ in mistakes)
    assert abs(d - _d_by_hand(filters)) < 1e-12


# -- function exercises: their test inputs are drawn per variant (rule 3) ------------------------------
def _project(W, pi_out, pi_in):
    return 0.5 * (W + W[pi_out][:, pi_in].flip(-1))


def test_ch10_ex3_inputs_per_variant():
    seen = []

    def recording(W, pi_out, pi_in):
        seen.append((W.clone(), pi_out.clone(), pi_in.clone()))
        return _project(W, pi_out, pi_in)

    fresh("ch10").check_gcnn_projection(recording)
    book = seen[0]
    assert book[1].tolist() == [1, 0, 3, 2, 4, 5] and book[2].tolist() == [1, 0, 2, 3]
    book_perms = (book[1], book[2])
    caught = 0
    for v in PAIRS[:3] + [Variant("s0", COURSES[0], "0f" * 16)]:
        seen.clear()
        with variants.variant(v):
            fresh("ch10").check_gcnn_projection(recording)
            assert not torch.equal(seen[0][0], book[0])
            for pi in seen[0][1:]:   # involutions with at least one 2-cycle
                assert torch.equal(pi[pi], torch.arange(len(pi))) and (pi != torch.arange(len(pi))).any()
            if not all(torch.equal(a, b) for a, b in zip(seen[0][1:], book_perms)):
                with pytest.raises(ExerciseError):   # the book's permutations, hard-coded
                    fresh("ch10").check_gcnn_projection(lambda W, po, pi: _project(W, *book_perms))
                caught += 1
    assert caught >= 3


def test_ch11_ex1_inputs_per_variant():
    book_calls = []
    fresh("ch11").check_mirror_partner(lambda W, j: book_calls.append(_partner(W, j)) or book_calls[-1])
    for v in PAIRS[:3]:
        with variants.variant(v):
            fresh("ch11").check_mirror_partner(_partner)
            replay = iter(book_calls)
            with pytest.raises(ExerciseError):   # the book's answers, remembered
                fresh("ch11").check_mirror_partner(lambda W, j: next(replay))


def _penalty(f, x):
    return ((f(mirror_images(x)) - mirror_images(f(x))) ** 2).mean()


def test_ch11_ex2_inputs_per_variant():
    book_x = []
    fresh("ch11").check_equivariance_penalty(lambda f, x: book_x.append(x.clone()) or _penalty(f, x))
    for v in PAIRS[:3]:
        xs = []
        with variants.variant(v):
            fresh("ch11").check_equivariance_penalty(lambda f, x: xs.append(x.clone()) or _penalty(f, x))
        assert not torch.equal(xs[0], book_x[0])


def test_ch11_ex4_inputs_per_variant():
    from eqlib.exercises.ch11 import noise_scale_reference

    weights = []

    def right(model, scales, samples):
        weights.append(model.layers[0].weight.detach().clone())
        return {s: noise_scale_reference(model, s, samples) for s in scales}

    fresh("ch11").check_noise_scale_errors(right)
    with variants.variant(PAIRS[0]):
        fresh("ch11").check_noise_scale_errors(right)
    assert not torch.equal(weights[0], weights[1])
