"""The experiments' settings nest one ``TrainConfig``; every training configuration they
produce is pinned to the one the flat settings produced before (the model cache is keyed
on it, so a change would retrain, or fail to resume, every cached network), and settings
recorded flat by older code still check against the nested budgets."""
from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from eqlib.experiments import cifar_parts as cp
from eqlib.experiments import cifar_setup as cs
from eqlib.experiments import filter_search as fs
from eqlib.experiments import gcnn_barrier as gb
from eqlib.experiments import protocol
from eqlib.train import TrainConfig

#: sha256 (first 16 hex digits) of ``dataclasses.asdict`` of every configuration, computed
#: with the flat settings of commit 82f7a02 (before the nesting); changed on purpose since:
#: ``gcnn|medium|invariance|*`` (the medium budget's invariance-loss weight, 10 -> 1; then
#: its invariance networks' epochs, 15 -> 25)
PINNED = json.loads((Path(__file__).parent / "experiment_train_configs.json").read_text(encoding="utf-8"))

#: ``settings`` of a medium record made by the code before the nesting (flat)
OLD_MEDIUM = {
    "config": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"], "widths": [0.125],
    "variants": ["plain", "mirror", "invariance", "gcnn"], "extra_variants": [], "networks": 3, "n_train": 50000,
    "n_match": 2500, "n_test": 10000, "epochs": 15, "batch_size": 500, "lr": 0.08, "optimizer": "sgd",
    "momentum": 0.9, "weight_decay": 0.0005, "schedule": "warmup_linear", "penalty_weight": 10.0,
    "penalty_start": 0.5, "fixed_fraction": 0.25,
    "alphas": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0], "seeds": [], "amp": "none",
    "channels_last": False, "augment_crop": 4}


#: TrainConfig fields added after the pins, left out at their default 0 (as ``to_dict`` does)
NEW_FIELDS = ("noise_subspace",)


def _hash(cfg: TrainConfig) -> str:
    fields = {k: v for k, v in dataclasses.asdict(cfg).items() if not (k in NEW_FIELDS and v == 0)}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


def _configs() -> dict[str, TrainConfig]:
    out = {}
    for bn, b in gb.BUDGETS.items():
        for v in gb.VARIANTS:
            for seed in (0, 1, 2, 7):
                out[f"gcnn|{bn}|{v}|{seed}"] = gb.train_config(v, seed, b)
    for bn in cs.BUDGETS:
        s = cs.settings(bn)
        for task in ("classify", "autoencode"):
            for seed in (0, 1, 2):
                out[f"cifar|{bn}|{task}|{seed}"] = cs.train_config(task, s, seed=seed)
        for seed in (0, 3):
            out[f"attention|{bn}|{seed}"] = cp.attention_config(s, seed)
        for label, change in cp.ABLATION_VARIANTS.items():
            out[f"ablation|{bn}|{label}"] = cs.train_config("autoencode", cp.ablation_settings(s, change, 1234), seed=0)
    for bn in fs.BUDGETS:
        for v, change in fs.SEARCH_VARIANTS.items():
            s = protocol.replace_settings(fs.settings(bn), change)
            for seed in (0, 1, 2):
                out[f"search|{bn}|{v}|{seed}"] = fs.search_config(s, seed)
    return out


def test_every_training_configuration_is_the_one_before_the_nesting():
    got = {k: _hash(c) for k, c in _configs().items()}
    assert set(got) == set(PINNED)  # every budget, variant and seed, and no other
    assert [k for k in PINNED if got[k] != PINNED[k]] == []


def test_settings_nest_one_train_config_and_redeclare_none_of_its_fields():
    train_fields = {f.name for f in dataclasses.fields(TrainConfig)}
    for settings_type in (gb.BarrierBudget, gb.CropBudget, cs.Settings, fs.SearchSettings):
        fields = {f.name: f for f in dataclasses.fields(settings_type)}
        assert isinstance(fields["train"].default, TrainConfig), settings_type
        assert set(fields) & train_fields == set(), settings_type


def test_dotted_keys_reach_the_training_with_type_checks_and_clear_errors():
    b = gb.BUDGETS["laptop"]
    assert protocol.parse_setting("train.lr=0.01", b) == ("train.lr", 0.01)
    assert protocol.parse_setting("train.augment_mirror=true", b) == ("train.augment_mirror", True)
    assert protocol.settings(gb.BUDGETS, "laptop", **{"train.epochs": 2}).train.epochs == 2
    assert "train.epochs" in protocol.setting_keys(b) and "train" not in protocol.setting_keys(b)
    with pytest.raises(ValueError, match=r"train\.epochs.*'train\.lr'|settings are .*train\.lr"):
        protocol.parse_setting("epochs=2", b)  # the old flat key: the message lists the valid ones
    with pytest.raises(ValueError, match="train.epochs"):
        protocol.parse_setting("train.epochs=two", b)
    with pytest.raises(ValueError, match="unknown settings"):
        protocol.settings(gb.BUDGETS, "laptop", **{"train.colour": 1})
    with pytest.raises(ValueError, match="unknown settings"):
        protocol.replace_settings(b, {"train": TrainConfig()})  # a nested block changes key by key
    with pytest.raises(ValueError, match="lr"):  # the nested dataclass checks its own values
        protocol.replace_settings(b, {"train.lr": -1.0})


def test_flat_legacy_settings_check_against_the_nested_budgets():
    laptop = protocol.load_recorded("gcnn_barrier_laptop.json")
    flat = laptop.get("settings", laptop["budget"])
    assert "epochs" in flat and "train" not in flat  # recorded flat, by the old code
    nested = protocol.legacy_settings(flat, gb.BUDGETS["laptop"])
    assert nested["train"]["epochs"] == flat["epochs"] and nested["train"]["lr"] == flat["lr"]
    assert "epochs" not in nested and nested["widths"] == flat["widths"]
    protocol.check_recorded({"settings": flat}, gb.replace(gb.BUDGETS["laptop"], seeds=(3, 4, 5)))
    with pytest.raises(AssertionError, match=r"settings\.train\.lr"):
        protocol.check_recorded({"settings": {**flat, "lr": 0.5}}, gb.replace(gb.BUDGETS["laptop"], seeds=(3, 4, 5)))
    with pytest.raises(AssertionError, match="colour"):  # a key found nowhere is reported
        protocol.check_recorded({"settings": {**flat, "colour": 1}}, gb.replace(gb.BUDGETS["laptop"], seeds=(3, 4, 5)))
    # a medium record of the old code (flat, augment_crop at the top, invariance-loss weight 10)
    # checks against the budget it was made with, and names the weight against today's
    old_medium = gb.replace(gb.BUDGETS["medium"], train=gb.BUDGETS["medium"].train.replace(penalty_weight=10.0),
                            invariance_epochs=0)
    protocol.check_recorded({"settings": OLD_MEDIUM}, old_medium)
    with pytest.raises(AssertionError, match=r"settings\.train\.penalty_weight: 10\.0 != 1\.0"):
        protocol.check_recorded({"settings": OLD_MEDIUM}, gb.BUDGETS["medium"])
    assert protocol.legacy_settings(OLD_MEDIUM, old_medium)["train"]["augment_crop"] == 4
    with pytest.raises(AssertionError, match="augment_crop"):
        protocol.check_recorded({"settings": {**OLD_MEDIUM, "augment_crop": 0}}, old_medium)
    # a new, nested record checks as it is; allowed changes take dotted keys
    record = {"settings": protocol.settings_dict(protocol.replace_settings(gb.BUDGETS["medium"], {"train.epochs": 9}))}
    protocol.check_recorded(record, gb.BUDGETS["medium"], allowed_changes={"train.epochs"})
    with pytest.raises(AssertionError, match="train.epochs"):
        protocol.check_recorded(record, gb.BUDGETS["medium"])


def test_every_experiment_is_an_experiment_with_a_one_line_main():
    import inspect

    from eqlib.experiments import cifar_mlp, pairing_hypotheses
    for module in (gb, cifar_mlp, fs, pairing_hypotheses):
        assert isinstance(module.EXPERIMENT, protocol.Experiment)
        body = [line for line in inspect.getsource(module.main).split('"""')[-1].splitlines() if line.strip()]
        assert body == ["    return protocol.main(EXPERIMENT, argv)"], module.__name__
    with pytest.raises(TypeError, match="Experiment protocol"):
        protocol.main(object(), [])
