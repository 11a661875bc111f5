"""Checks of rendered pages in headless Chromium, with the network off.

The built HTML is served on 127.0.0.1 by a local ``http.server`` thread; every request
to another host is aborted (and reported: the book must not need a CDN). Driver:
Playwright for Python against Debian's ``/usr/bin/chromium`` (never ``playwright
install``).
"""
from __future__ import annotations

import functools
import http.server
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


# Errors of the toolchain itself, on every page, that no page of ours causes. Each entry:
# (substring of the message, why it is tolerated).
# (sphinx-thebe's doubled inline configuration, "Identifier 'THEBE_JS_URL' has already been
# declared", was one; eqlib.widgets.page_scripts removes the copy, so it now fails a page)
KNOWN_THIRD_PARTY: list[tuple[str, str]] = []


def _known(message: str) -> bool:
    return any(k in message for k, _ in KNOWN_THIRD_PARTY)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


class LocalServer:
    """Serve ``root`` on 127.0.0.1 (a free port) in a daemon thread."""

    def __init__(self, root: Path):
        handler = functools.partial(_QuietHandler, directory=str(root))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


class _Ids(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("id", "name") and v:
                self.ids.add(v)


@functools.lru_cache(maxsize=None)
def page_ids(path: Path) -> frozenset[str]:
    """The ``id`` (and ``name``) attributes of an HTML file: the anchors a link may target."""
    parser = _Ids()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return frozenset(parser.ids)


def check_links(html_root: Path, page_rel: str, hrefs: list[str]) -> list[str]:
    """Problems with the local links ``hrefs`` of the page ``page_rel`` (missing files or anchors)."""
    problems = []
    page = html_root / page_rel
    for href in sorted(set(hrefs)):
        parts = urlsplit(href)
        if parts.scheme in ("http", "https") and parts.hostname not in ("127.0.0.1", "localhost"):
            continue  # external (launch buttons, repository): not followed offline
        if parts.scheme in ("mailto", "javascript", "data"):
            continue
        if parts.scheme in ("http", "https"):
            target = html_root / unquote(parts.path).lstrip("/")
        elif parts.path:
            target = (page.parent / unquote(parts.path)).resolve()
        else:
            target = page
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            problems.append(f"broken link {href!r}: {target} does not exist")
            continue
        frag = unquote(parts.fragment)
        if frag and target.suffix == ".html" and frag not in page_ids(target):
            problems.append(f"broken anchor {href!r}: no id {frag!r} in {target.name}")
    return problems


# Run in the page after load; returns the facts the checks need.
_FACTS_JS = r"""
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  const main = document.querySelector("main") || document.body;
  const clone = main.cloneNode(true);
  clone.querySelectorAll("pre, code, script, style, mjx-container, .highlight, textarea")
       .forEach(e => e.remove());
  const text = clone.textContent;
  const imgs = Array.from(document.querySelectorAll("main img"));
  await Promise.all(imgs.map(i => i.complete ? null : new Promise(r => { i.onload = i.onerror = r; })));
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length;
  const rendered = Array.from(document.querySelectorAll(".jupyter-widgets, .widget-subarea"))
       .filter(e => e.getBoundingClientRect().height > 0).length;
  return {
    rawMath: ["\\(", "\\[", "$$", "\\begin{"].filter(s => text.includes(s)),
    mathSources: document.querySelectorAll("main .math, main span.math, main div.math").length,
    mjx: document.querySelectorAll("mjx-container").length,
    mjxErrors: Array.from(document.querySelectorAll("mjx-merror")).map(e => e.getAttribute("data-mjx-error") || e.textContent).slice(0, 5),
    badImages: imgs.filter(i => !(i.naturalWidth > 0)).map(i => i.getAttribute("src").slice(0, 80)),
    nImages: imgs.length,
    errorOutputs: Array.from(document.querySelectorAll(".output.traceback, .output.error, .cell_output .traceback"))
       .map(e => e.textContent.slice(0, 200)),
    views: views,
    renderedWidgets: rendered,
    hrefs: Array.from(document.querySelectorAll("a[href]")).map(a => a.getAttribute("href")),
    players: document.querySelectorAll(".eqlib-player").length,
    rawDirectives: (text.match(/```\{|\{(prf:)?[a-z]+\}`|:label:|:class: dropdown/g) || []).slice(0, 5),
    // the saved controls of a widget do nothing without a kernel: they must not act clickable
    liveLookingControls: Array.from(document.querySelectorAll(
        ".cell_output .jupyter-widgets input, .cell_output .jupyter-widgets select, "
        + ".cell_output .jupyter-widgets button, .cell_output .jupyter-widgets .noUi-handle"))
      .filter(e => getComputedStyle(e).pointerEvents !== "none").length,
    // code and printed output that need a horizontal scroll bar, and anything that sticks
    // out of the text column (more than 2 px: glyph overhangs; display math wider than the
    // column scrolls inside its own box)
    overflowing: (() => {
      const art = document.querySelector("article.bd-article") || main;
      const right = art.getBoundingClientRect().right;
      const what = e => `${e.tagName.toLowerCase()} (${(e.innerText || "").trim().slice(0, 60).replace(/\s+/g, " ")})`;
      const scrolled = Array.from(art.querySelectorAll(
          "div.cell_input pre, div.cell_output pre"))
        .filter(e => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 2)
        .map(e => `${what(e)} needs a scroll bar: ${e.scrollWidth} px in ${e.clientWidth}`)
        .concat(Array.from(art.querySelectorAll("div.cell_output table"))  // cut at the column
          .filter(t => t.getBoundingClientRect().width > art.getBoundingClientRect().width + 2)
          .map(t => `${what(t)} needs a scroll bar: ${Math.round(t.getBoundingClientRect().width)} px`));
      const clipsX = e => { for (let a = e; a && a !== art; a = a.parentElement) {
          if (["auto", "scroll", "hidden"].includes(getComputedStyle(a).overflowX)) return true; }
          return false; };
      const outside = Array.from(art.querySelectorAll("p, li, pre, table, img, mjx-container, .cell_output > *"))
        .filter(e => e.getBoundingClientRect().right > right + 2 && !clipsX(e.parentElement))
        .map(e => `${what(e)} runs ${Math.round(e.getBoundingClientRect().right - right)} px off the column`);
      return scrolled.concat(outside).slice(0, 8);
    })(),
  };
}
"""

_PLAYER_JS = r"""
() => Array.from(document.querySelectorAll(".eqlib-player")).map(root => {
  const img = root.querySelector("img"), slider = root.querySelector("input[type=range]");
  const label = root.querySelector(".eqlib-player-label");
  const before = img.src, labelBefore = label.textContent;
  const next = root.querySelector('button[data-step="+1"]'), last = root.querySelector('button[data-step="last"]');
  (parseInt(slider.value) < parseInt(slider.max) ? next : root.querySelector('button[data-step="first"]')).click();
  const afterClick = img.src;
  slider.value = slider.max; slider.dispatchEvent(new Event("input"));
  return {n: parseInt(root.dataset.frames), changed: afterClick !== before && label.textContent !== labelBefore,
          atLast: slider.value === slider.max && img.src !== "" };
})
"""


_MAX_SHOT = 16_000  # px


def check_page(context, origin: str, html_root: Path, page_rel: str,
               screenshot: Path | None = None) -> tuple[list[str], dict]:
    """Open one page; return every problem found (empty when fine) and a few counts.

    Checks: no console error or uncaught exception, no request that failed or left
    127.0.0.1, math typeset (no raw TeX in the visible text, MathJax containers where
    the page has math, no MathJax error such as an undefined macro), every image loaded,
    no cell error output, widgets rendered, frames players respond, no raw directive
    text, no code or output wider than the text column and nothing sticking out of it, every
    local link and anchor resolves.
    """
    problems: list[str] = []
    page = context.new_page()
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: None if _known(str(e)) else problems.append(f"uncaught JavaScript exception: {e}"))

    def on_failed(req):
        problems.append(f"request failed: {req.url} ({req.failure})")

    page.on("requestfailed", on_failed)
    page.on("response", lambda r: problems.append(f"HTTP {r.status} for {r.url}") if r.status >= 400 else None)
    page.goto(f"{origin}/{page_rel}", wait_until="load", timeout=60_000)
    page.wait_for_timeout(300)  # let widget managers render
    facts = page.evaluate(_FACTS_JS)
    if facts["rawMath"]:
        problems.append(f"raw TeX left in the visible text: {facts['rawMath']}")
    if facts["mathSources"] and not facts["mjx"]:
        problems.append(f"{facts['mathSources']} math elements but no MathJax output (mjx-container)")
    if facts["mjxErrors"]:
        problems.append(f"MathJax errors: {facts['mjxErrors']}")
    if facts["badImages"]:
        problems.append(f"images that did not load: {facts['badImages']}")
    if facts["errorOutputs"]:
        problems.append(f"cell error outputs: {facts['errorOutputs']}")
    if facts["views"] and facts["renderedWidgets"] < facts["views"]:
        problems.append(f"{facts['views']} widget views but only {facts['renderedWidgets']} rendered (blank widgets)")
    if facts["rawDirectives"]:
        problems.append(f"unrendered directive text: {facts['rawDirectives']}")
    if facts["liveLookingControls"]:
        problems.append(f"{facts['liveLookingControls']} saved widget controls look and act clickable "
                        "in the static page (they do nothing without a kernel)")
    if facts["overflowing"]:
        problems.append(f"content wider than the text column: {facts['overflowing']}")
    if facts["players"]:
        for i, p in enumerate(page.evaluate(_PLAYER_JS)):
            if p["n"] > 1 and not p["changed"]:
                problems.append(f"frames player {i}: the buttons do not change the image")
            if not p["atLast"]:
                problems.append(f"frames player {i}: the slider does not move to the last frame")
    problems += check_links(html_root, page_rel, facts["hrefs"])
    if screenshot is not None:
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        # Chromium cannot capture a page taller than its largest texture (16,384 px): a very
        # long page (the API reference) is captured down to that height
        height = page.evaluate("document.documentElement.scrollHeight")
        width = page.evaluate("document.documentElement.scrollWidth")
        clip = None if height <= _MAX_SHOT else {"x": 0, "y": 0, "width": width, "height": _MAX_SHOT}
        page.screenshot(path=str(screenshot), full_page=True, clip=clip, timeout=120_000)
    page.close()
    return problems, {k: facts[k] for k in ("nImages", "mjx", "mathSources", "views", "renderedWidgets", "players")}


def open_browser(playwright, origin: str):
    """Launch Chromium and return (browser, context) with every non-local request aborted."""
    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    context = browser.new_context(viewport={"width": 1280, "height": 1600}, service_workers="block")
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(origin)
                  or route.request.url.startswith("data:") else route.abort("blockedbyclient"))
    return browser, context
