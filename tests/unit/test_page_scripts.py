"""eqlib.widgets.page_scripts: each page loads each script once."""
from __future__ import annotations

import pytest

from eqlib.widgets.page_scripts import unique_scripts

assets = pytest.importorskip("sphinx.builders.html._assets")


def test_repeated_inline_and_file_scripts_are_dropped_in_order():
    js = assets._JavaScript
    thebe = 'const THEBE_JS_URL = "x"'
    scripts = [js("_static/a.js"), js(None, body=thebe), js("_static/b.js", async_="async"),
               js("", body=thebe),  # the same inline script, added by another extension
               js("_static/a.js"), js("_static/b.js"), js(None, body="var other = 1;")]
    kept = unique_scripts(scripts)
    assert [(s.filename, s.attributes) for s in kept] == [
        ("_static/a.js", {}), (None, {"body": thebe}), ("_static/b.js", {"async_": "async"}),
        ("_static/b.js", {}), (None, {"body": "var other = 1;"})]
