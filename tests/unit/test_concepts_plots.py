"""eqlib.plots.concepts: the layer-by-layer propagation figure of chapter 1."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from eqlib import groups, images  # noqa: E402
from eqlib.latent import plant_equivariant  # noqa: E402
from eqlib.plots.concepts import layer_propagation, signed_permutation_parts  # noqa: E402


def test_parts_read_a_signed_permutation():
    m = torch.tensor([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
    assert signed_permutation_parts(m) == ([1, 0, 2], [1, -1, -1])


@pytest.mark.parametrize("bad,error,message", [
    (torch.tensor([[1.0, 1.0], [0.0, 1.0]]), ValueError, "signed permutation"),
    (torch.tensor([[2.0, 0.0], [0.0, 1.0]]), ValueError, "signed permutation"),
    (torch.ones(2, 3), ValueError, "square"),
    ([[1, 0], [0, 1]], TypeError, "torch.Tensor"),
])
def test_parts_refuse_bad_matrices(bad, error, message):
    with pytest.raises(error, match=message):
        signed_permutation_parts(bad)


def test_figure_draws_one_arrow_per_moved_neuron_and_rings_for_negated_fixed_ones():
    G = groups.flip()
    rho = images.mirror((1, 2, 2))
    net, hidden = plant_equivariant(G, rho, rho, [4, 6, 6, 4], seed=0)
    mats = [rho.matrix(G["m"])] + [k.matrix(G["m"]) for k in hidden] + [rho.matrix(G["m"])]
    fig = layer_propagation(mats, title="m through the layers")
    expected_arrows = sum(int((torch.diagonal(m) == 0).sum()) for m in mats)
    expected_rings = sum(int((torch.diagonal(m) == -1).sum()) for m in mats)
    assert len(fig.arrows) == expected_arrows and len(fig.rings) == expected_rings
    for layer, j, t, s in fig.arrows:
        assert mats[layer][t, j] == s
    plt.close(fig)


def test_figure_refuses_bad_input():
    with pytest.raises(ValueError, match="at least one"):
        layer_propagation([])
    with pytest.raises(ValueError, match="one label per layer"):
        layer_propagation([torch.eye(2)], labels=["a", "b"])
    with pytest.raises(ValueError, match=r"matrices\[1\]"):
        layer_propagation([torch.eye(2), 2 * torch.eye(2)])
