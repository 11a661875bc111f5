"""eqlib.widgets.jsplayer without a browser (the browser side: test_page_checks.py)."""
import base64
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from eqlib.widgets.assets import check  # noqa: E402
from eqlib.widgets.jsplayer import frame_to_png, frames_player  # noqa: E402


def test_frames_of_every_kind_become_pngs():
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1])
    frames = [fig, np.zeros((4, 5)), np.ones((4, 5, 3), dtype=np.uint8) * 7, torch.rand(3, 4, 5)]
    pngs = [frame_to_png(f) for f in frames]
    assert all(p.startswith(b"\x89PNG") for p in pngs)
    assert frame_to_png(pngs[1]) == pngs[1]
    assert not plt.fignum_exists(fig.number), "figures are closed after encoding"


def test_player_html_embeds_every_frame_and_label():
    frames = [np.full((3, 3), v) for v in (0.0, 0.5, 1.0)]
    out = frames_player(frames, labels=["a", "b", "c"], title="T <x>", start=1, display=False)
    html = out.data
    srcs = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", html)
    assert len(set(srcs)) == 3 and all(base64.b64decode(s).startswith(b"\x89PNG") for s in srcs)
    assert 'value="1"' in html and 'max="2"' in html and "T &lt;x&gt;" in html
    assert '["a", "b", "c"]' in html and "http" not in html, "self-contained: no external resource"


@pytest.mark.parametrize("kwargs, message", [
    (dict(frames=[]), "at least one frame"),
    (dict(frames=[np.zeros((2, 2))], labels=["a", "b"]), "2 labels for 1 frames"),
    (dict(frames=[np.zeros((2, 2))], start=3), "start=3"),
    (dict(frames=[np.zeros((2, 2, 2, 2))]), "shape"),
    (dict(frames=[np.full((2, 2), np.nan)]), "NaN"),
    (dict(frames=[b"not a png"]), "PNG"),
])
def test_bad_input_is_a_clear_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        frames_player(display=False, **kwargs)


def test_widget_assets_check_reports_missing(tmp_path):
    problems = check(tmp_path)
    assert problems and "python -m eqlib.widgets.assets" in problems[0]


def test_interactive_figure_draws_the_default_once():
    import ipywidgets as widgets

    from eqlib.widgets import interactive_figure

    calls = []

    def draw(k=1):
        calls.append(k)
        fig, ax = plt.subplots(figsize=(1, 1))
        ax.plot([0, k])
        return fig

    slider = widgets.IntSlider(min=1, max=3)
    fig = interactive_figure(draw, {"k": slider}, k=2)
    assert calls == [2] and slider.value == 2, "the default state is drawn once (the static figure)"
    slider.value = 3
    assert calls == [2, 3], "moving the control redraws"
    plt.close(fig)
