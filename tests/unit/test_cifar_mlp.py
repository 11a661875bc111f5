"""Tests of eqlib.experiments.cifar_mlp on synthetic data (no CIFAR-10 needed)."""
from __future__ import annotations

import dataclasses

import pytest
import torch

import numpy as np

from eqlib import analysis as A
from eqlib.data import CIFAR10, subset
from eqlib.experiments import cifar_mlp as E
from eqlib.experiments import protocol
from eqlib.images import mirror_images, prepare_images


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path / "cache"))


def _fake(n, seed=0, split="train"):
    g = torch.Generator().manual_seed(seed)
    return CIFAR10(torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=g),
                   torch.arange(n) % 10, split=split)


TINY = dataclasses.replace(E.BUDGET_SETTINGS["laptop"], n_train=64, n_test=40, hidden=(12, 8, 8),
                           train=E.BUDGET_SETTINGS["laptop"].train.replace(epochs=2, batch_size=32), noise_samples=200, cov_images=50, ablation_n_train=48, ablation_epochs=2,
                           attention_epochs=1, attention_heads=2, attention_patch=8)


def test_build_mlp_shapes_and_errors():
    ae = E.build_mlp("tanh", "autoencode", (16, 8, 8))
    clf = E.build_mlp("gelu", "classify", (16, 8, 8))
    assert ae.widths == [3072, 16, 8, 8, 3072] and clf.widths == [3072, 16, 8, 8, 10]
    assert ae.activations == ["tanh", "gelu", "gelu", "identity"]
    assert ae(torch.zeros(2, 3, 32, 32)).shape == (2, 3072)
    big = E.build_mlp("tanh", "classify", (16, 8, 8), first_init_scale=1.0)
    small = E.build_mlp("tanh", "classify", (16, 8, 8), first_init_scale=0.1)
    torch.testing.assert_close(small.layers[0].weight, 0.1 * big.layers[0].weight)
    with pytest.raises(ValueError, match="activation"):
        E.build_mlp("relu", "classify")
    with pytest.raises(ValueError, match="three"):
        E.build_mlp("tanh", "classify", (8, 8))


def _planted_filters(seed=0):
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(4, 3072, generator=g)
    sym = v[0] + mirror_images(v[0:1])[0]
    anti = v[1] - mirror_images(v[1:2])[0]
    pair = [v[2], mirror_images(v[2:3])[0]]
    neg = [v[3], -mirror_images(v[3:4])[0]]
    rand = torch.randn(2, 3072, generator=g)
    return torch.stack([sym, anti, *pair, *neg, *rand])


def test_filter_pairing_classifies_planted_filters():
    p = A.filter_pairing(_planted_filters())
    names = [A.CATEGORIES[c] for c in p.category]
    assert names[:6] == ["symmetric", "antisymmetric", "mirrored pair", "mirrored pair", "negated mirrored pair",
                         "negated mirrored pair"]
    assert names[6:] == ["unmatched", "unmatched"]
    assert p.perm[2] == 3 and p.perm[3] == 2 and p.signs[4] == -1
    assert p.counts() == {"symmetric": 1, "antisymmetric": 1, "mirrored pair": 2, "negated mirrored pair": 2,
                          "unmatched": 2}
    assert p.matched_fraction == pytest.approx(0.75)
    with pytest.raises(ValueError):
        A.filter_pairing(torch.zeros(3, 10))


def _near_copies(seed, n=8, noise=0.4):
    """n filters = one mirror-symmetric filter plus independent noise (near-parallel)."""
    g = torch.Generator().manual_seed(seed)
    u = torch.randn(3072, generator=g, dtype=torch.float64)
    s = u + mirror_images(u[None])[0]
    return s + noise * s.norm() / 3072 ** 0.5 * torch.randn(n, 3072, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("seed", range(6))
def test_filter_pairing_near_copies_of_a_symmetric_filter_are_not_pairs(seed):
    """Counterexample to the rule "paired whenever perm[j] != j": near-copies of one
    symmetric filter have no mirrored partners, yet the one-to-one assignment matches most
    of them to other copies (seed 0: along a 5-cycle; seeds 1-5: along 2-cycles)."""
    p = A.filter_pairing(_near_copies(seed))
    n = len(p.perm)
    old_pairs = int(((p.perm != np.arange(n)) & (p.similarity >= p.threshold)).sum())
    assert old_pairs >= 4                      # the old rule called these "mirrored pairs"
    c = p.counts()
    assert c["mirrored pair"] == c["negated mirrored pair"] == 0
    assert c["symmetric"] + c["unmatched"] == n
    assert sum(p.rejected_counts().values()) == old_pairs
    assert (p.self_similarity >= p.threshold).all()
    if seed == 0:                              # the non-involutive case: a 5-cycle
        assert p.rejected_counts() == {"non-reciprocal": 5, "self-symmetric pair": 0}
        assert sorted(np.flatnonzero(p.non_reciprocal).tolist()) == [0, 1, 2, 3, 7]
    else:                                      # reciprocal but ambiguous 2-cycles
        assert p.rejected_counts()["self-symmetric pair"] >= 4


def test_filter_pairing_pairs_are_two_cycles_of_one_signed_involution():
    """Every categorised filter is consistent with one signed permutation k, k^2 = I."""
    for W in (_planted_filters(), _near_copies(0), _near_copies(3, n=64, noise=0.45),
              torch.randn(32, 3072, generator=torch.Generator().manual_seed(1))):
        p = A.filter_pairing(W)
        for j in np.flatnonzero(np.isin(p.category, A.PAIRED)):
            k = p.perm[j]
            assert k != j and p.perm[k] == j and p.signs[k] == p.signs[j]
            assert p.category[k] == p.category[j]
            assert p.self_similarity[j] < p.threshold and p.self_similarity[k] < p.threshold
    planted = A.filter_pairing(_planted_filters())
    assert planted.rejected_counts() == {"non-reciprocal": 0, "self-symmetric pair": 0}


def _mirror_closed_mlp(task="classify"):
    """An MLP whose first-layer filters come in mirror pairs (equal biases): f_1 is exactly
    horizontally equivariant (f_1(m y) = P f_1(y)), not vertically."""
    net = E.build_mlp("tanh", task, (16, 8, 8), first_init_scale=1.0)
    with torch.no_grad():
        W = net.layers[0].weight
        W[8:] = mirror_images(W[:8].clone())
        net.layers[0].bias[8:] = net.layers[0].bias[:8].clone()
    return net


def test_equivariance_table_finds_a_planted_action_and_the_control():
    tr, te = _fake(64), _fake(40, 1, "test")
    net = _mirror_closed_mlp()
    rows = A.equivariance_table({"tanh-classifier": net}, TINY, tr, te, layers=(1,))
    for probe in A.PROBES:
        assert A.table_lookup(rows, "tanh-classifier", 1, "horizontal", probe=probe) < 1e-4
        assert A.table_lookup(rows, "tanh-classifier", 1, "vertical", probe=probe) > 0.05
    assert {r["n_test"] for r in rows if r["probe"] == "noise"} == {100}
    assert next(r for r in rows if r["probe"] == "noise" and r["mirror"] == "horizontal")["paper"] == 0.077
    with pytest.raises(KeyError):
        A.table_lookup(rows, "tanh-classifier", 2, "horizontal")


def test_probe_inputs():
    tr, te = _fake(64), _fake(40, 1, "test")
    assert A.probe_inputs("noise", 10, tr, te, s=TINY).shape == (10, 3072)
    assert A.probe_inputs("images", 40, tr, te, s=TINY).shape == (40, 3072)
    y = A.probe_inputs("image_cov", 4000, tr, te, s=TINY)
    x = prepare_images(tr.images[:TINY.cov_images]).flatten(1)
    torch.testing.assert_close(y.mean(0)[:50], x.mean(0)[:50], atol=0.1, rtol=0)
    torch.testing.assert_close(y.var(0)[:50], x.var(0, correction=0)[:50], atol=0.2, rtol=0.1)
    with pytest.raises(ValueError):
        A.probe_inputs("images", 41, tr, te, s=TINY)
    with pytest.raises(ValueError):
        A.probe_inputs("uniform", 5, tr, te, s=TINY)


def test_end_to_end_error():
    x = _fake(8).images
    flat_id = torch.nn.Flatten()
    assert A.end_to_end_error(torch.nn.Sequential(flat_id, torch.nn.Linear(3072, 3072)), x, "autoencode") > 0.1

    class Id(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(()))

        def forward(self, x):
            return self.w * x.flatten(1)

    assert A.end_to_end_error(Id(), x, "autoencode") < 1e-6


def test_training_ablation_emergence_and_attention_on_tiny_data():
    tr, te = _fake(64), _fake(40, 1, "test")
    res = E.train_networks(TINY, tr, te, progress=False, names=["tanh-autoencoder", "gelu-classifier"])
    assert set(res) == {"tanh-autoencoder", "gelu-classifier"}
    clf = res["gelu-classifier"]
    with torch.no_grad():  # the recorded test accuracy, recomputed from the returned model
        pred = clf.model.eval()(prepare_images(te.images)).argmax(1)
    assert clf.history["test_accuracy"][-1] == pytest.approx(float((pred == te.labels).float().mean()))
    assert len(clf.history["test_accuracy"]) == TINY.train.epochs
    again = E.train_networks(TINY, tr, te, progress=False, names=["tanh-autoencoder"])
    assert again["tanh-autoencoder"].from_cache
    rows = E.ablation(TINY, tr, te, variants={"base": {}, "no penalty": {"train.penalty_weight": 0.0}}, progress=False,
                      probe_samples=100)
    assert [r["variant"] for r in rows] == ["base", "no penalty"]
    assert {r["network"] for r in rows} == {"tanh-autoencoder"}
    seen = []
    clf = E.ablation(dataclasses.replace(TINY, ablation_variants=("no penalty",)), tr, te, network="gelu-classifier",
                     progress=False, probe_samples=100, on_row=seen.append)
    assert seen == clf and clf[0]["network"] == "gelu-classifier"
    with pytest.raises(ValueError, match="unknown ablation variants"):
        E.ablation(dataclasses.replace(TINY, ablation_variants=("base", "typo")), tr, te, progress=False)
    with pytest.raises(ValueError, match="unknown network"):
        E.ablation(TINY, tr, te, network="relu-classifier", progress=False)
    # the base row, recomputed from the same (cached) network at the ablation scale
    tr_ab = subset(tr, TINY.ablation_n_train, seed=0)
    s_ab = dataclasses.replace(TINY, n_train=len(tr_ab),
                               train=TINY.train.replace(epochs=TINY.ablation_epochs, snapshot_every=0))
    base = E.train_networks(s_ab, tr_ab, None, progress=False, names=["tanh-autoencoder"])
    base = base["tanh-autoencoder"]
    assert base.from_cache  # the ablation trained exactly this network
    assert rows[0]["matched_filters"] == A.filter_pairing(base.model.layers[0].weight).matched_fraction
    assert rows[0]["task_loss"] == base.history["task_loss"][-1]
    assert rows[0]["end_to_end"] == pytest.approx(A.end_to_end_error(base.model, te.images[:1000],
                                                                     "autoencode"))
    assert rows[1]["changes"] == {"train.penalty_weight": 0.0} and rows[0]["changes"] == {}
    with pytest.raises(ValueError, match="unknown ablation"):
        E.ablation(TINY, tr, te, variants={"x": {"nonsense": 1}}, progress=False)
    build = lambda: E.build_mlp("tanh", "autoencode", TINY.hidden, first_init_scale=TINY.first_init_scale)  # noqa
    em = E.emergence(res["tanh-autoencoder"], build, te, samples=40)
    assert [p["epoch"] for p in em] == [0, 1, 2]
    s4 = dataclasses.replace(TINY, attention_heads=4)
    att = E.attention_experiment(s4, tr, te, progress=False)
    tau = np.array(att["head_perm"])
    assert att["swapped_heads"] == [h for h in range(4) if tau[h] != h]
    # relabel the heads by σ (the same function): the recovered τ must be conjugated,
    # τ' = σ⁻¹ ∘ τ ∘ σ, which an answer unrelated to the parameters would not be
    from eqlib.latent.attention import recover_attention_action
    layer = att["model"].attention.layers[0]
    sigma = np.array([1, 2, 3, 0])
    x = att["model"].tokens(prepare_images(te.images[:256]))
    with torch.no_grad():
        before = att["model"].attention(x)
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            getattr(layer, name).copy_(getattr(layer, name)[torch.as_tensor(sigma)])
        torch.testing.assert_close(att["model"].attention(x), before, rtol=1e-4, atol=1e-5)
    again = recover_attention_action(att["model"].attention, att["action"], x)
    assert again.head_perm["m"].tolist() == np.argsort(sigma)[tau[sigma]].tolist()
    assert att["output_residual"] == pytest.approx(again.output_residual["m"], rel=1e-4, abs=1e-6)


def test_settings_and_cli_parser(monkeypatch):
    monkeypatch.delenv("EQLIB_BUDGET", raising=False)
    assert E.settings().name == "laptop"  # the default fits a laptop
    monkeypatch.setenv("EQLIB_BUDGET", "full")
    assert E.settings().name == "full"
    monkeypatch.setenv("EQLIB_BUDGET", "ci")
    with pytest.warns(DeprecationWarning, match="laptop"):
        assert E.settings().name == "laptop"  # the old name, still accepted
    assert E.settings("full").n_train == 50_000
    assert E.settings("laptop", **{"train.epochs": 3}).train.epochs == 3
    with pytest.raises(ValueError):
        E.settings("huge")
    with pytest.raises(SystemExit):
        E.main(["--budget", "huge"])
    with pytest.raises(ValueError, match="unknown settings"):
        E.settings("laptop", epoch=3)
    # --set KEY=VALUE, typed like the field
    assert E.parse_setting("train.epochs=40") == ("train.epochs", 40)
    assert E.parse_setting("hidden=1024,512,512") == ("hidden", (1024, 512, 512))
    assert E.parse_setting("train.weight_decay=0") == ("train.weight_decay", 0.0)
    assert E.parse_setting("train.augment_mirror=false") == ("train.augment_mirror", False)
    assert E.parse_setting("train.first_weight_decay=5") == ("train.first_weight_decay", 5.0)  # float | None
    with pytest.raises(ValueError, match="train.lr"):  # an unknown key names the valid ones
        E.parse_setting("lr=0.1")
    assert E.parse_setting("ablation_networks=tanh-autoencoder,gelu-classifier") == (
        "ablation_networks", ("tanh-autoencoder", "gelu-classifier"))
    for bad in ("train.epochs", "epochs=3", "train.epochs=many", "name=full", "train.augment_mirror=maybe",
                "train=3", "train.name=x"):
        with pytest.raises(ValueError):
            E.parse_setting(bad)
    with pytest.raises(SystemExit):
        E.main(["--budget", "laptop", "--set", "train.epochs=many"])
    assert set(E.BUDGET_SETTINGS["full"].ablation_variants) <= set(E.ABLATION_VARIANTS)


def test_run_checks_out_is_writable_before_any_work(tmp_path):
    """run() refuses a bad out at once (the CLI's check: test_protocol.py)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(ValueError, match="not a writable folder"):
        E.run("laptop", out=blocker / "results")


def test_recorded_full_run_matches_the_full_budget():
    """Chapter 11 shows a recorded full-budget run; changing the full budget means recording it again
    (bash benchmarks/gpu_check.sh)."""
    record = protocol.load_recorded("cifar_mlp_full.json")
    protocol.check_recorded(record, E.settings("full"), required=("table", "networks", "attention"))
    assert {r["network"] for r in record["table"]} == set(A.NETWORKS)
    explore = protocol.load_recorded("cifar_mlp_full_explore.json")
    protocol.check_recorded(explore, E.settings("full"), allowed_changes={
        "ablation_n_train", "ablation_epochs", "ablation_networks", "ablation_variants"})
    with pytest.raises(AssertionError, match="record it again"):  # the check can fail
        protocol.check_recorded(record, E.settings("full", **{"train.epochs": 16}))
    assert [r["variant"] for r in explore["ablation"]] == [
        v for _ in explore["settings"]["ablation_networks"] for v in explore["settings"]["ablation_variants"]]


def test_recorded_laptop_seeds_match_the_laptop_budget():
    """Chapter 11 asserts its laptop claims on every seed of this record; changing the laptop
    budget means recording it again (python -m eqlib.experiments.cifar_mlp --seeds 0,1,2)."""
    record = protocol.load_recorded("cifar_mlp_laptop_seeds.json")
    protocol.check_recorded(record, E.settings("laptop"), required=("runs", "spread", "chapter_extras"))
    assert sorted(record["seeds"]) == [0, 1, 2] and len(record["runs"]) == 3
    with pytest.raises(AssertionError, match="record it again"):
        protocol.check_recorded(record, E.settings("laptop", **{"train.epochs": 99}))


def test_load_results_errors_and_text_tables(tmp_path):
    with pytest.raises(FileNotFoundError, match="no results file"):
        E.load_results(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a results JSON"):
        E.load_results(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text('{"a": 1}')
    with pytest.raises(ValueError, match="lacks"):
        E.load_results(tmp_path / "other.json")
    record = protocol.load_recorded("cifar_mlp_full.json")
    text = A.table_text(record["table"])
    assert len(text.splitlines()) == 1 + 4 * 2 * 2 and "f2∘f1" in text and "0.029" in text
    assert "network" in A.ablation_text(protocol.load_recorded("cifar_mlp_full_explore.json")["ablation"])


def test_command_line_end_to_end_on_tiny_data(tmp_path, monkeypatch, capsys):
    """The whole run (every part, tiny networks on synthetic images) through the CLI: a
    summary table at the end, the seed-named JSON and figures moved into --out."""
    monkeypatch.setattr(E, "load_data", lambda s, root=None, seed=0, download=None: (_fake(64), _fake(40, 1, "test")))
    sets = ["n_train=64", "n_test=40", "hidden=12,8,8", "train.epochs=2", "train.batch_size=32", "noise_samples=200",
            "cov_samples=200", "cov_images=50", "ablation_n_train=48", "ablation_epochs=2", "attention_epochs=1",
            "attention_heads=2", "attention_patch=8", "ablation_variants=base"]
    out = tmp_path / "out"
    summary = E.main(["--device", "cpu", "--no-progress", "--seed", "2", "--out", str(out)]
                     + [a for kv in sets for a in ("--set", kv)])
    text = capsys.readouterr().out
    assert "budget laptop, seed 2" in text and "tanh-classifier" in text and '"networks"' not in text
    names = {p.name for p in out.iterdir()}
    assert set(E.output_names("laptop", 2).values()) == names
    record = E.load_results(out / "cifar_mlp_laptop_seed2.json")
    assert record["seed"] == 2 and record["settings"]["hidden"] == [12, 8, 8]
    assert summary["networks"].keys() == record["networks"].keys()
