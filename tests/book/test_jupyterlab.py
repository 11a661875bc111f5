"""A student's view: every chapter in a real JupyterLab (with jupyterlab-myst) in headless Chromium.

A JupyterLab server on 127.0.0.1 (a free port, a random token) serves a copy of ``book/``;
Chromium opens each chapter of ``_toc.yml`` and the test asserts what a student must see:
MyST markup rendered (no raw ``{prf:``, ``{term}``, ``{glue}``, ``{cite}`` or ``:label:``),
no "Citation Not Found", no math errors (red macros), no image that fails to load, solutions
folded away.

The chapters whose page needs the kernel are run (every cell, markdown cells too): those
that write ``{eval}`G("key", "fmt")``` numbers into their prose (chapter 11: every number
must be evaluated, no ``G(`` left, see eqlib.widgets.shown) and chapter 2, whose widget must
redraw its figure in place; a run must leave no error output. The others are opened and
checked as rendered without running them: their markup renders without a kernel, and nbval
runs every cell of every chapter (before this test in CI). ``EQLIB_LAB_RUN_ALL=1`` runs every
chapter (measured 17-32 s each for chapters 1-9 with a warm model cache, 5 min for the
whole test on a shared 2-core machine; CI keeps to the ~2 min of the default).
``EQLIB_LAB_CHAPTERS`` (comma-separated chapter numbers, e.g. ``02,11``) restricts the test.
The seconds each chapter takes are printed.

Chapter 11 is opened as a student who downloaded that one notebook has it (issue 23, "Done
when"): alone in a folder of its own (``downloaded/``), with no ``recorded/`` beside it, so
every cell runs on the records shipped inside ``eqlib``; the run must write nothing into that
folder. (This run replaced a separate nbclient run of the chapter's record-reading cells,
which cost CI 2-4 minutes for a subset of what this run covers.)
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from booktools import REPO, chapter_pages
from pagecheck import CHROMIUM

pytestmark = pytest.mark.book

RAW_MARKUP = ("{prf:", "{term}", ":label:", "{exercise}", "{solution}", "{cite", "{glue", "{eval}",
              "Citation Not Found", "G(\"")
WIDGET_CHAPTER = "book/part1/02_groups_and_actions"
#: opened alone, from a folder with nothing else in it (see the docstring)
LONE_CHAPTER = "book/part3/11_cifar_mlp"
LONE_FOLDER = "downloaded"
_ONLY = [c.strip() for c in os.environ.get("EQLIB_LAB_CHAPTERS", "").split(",") if c.strip()]
CHAPTERS = [p for p in chapter_pages() if not _ONLY or Path(p).name[:2] in _ONLY]
RUN_ALL = os.environ.get("EQLIB_LAB_RUN_ALL") == "1"
# the longest chapter, run live, with a warm model cache (seconds)
RUN_TIMEOUT_S = 600

if not Path(CHROMIUM).exists():
    pytest.skip(f"needs Debian's chromium at {CHROMIUM} (apt-get install chromium)",
                allow_module_level=True)
for _module in ("jupyterlab", "jupyterlab_myst"):
    pytest.importorskip(_module, reason=f"{_module} is not installed (pip install -r requirements.txt)")
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 serving a copy of book/; yields (url, token)."""
    root = tmp_path_factory.mktemp("lab")
    shutil.copytree(REPO / "book", root / "book",
                    ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints", "_assets"))
    lone = root / LONE_FOLDER
    lone.mkdir()
    shutil.copy2(REPO / f"{LONE_CHAPTER}.ipynb", lone)  # the notebook alone, no recorded/ beside it
    settings = root / ".settings"
    tracker = settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    # every cell in the DOM (no virtual scrolling), so the whole chapter can be checked
    tracker.write_text(json.dumps({"windowingMode": "none"}))
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(settings),
           "JUPYTER_RUNTIME_DIR": str(root / ".runtime"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    log = open(root / "lab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
        + (["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None:
                    break
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not start in 60 s:\n" + (root / "lab.log").read_text()[-3000:])
        if proc.poll() is not None:
            pytest.fail("JupyterLab exited:\n" + (root / "lab.log").read_text()[-3000:])
        yield url, token, root
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


_RUN_ALL = """
async () => {
  const app = window.jupyterapp;
  const panel = app.shell.currentWidget;
  await panel.context.ready;
  await panel.sessionContext.ready;
  await app.commands.execute("notebook:run-all-cells");
}
"""

_RENDERED = """
() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const md = panel.content.widgets.filter(w => w.model.type === "markdown");
  return md.length > 0 && md.every(w => w.rendered)
      && panel.node.querySelectorAll(".jp-MarkdownCell .myst").length > 0;
}
"""

_NUMBERS_SHOWN = """
() => !Array.from(window.jupyterapp.shell.currentWidget.node.querySelectorAll(
    ".jp-MarkdownCell .jp-RenderedMarkdown, .jp-MarkdownCell .myst")).some(e => e.innerText.includes('G("'))
"""

_DONE = """
() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cells = Array.from(panel.content.model.cells).filter(c => c.type === "code");
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  // markdown cells with {eval} numbers: jupyterlab-myst stores the kernel's answers
  const md = Array.from(panel.content.model.cells)
      .filter(c => c.type === "markdown" && c.sharedModel.getSource().includes("{eval}"));
  return kernel && kernel.status === "idle"
      && cells.every(c => c.executionCount !== null && !c.sharedModel.getMetadata("busy"))
      && md.every(c => (c.sharedModel.getMetadata("user_expressions") || []).length > 0)
      && cells.length > 0;
}
"""

_FACTS = """
() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const model = panel.content.model;
  const cells = Array.from(model.cells);
  const errors = cells.filter(c => c.type === "code")
      .flatMap(c => c.outputs.toJSON().filter(o => o.output_type === "error")
                     .map(o => `${o.ename}: ${o.evalue}`));
  const rendered = Array.from(panel.node.querySelectorAll(".jp-MarkdownCell .jp-RenderedMarkdown, .jp-MarkdownCell .myst"));
  const text = rendered.map(e => e.innerText).join("\\n");
  // MathJax (outputs) and jupyterlab-myst's KaTeX (markdown: red or yellow warning spans)
  const mathErrors = Array.from(panel.node.querySelectorAll(
      "mjx-merror, .katex-error, [data-mjx-error], .jp-MarkdownCell .text-red-500, "
      + ".jp-MarkdownCell .text-yellow-600"))
      .map(e => (e.getAttribute("data-mjx-error") || e.getAttribute("title") || e.textContent).slice(0, 120))
      // a reference to another chapter's label cannot resolve inside one notebook
      .filter(m => !/Cross Reference Not Found/.test(m));
  const citations = mathErrors.filter(m => /Citation/.test(m));
  const math = panel.node.querySelectorAll(".jp-MarkdownCell .katex, .jp-MarkdownCell mjx-container").length;
  // inline expressions: each answer (an error is one too) as jupyterlab-myst stored it
  const expressions = cells.filter(c => c.type === "markdown")
      .flatMap(c => c.sharedModel.getMetadata("user_expressions") || []);
  // an answer shown in quotes ('0.73') is a plain str, not the ShownText of G(...)
  const badExpressions = expressions.filter(e => !e.result || e.result.status !== "ok"
          || /^['"]/.test(((e.result.data || {})["text/plain"]) || ""))
      .map(e => `${e.expression}: ${JSON.stringify(e.result).slice(0, 200)}`);
  const solutions = Array.from(panel.node.querySelectorAll("details"))
      .filter(d => /solution/i.test(d.innerText.split("\\n")[0] || ""));
  // an image that loaded as nothing (a path that does not resolve, e.g. a file that is not
  // beside a notebook opened alone)
  const images = Array.from(panel.node.querySelectorAll("img"));
  const brokenImages = images.filter(i => i.complete && i.naturalWidth === 0)
      .map(i => `${i.getAttribute("alt") || ""} <${(i.getAttribute("src") || "").slice(0, 60)}>`);
  const imageAlts = images.map(i => i.getAttribute("alt") || "");
  return {errors, text, mathErrors: mathErrors.filter(m => !/Citation/.test(m)), citations, math, expressions: expressions.length, badExpressions,
          brokenImages, imageAlts,
          solutions: solutions.length, openSolutions: solutions.filter(d => d.open).length,
          codeCells: cells.filter(c => c.type === "code").length,
          executed: cells.filter(c => c.type === "code" && c.executionCount !== null).length};
}
"""


@pytest.fixture(scope="module")
def tab(lab):
    """One Chromium page with JupyterLab loaded, shared by the chapters (a page load costs
    seconds); only the server's own address is reachable."""
    url, token, _ = lab
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.route("**/*", lambda route: route.continue_()
                   if route.request.url.startswith(url) or route.request.url.startswith("data:")
                   else route.abort("blockedbyclient"))
        page.goto(f"{url}/lab?token={token}&reset")
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=60_000)
        page.wait_for_function("() => window.jupyterapp.commands.hasCommand('docmanager:open')",
                               timeout=60_000)
        yield page
        browser.close()


_OPEN_CHAPTER = """
async (path) => {
  const app = window.jupyterapp;
  const panel = await app.commands.execute("docmanager:open", {path, factory: "Notebook"});
  await panel.context.ready;
  app.shell.activateById(panel.id);
}
"""

_CLOSE_CHAPTER = """
async () => {
  const panel = window.jupyterapp.shell.currentWidget;
  await panel.sessionContext.shutdown();
  panel.context.model.dirty = false;
  panel.dispose();
}
"""


@pytest.mark.parametrize("page", CHAPTERS, ids=[Path(p).name[:2] for p in CHAPTERS])
def test_chapter_runs_and_renders_in_jupyterlab(lab, tab, page):
    start = time.time()
    written = sum(c.source.count("{eval}`") for c in nbformat.read(REPO / f"{page}.ipynb", as_version=4).cells
                  if c.cell_type == "markdown")
    path = f"{LONE_FOLDER}/{Path(page).name}.ipynb" if page == LONE_CHAPTER else f"{page}.ipynb"
    tab.evaluate(_OPEN_CHAPTER, path)
    tab.wait_for_function("(name) => { const w = window.jupyterapp.shell.currentWidget;"
                          " return w && w.context && w.context.path === name && w.content.model; }",
                          arg=path, timeout=60_000)
    # run where the page needs the kernel: {eval} numbers, the widget (see the docstring)
    run = RUN_ALL or written > 0 or page == WIDGET_CHAPTER
    try:
        if run:
            tab.evaluate(_RUN_ALL)
        try:
            tab.wait_for_function(_DONE if run else _RENDERED, timeout=RUN_TIMEOUT_S * 1000, polling=1000)
        except sync_api.TimeoutError:
            facts = tab.evaluate(_FACTS)
            pytest.fail(f"{page}: not done after {RUN_TIMEOUT_S} s: "
                        f"{ {k: v for k, v in facts.items() if k != 'text'} }")
        tab.wait_for_timeout(1500 if run else 2500)  # let the last outputs, numbers and widgets render
        try:  # the numbers are drawn a little after the kernel's answers arrive (seconds, when busy)
            tab.wait_for_function(_NUMBERS_SHOWN, timeout=30_000, polling=500)
        except sync_api.TimeoutError:
            pass  # reported below
        facts = tab.evaluate(_FACTS)
        shot = os.environ.get("EQLIB_LAB_SCREENSHOT")
        if shot:  # for a look at what the student sees
            tab.screenshot(path=shot.replace(".png", f"-{Path(page).name[:2]}.png"), full_page=True)
        print({k: v for k, v in facts.items() if k not in ("text", "imageAlts")})
        assert facts["executed"] == (facts["codeCells"] if run else 0), facts
        assert not facts["errors"], f"error outputs: {facts['errors']}"
        assert not facts["badExpressions"], f"{{eval}} numbers that failed: {facts['badExpressions']}"
        assert facts["expressions"] == (written if run else 0), \
            f"{written} {{eval}} numbers written, {facts['expressions']} evaluated"
        raw = [m for m in RAW_MARKUP if m in facts["text"]]
        assert not raw, f"raw MyST markup shown to the student: {raw}: " + "; ".join(
            facts["text"][max(0, i - 80):i + 80] for m in raw for i in [facts["text"].find(m)])
        assert facts["math"] > 10, f"math not typeset in markdown cells ({facts['math']})"
        assert not facts["citations"], \
            f"citations JupyterLab cannot resolve (run benchmarks/lab_markup.py): {facts['citations']}"
        assert not facts["mathErrors"], f"math errors (undefined macros?): {facts['mathErrors']}"
        assert not facts["brokenImages"], f"images that do not load: {facts['brokenImages']}"
        assert facts["solutions"] >= 1 and facts["openSolutions"] == 0, \
            f"solutions must be folded away: {facts['solutions']} found, {facts['openSolutions']} open"
        if page == WIDGET_CHAPTER:
            _check_widget(tab)
        if page == LONE_CHAPTER:  # it ran on eqlib's own records and wrote nothing beside itself
            assert run and facts["executed"] == facts["codeCells"], facts
            # its recorded figures came from eqlib (a relative path would be broken here)
            shown = [a for a in facts["imageAlts"] if a.startswith("First 64 filters")]
            assert len(shown) == 6, f"recorded figures shown: {shown}"
            left = sorted(p.name for p in (lab[2] / LONE_FOLDER).iterdir())
            assert left in ([f"{Path(page).name}.ipynb"], [".ipynb_checkpoints", f"{Path(page).name}.ipynb"]), \
                f"the chapter wrote into the student's folder: {left}"
    finally:  # the next chapter starts a kernel of its own: stop this one (memory), close it
        tab.evaluate(_CLOSE_CHAPTER)
    print(f"JupyterLab test, {page}: {time.time() - start:.0f} s" + ("" if run else " (not run)"))


def _check_widget(page):
    """The widget: moving a control redraws its figure in the same place."""
    widget = page.locator(".jp-OutputArea-output .widget-vbox").filter(
        has=page.locator("img")).first
    widget.scroll_into_view_if_needed()
    area = widget.locator("xpath=ancestor::div[contains(@class,'jp-OutputArea')][1]")
    outputs_before = area.locator(".jp-OutputArea-child").count()
    img = widget.locator("img").first
    src_before = img.get_attribute("src")
    box = img.bounding_box()
    widget.locator("select").first.select_option(index=0)  # element "e" instead of "r"
    page.wait_for_function("([el, old]) => el.getAttribute('src') !== old",
                           arg=[img.element_handle(), src_before], timeout=30_000)
    assert area.locator(".jp-OutputArea-child").count() == outputs_before, \
        "the control added an output instead of redrawing in place"
    after = img.bounding_box()
    assert abs(after["y"] - box["y"]) < 2, "the figure moved: it was not redrawn in place"
