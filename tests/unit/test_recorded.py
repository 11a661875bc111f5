"""The recorded runs ship inside the package and one loader reads them
(:func:`eqlib.experiments.records.load_recorded`), so a chapter runs wherever its notebook
is opened: a single downloaded notebook, Colab, an installed (not editable) ``eqlib``.

Issue 23, item 3: chapter 11 raised ``FileNotFoundError`` when ``recorded/`` was not
beside the notebook."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from eqlib.experiments import protocol, records

REPO = Path(__file__).resolve().parents[2]
FOLDER = REPO / "eqlib" / "recorded"
#: known records not recorded yet (benchmarks/gpu_check.sh,
#: benchmarks/record_hypotheses.sh)
NOT_YET = {"gcnn_barrier_full.json", "pairing_hypotheses_full.json"}


def test_every_shipped_record_loads_from_any_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no recorded/ beside the working folder
    shipped = sorted(p.name for p in FOLDER.glob("*.json"))
    assert set(shipped) <= set(records.RECORDS), "a record the loader does not know"
    assert set(records.RECORDS) - set(shipped) <= NOT_YET, "a known record is missing"
    for name in shipped:
        rec = records.load_recorded(name)
        assert set(records.RECORDS[name]) <= set(rec), name
        assert rec == records.load_json(FOLDER / name, required=())  # the strict loader's value
    assert protocol.load_recorded is records.load_recorded  # re-exported where chapters look


def test_only_known_plain_names_are_read():
    for bad in ["../recorded/cifar_mlp_full.json", "recorded/cifar_mlp_full.json",
                "/etc/passwd", "..", "", "cifar_mlp_full", "CIFAR_MLP_FULL.json",
                "cifar_mlp_full.json/", "__init__.py", "cifar_mlp_search_filters_0.png"]:
        with pytest.raises(ValueError, match="name must be one of"):
            records.load_recorded(bad)
    for bad in [Path("cifar_mlp_full.json"), None, 3, b"cifar_mlp_full.json"]:
        with pytest.raises(TypeError, match="name must be"):
            records.load_recorded(bad)
    with pytest.raises(TypeError, match="missing_ok"):
        records.load_recorded("cifar_mlp_full.json", missing_ok=1)


def test_a_known_record_not_recorded_yet(monkeypatch):
    monkeypatch.setitem(records.RECORDS, "never_recorded.json", ("settings",))
    assert records.load_recorded("never_recorded.json", missing_ok=True) is None
    with pytest.raises(FileNotFoundError, match="never_recorded.json.*gpu_check"):
        records.load_recorded("never_recorded.json")


def test_a_record_without_its_keys_is_refused(monkeypatch):
    monkeypatch.setitem(records.RECORDS, "cifar_mlp_search.json", ("settings",))
    with pytest.raises(ValueError, match="lacks \\['settings'\\]"):
        records.load_recorded("cifar_mlp_search.json")


def _code_files():
    for path in sorted(REPO.glob("book/**/*.ipynb")):
        if ".ipynb_checkpoints" in path.parts or "_build" in path.parts:
            continue
        nb = nbformat.read(path, as_version=4)
        yield path, "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    for folder in ("eqlib", "tests", "benchmarks"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix in (".py", ".sh") and path != Path(__file__).resolve():
                yield path, path.read_text()


# a path to a records folder in code: Path("recorded"), "recorded/x.json", "part3/recorded",
# "part3" / "recorded"
OLD_READER = re.compile(r"""Path\(\s*["']recorded["']\s*\)|["']recorded/[^"'\s]*\.json"""
                        r"""|part3/recorded|["']part3["']\s*/\s*["']recorded["']""")


def test_no_reader_looks_for_records_beside_a_notebook():
    """Every chapter, test, benchmark and library reader goes through ``load_recorded``."""
    hits = [f"{path.relative_to(REPO)}: {m.group(0)}" for path, text in _code_files()
            for m in OLD_READER.finditer(text)]
    assert not hits, "\n".join(hits)
    assert OLD_READER.search('RECORD = Path("recorded") / "gcnn_barrier_laptop.json"')
    assert OLD_READER.search('E.load_results("recorded/cifar_mlp_full.json")')
    assert OLD_READER.search('Path("..") / "part3" / "recorded"')


def _source_copy(dst: Path) -> Path:
    """The files ``pip install .`` builds from, copied (a build writes build/ and
    *.egg-info beside its sources; the worktree stays clean)."""
    shutil.copytree(REPO / "eqlib", dst / "eqlib",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, dst / name)
    return dst


@pytest.mark.timeout(300)
def test_a_built_wheel_ships_the_records_and_reads_them(tmp_path):
    """``pip install .`` (not only ``-e``) installs the records: the wheel holds every
    shipped JSON, and eqlib imported from the wheel alone (a zip, outside the repository)
    reads them through ``importlib.resources``."""
    pytest.importorskip("setuptools")
    src = _source_copy(tmp_path / "src")
    out = tmp_path / "wheel"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps",
                           "--no-build-isolation", "--no-index", "-q", "-w", str(out)],
                          capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = out.glob("eqlib-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = sorted(p.name for p in FOLDER.glob("*.json"))
    assert len(shipped) >= 5, shipped
    missing = [n for n in shipped if f"eqlib/recorded/{n}" not in names]
    missing += [n for n in records.RECORDED_FIGURES if f"eqlib/recorded/figures/{n}" not in names]
    assert not missing, f"the wheel lacks {missing}: see [tool.setuptools.package-data]"
    # read back from the wheel itself, from a folder with no recorded/ beside it
    code = ("import json, sys, eqlib\n"
            "from eqlib.experiments.records import load_recorded\n"
            "assert eqlib.__file__.startswith(sys.argv[1]), eqlib.__file__\n"
            "from eqlib.experiments.records import RECORDED_FIGURES, recorded_figure_png\n"
            "assert all(len(recorded_figure_png(n)) > 1000 for n in RECORDED_FIGURES)\n"
            "print(json.dumps({n: sorted(load_recorded(n)) for n in sys.argv[2:]}))\n")
    env = dict(os.environ, PYTHONPATH=str(wheel))
    proc = subprocess.run([sys.executable, "-c", code, str(wheel), *shipped], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    keys = json.loads(proc.stdout.strip().splitlines()[-1])
    assert keys == {n: sorted(records.load_recorded(n)) for n in shipped}


# --------------------------------------------------------------------------- recorded figures

def test_recorded_figures_ship_inside_eqlib_and_show_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing beside the working folder
    shipped = sorted(p.name for p in (FOLDER / "figures").glob("*.png"))
    assert shipped == sorted(records.RECORDED_FIGURES)
    for name in records.RECORDED_FIGURES:
        png = records.recorded_figure_png(name)
        assert png == (FOLDER / "figures" / name).read_bytes() and png[:4] == b"\x89PNG"
    shown = records.recorded_figure("filters_tanh-autoencoder.png", 'Tanh <filters> & "pairs"')
    html = shown._repr_html_() if hasattr(shown, "_repr_html_") else shown.data
    assert html.startswith('<img src="data:image/png;base64,') and html.count("<img") == 1
    assert 'alt="Tanh &lt;filters&gt; &amp; &quot;pairs&quot;"' in html  # escaped
    assert "max-width: 100%" in html
    assert protocol.recorded_figure is records.recorded_figure


def test_recorded_figures_refuse_unknown_names_bad_descriptions_and_non_png(monkeypatch, tmp_path):
    for bad in ["../figures/filters_tanh-autoencoder.png", "figures/filters_tanh-autoencoder.png",
                "filters_tanh-autoencoder", "cifar_mlp_full.json", "", "/etc/passwd"]:
        with pytest.raises(ValueError, match="name must be one of"):
            records.recorded_figure_png(bad)
    with pytest.raises(TypeError, match="name must be"):
        records.recorded_figure_png(Path("filters_tanh-autoencoder.png"))
    with pytest.raises(TypeError, match="alt must be"):
        records.recorded_figure("filters_tanh-autoencoder.png", None)
    with pytest.raises(ValueError, match="alt must describe"):
        records.recorded_figure("filters_tanh-autoencoder.png", "  ")
    # a known name whose file is missing, or is not a PNG
    monkeypatch.setattr(records.importlib.resources, "files", lambda package: tmp_path)
    with pytest.raises(FileNotFoundError, match="filters_tanh-autoencoder.png"):
        records.recorded_figure_png("filters_tanh-autoencoder.png")
    (tmp_path / "recorded" / "figures").mkdir(parents=True)
    (tmp_path / "recorded" / "figures" / "filters_tanh-autoencoder.png").write_text("<html>")
    with pytest.raises(ValueError, match="not a PNG"):
        records.recorded_figure_png("filters_tanh-autoencoder.png")


#: an image in markdown by a path beside the notebook: ![..](file) or <img src="file">
_LOCAL_IMAGE = re.compile(r"""!\[[^\]]*\]\((?!https?:|data:)([^)\s]+)|<img[^>]*\ssrc=["'](?!https?:|data:)([^"']+)""")


def test_no_chapter_shows_an_image_from_a_file_beside_it():
    """A chapter opened alone (downloaded, Colab) has nothing beside it: its figures come
    from cells (recorded ones through ``recorded_figure``), never from a relative path."""
    hits = []
    for path in sorted(REPO.glob("book/**/*.ipynb")):
        if ".ipynb_checkpoints" in path.parts or "_build" in path.parts:
            continue
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                hits += [f"{path.relative_to(REPO)}: {m.group(0)[:80]}"
                         for m in _LOCAL_IMAGE.finditer(cell.source)]
    assert not hits, "\n".join(hits)
    assert _LOCAL_IMAGE.search("![grid](recorded/filters.png)")
    assert _LOCAL_IMAGE.search('<img alt="x" src="figs/a.png">')
    assert not _LOCAL_IMAGE.search("![logo](https://example.org/a.png)")

