import numpy as np
import pytest
import torch

from eqlib.exercises import ExerciseError
from eqlib.exercises.ch08 import check_equivariant_positions, check_head_permutation
from eqlib.latent.attention import patch_mirror_action, plant_attention_equivariant
from eqlib.seeds import torch_generator


def test_positions_checker():
    act = patch_mirror_action((1, 4, 4), 2)
    P0 = torch.randn(4, 4, generator=torch_generator(100))
    m = act.group["m"]
    good = (P0 + act.permute_tokens(m, P0) @ act.feature_matrix(m).T) / 2
    assert check_equivariant_positions(good, act) is None
    with pytest.raises(ExerciseError, match="Π_g P R_gᵀ"):
        check_equivariant_positions(P0, act)
    with pytest.raises(ExerciseError, match="useless"):
        check_equivariant_positions(torch.zeros(4, 4), act)


def test_positions_hint_does_not_give_the_answer():
    act = patch_mirror_action((1, 4, 4), 2)
    with pytest.raises(ExerciseError) as info:
        check_equivariant_positions(torch.randn(4, 4, generator=torch_generator(101)), act)
    assert "mean_g" not in str(info.value) and "←" not in str(info.value)
    assert "fixed" in str(info.value)


def test_head_permutation_checker():
    act = patch_mirror_action((1, 4, 4), 2)
    planted = plant_attention_equivariant(act, np.array([[0, 1, 2], [1, 0, 2]]), d_k=2, d_v=2, seed=0)
    assert check_head_permutation(planted.head_perm["m"].tolist(), planted) is None
    with pytest.raises(ExerciseError, match="not the head permutation"):
        check_head_permutation([0, 1, 2] if planted.head_perm["m"].tolist() != [0, 1, 2] else [1, 0, 2], planted)
    with pytest.raises(ExerciseError, match="not a permutation"):
        check_head_permutation([0, 0, 1], planted)


def test_head_permutation_direction_hint_only_for_the_inverse():
    from types import SimpleNamespace

    act = patch_mirror_action((1, 4, 4), 2)
    planted = plant_attention_equivariant(act, np.array([[0, 1, 2], [1, 0, 2]]), d_k=2, d_v=2, seed=0)
    truth = planted.head_perm["m"].tolist()
    assert [truth[truth[h]] for h in range(3)] == [0, 1, 2]   # τ_m is an involution
    wrong = [0, 1, 2] if truth != [0, 1, 2] else [1, 0, 2]
    with pytest.raises(ExerciseError) as info:
        check_head_permutation(wrong, planted)
    assert "direction" not in str(info.value)
    # a (made-up) 3-cycle: its inverse, and only its inverse, gets the direction hint
    cycle = SimpleNamespace(head_perm={"m": np.array([1, 2, 0])})
    with pytest.raises(ExerciseError, match="direction"):
        check_head_permutation([2, 0, 1], cycle)
    with pytest.raises(ExerciseError) as info:
        check_head_permutation([0, 2, 1], cycle)
    assert "direction" not in str(info.value)
    assert check_head_permutation([1, 2, 0], cycle) is None


def test_turned_filter():
    from eqlib.exercises.ch08 import check_turned_filter
    from eqlib.groups import cyclic
    from eqlib.latent.conv import rotate
    from eqlib.models.convnet import SameConv

    C4 = cyclic(4)
    layer = SameConv(1, 2, 6, 3, seed=0)
    W, r = layer.weight.detach(), C4["r"]
    assert check_turned_filter(layer, r, rotate(W, ~r)) is None
    with pytest.raises(ExerciseError, match="wrong way"):
        check_turned_filter(layer, r, rotate(W, r))
    with pytest.raises(ExerciseError, match="shape"):
        check_turned_filter(layer, r, W[0])
    with pytest.raises(ExerciseError, match="clockwise") as info:      # W transposed
        check_turned_filter(layer, r, W.transpose(-1, -2))
    assert "rotate(" not in str(info.value)                            # no library call
    with pytest.raises(ExerciseError, match="turn every filter"):
        check_turned_filter(layer, r, W)


def test_turned_filter_accepts_a_3x3_answer():
    """ch08-ex2 prints W as 3×3 (ex_conv.weight[0, 0]); a 3×3 answer is read as (1, 1, 3, 3)."""
    from eqlib.exercises.ch08 import check_turned_filter
    from eqlib.groups import cyclic
    from eqlib.models.convnet import SameConv

    r = cyclic(4)["r"]
    layer = SameConv(1, 1, 6, 3, seed=0)
    with torch.no_grad():
        layer.weight.copy_(torch.arange(1.0, 10.0).reshape(1, 1, 3, 3))
    turned = torch.tensor([[7.0, 4.0, 1.0], [8.0, 5.0, 2.0], [9.0, 6.0, 3.0]])
    assert check_turned_filter(layer, r, turned) is None
    assert check_turned_filter(layer, r, turned[None, None]) is None
    with pytest.raises(ExerciseError, match="wrong way"):        # the 3×3 answer is checked
        check_turned_filter(layer, r, torch.rot90(layer.weight.detach()[0, 0], 1, (0, 1)))
    with pytest.raises(ExerciseError, match="shape"):            # only 1-channel layers
        check_turned_filter(SameConv(1, 2, 6, 3, seed=0), r, turned)
    with pytest.raises(ExerciseError, match="shape"):
        check_turned_filter(layer, r, turned[:2])
