"""Tests of eqlib.experiments.protocol, the protocol every experiment follows."""
from __future__ import annotations

import ast
import importlib
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from eqlib.experiments import protocol as P


@dataclass(frozen=True)
class Knobs:
    name: str
    epochs: int
    lr: float = 1e-3
    hidden: tuple[int, ...] = (8, 8)
    mirror: bool = True
    variants: tuple[str, ...] | None = None


BUDGETS = {"laptop": Knobs("laptop", 2), "full": Knobs("full", 20, hidden=(64, 64))}


def test_settings_and_typed_overrides(monkeypatch):
    monkeypatch.delenv("EQLIB_BUDGET", raising=False)
    assert P.settings(BUDGETS) is BUDGETS["laptop"]
    monkeypatch.setenv("EQLIB_BUDGET", "full")
    assert P.settings(BUDGETS).epochs == 20
    assert P.settings(BUDGETS, "laptop", epochs=5) == Knobs("laptop", 5)
    for bad in ({"epoch": 3}, {"name": "full"}):
        with pytest.raises(ValueError, match="unknown settings"):
            P.settings(BUDGETS, "laptop", **bad)
    with pytest.raises(ValueError, match="not declared"):
        P.settings({"laptop": BUDGETS["laptop"]}, "full")
    with pytest.raises(TypeError, match="dataclass"):
        P.settings({"laptop": {"epochs": 1}}, "laptop")
    base = BUDGETS["laptop"]
    assert P.parse_setting("epochs=40", base) == ("epochs", 40)
    assert P.parse_setting("lr = 0.5", base) == ("lr", 0.5)
    assert P.parse_setting("hidden=4,5,6", base) == ("hidden", (4, 5, 6))
    assert P.parse_setting("mirror=false", base) == ("mirror", False)
    assert P.parse_setting("variants=a,b", base) == ("variants", ("a", "b"))
    assert P.parse_settings(["epochs=1", "epochs=2"], base) == {"epochs": 2}
    for bad in ("epochs", "epoch=3", "epochs=many", "name=full", "mirror=maybe", "hidden=4,x"):
        with pytest.raises(ValueError):
            P.parse_setting(bad, base)
    assert P.settings_dict(BUDGETS["full"])["hidden"] == [64, 64]


def test_parse_seeds():
    assert P.parse_seeds("0,1,2") == (0, 1, 2)
    assert P.parse_seeds("3-5,9") == (3, 4, 5, 9)
    for bad in ("", "a", "2-1", "1,1", "-3"):
        with pytest.raises(ValueError, match="--seeds"):
            P.parse_seeds(bad)


def test_cli_has_the_shared_flags_and_checks_out_first(tmp_path, capsys):
    parser = P.build_parser("prog", "desc", parts=("a", "b"))
    args = P.parse_args(parser, ["--out", str(tmp_path / "o"), "--seeds", "0-2", "--set",
                                 "epochs=7", "--parts", "b", "--no-progress", "--no-download",
                                 "--budget", "full"], BUDGETS)
    assert args.out == tmp_path / "o" and args.out.is_dir()
    assert args.seeds == (0, 1, 2) and args.seed == 0 and args.parts == ("b",)
    assert args.settings == Knobs("full", 7, hidden=(64, 64)) and args.overrides == {"epochs": 7}
    assert args.progress is False and args.download is False and args.budget == "full"
    args = P.parse_args(parser, ["--out", str(tmp_path), "--seed", "4"], BUDGETS)
    assert args.seeds == (4,) and args.parts == ("a", "b") and args.progress and args.download is None
    blocker = tmp_path / "file"
    blocker.write_text("")
    # a bad --out is reported even when other flags are bad too: it is checked first
    for argv in (["--out", str(blocker / "x"), "--set", "nonsense=1"],
                 ["--out", str(blocker / "x"), "--parts", "zzz"]):
        with pytest.raises(SystemExit):
            P.parse_args(parser, argv, BUDGETS)
        assert "--out" in capsys.readouterr().err
    for argv in (["--set", "epochs=x"], ["--parts", "zzz"], ["--seeds", "1,1"],
                 ["--seed", "1", "--seeds", "2"], ["--budget", "huge"]):
        with pytest.raises(SystemExit):
            P.parse_args(parser, ["--out", str(tmp_path), *argv], BUDGETS)


def test_write_json_is_atomic_and_load_json_checks(tmp_path):
    path = P.write_json(tmp_path / "r.json", {"settings": {"a": 1}, "x": 0.5})
    assert json.loads(path.read_text()) == {"settings": {"a": 1}, "x": 0.5}

    class Boom:
        pass
    with pytest.raises(TypeError):
        P.write_json(path, {"settings": Boom()})
    assert json.loads(path.read_text())["x"] == 0.5  # the old content survives a failed write
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary left behind
    assert P.load_json(path)["x"] == 0.5
    with pytest.raises(FileNotFoundError, match="no results file"):
        P.load_json(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="not a results JSON"):
        P.load_json(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="lacks"):
        P.load_json(path, required=("settings", "table"))


def test_check_recorded_and_numbers_differ():
    s = P.settings(BUDGETS, "full")
    record = {"settings": P.settings_dict(s), "table": []}
    P.check_recorded(record, s, required=("table",))
    with pytest.raises(AssertionError, match="settings.epochs"):
        P.check_recorded(record, P.settings(BUDGETS, "full", epochs=21))
    P.check_recorded(record, P.settings(BUDGETS, "full", epochs=21), allowed_changes={"epochs"})
    with pytest.raises(AssertionError, match="missing keys"):
        P.check_recorded(record, s, required=("ablation",))
    assert P.numbers_differ({"a": [1.0, float("nan")]}, {"a": [1.0 + 1e-9, float("nan")]},
                            rtol=1e-6) == []
    assert P.numbers_differ({"a": 1}, {"a": 2}) == [".a: 1 != 2"]
    assert P.numbers_differ({"a": True}, {"a": 1}) != []
    assert P.numbers_differ([1], [1, 2]) == [".: lengths 1 != 2"]


def test_plots_import_analysis_never_experiments():
    """plots → analysis is the only direction (no cycle with the experiments)."""
    root = Path(__file__).resolve().parents[2] / "eqlib"
    for folder in ("plots", "analysis"):
        for path in (root / folder).glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module:
                    assert "experiments" not in node.module, f"{path.name} imports {node.module}"


@pytest.mark.parametrize("module, loader", [("cifar_mlp", "load_data"), ("gcnn_barrier", "load_merge_data")])
def test_cli_checks_out_is_writable_before_any_work(module, loader, monkeypatch, tmp_path, capsys):
    """Every experiment's CLI fails at once on a bad --out, before its data is loaded."""
    experiment = importlib.import_module(f"eqlib.experiments.{module}")

    def no_work(*args, **kwargs):
        raise AssertionError("work started before --out was checked")
    monkeypatch.setattr(experiment, loader, no_work)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(SystemExit):
        experiment.main(["--out", str(blocker / "results"), "--device", "cpu"])
    assert "--out" in capsys.readouterr().err


@dataclass(frozen=True)
class Mixed:
    name: str
    config: tuple = (8, "M", 16, "M")
    scales: tuple[float, ...] = (0.5, 1.0)
    sizes: tuple[int, ...] = ()
    flags: tuple = (True, False)
    anything: tuple = ()


def test_parse_setting_types_tuple_elements_from_the_default():
    base = Mixed("laptop")
    assert P.parse_setting("config=64,M,128,M", base) == ("config", (64, "M", 128, "M"))
    assert P.parse_setting("config = 64, M ,-2", base) == ("config", (64, "M", -2))
    assert P.parse_setting("scales=1,0.25,1e-3", base) == ("scales", (1.0, 0.25, 1e-3))
    assert all(type(v) is float for v in P.parse_setting("scales=1,2", base)[1])
    # an empty default is typed by the annotation, an untyped one as ints where they parse
    assert P.parse_setting("sizes=3,4", base) == ("sizes", (3, 4))
    assert P.parse_setting("anything=3,x", base) == ("anything", (3, "x"))
    assert P.parse_setting("flags=true,FALSE", base) == ("flags", (True, False))
    assert P.parse_setting("sizes=", base) == ("sizes", ())
    # from the real experiment whose --set failed
    from eqlib.experiments import gcnn_barrier
    full = gcnn_barrier.BUDGETS["full"]
    key, value = P.parse_setting("config=64,M,128,M", full)
    assert value == (64, "M", 128, "M") and type(value[0]) is int
    bad = {"config=64,X": "'X' is not a int/str or one of \\['M'\\]",
           "config=64,,M": "empty element", "config=6.5,M": "'6.5'",
           "sizes=3,x": "'x' is not a int", "scales=1,a": "'a' is not a float",
           "flags=true,2": "'2' is not a bool"}
    for text, message in bad.items():
        with pytest.raises(ValueError, match=message) as info:
            P.parse_setting(text, base)
        assert repr(text.split("=", 1)[0]) in str(info.value)  # names the setting
    with pytest.raises(ValueError, match="cannot read '64,Q' as the tuple setting 'config'"):
        P.parse_setting("config=64,Q", full)
    with pytest.raises(ValueError, match="expected an integer"):
        P.parse_setting("epochs=2.5", BUDGETS["laptop"])


def test_every_recorded_json_is_strict():
    # strict parsers (RFC 8259) reject NaN/Infinity tokens; write_json notes them instead
    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")

    # the records ship inside the package (eqlib/recorded/); none is left in the book
    recorded = sorted((Path(__file__).resolve().parents[2] / "eqlib" / "recorded").glob("*.json"))
    assert recorded
    book = Path(__file__).resolve().parents[2] / "book"
    # (the widget assets' MANIFEST.json, fetched into book/_assets, is not a record)
    assert not sorted(p for p in book.rglob("*.json") if "_assets" not in p.parts)
    for path in recorded:
        json.loads(path.read_text(), parse_constant=refuse)
        P.load_json(path, required=())  # and reads back, the non-finite numbers restored
        P.load_recorded(path.name)  # through the one loader the chapters use
