"""Interactivity without a kernel: a slider over precomputed frames, in plain HTML/JS.

An ipywidgets callback needs a running kernel; in the static book its slider moves and
the figure does not. For the explorations that matter most, precompute the frames and
let :func:`frames_player` show them with a slider and first/previous/next/last buttons
(inline SVG icons, so they render whatever the fonts). Everything is
embedded in the page (PNG frames as base64, a few lines of JavaScript, no libraries),
so it works offline, in JupyterLab, in the built HTML and on GitHub's viewer alike.

Usage in a chapter (a cell of its own; the default frame is also the static image)::

    from eqlib.widgets.jsplayer import frames_player
    figs = [draw(alpha=a) for a in alphas]          # matplotlib figures (closed for you)
    frames_player(figs, labels=[f"α = {a:.2f}" for a in alphas], title="Interpolation")

Chapters: *Experiments* (book/part3/10_relu_cnns_gcnns, the α slider;
book/part3/11_cifar_mlp, the filters browser) and *The main theorem*
(book/part2/06_main_theorem, g and layer browser).
"""
from __future__ import annotations

import base64
import hashlib
import html
import io
import itertools
import json
from collections.abc import Sequence
from typing import Any

__all__ = ["frames_player", "frame_to_png", "player_html"]

_counter = itertools.count()


def _svg(path: str) -> str:
    return ('<svg width="12" height="12" viewBox="0 0 12 12" aria-hidden="true" '
            f'style="vertical-align:middle"><path d="{path}" fill="currentColor"/></svg>')


#: Button icons as inline SVG: glyphs such as U+23EE are missing from many fonts.
_ICONS = {
    "first": _svg("M1 1h2v10H1z M11 1v10L4 6z"),
    "prev": _svg("M10 1v10L2 6z"),
    "next": _svg("M2 1v10l8-5z"),
    "last": _svg("M9 1h2v10H9z M1 1v10l7-5z"),
}


def frame_to_png(frame: Any, dpi: int = 80) -> bytes:
    """Encode one frame as PNG bytes.

    Args:
        frame: a matplotlib ``Figure`` (closed afterwards), PNG ``bytes``, or an image
            array: ``(H, W)`` grey or ``(H, W, 3|4)`` colour, float in [0, 1] or uint8
            (numpy array or torch tensor; a ``(3|4, H, W)`` tensor is transposed).
        dpi: resolution used for figures.

    Returns:
        The PNG bytes.

    Raises:
        ValueError: if the frame has another type or shape.
    """
    import numpy as np

    if isinstance(frame, (bytes, bytearray)):
        if not bytes(frame[:8]) == b"\x89PNG\r\n\x1a\n":
            raise ValueError("bytes frames must be PNG data (they start with the PNG signature)")
        return bytes(frame)
    if hasattr(frame, "savefig"):  # a matplotlib Figure
        import matplotlib.pyplot as plt

        buf = io.BytesIO()
        frame.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
        plt.close(frame)
        return buf.getvalue()
    if hasattr(frame, "detach"):  # torch tensor
        frame = frame.detach().cpu().numpy()
    arr = np.asarray(frame)
    if arr.ndim == 3 and arr.shape[0] in (3, 4) and arr.shape[-1] not in (3, 4):
        arr = np.moveaxis(arr, 0, -1)
    if not (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[-1] in (3, 4))):
        raise ValueError(f"an image frame must have shape (H, W), (H, W, 3|4) or (3|4, H, W); got {arr.shape}")
    if arr.dtype != np.uint8:
        if not np.isfinite(arr).all():
            raise ValueError("an image frame has NaN or infinite values")
        arr = (np.clip(arr, 0.0, 1.0) * 255).round().astype(np.uint8)
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def player_html(pngs: Sequence[bytes], labels: Sequence[str], *, title: str = "", start: int = 0,
                width: int | None = None) -> str:
    """Return the self-contained HTML (with inline JavaScript) of a frames player.

    Args:
        pngs: PNG bytes, one per frame.
        labels: one caption per frame (shown under the image).
        title: a heading above the player.
        start: index of the frame shown first (and in pages without JavaScript).
        width: display width of the image in CSS pixels (natural size when None).

    Returns:
        An HTML string; the root element has class ``eqlib-player``.
    """
    n = len(pngs)
    if not pngs or len(labels) != len(pngs) or not 0 <= start < len(pngs):
        raise ValueError(f"need one label per frame and a valid start; got {len(pngs)} frames, "
                         f"{len(labels)} labels, start={start}")
    digest = hashlib.sha1(b"".join(pngs)).hexdigest()[:12]
    uid = f"eqlib-player-{digest}-{next(_counter)}"
    srcs = ["data:image/png;base64," + base64.b64encode(p).decode("ascii") for p in pngs]
    style = f' style="width:{int(width)}px;max-width:100%"' if width else ' style="max-width:100%"'
    head = f"<div><b>{html.escape(title)}</b></div>" if title else ""
    return f"""<div class="eqlib-player" id="{uid}" data-frames="{n}">
{head}<img class="eqlib-player-img" alt="{html.escape(labels[start])}" src="{srcs[start]}"{style}>
<div class="eqlib-player-controls" style="display:flex;align-items:center;gap:0.4em;flex-wrap:wrap">
<button type="button" data-step="first" title="first frame" aria-label="first frame">{_ICONS["first"]}</button>
<button type="button" data-step="-1" title="previous frame" aria-label="previous frame">{_ICONS["prev"]}</button>
<input type="range" class="eqlib-player-slider" min="0" max="{n - 1}" step="1" value="{start}"
 aria-label="frame" style="flex:1;min-width:8em">
<button type="button" data-step="+1" title="next frame" aria-label="next frame">{_ICONS["next"]}</button>
<button type="button" data-step="last" title="last frame" aria-label="last frame">{_ICONS["last"]}</button>
<span class="eqlib-player-label">{html.escape(labels[start])}</span>
</div>
<script type="text/javascript">
(function () {{
  var root = document.getElementById({json.dumps(uid)});
  if (!root || root.dataset.ready) return;
  root.dataset.ready = "1";
  var srcs = {json.dumps(srcs)};
  var labels = {json.dumps(list(labels))};
  var img = root.querySelector(".eqlib-player-img");
  var slider = root.querySelector(".eqlib-player-slider");
  var label = root.querySelector(".eqlib-player-label");
  function show(i) {{
    i = Math.max(0, Math.min(srcs.length - 1, i));
    slider.value = i; img.src = srcs[i]; img.alt = labels[i]; label.textContent = labels[i];
  }}
  slider.addEventListener("input", function () {{ show(parseInt(slider.value, 10)); }});
  root.querySelectorAll("button").forEach(function (b) {{
    b.addEventListener("click", function () {{
      var s = b.dataset.step, i = parseInt(slider.value, 10);
      show(s === "first" ? 0 : s === "last" ? srcs.length - 1 : i + parseInt(s, 10));
    }});
  }});
}})();
</script>
</div>"""


def frames_player(frames: Sequence[Any], *, labels: Sequence[str] | None = None, title: str = "",
                  start: int = 0, dpi: int = 80, width: int | None = None, display: bool = True):
    """Show precomputed frames with a slider and step buttons that work without a kernel.

    Args:
        frames: matplotlib figures (closed after encoding), PNG bytes, or image arrays
            (see :func:`frame_to_png`); at least one.
        labels: one caption per frame; ``"1/N"``, ``"2/N"``, ... when None.
        title: a heading above the player.
        start: the frame shown first (the static image of the page).
        dpi: resolution for figure frames.
        width: display width in CSS pixels (natural size when None).
        display: display the player (``IPython.display``) as well as returning it.

    Returns:
        ``IPython.display.HTML`` holding the player.

    Raises:
        ValueError: if there are no frames, the labels do not match the frames, or
            ``start`` is out of range.

    Chapters: *The main theorem* (book/part2/06_main_theorem), *ReLU CNNs and GCNNs*
    (book/part3/10_relu_cnns_gcnns), *The CIFAR-10 MLP experiment* (book/part3/11_cifar_mlp).
    """
    from IPython.display import HTML
    from IPython.display import display as ipy_display

    frames = list(frames)
    if not frames:
        raise ValueError("frames_player needs at least one frame")
    n = len(frames)
    labels = [f"{i + 1}/{n}" for i in range(n)] if labels is None else [str(x) for x in labels]
    if len(labels) != n:
        raise ValueError(f"got {len(labels)} labels for {n} frames")
    if not 0 <= start < n:
        raise ValueError(f"start={start} is not a frame index in [0, {n})")
    pngs = [frame_to_png(f, dpi=dpi) for f in frames]
    out = HTML(player_html(pngs, labels, title=title, start=start, width=width))
    if display:
        ipy_display(out)
    return out
