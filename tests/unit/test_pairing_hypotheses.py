"""Chapter 11's hypothesis experiments (``eqlib.experiments.pairing_hypotheses``): the planted
paired layer is exactly equivariant, the localisation measure on hand-made filters, the
noise penalty in the data subspace, the verdicts on made-up numbers, and a tiny run on
synthetic images."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from torch import nn

from eqlib import images
from eqlib.analysis import filter_localisation, filter_pairing, involutive_matching, paired_projection
from eqlib.data import CIFAR10
from eqlib.experiments import filter_search as FS
from eqlib.experiments import pairing_hypotheses as H
from eqlib.experiments import protocol
from eqlib.train import TrainConfig, train
from eqlib.train.steps import _noise, _noise_basis


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _mirror_matrix(shape):
    """The pixel mirror as an explicit permutation matrix (built from indices, not from
    ``eqlib.images``): column index (c, y, x) goes to (c, y, W-1-x)."""
    c, h, w = shape
    idx = np.arange(c * h * w).reshape(c, h, w)
    M = torch.zeros(c * h * w, c * h * w, dtype=torch.float64)
    M[idx.ravel(), idx[:, :, ::-1].ravel()] = 1.0
    return M


# ---------------------------------------------------------------------------------- planted layer

@pytest.mark.parametrize("seed,n,shape", [(0, 1, (3, 4, 4)), (1, 2, (3, 4, 4)), (2, 7, (3, 4, 6)),
                                          (3, 40, (3, 32, 32)), (4, 64, (1, 5, 5))])
def test_planted_layer_is_exactly_equivariant(seed, n, shape):
    d = int(np.prod(shape))
    W = torch.randn(n, d, generator=_gen(seed), dtype=torch.float64)
    b = torch.randn(n, generator=_gen(seed + 100), dtype=torch.float64)
    layer = paired_projection(W, b, shape=shape)
    M, P = _mirror_matrix(shape), layer.matrix()
    Wp, bp = layer.weight, layer.bias
    # W' M = P_s W' and b' = P_s b', exactly (the rows of W' M are the mirrored filters)
    assert torch.equal(Wp @ M, P @ Wp) and torch.equal(bp, P @ bp)
    # P_s is an involutive signed permutation: signs equal on each 2-cycle
    assert torch.equal(P @ P, torch.eye(n, dtype=torch.float64))
    perm, signs = layer.perm, layer.signs
    assert (perm[perm] == np.arange(n)).all() and (signs[perm] == signs).all()
    # the projection is the group average (W + P_s W M)/2 for the chosen k: orthogonal,
    # idempotent
    assert torch.allclose(Wp, (W + P @ W @ M) / 2, atol=1e-12)
    assert torch.allclose(bp, (b + P @ b) / 2, atol=1e-12)
    assert abs(float(((W - Wp) * Wp).sum())) < 1e-9 * float(W.pow(2).sum())
    # the layer: tanh(W' m(x) + b') = P_s tanh(W' x + b') (Tanh is odd)
    x = torch.randn(5, d, generator=_gen(seed + 200), dtype=torch.float64)
    assert torch.allclose(torch.tanh(x @ M.T @ Wp.T + bp), torch.tanh(x @ Wp.T + bp) @ P.T, atol=1e-12)
    assert sum(layer.kinds().values()) == n


def test_planted_layer_has_every_kind_and_keeps_an_exact_action():
    """Over a few random layers the projection yields all four kinds; planting from a layer
    that already carries an involutive signed permutation returns it unchanged."""
    seen = {k: 0 for k in ("symmetric", "antisymmetric", "mirrored pair", "negated mirrored pair")}
    for seed in range(6):
        layer = paired_projection(torch.randn(24, 3072, generator=_gen(seed)))
        for k, v in layer.kinds().items():
            seen[k] += v
        assert torch.equal(images.mirror_images(layer.weight), layer.matrix() @ layer.weight)
    assert all(v > 0 for v in seen.values()), seen
    # an exact action: symmetric, antisymmetric, mirrored pair, negated pair
    u = torch.randn(4, 3072, generator=_gen(9), dtype=torch.float64)
    m = images.mirror_images
    W = torch.stack([u[0] + m(u[0:1])[0], u[1] - m(u[1:2])[0], u[2], m(u[2:3])[0], u[3], -m(u[3:4])[0]])
    b = torch.tensor([0.3, 0.0, 0.2, 0.2, 0.5, -0.5], dtype=torch.float64)
    layer = paired_projection(W, b)
    assert layer.perm.tolist() == [0, 1, 3, 2, 5, 4] and layer.signs.tolist() == [1, -1, 1, 1, -1, -1]
    assert torch.allclose(layer.weight, W, atol=1e-12) and torch.allclose(layer.bias, b, atol=1e-12)
    kinds = filter_pairing(layer.weight).counts()
    assert kinds == {"symmetric": 1, "antisymmetric": 1, "mirrored pair": 2, "negated mirrored pair": 2,
                     "unmatched": 0}


def test_involutive_matching_against_brute_force():
    exact = 0
    for seed in range(30):
        n = 3 + seed % 4
        A = torch.rand(n, n, generator=_gen(seed), dtype=torch.float64)
        S = A + A.T
        sigma = involutive_matching(S)
        assert (sigma[sigma] == np.arange(n)).all()
        value = float(S[np.arange(n), sigma].sum())
        best = max(float(S[np.arange(n), list(p)].sum()) for p in itertools.permutations(range(n))
                   if all(p[p[i]] == i for i in range(n)))
        assert value <= best + 1e-12
        # a maximum whenever the assignment had no odd cycle of length >= 3
        from eqlib.symmetries import best_assignment
        perm = best_assignment(S).numpy()
        lengths, seen = [], set()
        for i in range(n):
            j, L = i, 0
            while j not in seen:
                seen.add(j)
                j, L = perm[j], L + 1
            lengths.append(L)
        if not any(L >= 3 and L % 2 for L in lengths):
            assert value == pytest.approx(best, abs=1e-12)
            exact += 1
    assert exact >= 10
    with pytest.raises(ValueError, match="symmetric"):
        involutive_matching(torch.tensor([[0.0, 1.0], [0.0, 0.0]]))


def test_paired_projection_bad_inputs():
    with pytest.raises(ValueError, match="shape"):
        paired_projection(torch.zeros(3, 100))
    with pytest.raises(ValueError, match="bias"):
        paired_projection(torch.zeros(3, 3072), torch.zeros(4))
    with pytest.raises(TypeError):
        paired_projection(np.zeros((3, 3072)))


# ---------------------------------------------------------------------------------- localisation

def test_localisation_on_hand_made_filters():
    def img(fill):
        w = torch.zeros(3, 32, 32)
        fill(w)
        return w.flatten()[None]

    delta = img(lambda w: w[1, 10, 20].fill_(-2.0))
    corner = img(lambda w: w[0, 0, 31].fill_(1.0))
    flat = torch.ones(1, 3072)
    block = img(lambda w: w[:, 3:10, 12:19].normal_(generator=_gen(0)))
    two = img(lambda w: (w[0, 2, 2].fill_(1.0), w[2, 25, 25].fill_(1.0)))
    colours = img(lambda w: (w[0, 5, 5].fill_(1.0), w[1, 5, 6].fill_(1.0), w[2, 6, 5].fill_(1.0)))
    scores = filter_localisation(torch.cat([delta, corner, flat, block, two, colours, torch.zeros(1, 3072)]))
    assert scores[0] == 1.0 and scores[1] == 1.0
    assert scores[2] == 49 / 1024
    assert scores[3] == pytest.approx(1.0) and scores[4] == 0.5 and scores[5] == pytest.approx(1.0)
    assert scores[6] == 0.0
    assert filter_localisation(flat, window=1)[0] == 1 / 1024
    assert filter_localisation(flat, window=32)[0] == 1.0
    with pytest.raises(ValueError):
        filter_localisation(flat, window=33)
    with pytest.raises(ValueError, match="shape"):
        filter_localisation(torch.ones(2, 100))


# ---------------------------------------------------------------------------------- subspace noise

def test_noise_subspace_config():
    base = TrainConfig(task="autoencode", penalty="equivariance", penalty_noise=1.0)
    assert "noise_subspace" not in base.to_dict()  # old cache keys kept
    assert base.replace(noise_subspace=16).to_dict()["noise_subspace"] == 16
    assert TrainConfig.from_dict(base.replace(noise_subspace=16).to_dict()) == base.replace(noise_subspace=16)
    with pytest.raises(ValueError, match="penalty_noise"):
        TrainConfig(task="autoencode", penalty="equivariance", noise_subspace=4)
    with pytest.raises(ValueError, match="noise_subspace"):
        base.replace(noise_subspace=-1)


@pytest.mark.parametrize("n", [200, 20])  # more pooled samples than coordinates (covariance), fewer (SVD)
def test_noise_basis_spans_a_mirror_invariant_principal_subspace(n):
    shape = (3, 4, 4)
    rho = images.mirror(shape)
    X = torch.randn(n, 48, generator=_gen(0)) @ torch.randn(48, 48, generator=_gen(1)) + 0.5
    M = _mirror_matrix(shape)
    # the symmetrised covariance computed here directly, and a k with a spectral gap
    Y = torch.cat([X, X @ M.T.float()]).double()
    evals, evecs = torch.linalg.eigh(torch.cov(Y.T, correction=0))
    k = max(range(3, 12), key=lambda j: float(evals[-j] / evals[-j - 1]))
    assert evals[-k] > 1.05 * evals[-k - 1]
    top = evecs[:, -k:]
    B = _noise_basis(X, lambda x: x.float(), rho, k, torch.device("cpu")).double()
    assert torch.allclose(B.T @ B, torch.eye(k, dtype=torch.float64), atol=1e-5)
    Pr = B @ B.T
    assert torch.allclose(M @ Pr @ M, Pr, atol=1e-5)  # the subspace is mapped to itself
    assert torch.allclose(top @ top.T, Pr, atol=1e-5)
    config = TrainConfig(task="autoencode", penalty="equivariance", penalty_noise=1.0, noise_std=2.0)
    z = _noise(torch.zeros(5000, 48), config, B.float(), _gen(1)).double()
    assert torch.allclose(z @ Pr, z, atol=1e-4)  # in the subspace
    assert z.pow(2).sum(1).mean() == pytest.approx(4.0 * 48, rel=0.05)  # isotropic noise's norm


def _linear_penalty(A, k):
    shape = (3, 4, 4)
    rho = images.mirror(shape)
    model = nn.Sequential(nn.Linear(48, 48, bias=False))
    with torch.no_grad():
        model[0].weight.copy_(A)
    X = torch.randn(64, 48, generator=_gen(3))
    config = TrainConfig(task="autoencode", epochs=1, batch_size=32, lr=1e-12, penalty="equivariance",
                         penalty_weight=0.0, penalty_noise=1.0, noise_subspace=k, penalty_start=0.0,
                         penalty_ramp=0.0)
    result = train(model, (X, None), config, symmetry=(rho, rho), device="cpu", progress=False)
    return result.history["noise_penalty"][0]


def test_subspace_noise_penalty_vanishes_exactly_for_an_equivariant_linear_map():
    M = _mirror_matrix((3, 4, 4)).float()
    A = torch.randn(48, 48, generator=_gen(7))
    for k in (4, 20):
        assert _linear_penalty(A + M @ A @ M, k) < 1e-10  # commutes with the mirror
        assert _linear_penalty(A, k) > 1e-2


# ---------------------------------------------------------------------------------- verdicts

def _row(setting, seed, **values):
    base = {"categorised_first64": 0, "pairs_first64": 0, "filter_similarity": 0.1,
            "test_relative_error": 0.5, "localisation_first64": 0.1}
    return {"setting": setting, "seed": seed, **base, **values}


def test_shows_picture():
    good = [_row("s", k, categorised_first64=32, pairs_first64=8) for k in range(3)]
    assert H.shows_picture(good)
    assert not H.shows_picture(good[:2])  # fewer than 3 seeds
    assert not H.shows_picture(good[:2] + [{**good[2], "pairs_first64": 7}])
    assert not H.shows_picture(good[:2] + [{**good[2], "categorised_first64": 31}])
    assert not H.shows_picture(good[:2] + [{**good[2], "filter_similarity": 0.5}])  # degenerate
    assert H.shows_picture(good[:2] + [{**good[2], "filter_similarity": 0.5}], similarity_max=0.6)


def test_stability_verdict_on_made_up_numbers():
    generic = [_row(H.GENERIC, k, test_relative_error=0.50 + 0.01 * k) for k in range(3)]
    start = {"categorised_first64": 60, "pairs_first64": 40}
    keep = [_row("kept", k, categorised_first64=40, pairs_first64=30, test_relative_error=0.515, start=start)
            for k in range(3)]
    lose = [_row("lost", k, categorised_first64=5, pairs_first64=2, test_relative_error=0.60, start=start)
            for k in range(3)]
    some = [_row("some", k, categorised_first64=40 if k else 5, pairs_first64=30, start=start) for k in range(3)]
    v = H.stability_verdict(generic + keep + lose + some)
    assert v["not_reached"] and v["generic_pairs_max"] == 0
    assert v["settings"]["kept"]["status"] == "stable" and v["settings"]["kept"]["reconstruction_matches"]
    assert v["settings"]["kept"]["stable_not_reachable"] and v["supported"]
    assert v["settings"]["lost"]["status"] == "not stable"
    assert not v["settings"]["lost"]["reconstruction_matches"]  # 0.09 above, spread 0.02
    assert not v["settings"]["lost"]["reconstruction_as_good"]
    better = [{**r, "setting": "better", "test_relative_error": 0.40} for r in keep]
    vb = H.stability_verdict(generic + better)["settings"]["better"]
    assert not vb["reconstruction_matches"] and vb["reconstruction_as_good"] and vb["stable_not_reachable"]
    assert v["settings"]["lost"]["reconstruction_gap"] == pytest.approx(0.09)
    assert v["settings"]["some"]["status"] == "mixed" and v["settings"]["some"]["survived"] == [False, True, True]
    # a generic network that already pairs: the pairing is reached, so not "not reachable"
    paired = [{**r, "pairs_first64": 8} for r in generic]
    assert not H.stability_verdict(paired + keep)["supported"]
    assert not H.stability_verdict(generic + lose)["supported"]
    with pytest.raises(ValueError, match="generic"):
        H.stability_verdict(keep)


def test_structure_verdict_on_made_up_numbers():
    generic = [_row(H.GENERIC, k, localisation_first64=0.10 + 0.01 * k, categorised_first64=k) for k in range(3)]
    up = [_row("up", k, localisation_first64=0.3 + 0.01 * k, categorised_first64=10 + k) for k in range(3)]
    flat = [_row("flat", k, localisation_first64=0.3, categorised_first64=1) for k in range(3)]
    same = [_row("same", k, localisation_first64=0.11, categorised_first64=20) for k in range(3)]
    assert H.structure_verdict(generic + up)["status"] == "supported"
    assert H.structure_verdict(generic + up)["spearman"] > 0.5
    assert H.structure_verdict(generic + flat)["status"] == "not supported"
    assert H.structure_verdict(generic + up + flat)["status"] == "mixed"
    v = H.structure_verdict(generic + same)
    assert v["status"] == "inconclusive" and v["localising"] == []
    zero = [{**r, "categorised_first64": 0} for r in generic + flat]
    assert np.isnan(H.structure_verdict(zero)["spearman"])  # a constant count


def test_where_verdict_on_made_up_numbers():
    rows = ([_row("images", k, pairs_first64=1, categorised_first64=60) for k in range(3)]
            + [_row("images + isotropic noise", k, pairs_first64=6 + k, categorised_first64=40) for k in range(3)]
            + [_row("images + subspace noise", k, pairs_first64=1 + 9 * (k > 0), categorised_first64=40)
               for k in range(3)])
    v = H.where_verdict(rows)
    assert v["status"] == "supported" and v["noise_better"] == ["images + isotropic noise"]
    assert v["most_pairs"] == "images + isotropic noise"  # 7 on average against 6.3
    assert not any(s["shows_picture"] for s in v["settings"].values())
    strong = rows + [_row("images + noise, from the start", k, pairs_first64=9, categorised_first64=33)
                     for k in range(3)]
    assert H.where_verdict(strong)["settings"]["images + noise, from the start"]["shows_picture"]
    assert H.where_verdict(rows[:3])["status"] == "not supported"


def test_hypotheses_plan_and_settings():
    s = H.settings("laptop")
    plan = H.hypotheses(s)
    assert list(plan) == ["stability", "structure", "where"]
    for h in plan.values():
        assert h["question"] and h["prediction"]
        for spec in h["settings"].values():
            assert spec["start"] in H.STARTS
            protocol.replace_settings(s.search, spec["changes"])  # every change is a setting
    assert plan["structure"]["settings"]["epochs ×3 (15)"]["changes"] == {"train.epochs": 15}
    assert H.settings("full").search == FS.SearchSettings()
    assert H.settings("laptop", **{"search.train.epochs": 2}).search.train.epochs == 2
    with pytest.raises(ValueError):
        H.HypothesisSettings(similarity_max=0.0)
    with pytest.raises(TypeError):
        H.HypothesisSettings(search=FS.SEARCH_TRAIN)


# ---------------------------------------------------------------------------------- a tiny run

TINY = H.HypothesisSettings(search=FS.SearchSettings(
    n_train=48, n_test=24, hidden=(12, 8, 8), train=FS.SEARCH_TRAIN.replace(epochs=2, batch_size=16),
    probes=60, subspace_k=8))


def _fake(n, seed=0, split="train"):
    return CIFAR10(torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=_gen(seed)),
                   torch.arange(n) % 10, split=split)


def test_tiny_run_on_synthetic_images(tmp_path, monkeypatch):
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path / "cache"))
    train_set, test_set = _fake(60), _fake(30, seed=1, split="test")
    rows = []
    record = H.pairing_hypotheses(train_set, test_set, TINY, seeds=(0,), on_row=rows.append)
    plan = H.hypotheses(TINY)
    assert list(record["hypotheses"]) == list(plan)
    assert len(rows) == sum(len(h["settings"]) for h in plan.values())
    stab = record["hypotheses"]["stability"]
    for r in stab["rows"]:
        assert set(H.KEYS) <= set(r)
        if r["setting"] != H.GENERIC:  # the planted start is exactly paired: every filter has a kind
            assert sum(r["start"]["kinds"].values()) == 12
    # the generic network is trained once per seed, for both hypotheses that use it
    generic = [r for h in record["hypotheses"].values() for r in h["rows"] if r["setting"] == H.GENERIC]
    assert len(generic) == 2 and generic[0] == {**generic[1], "hypothesis": "stability"}
    assert not generic[0]["from_cache"]
    assert set(record["hypotheses"]["structure"]["verdict"]) >= {"status", "text"}
    assert all(v is False for v in record["picture"].values())  # one seed: never the picture
    protocol.write_json(tmp_path / "record.json", record)
    assert protocol.load_json(tmp_path / "record.json")["seeds"] == [0]
    # a second run is loaded from the model cache, with the same numbers
    again = H.pairing_hypotheses(train_set, test_set, TINY, seeds=(0,), only=["stability"])
    first = [r for r in stab["rows"] if r["seed"] == 0]
    drop = lambda r: {k: v for k, v in r.items() if k not in ("train_seconds", "from_cache")}  # noqa: E731
    assert [drop(r) for r in again["hypotheses"]["stability"]["rows"]] == [drop(r) for r in first]
    assert all(r["from_cache"] for r in again["hypotheses"]["stability"]["rows"])
    with pytest.raises(ValueError, match="only"):
        H.pairing_hypotheses(train_set, test_set, TINY, only=["nope"])
    with pytest.raises(ValueError, match="seeds"):
        H.pairing_hypotheses(train_set, test_set, TINY, seeds=(0, 0))


# ---------------------------------------------------------------------------------- the recording script

def test_record_hypotheses_script_runs_the_full_budget_niced_logged_and_locked(tmp_path):
    """benchmarks/record_hypotheses.sh with a stub interpreter: the command (full budget, seeds
    0,1,2, into a fresh folder whose JSON is copied to the destination), nice 19, the log, a
    failing run copies nothing, and a second copy is refused while one holds the lock."""
    import fcntl
    import os
    import subprocess
    from pathlib import Path
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "record_hypotheses.sh"
    stub = tmp_path / "python-stub"
    stub.write_text('#!/usr/bin/env bash\necho "niceness $(nice) args $*"\n'
                    'out=""; prev=""; for a in "$@"; do [ "$prev" = "--out" ] && out=$a; prev=$a; done\n'
                    '[ -n "$out" ] && echo "{}" > "$out/pairing_hypotheses_full.json"\n'
                    'exit "${STUB_RC:-0}"\n')
    stub.chmod(0o755)
    dest = tmp_path / "dest"
    dest.mkdir()
    env = {**os.environ, "PYTHON": str(stub), "EQLIB_CACHE": str(tmp_path / "cache"),
           "LOG": str(tmp_path / "log.txt"), "RECORD_DEST": str(dest)}
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    log = (tmp_path / "log.txt").read_text()
    assert "niceness 19 args -m eqlib.experiments.pairing_hypotheses --budget full --seeds 0,1,2" in log
    assert "--no-download --out " in log and "--out eqlib/recorded" not in log
    assert (dest / "pairing_hypotheses_full.json").read_text().strip() == "{}"
    (dest / "pairing_hypotheses_full.json").unlink()
    proc = subprocess.run(["bash", str(script)], env={**env, "STUB_RC": "3"}, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 3 and "exit 3" in (tmp_path / "log.txt").read_text()
    assert not (dest / "pairing_hypotheses_full.json").exists()
    with open(tmp_path / "cache" / "record_hypotheses.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1 and "not starting" in proc.stderr


def test_command_line_checks_its_flags_before_any_work(tmp_path):
    with pytest.raises(SystemExit):
        H.main(["--budget", "laptop", "--only", "nope", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        H.main(["--budget", "laptop", "--set", "search.nope=1", "--out", str(tmp_path)])


@pytest.mark.parametrize("first_norm", [0.0, 1.0])
def test_search_train_cached_and_from_a_start_match_the_plain_run(tmp_path, monkeypatch, first_norm):
    """The hooks the hypotheses add to ``search_train``: through the model cache (trained,
    then loaded) it gives the weights of the plain run; from ``start`` it trains a copy, and
    from a copy of the seeded initialisation it gives the plain run's weights."""
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path / "cache"))
    s = protocol.replace_settings(TINY.search, {"first_norm": first_norm, "train.penalty_noise": 1.0})
    X = images.prepare_images(_fake(40).images).flatten(1)
    plain = FS.search_train(s, X, seed=3).model.state_dict()
    for _ in range(2):  # trained, then loaded
        result = FS.search_train(s, X, seed=3, cached=True)
        assert all(torch.equal(plain[k], v) for k, v in result.model.state_dict().items())
    assert result.from_cache
    from eqlib.experiments.cifar_setup import build_mlp
    start = build_mlp("tanh", "autoencode", s.hidden, seed=3, first_init_scale=s.first_init_scale)
    before = {k: v.clone() for k, v in start.state_dict().items()}
    again = FS.search_train(s, X, seed=3, start=start).model.state_dict()
    assert all(torch.equal(plain[k], v) for k, v in again.items())
    assert all(torch.equal(before[k], v) for k, v in start.state_dict().items())  # the start is not trained
