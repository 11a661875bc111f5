"""Every page of the built book in headless Chromium, with the network off.

Per page: no console error, no request leaving 127.0.0.1, math typeset, images loaded,
no cell error, widgets rendered, frames players respond, local links and anchors
resolve. A full-page screenshot of each page goes to _build/screenshots/.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from booktools import SCREENSHOTS, toc_pages
from pagecheck import CHROMIUM, LocalServer, check_page, open_browser

pytestmark = pytest.mark.book

if not Path(CHROMIUM).exists():
    pytest.skip(f"headless browser tests need Debian's chromium at {CHROMIUM} "
                "(apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the browser is Debian's; "
                               "never `playwright install`)")


@pytest.fixture(scope="module")
def browser_context(built_book):
    with LocalServer(built_book) as server, sync_api.sync_playwright() as pw:
        browser, context = open_browser(pw, server.origin)
        yield server.origin, built_book, context
        browser.close()


@pytest.mark.parametrize("page", toc_pages())
def test_page_in_browser(browser_context, page):
    origin, root, context = browser_context
    shot = SCREENSHOTS / (page.replace("/", "__") + ".png")
    problems, facts = check_page(context, origin, root, f"{page}.html", screenshot=shot)
    assert not problems, f"{page} ({facts}):\n  " + "\n  ".join(problems)
