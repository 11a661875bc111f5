"""eqlib.plots.latent.plot_latent_arrows: one arrow per nonzero entry, clear errors."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from eqlib.plots.latent import plot_latent_arrows  # noqa: E402


def test_one_arrow_per_nonzero_entry():
    k = torch.tensor([[0.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    h = torch.tensor([0.3, -0.5, 0.9])
    fig = plot_latent_arrows(h, k @ h, k, title="t")
    annotations = [c for c in fig.axes[0].get_children()
                   if isinstance(c, matplotlib.text.Annotation)]
    assert len(annotations) == 3
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert "-1" in labels and "+1" in labels and "+0.90" in labels
    plt.close(fig)


def test_shape_mismatch_is_a_clear_error():
    with pytest.raises(ValueError, match="h_moved must have shape"):
        plot_latent_arrows(torch.zeros(2), torch.zeros(3), torch.eye(2))
