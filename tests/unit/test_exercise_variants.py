"""Per-student variants of chapters 1-5's exercises (issue #22 item 4).

For every exercise with a computed answer: with no variant, ``given()`` is the book's
numbers; under each of 5 variants a correct answer computed from that variant's numbers
passes the fresh checker, the book's answer fails, two students get different numbers, and
the drawn numbers keep the exercise's teaching point. Function answers are tested on
inputs that the grader draws per student (``variants.input_generator``).
"""
import itertools
import math
import re

import pytest
import torch

from eqlib import groups
from eqlib.exercises import ExerciseError, fresh, variants
from eqlib.exercises.variants import Variant

COURSE = "0123456789abcdef"
VARIANTS = [Variant(f"s{i}", COURSE) for i in range(5)]


def given_in(chapter, v):
    with variants.variant(v):
        return fresh(chapter).given()


def check_in(chapter, v, name, *answer):
    with variants.variant(v):
        getattr(fresh(chapter), name)(*answer)


def assert_students_differ(chapter, keys):
    """(c): students s_i and s_{i+1} get different numbers for at least 4 of the 5 pairs."""
    drawn = [tuple(given_in(chapter, v)[k] for k in keys) for v in VARIANTS]
    differ = sum(drawn[i] != drawn[(i + 1) % 5] for i in range(5))
    assert differ >= 4, drawn


def test_the_book_keeps_its_numbers():
    assert variants.current() is None
    assert fresh("ch02").given() == {"b3_point": (2, 2, -5),
                                     "b3_element": ((1, 0, 0), (0, 1, 0), (0, 0, 1))}
    assert fresh("ch03").given() == {"lift_left_inverse": (1, 0, 0)}
    assert fresh("ch04").given() == {"theta_W1": (1, -1, 2), "theta_b1": (0.5, -0.5, 0.0),
                                     "theta_W2": (1, -1, 3)}
    assert fresh("ch05").given() == {"first_row": (1, 2, 3, 4)}
    assert not hasattr(fresh("ch01"), "given")      # no exercise with a computed answer


def test_given_is_deterministic_and_per_course():
    v = VARIANTS[0]
    assert given_in("ch04", v) == given_in("ch04", v)
    other = Variant("s0", "fedcba9876543210")
    assert given_in("ch04", v) != given_in("ch04", other)


# ch02-ex3: orbit and stabilizer of a point of R^3 under B3

def b3_matrices():
    """B3 built as the chapter's solution builds it (on the six signed basis vectors)."""
    B3 = groups.from_permutations([[3, 1, 2, 0, 4, 5], [1, 0, 2, 4, 3, 5],
                                   [1, 2, 0, 4, 5, 3]], name="B3")
    mats = torch.zeros(B3.order, 3, 3)
    for g, perm in zip(B3, B3.permutations):
        for j in range(3):
            mats[g.index, perm[j] % 3, j] = 1.0 if perm[j] < 3 else -1.0
    return mats


def orbit_stabilizer(point):
    mats, x = b3_matrices(), torch.tensor(point, dtype=torch.float32)
    return torch.unique(mats @ x, dim=0), mats[(mats @ x == x).all(1)]


@pytest.mark.parametrize("v", VARIANTS, ids=lambda v: v.student)
def test_ch02_ex3_variants(v):
    book = orbit_stabilizer(fresh("ch02").given()["b3_point"])
    point = given_in("ch02", v)["b3_point"]
    answer = orbit_stabilizer(point)
    check_in("ch02", v, "check_b3_orbit_stabilizer", *answer)                 # (a)
    assert point != (2, 2, -5)
    with pytest.raises(ExerciseError):                                         # (b)
        check_in("ch02", v, "check_b3_orbit_stabilizer", *book)
    # (d) integers, two entries of one size and a third of another: |stabilizer| = 2 > 1
    assert all(isinstance(c, int) and c != 0 for c in point)
    assert len({abs(c) for c in point}) == 2
    assert len(answer[1]) == 2 and len(answer[0]) == 24


def test_ch02_ex3_students_differ():
    assert_students_differ("ch02", ["b3_point"])


# ch02-ex5: the involutions of B3 that commute with a given h

def b3_group():
    B3 = groups.from_permutations([[3, 1, 2, 0, 4, 5], [1, 0, 2, 4, 3, 5],
                                   [1, 2, 0, 4, 5, 3]], name="B3")
    return B3, b3_matrices()


def commuting_involutions(element):
    """The chapter's solution."""
    B3, B3_matrices = b3_group()
    h = torch.tensor(element, dtype=torch.float32)
    commutes = [torch.equal(M @ h, h @ M) for M in B3_matrices]
    return sum(1 for g in B3 if g != B3.identity and g @ g == B3.identity and commutes[g.index])


@pytest.mark.parametrize("v", VARIANTS, ids=lambda v: v.student)
def test_ch02_ex5_variants(v):
    book = commuting_involutions(fresh("ch02").given()["b3_element"])
    assert book == 19
    element = given_in("ch02", v)["b3_element"]
    answer = commuting_involutions(element)
    check_in("ch02", v, "check_b3_involutions", answer)                        # (a)
    with pytest.raises(ExerciseError) as error:                                # (b)
        check_in("ch02", v, "check_b3_involutions", book)
    assert not re.search(rf"\b{answer}\b", str(error.value))
    # (d) h is a signed permutation outside the centre {I, -I}: some but not all of the
    # 19 involutions commute with it
    h = torch.tensor(element, dtype=torch.float32)
    assert any(torch.equal(h, M) for M in b3_matrices())
    assert not (torch.equal(h, torch.eye(3)) or torch.equal(h, -torch.eye(3)))
    assert 3 <= answer < 19


def test_ch02_ex5_answer_at_least_3_for_100_students():
    """h is drawn among the elements with at least 3 commuting involutions (1 is easy to
    guess), never the centre (19, the book's answer)."""
    answers = {commuting_involutions(given_in("ch02", Variant(f"s{i}", COURSE))["b3_element"])
               for i in range(100)}
    assert answers <= {3, 7, 11} and len(answers) == 3


def test_ch02_ex5_students_differ():
    assert_students_differ("ch02", ["b3_element"])


# ch03-ex4: the lift of k̃(m) = -1 through A_1 and a left inverse A_1^*

def lift(left_inverse):
    A = torch.tensor([[1.0], [-1.0], [0.0]])
    A_star = torch.tensor([left_inverse], dtype=torch.float32)
    return A @ torch.tensor([[-1.0]]) @ A_star + torch.eye(3) - A @ A_star


def is_signed_permutation(K):
    return bool(((K == 0) | (K.abs() == 1)).all() and ((K != 0).sum(0) == 1).all()
                and ((K != 0).sum(1) == 1).all())


@pytest.mark.parametrize("v", VARIANTS, ids=lambda v: v.student)
def test_ch03_ex4_variants(v):
    book = lift(fresh("ch03").given()["lift_left_inverse"])
    left_inverse = given_in("ch03", v)["lift_left_inverse"]
    K = lift(left_inverse)
    check_in("ch03", v, "check_lift", K)                                       # (a)
    assert left_inverse != (1, 0, 0)
    with pytest.raises(ExerciseError):                                         # (b)
        check_in("ch03", v, "check_lift", book)
    # (d) a left inverse of A_1 that reads nothing of the constant neuron; the lift is an
    # involution, not a signed permutation, and sends α_1(h̃) to α_1(-h̃)
    A_star = torch.tensor(left_inverse, dtype=torch.float32)
    assert all(isinstance(c, int) for c in left_inverse)
    assert float(A_star @ torch.tensor([1.0, -1.0, 0.0])) == 1.0 and left_inverse[2] == 0
    torch.testing.assert_close(K @ K, torch.eye(3))
    assert not is_signed_permutation(K)
    offset = torch.tensor([0.0, 0.0, math.tanh(0.3)])
    embedded = torch.tensor([0.7, -0.7, 0.0]) + offset
    torch.testing.assert_close(K @ embedded, torch.tensor([-0.7, 0.7, 0.0]) + offset)


def test_ch03_ex4_students_differ():
    assert_students_differ("ch03", ["lift_left_inverse"])


# ch04-ex4: orbit and stabilizer sizes of a tanh parameter under B_d

def parameter_orbit(numbers):
    """The chapter's solution, on this copy's θ."""
    theta = (torch.tensor(numbers["theta_W1"], dtype=torch.float32)[:, None],
             torch.tensor(numbers["theta_b1"], dtype=torch.float32),
             torch.tensor(numbers["theta_W2"], dtype=torch.float32)[None, :])
    d = len(numbers["theta_W1"])
    signed_d = [torch.diag(torch.tensor(s)) @ torch.eye(d)[list(p)]
                for s in itertools.product((1.0, -1.0), repeat=d)
                for p in itertools.permutations(range(d))]

    def act_on(k, theta):
        W1_, b1_, W2_ = theta
        return torch.cat([(k @ W1_).flatten(), k @ b1_, (W2_ @ k.T).flatten()])
    vectors = [tuple(act_on(k, theta).tolist()) for k in signed_d]
    identity = tuple(act_on(torch.eye(d), theta).tolist())
    return len(set(vectors)), sum(v == identity for v in vectors)


@pytest.mark.parametrize("v", VARIANTS, ids=lambda v: v.student)
def test_ch04_ex4_variants(v):
    book = parameter_orbit(fresh("ch04").given())
    assert book == (24, 2)
    numbers = given_in("ch04", v)
    orbit, stab = parameter_orbit(numbers)
    check_in("ch04", v, "check_parameter_orbit", orbit, stab)                  # (a)
    assert (orbit, stab) != book
    with pytest.raises(ExerciseError):                                         # (b)
        check_in("ch04", v, "check_parameter_orbit", *book)
    # (d) a small network (d = 3 or 4 neurons) whose clones give a non-trivial stabilizer,
    # no zero rows, and integer weights, biases multiples of 0.5
    d = len(numbers["theta_W1"])
    assert d in (3, 4) and len(numbers["theta_b1"]) == len(numbers["theta_W2"]) == d
    assert stab > 1 and orbit * stab == 2 ** d * math.factorial(d)
    assert all(isinstance(w, int) and w != 0 for w in numbers["theta_W1"] + numbers["theta_W2"])
    assert all(float(2 * b).is_integer() for b in numbers["theta_b1"])


def test_ch04_ex4_students_differ():
    assert_students_differ("ch04", ["theta_W1", "theta_b1", "theta_W2"])


# ch05-ex2: the circulant with a given first row

def circulant(first_row):
    row = torch.tensor(first_row, dtype=torch.float32)
    return torch.stack([row.roll(k) for k in range(4)])


@pytest.mark.parametrize("v", VARIANTS, ids=lambda v: v.student)
def test_ch05_ex2_variants(v):
    book = circulant(fresh("ch05").given()["first_row"])
    first_row = given_in("ch05", v)["first_row"]
    check_in("ch05", v, "check_circulant", circulant(first_row))               # (a)
    assert first_row != (1, 2, 3, 4)
    with pytest.raises(ExerciseError):                                         # (b)
        check_in("ch05", v, "check_circulant", book)
    # (d) four different integers: every row of the circulant is a different shift
    assert all(isinstance(c, int) for c in first_row) and len(set(first_row)) == 4
    assert len({tuple(r.tolist()) for r in circulant(first_row)}) == 4


def test_ch05_ex2_students_differ():
    assert_students_differ("ch05", ["first_row"])


# construction exercises: right function answers pass on each student's inputs

def merge_clone(W1, b1, W2, a, j, c):
    W2 = W2.clone()
    W2[:, a] += c * W2[:, j]
    keep = [m for m in range(W1.shape[0]) if m != j]
    return W1[keep], b1[keep], W2[:, keep]


def fold_constant(W1, b1, W2, b2, j, activation):
    from eqlib.models.mlp import ACTIVATIONS
    b2 = b2 + W2[:, j] * ACTIVATIONS[activation](b1[j])
    keep = [m for m in range(W1.shape[0]) if m != j]
    return W1[keep], b1[keep], W2[:, keep], b2


def is_relu_intertwiner(A, tol=1e-8):
    nonzero = A.abs() > tol
    monomial = bool((nonzero.sum(0) == 1).all() and (nonzero.sum(1) == 1).all())
    return monomial and bool((A[nonzero] > 0).all())


GRADER = Variant("s1", COURSE, "00112233445566778899aabbccddeeff")


@pytest.mark.parametrize("v", [None, VARIANTS[0], GRADER], ids=["book", "student", "grader"])
def test_function_answers_pass_on_the_drawn_inputs(v):
    from eqlib import actions, groups as G
    with variants.variant(v):
        fresh("ch02").check_d4_equivariant_map(torch.tanh)
        fresh("ch03").check_merge_clone(merge_clone)
        fresh("ch03").check_fold_constant(fold_constant)
        fresh("ch04").check_transform(lambda W1, b1, W2, k: (k @ W1, k @ b1, W2 @ k.T))
        fresh("ch04").check_relu_intertwiner_test(is_relu_intertwiner)
        D4 = G.dihedral(4)
        plane = actions.from_matrices(D4, {D4["r"]: [[0.0, -1.0], [1.0, 0.0]],
                                           D4["s"]: [[-1.0, 0.0], [0.0, 1.0]]})
        fresh("ch05").check_relu_breaks(plane)


def test_function_inputs_are_drawn_per_student():
    ch03 = fresh("ch03")
    first = {}
    for v in (None, VARIANTS[0], GRADER):
        with variants.variant(v):
            first[v] = next(ch03._cases("ch03-ex1", 0))[1]
    with variants.variant(None):
        torch.testing.assert_close(first[None], next(ch03._cases("ch03-ex1", 0))[1])
    assert not torch.equal(first[None], first[GRADER])
    assert not torch.equal(first[VARIANTS[0]], first[GRADER])


def test_messages_do_not_give_the_answer_away():
    ch05 = fresh("ch05")
    with pytest.raises(ExerciseError) as error:
        ch05.check_intertwiner_dim(lambda rho_in, rho_out: 123.0)
    assert "null space has dimension" not in str(error.value) and "123" in str(error.value)
    ch04 = fresh("ch04")
    with pytest.raises(ExerciseError) as error:
        ch04.check_relu_intertwiner_test(lambda A: True)
    assert "expected" not in str(error.value)
    with variants.variant(VARIANTS[0]):
        ch03 = fresh("ch03")
        truth = lift(ch03.given()["lift_left_inverse"])
        wrong = truth.clone()
        wrong[2, 2] = -1.0
        with pytest.raises(ExerciseError) as error:
            ch03.check_lift(wrong)
        assert str(truth.tolist()) not in str(error.value)
