"""Interactive controls that never leave a rendered page blank.

Every widget in the book goes through :func:`interactive_figure`: it draws the
figure of the default state as a static image (which the static HTML keeps) and,
when a live kernel is there, adds the ipywidgets controls that redraw it.

Without a kernel, a slider can still step through precomputed frames:
:func:`~eqlib.widgets.jsplayer.frames_player` embeds them with a few lines
of JavaScript. The widget JavaScript of the static book is fetched by
:mod:`eqlib.widgets.assets`.

Chapter: *Groups and actions* (book/part1/02_groups_and_actions), the first widget.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .jsplayer import frames_player  # noqa: F401  (a shortcut)

__all__ = ["interactive_figure"]  # frames_player is documented in eqlib.widgets.jsplayer


def interactive_figure(draw: Callable[..., Any], controls: dict[str, Any], **defaults: Any):
    """Show ``draw(**defaults)`` with live controls that redraw that same figure in place.

    One output holds the figure and the controls: in JupyterLab (or Colab) the figure is
    an image widget above the controls, replaced when a control moves; renderers
    without widgets (and the static book, from the saved widget state) show the figure
    of the default state.

    Args:
        draw: makes and returns a matplotlib figure from keyword arguments.
        controls: ``{name: ipywidgets control or interact abbreviation}``.
        **defaults: the default state; shown as the static figure.

    Returns:
        The static figure of the default state (so callers can assert on it).

    Chapter: *Groups and actions*.
    """
    import base64

    import ipywidgets as widgets
    import matplotlib.pyplot as plt
    from IPython.display import display

    fig = draw(**defaults)
    png = _png(fig)
    plt.close(fig)

    # ``interactive`` only turns abbreviations into controls here; redrawing is ours.
    made = widgets.interactive(lambda **kwargs: None, **controls).kwargs_widgets
    for w in made:
        if w._kwarg in defaults:
            w.value = defaults[w._kwarg]
    image = widgets.Image(value=png, format="png")

    def redraw(change=None) -> None:
        f = draw(**{**defaults, **{w._kwarg: w.value for w in made}})
        image.value = _png(f)
        plt.close(f)

    for w in made:
        w.observe(redraw, names="value")
    box = widgets.VBox([image, widgets.HTML("<b>Live controls</b> (they need a running kernel)"),
                        *made])
    bundle = dict(box._repr_mimebundle_())
    bundle["image/png"] = base64.b64encode(png).decode()
    display(bundle, raw=True)
    return fig


def _png(fig) -> bytes:
    """The figure as PNG bytes, as the inline backend draws it (tight box)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return buf.getvalue()
