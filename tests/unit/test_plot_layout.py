"""Figure titles never overlap the panels (chapter 2's orbit figure)."""
import matplotlib

matplotlib.use("Agg")

import torch  # noqa: E402

from eqlib.images import image_dihedral  # noqa: E402
from eqlib.plots import groups as gplots  # noqa: E402


def _overlaps(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_orbit_titles_do_not_overlap_images():
    rho = image_dihedral((3, 32, 32))
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (3, 32, 32), dtype=torch.uint8, generator=gen)
    fig = gplots.orbit(rho, x, title="the D4 orbit of a horse")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    axes = [ax for ax in fig.axes if ax.images]
    images = [ax.images[0].get_window_extent(renderer) for ax in axes]
    suptitle = fig._suptitle.get_window_extent(renderer)
    texts = [ax.title.get_window_extent(renderer) for ax in axes] + [suptitle]
    assert len(images) == rho.group.order
    clashes = [(t, i) for t in texts for i in images if _overlaps(t, i)]
    assert not clashes, f"{len(clashes)} titles overlap an image"
    titles = texts[:-1]
    assert not any(_overlaps(suptitle, t) for t in titles)
    matplotlib.pyplot.close(fig)
