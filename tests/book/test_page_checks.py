"""The page checks themselves, on a tiny fixture book built with the real _config.yml.

The good page must pass every check (math with the course's macros, a figure, an
ipywidgets control, a frames player); the bad page must fail each check it violates.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bookfixture import make_fixture_book
from booktools import BUILD_CMD, REPO
from pagecheck import CHROMIUM, LocalServer, check_links, check_page, open_browser

pytestmark = pytest.mark.book


@pytest.fixture(scope="module")
def fixture_html(tmp_path_factory):
    fetch = subprocess.run([sys.executable, "-m", "eqlib.widgets.assets", "--if-missing"], cwd=REPO,
                           capture_output=True, text=True)
    assert fetch.returncode == 0, f"could not fetch the widget JavaScript (needs npm):\n{fetch.stdout}{fetch.stderr}"
    root = make_fixture_book(tmp_path_factory.mktemp("fixture_book"))
    proc = subprocess.run(BUILD_CMD, cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0, "fixture book build failed:\n" + "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
    return root / "_build" / "html"


def test_config_is_offline(fixture_html):
    html = (fixture_html / "good.html").read_text()
    assert "_static/mathjax/tex-chtml.js" in html and (fixture_html / "_static/mathjax/tex-chtml.js").is_file()
    assert "_static/widgets/embed-amd.js" in html and "_static/widgets/require.js" in html
    for cdn in ("cdn.jsdelivr.net", "cdnjs.cloudflare.com", "unpkg.com/@jupyter-widgets"):
        assert cdn not in html.replace("unpkg.com/thebe", ""), f"the page references the CDN {cdn}"
    index = (fixture_html / "index.html").read_text()
    assert "widgets/embed-amd.js" not in index, "the widget JavaScript is loaded on a page without widgets"


def test_links_checker(fixture_html):
    problems = check_links(fixture_html, "bad.html", ["nowhere.html", "good.html#no-such-anchor", "good.html",
                                                      "https://example.org/x", "#"])
    assert len(problems) == 2 and "nowhere.html" in problems[0] + problems[1], problems


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"needs Debian's chromium at {CHROMIUM}")
def test_browser_checks_on_fixture(fixture_html, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    with LocalServer(fixture_html) as server, sync_api.sync_playwright() as pw:
        browser, context = open_browser(pw, server.origin)
        good, good_facts = check_page(context, server.origin, fixture_html, "good.html", screenshot=tmp_path / "good.png")
        bad, _ = check_page(context, server.origin, fixture_html, "bad.html")
        browser.close()
    assert good == [], good  # its widget's saved controls are inert (book/_assets/eqlib.css)
    assert good_facts["mjx"] >= good_facts["mathSources"] > 0 and good_facts["nImages"] >= 2
    assert good_facts["views"] == 1 and good_facts["renderedWidgets"] >= 1 and good_facts["players"] == 1
    assert (tmp_path / "good.png").stat().st_size > 10_000
    joined = "\n".join(bad)
    for expected in ("raw TeX", "images that did not load", "broken link 'nowhere.html'", "broken anchor", "HTTP 404",
                     "wider than the text column"):
        assert expected in joined, f"the checks missed {expected!r} on the bad page:\n{joined}"
