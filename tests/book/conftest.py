"""The book is built once per session, from clean, into _build (as CI does).

Set EQLIB_BOOK_REUSE=1 to reuse an existing _build/html instead (local iteration only).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from booktools import BUILD, BUILD_CMD, HTML, REPO


@pytest.fixture(scope="session")
def built_book() -> Path:
    """Build the book from clean (or reuse it with EQLIB_BOOK_REUSE=1) and return _build/html."""
    if os.environ.get("EQLIB_BOOK_REUSE") == "1" and (HTML / "index.html").is_file():
        return HTML
    assets = subprocess.run([sys.executable, "-m", "eqlib.widgets.assets", "--if-missing"], cwd=REPO,
                            capture_output=True, text=True)
    if assets.returncode != 0:
        pytest.fail(f"could not fetch the widget JavaScript (needs npm):\n{assets.stdout}{assets.stderr}")
    shutil.rmtree(BUILD, ignore_errors=True)
    start = time.time()
    proc = subprocess.run(BUILD_CMD, cwd=REPO, capture_output=True, text=True)
    BUILD.mkdir(exist_ok=True)
    log = proc.stdout + proc.stderr
    (BUILD / "build.log").write_text(log)
    if proc.returncode != 0:
        pytest.fail(f"`{' '.join(BUILD_CMD)}` failed (exit {proc.returncode}, {time.time() - start:.0f} s); "
                    f"full log in {BUILD / 'build.log'}; tail:\n" + "\n".join(log.splitlines()[-60:]), pytrace=False)
    return HTML
