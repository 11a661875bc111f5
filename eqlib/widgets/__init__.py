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
    """Show ``draw(**defaults)`` as a static figure, then live controls that redraw it.

    Args:
        draw: makes and returns a matplotlib figure from keyword arguments.
        controls: ``{name: ipywidgets control or interact abbreviation}``.
        **defaults: the default state; shown as the static figure.

    Returns:
        The static figure of the default state (so callers can assert on it).

    Chapter: *Groups and actions*.
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt
    from IPython.display import display

    fig = draw(**defaults)
    display(fig)  # the static state, kept in the rendered page
    plt.close(fig)

    first_call = [True]

    def redraw(**kwargs):
        # ``interactive`` calls this once at creation with the defaults: that figure is
        # already shown above, so skip it (the page would show it twice).
        if first_call[0]:
            first_call[0] = False
            return
        f = draw(**kwargs)
        display(f)
        plt.close(f)

    for name, control in controls.items():
        if isinstance(control, widgets.ValueWidget) and name in defaults:
            control.value = defaults[name]
    ui = widgets.interactive(redraw, **controls)
    display(widgets.VBox([widgets.HTML("<b>Live controls</b> (they need a running kernel)"), ui]))
    return fig
