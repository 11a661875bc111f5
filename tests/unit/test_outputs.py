"""Nothing lost at the end of an experiment (issue 21, item 10): strict JSON with the
non-finite numbers noted, outputs staged beside ``--out`` and moved in at once, target
names checked before any work, single-seed names carrying the seed, bounded ``--seeds``."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from eqlib.experiments import protocol as P


def _strict_loads(text: str):
    def refuse(token):
        raise ValueError(f"non-standard token {token}")
    return json.loads(text, parse_constant=refuse)


def test_written_json_is_strict_and_reads_back_exactly(tmp_path):
    """Recorded JSON held NaN tokens that strict parsers reject."""
    record = {"settings": {"n": 1}, "loss": [0.5, float("nan"), float("inf")],
              "nets": {"a/b": {"acc": -float("inf")}}, "ok": 1.5}
    path = P.write_json(tmp_path / "r.json", record)
    parsed = _strict_loads(path.read_text())
    assert parsed["loss"] == [0.5, None, None] and parsed["nets"]["a/b"]["acc"] is None
    assert parsed[P.NONFINITE_KEY] == {"/loss/1": "NaN", "/loss/2": "Infinity", "/nets/a~1b/acc": "-Infinity"}
    back = P.load_json(path)
    assert math.isnan(back["loss"][1]) and back["loss"][2] == math.inf and back["nets"]["a/b"]["acc"] == -math.inf
    assert P.NONFINITE_KEY not in back and back["ok"] == 1.5


def test_strict_json_refuses_what_it_cannot_note():
    with pytest.raises(ValueError, match="already has a key"):
        P.strict_json({P.NONFINITE_KEY: 1, "x": float("nan")})
    with pytest.raises(TypeError, match="/x/0"):
        P.strict_json({"x": [object()]})
    with pytest.raises(TypeError, match="key 1"):
        P.strict_json({1: 2})


def test_a_folder_in_the_way_of_the_json_loses_nothing(tmp_path):
    """``--out/<name>.json`` a directory: a traceback after all the work and no JSON."""
    (tmp_path / "out" / "r.json").mkdir(parents=True)
    with pytest.raises(OSError, match="saved instead at") as info:
        P.write_json(tmp_path / "out" / "r.json", {"settings": {}, "x": 1})
    rescued = Path(str(info.value).split("saved instead at ")[1].strip("'"))
    assert json.loads(rescued.read_text()) == {"settings": {}, "x": 1}


def test_parse_args_refuses_a_folder_where_an_output_goes_before_any_work(tmp_path):
    budgets = {"laptop": _S(), "full": _S(name="full")}
    parser = P.build_parser("python -m eqlib.experiments.demo", "demo")
    (tmp_path / "demo_laptop_seed3.json").mkdir()
    with pytest.raises(SystemExit):
        P.parse_args(parser, ["--out", str(tmp_path), "--seed", "3"], budgets)
    args = P.parse_args(parser, ["--out", str(tmp_path), "--seed", "4"], budgets)
    assert args.seed == 4
    (tmp_path / "x.png").mkdir()
    with pytest.raises(SystemExit):
        P.parse_args(parser, ["--out", str(tmp_path)], budgets, outputs=lambda a: ["x.png"])


def test_output_names_carry_the_seed():
    assert P.output_name("cifar_mlp", "laptop", 3) == "cifar_mlp_laptop_seed3.json"
    assert P.output_name("cifar_mlp", "laptop", 4, ".png") != P.output_name("cifar_mlp", "laptop", 3, ".png")
    assert P.output_name("cifar_mlp", "laptop") == "cifar_mlp_laptop.json"
    with pytest.raises(ValueError, match="seed"):
        P.output_name("x", "laptop", -1)
    with pytest.raises(ValueError, match="plain file name"):
        P.output_name("../x", "laptop", 1)


def test_staged_outputs_move_in_at_once(tmp_path):
    out = tmp_path / "out"
    with P.staged_outputs(out, ["r.json"]) as stage:
        assert stage.parent == tmp_path and stage != out
        (stage / "fig.png").write_bytes(b"png")
        P.write_json(stage / "r.json", {"x": 1})
        assert not (out / "fig.png").exists()  # nothing lands before the end
    assert sorted(p.name for p in out.iterdir()) == ["fig.png", "r.json"]
    assert not list(tmp_path.glob(".out.staging-*"))


def test_staged_outputs_check_targets_first_and_keep_everything_on_failure(tmp_path, monkeypatch):
    out = tmp_path / "out"
    (out / "r.json").mkdir(parents=True)
    with pytest.raises(ValueError, match="not a regular file"):
        with P.staged_outputs(out, ["r.json"]):
            raise AssertionError("no work may start")
    # a figure name not known in advance meets a folder: nothing is moved, all is kept
    (out / "late.png").mkdir()
    with pytest.raises(ValueError, match="kept in"):
        with P.staged_outputs(out, []) as stage:
            (stage / "late.png").write_bytes(b"png")
            (stage / "ok.json").write_text("{}")
    assert not (out / "ok.json").exists() and (stage / "late.png").is_file()
    # the folder turns unwritable at the end: the error names where the outputs are
    calls = []
    real = os.replace

    def failing(a, b):
        calls.append(a)
        if len(calls) == 2:
            raise OSError(30, "Read-only file system")
        return real(a, b)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OSError, match="kept in") as info:
        with P.staged_outputs(tmp_path / "out2") as stage2:
            (stage2 / "a.png").write_bytes(b"a")
            (stage2 / "b.json").write_text("{}")
    assert (stage2 / "b.json").is_file() and str(stage2) in str(info.value)
    # the block itself fails: what it wrote is kept and named
    monkeypatch.setattr(os, "replace", real)
    with pytest.raises(KeyError) as info:
        with P.staged_outputs(tmp_path / "out3") as stage3:
            (stage3 / "half.png").write_bytes(b"a")
            raise KeyError("boom")
    assert (stage3 / "half.png").is_file() and any(str(stage3) in n for n in info.value.__notes__)


@pytest.mark.parametrize("text, match", [
    ("0-1000000000000", "more than"), ("18446744073709551616", "<= "), ("1" * 40, "cannot read"),
    (",".join(map(str, range(1001))), "more than")], ids=["huge-range", "2**64", "40-digits", "1001-seeds"])
def test_parse_seeds_is_bounded(text, match):
    """``--seeds 0-1000000000000`` built the whole list; seeds >= 2**64 overflowed deep inside."""
    with pytest.raises(ValueError, match=match):
        P.parse_seeds(text)


def test_parse_args_refuses_a_huge_seed(tmp_path):
    budgets = {"laptop": _S(), "full": _S(name="full")}
    parser = P.build_parser("python -m eqlib.experiments.demo", "demo")
    with pytest.raises(SystemExit):
        P.parse_args(parser, ["--out", str(tmp_path), "--seed", str(2**64)], budgets)


from dataclasses import dataclass  # noqa: E402


@dataclass(frozen=True)
class _S:
    name: str = "laptop"
    epochs: int = 1
