"""How long the README's book build takes from a fresh clone, against the 15-minute target.

    EQLIB_DATA=path/to/cifar python benchmarks/book_build.py [--repo .] [--keep]

Clones the repository's HEAD into a temporary folder, gives it an empty model cache
(``EQLIB_CACHE``: every chapter trains its networks, as for a new reader) and runs the
README's command there: ``python -m eqlib.widgets.assets --if-missing`` (timed on its own:
it downloads the pinned widget JavaScript with npm) and ``jupyter-book build .``. Prints the
seconds each chapter's execution took (from the build log), the build's wall time, and its
ratio to the target of 900 s. Run it on quiet cores: other work on the machine slows the
build. Exit status 1 when the build fails or leaves a chapter unexecuted.

Chapter: *Introduction* (how the book is built).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 900.0
_EXECUTED = re.compile(r"(\S+\.ipynb): Executed notebook in ([0-9.]+) seconds")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]),
                        help="the repository whose HEAD is cloned (default: this one)")
    parser.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    args = parser.parse_args(argv)
    if not os.environ.get("EQLIB_DATA"):
        parser.error("set EQLIB_DATA to the CIFAR-10 folder (see the README)")
    work = Path(tempfile.mkdtemp(prefix="book_build."))
    clone = work / "clone"
    subprocess.run(["git", "clone", "-q", args.repo, str(clone)], check=True)
    env = {**os.environ, "EQLIB_CACHE": str(work / "cache"), "PYTHONPATH": str(clone)}
    env.pop("EQLIB_BUDGET", None)  # the default budget, as a reader gets it
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, text=True,
                            capture_output=True, check=True).stdout.strip()
    print(f"fresh clone of {args.repo} at {commit} in {clone}; empty model cache; "
          f"{os.cpu_count()} CPUs", flush=True)
    start = time.perf_counter()
    assets = subprocess.run([sys.executable, "-m", "eqlib.widgets.assets", "--if-missing"],
                            cwd=clone, env=env, text=True, capture_output=True)
    assets_s = time.perf_counter() - start
    if assets.returncode != 0:
        print(assets.stdout + assets.stderr)
        return 1
    start = time.perf_counter()
    build = subprocess.run(["jupyter-book", "build", "."], cwd=clone, env=env, text=True,
                           capture_output=True)
    build_s = time.perf_counter() - start
    log = build.stdout + build.stderr
    (work / "build.log").write_text(log)
    chapters = [(Path(path).name, float(s)) for path, s in _EXECUTED.findall(log)]
    expected = sorted(p.name for p in (clone / "book").glob("part*/*.ipynb"))
    print(f"\n{'chapter':<34}{'executed in':>12}")
    for name, seconds in chapters:
        print(f"{name:<34}{seconds:>10.0f} s")
    print(f"{'all chapters':<34}{sum(s for _, s in chapters):>10.0f} s")
    print(f"\nassets step {assets_s:.0f} s; jupyter-book build {build_s:.0f} s "
          f"= {build_s / 60:.1f} min; ratio to the {TARGET_S / 60:.0f}-min target "
          f"{build_s / TARGET_S:.2f} (build log: {work / 'build.log'})")
    missing = sorted(set(expected) - {name for name, _ in chapters})
    failed = build.returncode != 0 or missing or re.search(r"(?i)executing notebook failed", log)
    if failed:
        print(f"FAILED: exit {build.returncode}; chapters not executed: {missing}; "
              "tail of the log:\n" + "\n".join(log.splitlines()[-30:]))
    if args.keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
