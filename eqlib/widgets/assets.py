"""Fetch the JavaScript that renders widgets in the static book, so no page needs a CDN.

The rendered book shows ipywidgets with ``@jupyter-widgets/html-manager`` (its
``embed-amd.js``) loaded through ``requirejs``. Both come from the npm registry at
pinned versions whose tarballs are checked against SHA-256 digests, and are unpacked
into ``book/_assets/widgets/`` (a folder that is *not* ``_static/``: Jupyter Book 1
adds every ``*.js`` under ``_static/`` to every page). ``_config.yml`` lists
``book/_assets`` in ``html_static_path`` and points ``nb_ipywidgets_js`` at
``widgets/require.js``, ``widgets/require-config.js`` and ``widgets/embed-amd.js``.

Run once after installing (CI does)::

    python -m eqlib.widgets.assets            # into book/_assets/widgets
    python -m eqlib.widgets.assets --check    # exit 1 if missing or altered

Needs ``npm`` on the PATH (only to download: ``npm pack``); without it the command
says what is missing and how to install it, and exits with status 2. MathJax is bundled by the
``sphinx-mathjax-offline`` Python package and needs no step here.

Chapter: every chapter with widgets (the first is *Groups and actions*).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import textwrap
from pathlib import Path

__all__ = ["PACKAGES", "DEFAULT_DEST", "fetch", "check", "NpmMissing", "NPM_MISSING_MESSAGE"]


class NpmMissing(RuntimeError):
    """``npm`` is not on the PATH, so :func:`fetch` cannot download the widget JavaScript.

    Chapter: every chapter with widgets (the first is *Groups and actions*).
    """


#: what ``python -m eqlib.widgets.assets`` prints when npm is missing (then it exits with 2)
NPM_MISSING_MESSAGE = (
    "eqlib.widgets.assets: cannot fetch the widget JavaScript: `npm` (Node.js's package "
    "manager) is not on the PATH. It is needed once, to download two pinned npm packages "
    "(@jupyter-widgets/html-manager and requirejs) into {dest}, so that the widgets of the "
    "built book render offline. Install Node.js with npm (Debian/Ubuntu: `sudo apt-get "
    "install npm`; macOS: `brew install node`; conda: `conda install -c conda-forge nodejs`; "
    "or https://nodejs.org), then run this command again. Everything else works without it: "
    "the chapters in JupyterLab (live widgets come from the kernel), the unit tests "
    "(`python -m pytest tests/unit`) and the experiments' command lines; only the book build "
    "and the rendered-page tests (tests/book) need these files.")

#: npm package -> (version, sha256 of the tarball ``npm pack`` downloads, files to keep).
PACKAGES: dict[str, tuple[str, str, dict[str, str]]] = {
    "@jupyter-widgets/html-manager": (
        "1.0.15",
        "2b9d65cb7913e1c7d671757a10008b32c9c2448d4429513371e55c07d6107638",
        # file in the package -> name in the widgets folder ("*" = every font file)
        {"dist/embed-amd.js": "embed-amd.js", "dist/*": "*"},
    ),
    "requirejs": (
        "2.3.8",
        "777158e89275e16bd51aec3ef714fbcb5dc45789e7078659933bc814916d7dec",
        {"require.js": "require.js"},
    ),
}

DEFAULT_DEST = Path(__file__).resolve().parents[2] / "book" / "_assets" / "widgets"
_FONT_SUFFIXES = (".woff2", ".woff", ".ttf", ".eot", ".svg")
_MANIFEST = "MANIFEST.json"

# Loaded between require.js and embed-amd.js: makes requirejs resolve the html-manager's
# own module to this folder, so its icon fonts load from here (not from the page's folder),
# and lets its MathJax 2 calls reach MathJax 3.
REQUIRE_CONFIG_JS = """(function () {
  var base = document.currentScript.src.replace(/[?#].*$/, "").replace(/[^/]*$/, "");
  require.config({paths: {"@jupyter-widgets/html-manager/dist": base.replace(/\\/$/, "")}});
  // html-manager typesets widget labels with the MathJax 2 call MathJax.Hub.Queue;
  // the book uses MathJax 3, so route that call to MathJax.typesetPromise.
  function shim() {
    if (!window.MathJax || window.MathJax.Hub) return;
    window.MathJax.Hub = {Queue: function (job) {
      var el = job && job[2];
      if (el && window.MathJax.typesetPromise) window.MathJax.typesetPromise([el]).catch(function () {});
    }};
  }
  shim();
  document.addEventListener("DOMContentLoaded", shim);
})();
"""

_LICENSES = """Third-party files in this folder (fetched by `python -m eqlib.widgets.assets`):

- embed-amd.js and the font files: @jupyter-widgets/html-manager {hm}, BSD-3-Clause,
  Copyright (c) Jupyter Development Team (https://github.com/jupyter-widgets/ipywidgets).
  The icon fonts are Font Awesome (SIL OFL 1.1, https://fontawesome.com/license/free).
- require.js: requirejs {rq}, MIT,
  Copyright jQuery Foundation and other contributors (https://github.com/requirejs/requirejs).
"""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch(dest: Path | str = DEFAULT_DEST, npm: str = "npm") -> list[Path]:
    """Download the pinned packages with ``npm pack`` and unpack the needed files.

    Args:
        dest: folder to write into (created; files are replaced).
        npm: the npm executable.

    Returns:
        The paths written.

    Raises:
        RuntimeError: if npm is missing, a download fails, or a tarball's digest differs
            from the pinned one.
    """
    dest = Path(dest)
    if shutil.which(npm) is None:
        raise NpmMissing(f"{npm!r} not found on PATH; it is needed once to download the widget JavaScript")
    dest.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    manifest: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (version, digest, files) in PACKAGES.items():
            proc = subprocess.run([npm, "pack", f"{name}@{version}", "--silent"], cwd=tmp,
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"npm pack {name}@{version} failed:\n{proc.stderr[-2000:]}")
            tgz = Path(tmp) / proc.stdout.strip().splitlines()[-1]
            got = _sha256(tgz)
            if got != digest:
                raise RuntimeError(f"{name}@{version}: sha256 {got} differs from the pinned {digest}")
            with tarfile.open(tgz) as tar:
                members = {m.name.removeprefix("package/"): m for m in tar.getmembers() if m.isfile()}
                for src, out in files.items():
                    if src.endswith("/*"):
                        folder = src[:-1]
                        chosen = [(k, Path(k).name) for k in members
                                  if k.startswith(folder) and k.endswith(_FONT_SUFFIXES)]
                    else:
                        if src not in members:
                            raise RuntimeError(f"{name}@{version} has no file {src}")
                        chosen = [(src, out)]
                    for key, outname in chosen:
                        data = tar.extractfile(members[key]).read()
                        target = dest / outname
                        target.write_bytes(data)
                        manifest[outname] = hashlib.sha256(data).hexdigest()
                        written.append(target)
    (dest / "require-config.js").write_text(REQUIRE_CONFIG_JS)
    manifest["require-config.js"] = hashlib.sha256(REQUIRE_CONFIG_JS.encode()).hexdigest()
    written.append(dest / "require-config.js")
    (dest / "LICENSES.txt").write_text(_LICENSES.format(hm=PACKAGES["@jupyter-widgets/html-manager"][0],
                                                        rq=PACKAGES["requirejs"][0]))
    (dest / _MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return written


def check(dest: Path | str = DEFAULT_DEST) -> list[str]:
    """Return the problems with the fetched files (empty when all are present and intact)."""
    dest = Path(dest)
    manifest_path = dest / _MANIFEST
    if not manifest_path.is_file():
        return [f"{manifest_path} missing: run `python -m eqlib.widgets.assets`"]
    problems = []
    for outname, digest in json.loads(manifest_path.read_text()).items():
        path = dest / outname
        if not path.is_file():
            problems.append(f"{path} missing")
        elif _sha256(path) != digest:
            problems.append(f"{path} altered (sha256 differs from the manifest)")
    for required in ("embed-amd.js", "require.js", "require-config.js"):
        if not (dest / required).is_file():
            problems.append(f"{dest / required} missing")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eqlib.widgets.assets", description=__doc__.split("\n")[0])
    parser.add_argument("--dest", default=str(DEFAULT_DEST), help="folder to write into")
    parser.add_argument("--check", action="store_true", help="only check that the files are there and intact")
    parser.add_argument("--if-missing", action="store_true", help="fetch only when --check finds a problem")
    args = parser.parse_args(argv)
    problems = check(args.dest)
    if args.check:
        print("\n".join(problems) or f"widget assets OK in {args.dest}")
        return 1 if problems else 0
    if args.if_missing and not problems:
        print(f"widget assets already in {args.dest}")
        return 0
    try:
        paths = fetch(args.dest)
    except NpmMissing:
        print(textwrap.fill(NPM_MISSING_MESSAGE.format(dest=args.dest), 88), file=sys.stderr)
        return 2
    except (RuntimeError, OSError) as exc:
        print(textwrap.fill(f"eqlib.widgets.assets: could not fetch the widget JavaScript into {args.dest}: "
                            f"{exc}. Check the network (npm downloads from its registry) and run this "
                            "command again; the chapters in JupyterLab, the unit tests and the experiments "
                            "work without these files.", 88, replace_whitespace=False), file=sys.stderr)
        return 1
    print(f"wrote {len(paths)} files to {args.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
