"""The experiments' command lines for people (issue 23, item 7) and nothing lost at the end
(issue 21, item 3): help that explains names and states measured run times, a human
summary table at the end, outputs staged beside ``--out`` and moved in at once with the
seed in single-seed names, faults at the end that lose nothing, a clear message without
npm, a README that starts with the students, figures with titles and spelled-out labels.

Every experiment here is a tiny monkeypatched stand-in: no training, no CIFAR-10.
"""
from __future__ import annotations

import errno
import os
import json
import re
import types
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from eqlib.analysis import CATEGORIES, NETWORKS  # noqa: E402
from eqlib.experiments import cifar_mlp as E  # noqa: E402
from eqlib.experiments import gcnn_barrier as gb  # noqa: E402
from eqlib.experiments import protocol as P  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _help(module, capsys) -> str:
    with pytest.raises(SystemExit) as info:
        module.main(["--help"])
    assert info.value.code == 0
    return capsys.readouterr().out


# --------------------------------------------------------------------------- --help

@pytest.mark.parametrize("module", [E, gb], ids=["cifar_mlp", "gcnn_barrier"])
def test_help_explains_names_and_hides_the_legacy_budget(module, capsys):
    """The help cited "[SMBK26]" unexplained and listed the legacy ``ci`` budget."""
    text = _help(module, capsys)
    assert "[SMBK" not in text and not re.search(r"\[[A-Z]{3,}\d\d\]", text)
    if module is E:
        assert "Shahverdi, Marchetti, Bökman & Kohn" in text
        assert "Identifiable Equivariant Networks are Layerwise" in text and "2026" in text
    else:
        assert "Bökman & Kahl" in text and "2023" in text and "Investigating how ReLU-networks" in text
    names = ("laptop", "full") if module is E else ("laptop", "medium", "full")  # what each declares
    assert "{" + ",".join(names) + "}" in text and "ci," not in text.split("options:")[0]
    assert re.search(r"\bci\b.*old name of laptop", text.split("budgets (")[1]), "say what ci is"
    for budget in names:
        assert re.search(rf"^  {budget}  ", text, re.M), f"no line for the {budget} budget"


def test_help_states_only_run_times_that_a_record_backs(capsys):
    text = " ".join(_help(E, capsys).split())
    full = P.load_recorded("cifar_mlp_full.json")
    assert f"One H200 GPU: {full['seconds']:.0f} s" in text and "H200" in full.get("device_name", "H200")
    runs = P.load_recorded("cifar_mlp_laptop_seeds.json")["runs"]
    low, high = min(r["seconds"] for r in runs), max(r["seconds"] for r in runs)
    assert f"{low:.0f}-{high:.0f} s per seed" in text and "already cached" in text
    assert "not measured" in text  # where nothing backs a figure, the help says so
    text = " ".join(_help(gb, capsys).split())
    laptop = P.load_recorded("gcnn_barrier_laptop.json")
    assert f"took {laptop['seconds']:.0f} s after training" in text
    assert P.load_recorded("gcnn_barrier_full.json", missing_ok=True) is None and "Not measured" in text


def test_the_legacy_budget_is_still_accepted(tmp_path):
    parser = P.build_parser("python -m eqlib.experiments.demo", "demo")
    with pytest.warns(DeprecationWarning):
        args = P.parse_args(parser, ["--budget", "ci", "--out", str(tmp_path)], _BUDGETS)
    assert args.budget == "laptop"
    with pytest.raises(SystemExit):
        P.parse_args(parser, ["--budget", "huge", "--out", str(tmp_path)], _BUDGETS)


# --------------------------------------------------------------------------- a tiny cifar_mlp

def _tiny_figure(title="tiny"):
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1], [0, 1])
    ax.set_title(title)
    return fig


def _fake_summary(s, seed):
    counts = dict.fromkeys(CATEGORIES, 0)
    counts["unmatched"] = 60
    counts["mirrored pair"] = 4
    nets = {name: {"test_accuracy": (0.42 + seed / 100 if task == "classify" else None),
                   "final_task_loss": 0.1, "test_loss": 0.11, "end_to_end_horizontal": 0.05,
                   "end_to_end_vertical": float("nan") if name == "gelu-autoencoder" else 0.1,
                   "filters_first64": counts, "filters_all": counts, "matched_fraction": 0.06,
                   "epoch_seconds": 0.5}
            for name, (act, task) in NETWORKS.items()}
    table = [{"network": n, "layers": 1, "mirror": m, "probe": "noise", "median_error": 0.3, "paper": None}
             for n in NETWORKS for m in ("horizontal", "vertical")]
    return {"settings": s.to_dict(), "seed": seed, "device": "cpu", "device_name": "cpu", "torch": "x",
            "networks": nets, "table": table, "seconds": 1.5, "part_seconds": {"train": 0.25}}


@pytest.fixture
def tiny_cifar(monkeypatch):
    """cifar_mlp whose measurement is a stand-in (records the seeds it was asked for)."""
    calls = []

    def measure(s, root, seed, device, progress, parts, on_ablation_row, download, t_start):
        calls.append(seed)
        return _fake_summary(s, seed), {"table": _tiny_figure(), "filters_tanh-autoencoder": _tiny_figure()}

    monkeypatch.setattr(E, "_measure", measure)
    monkeypatch.setattr(E, "load_data", lambda *a, **k: pytest.fail("the stand-in loads no data"))
    return calls


ARGS = ["--device", "cpu", "--no-download", "--no-progress", "--budget", "laptop", "--parts", "table,filters"]


def test_a_run_ends_with_a_human_summary_and_strict_seed_named_json(tiny_cifar, tmp_path, capsys):
    """The run ended in a 150-line raw JSON dump; single-seed names carried no seed."""
    out = tmp_path / "out"
    record = E.main(ARGS + ["--seed", "3", "--out", str(out)])
    text = capsys.readouterr().out
    assert not re.search(r'^\s*"networks": \{', text, re.M), "no raw JSON dump"
    assert "None" not in text and "nan" not in text.lower()  # a NaN shows as –
    assert len(text.splitlines()) <= 16
    assert "CIFAR-10 MLP experiment, budget laptop, seed 3" in text
    for name in NETWORKS:
        assert re.search(rf"^{name}\s", text, re.M), f"no row for {name}"
    assert re.search(r"^tanh-classifier\s+45\.0\s", text, re.M)  # accuracy in percent
    assert "end-to-end error:" in text and "layer-1 error:" in text  # the columns are explained
    written = sorted(p.name for p in out.iterdir())
    assert written == ["cifar_mlp_laptop_seed3.json", "cifar_mlp_laptop_seed3_filters_tanh-autoencoder.png",
                       "cifar_mlp_laptop_seed3_table.png"]
    raw = (out / "cifar_mlp_laptop_seed3.json").read_text()
    strict = json.loads(raw, parse_constant=lambda token: pytest.fail(f"non-strict token {token}"))
    assert strict["seed"] == 3 and strict["networks"]["gelu-autoencoder"]["end_to_end_vertical"] is None
    assert np.isnan(E.load_results(out / "cifar_mlp_laptop_seed3.json")["networks"]["gelu-autoencoder"][
        "end_to_end_vertical"])
    assert record["seed"] == 3 and not list(tmp_path.glob(".out.staging-*"))


def test_runs_with_different_seeds_never_overwrite_each_other(tiny_cifar, tmp_path, capsys):
    out = tmp_path / "out"
    E.main(ARGS + ["--seed", "0", "--out", str(out)])
    E.main(ARGS + ["--seed", "1", "--out", str(out)])
    E.main(ARGS + ["--seeds", "2,3", "--out", str(out)])
    names = {p.name for p in out.iterdir()}
    for seed in range(4):
        assert f"cifar_mlp_laptop_seed{seed}.json" in names and f"cifar_mlp_laptop_seed{seed}_table.png" in names
    assert "cifar_mlp_laptop_seeds.json" in names
    assert E.load_results(out / "cifar_mlp_laptop_seeds.json")["seeds"] == [2, 3]
    assert "2 seeds [2, 3] (mean ± std)" in capsys.readouterr().out


def test_a_folder_where_any_output_goes_fails_before_any_work(tiny_cifar, tmp_path, capsys):
    out = tmp_path / "out"
    (out / "cifar_mlp_laptop_seed0_table.png").mkdir(parents=True)
    with pytest.raises(SystemExit) as info:
        E.main(ARGS + ["--out", str(out)])
    assert info.value.code == 2 and "not a regular file" in capsys.readouterr().err
    assert tiny_cifar == []  # refused before any work
    with pytest.raises(ValueError, match="not a regular file"):
        E.run("laptop", out=out, parts=("table",))
    assert tiny_cifar == []


def _read_only(out: Path):
    """``os.replace`` that fails for any target inside ``out`` (``--out`` turned read-only)."""
    import os
    real = os.replace

    def replace(src, dst):
        if Path(dst).resolve().parent == out.resolve():
            raise OSError(errno.EROFS, "Read-only file system", str(dst))
        return real(src, dst)
    return replace


def _kept(message: str) -> Path:
    return Path(re.search(r"kept in '([^']+)'", message).group(1))


def test_out_turned_read_only_at_the_end_loses_nothing(tiny_cifar, tmp_path, monkeypatch, capsys):
    """``--out`` read-only at the end: a traceback after all the work and no JSON."""
    out = tmp_path / "out"
    monkeypatch.setattr(os, "replace", _read_only(out))
    with pytest.raises(SystemExit) as info:
        E.main(ARGS + ["--out", str(out)])
    message = str(info.value.code)
    assert message.startswith("error: could not move the outputs") and "Read-only" in message
    kept = _kept(message)
    assert kept.parent == tmp_path  # beside --out
    assert sorted(p.name for p in kept.iterdir()) == [
        "cifar_mlp_laptop_seed0.json", "cifar_mlp_laptop_seed0_filters_tanh-autoencoder.png",
        "cifar_mlp_laptop_seed0_table.png"]
    assert E.load_results(kept / "cifar_mlp_laptop_seed0.json")["seed"] == 0
    assert "tanh-classifier" in capsys.readouterr().out  # the summary is still printed


def test_disk_full_at_the_end_keeps_what_was_written(tiny_cifar, tmp_path, monkeypatch, capsys):
    """The disk fills while the figures are saved: the JSON (written first) is kept."""
    from matplotlib.figure import Figure

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full)
    with pytest.raises(SystemExit) as info:
        E.main(ARGS + ["--out", str(tmp_path / "out")])
    message = str(info.value.code)
    assert "No space left on device" in message
    kept = _kept(message)
    assert E.load_results(kept / "cifar_mlp_laptop_seed0.json")["networks"]
    assert not any((tmp_path / "out").iterdir())  # nothing half-moved into --out


def test_a_target_that_turns_into_a_folder_during_the_run_loses_nothing(tiny_cifar, tmp_path, monkeypatch):
    out = tmp_path / "out"
    real = E._measure

    def measure_then_block(*args, **kwargs):
        result = real(*args, **kwargs)
        (out / "cifar_mlp_laptop_seed0.json").mkdir()  # made while the experiment ran
        return result

    monkeypatch.setattr(E, "_measure", measure_then_block)
    with pytest.raises(SystemExit) as info:
        E.main(ARGS + ["--out", str(out)])
    kept = _kept(str(info.value.code))
    assert (kept / "cifar_mlp_laptop_seed0.json").is_file()
    assert not (out / "cifar_mlp_laptop_seed0_table.png").exists()  # nothing moved: all or none


# --------------------------------------------------------------------------- a tiny gcnn_barrier

def _report(acc, barrier):
    return {"barrier": barrier + 5, "barrier_reset": barrier, "barrier_repair": barrier, "acc_a": acc,
            "acc_mid_reset": acc - barrier, "involution_distance_mean": 0.0, "invariance_a": 0.2,
            "invariance_mid_reset": 1e-7, "alphas": [0.0, 0.5, 1.0], "curve_reset": [acc, acc - barrier, acc]}


@pytest.fixture
def tiny_gcnn(monkeypatch):
    calls = []

    def run_experiment(b, device=None, networks=None, data=None, **kwargs):
        calls.append(gb.network_seeds(b))
        seeds = gb.network_seeds(b)
        selfs = [_report(60.0 + s, 1.0 + s) for s in seeds]
        pairs = [_report(60.0, 20.0)] if len(seeds) > 1 else []
        cells = {"plain@1": {"variant": "plain", "width": 1.0, "self_flip": selfs, "two_network": pairs,
                             "summary": gb.summarize(selfs, pairs)}}
        return {"device": "cpu", "cells": cells, "claims": {"a": True, "b": False}, "seconds": 0.5,
                "from_cache": False}

    # main hands the test split to train_networks (the per-epoch log's test accuracy)
    test_split = types.SimpleNamespace(test_images=None, test_labels=None)
    monkeypatch.setattr(gb, "load_merge_data", lambda *a, **k: (None, test_split))
    monkeypatch.setattr(gb, "train_networks", lambda *a, **k: {})
    monkeypatch.setattr(gb, "run_experiment", run_experiment)
    return calls


GB_ARGS = ["--device", "cpu", "--no-download", "--budget", "laptop", "--parts", "barriers,figures"]


def test_gcnn_cli_summary_names_and_staged_outputs(tiny_gcnn, tmp_path, capsys):
    out = tmp_path / "out"
    gb.main(GB_ARGS + ["--out", str(out)])
    gb.main(GB_ARGS + ["--seed", "4", "--out", str(out)])
    gb.main(GB_ARGS + ["--seed", "5", "--out", str(out)])
    text = capsys.readouterr().out
    assert '"claims"' not in text and "claims: 1 of 2 hold; not holding: b" in text
    assert re.search(r"^plain@1\s+3\s+61\.0 ± 1\.0\s+2\.0 ± 1\.0\s+20\.0 ± 0\.0", text, re.M)
    names = {p.name for p in out.iterdir()}
    for stem in ("gcnn_barrier_laptop", "gcnn_barrier_laptop_seed4", "gcnn_barrier_laptop_seed5"):
        assert {f"{stem}.json", f"{stem}_barriers.png", f"{stem}_interpolation_plain_w1.png"} <= names
    record = P.load_json(out / "gcnn_barrier_laptop_seed4.json")
    assert record["seeds"] == [4] and record["figures"] == ["gcnn_barrier_laptop_seed4_barriers.png",
                                                            "gcnn_barrier_laptop_seed4_interpolation_plain_w1.png"]


def test_gcnn_cli_faults_at_the_end_lose_nothing(tiny_gcnn, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    (out / "gcnn_barrier_laptop_seed2.json").mkdir(parents=True)
    with pytest.raises(SystemExit) as info:
        gb.main(GB_ARGS + ["--seed", "2", "--out", str(out)])
    assert info.value.code == 2 and tiny_gcnn == []  # refused before any work

    monkeypatch.setattr(os, "replace", _read_only(out))
    with pytest.raises(SystemExit) as info:
        gb.main(GB_ARGS + ["--seed", "3", "--out", str(out)])
    kept = _kept(str(info.value.code))
    assert P.load_json(kept / "gcnn_barrier_laptop_seed3.json")["seeds"] == [3]
    assert (kept / "gcnn_barrier_laptop_seed3_barriers.png").is_file()
    assert "plain@1" in capsys.readouterr().out


# --------------------------------------------------------------------------- protocol pieces

def test_text_table_aligns_columns():
    text = P.text_table(["a", "long header"], [["xx", 1], ["y", None]])
    lines = text.splitlines()
    assert lines[0] == "a   long header" and lines[1] == "--  -----------"
    assert lines[2] == "xx  1" and lines[3] == "y   –"


# --------------------------------------------------------------------------- npm missing

def test_assets_without_npm_end_in_a_clear_message_not_a_traceback(tmp_path, monkeypatch, capsys):
    """Without npm, ``python -m eqlib.widgets.assets --if-missing`` ended in a traceback."""
    from eqlib.widgets import assets

    monkeypatch.setattr(assets.shutil, "which", lambda name: None)
    code = assets.main(["--if-missing", "--dest", str(tmp_path / "widgets")])
    err = " ".join(capsys.readouterr().err.split())
    assert code not in (0, None)
    assert "`npm`" in err and "is not on the PATH" in err  # what is missing
    assert "apt-get install npm" in err and "nodejs.org" in err  # how to install it
    assert "Everything else works without it" in err and "JupyterLab" in err  # what still works
    assert "Traceback" not in err and len(err) < 1200


# --------------------------------------------------------------------------- README

def test_readme_puts_students_first_and_keeps_the_test_command():
    text = (REPO / "README.md").read_text()
    heads = re.findall(r"^## (.+)$", text, re.M)
    order = [next(i for i, h in enumerate(heads) if word in h.lower())
             for word in ("student", "teach", "develop")]
    assert order == sorted(order) and order[0] == 0, heads
    first = text.split("\n## ")[1]
    assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in first
    assert "jupyter lab" in first
    command = ("pip install -r requirements.txt && python -m eqlib.widgets.assets --if-missing "
               "&& python -m pytest")
    assert command in text.splitlines()
    assert command in (REPO / ".ci" / "run").read_text().replace("pip install -q ", "pip install ")
    assert "npm" in text.split(command)[1].split("\n## ")[0]  # what to do without npm, beside it


# --------------------------------------------------------------------------- figures

_BARE = re.compile(r"f≤\d|^\s*[HV]\s*$|\bH/V\b|\bf_?\d\b(?!\s*\()")


def _figure_problems(fig) -> list[str]:
    problems = []
    suptitle = fig._suptitle.get_text() if fig._suptitle is not None else ""
    texts = [suptitle] + [t.get_text() for t in fig.texts]
    for k, ax in enumerate(fig.axes):
        if not ax.axison:
            continue
        texts += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        texts += [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
        legend = ax.get_legend()
        if legend is not None:
            texts += [t.get_text() for t in legend.get_texts()]
        if ax.images:  # an image grid: no axes to label
            continue
        if not (ax.get_xlabel() or (ax.get_shared_x_axes().get_siblings(ax) and any(
                a.get_xlabel() for a in ax.get_shared_x_axes().get_siblings(ax)))):
            problems.append(f"axes {k} has no x label")
        if not any(a.get_ylabel() for a in ax.get_shared_y_axes().get_siblings(ax)):
            problems.append(f"axes {k} has no y label")
    if not suptitle and not all(ax.get_title() for ax in fig.axes if ax.axison and not ax.images):
        problems.append("no title")
    for t in texts:
        for line in t.splitlines():
            if _BARE.search(line):
                problems.append(f"undefined label {line!r}")
    return problems


def _experiment_figures():
    from eqlib.analysis import filter_pairing
    from eqlib.plots.filters import plot_filters
    from eqlib.plots.merging import barrier_table_figure, interpolation_figure
    from eqlib.plots.training import plot_ablation, plot_emergence, plot_error_table

    rows = [{"network": n, "layers": i, "mirror": m, "probe": "noise", "median_error": 0.1 * i,
             "paper": 0.03 if i == 1 else None}
            for n in ("tanh-autoencoder", "gelu-classifier") for i in (1, 2) for m in ("horizontal", "vertical")]
    ablation = [{"network": "tanh-autoencoder", "variant": v, "f1_horizontal_noise": 0.1, "f1_vertical_noise": 0.5,
                 "f1_horizontal_images": 0.2, "end_to_end": 0.05} for v in ("base", "no penalty")]
    W = torch.randn(8, 3 * 32 * 32, generator=torch.Generator().manual_seed(0))
    emergence = [{"epoch": e, "f1_error": 0.5 / (e + 1), "end_to_end": 0.1, "matched_filters": 0.1 * e,
                  "weight": W} for e in range(3)]
    selfs, pairs = [_report(60.0, 1.0), _report(61.0, 2.0)], [_report(60.0, 20.0)]
    results = {"cells": {"plain@1": {"self_flip": selfs, "two_network": pairs,
                                     "summary": gb.summarize(selfs, pairs)}}}
    return {"error table": plot_error_table(rows), "ablation": plot_ablation(ablation),
            "emergence": plot_emergence(emergence),
            "filters": plot_filters(W, filter_pairing(W), n=8, cols=8, title="tanh-autoencoder: filters"),
            "barriers": barrier_table_figure(results),
            "interpolation": interpolation_figure(selfs[0], pairs[0], title="Interpolation paths: plain")}


def test_experiment_figures_have_titles_and_spelled_out_labels():
    """Figures had no titles and undefined labels ("f≤1" over "H" / "V")."""
    figures = _experiment_figures()
    try:
        problems = {name: p for name, fig in figures.items() if (p := _figure_problems(fig))}
        assert not problems, problems
    finally:
        plt.close("all")


from dataclasses import dataclass  # noqa: E402


@dataclass(frozen=True)
class _S:
    name: str = "laptop"
    epochs: int = 1


_BUDGETS = {"laptop": _S(), "full": _S(name="full")}


def test_the_budget_flag_lists_and_accepts_what_the_experiment_declares(tmp_path, capsys):
    """--budget lists the experiment's budgets (gcnn_barrier declares medium, cifar_mlp does not)
    and refuses the others at the flag, naming the choices."""
    parser = P.build_parser("python -m eqlib.experiments.demo", "demo", budgets=("full", "medium", "laptop"))
    assert "{laptop,medium,full}" in parser.format_help() and "medium (a CPU record" in parser.format_help()
    assert parser.parse_args(["--budget", "medium"]).budget == "medium"
    narrow = P.build_parser("python -m eqlib.experiments.demo", "demo")
    with pytest.raises(SystemExit):
        narrow.parse_args(["--budget", "medium"])
    assert "choose one of laptop, full" in capsys.readouterr().err
    with pytest.raises(ValueError, match="budgets must be names"):
        P.build_parser("python -m eqlib.experiments.demo", "demo", budgets=("huge",))
    assert set(gb.BUDGETS) == {"laptop", "medium", "full"}
