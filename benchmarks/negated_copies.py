"""Negated copies (w_i ≈ −c w_j, no mirror) in the first layer of chapter 11's laptop
autoencoders, tanh vs GELU, against an untrained first layer (issue 25, item 4).

The bypass explanation: GELU(z) − GELU(−z) = z, so a GELU unit pair (w, b), (−w, −b)
carries the linear function w·x + b through the layer; tanh is odd, so for tanh such a
pair computes one feature twice. The explanation predicts more negated copies in GELU first
layers than in tanh ones, with b_i ≈ −b_j and equal norms. This script prints the counts
(:func:`eqlib.analysis.negated_copies`); nothing is asserted.

The networks come from :func:`eqlib.experiments.cifar_setup.train_networks` at the
``laptop`` settings (the chapter's call, so a chapter run's cache is reused; set
``EQLIB_CACHE``), trained when not cached (about a minute each on one core).

Run: ``EQLIB_DATA=... EQLIB_CACHE=... python benchmarks/negated_copies.py [--seeds 0,1,2]
[--thresholds 0.8,0.6,0.5,0.3]``.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from eqlib.analysis import negated_copies
from eqlib.experiments import cifar_setup as C
from eqlib.experiments.records import write_json

NAMES = ("tanh-autoencoder", "gelu-autoencoder")


def describe(label: str, weight, bias, thresholds: list[float], outgoing=None) -> dict:
    """One line per threshold: pairs among all units, within the first 64 (of the full
    assignment) and in the first 64 matched alone, with the pairs' bias and norm relation.
    ``outgoing`` (the next layer's weight, columns per unit) adds, per threshold, the
    cosines cos(a_i, −a_j) of each pair's outgoing columns (1 for a bypass pair).
    Returns the same numbers, by threshold."""
    out = {}
    for t in thresholds:
        res = negated_copies(weight, bias, threshold=t)
        alone = negated_copies(weight[:64], bias[:64], threshold=t)
        c = res.counts()
        extra = ""
        if res.count:
            extra = (f"  median cos {np.median(res.cosine):.2f}, median bias gap {np.median(res.bias_gap):.2f}, "
                     f"median norm ratio {np.median(np.maximum(res.norm_ratio, 1 / res.norm_ratio)):.2f}")
        print(f"{label:28s} t={t:.2f}: {c['negated pairs']:3d} pairs ({c['rows in pairs']:3d} of {res.n_rows} units), "
              f"first 64: {res.counts(64)['negated pairs']:2d} (matched alone: {alone.count:2d}), "
              f"non-reciprocal {c['non-reciprocal']:3d}{extra}")
        same_sign = int((res.bias_gap > 1 - 1e-6).sum()) if res.count and res.bias_gap is not None else 0
        out[f"{t:g}"] = {"pairs": c["negated pairs"], "units": res.n_rows,
                         "pairs_first64": res.counts(64)["negated pairs"],
                         "pairs_first64_alone": alone.count,
                         "median_cos": float(np.median(res.cosine)) if res.count else None,
                         "median_norm_ratio": (float(np.median(np.maximum(res.norm_ratio, 1 / res.norm_ratio)))
                                               if res.count else None),
                         "biases_same_sign": same_sign}
        if outgoing is not None and res.count:
            cos = res.outgoing_cosines(outgoing)
            out[f"{t:g}"]["outgoing_cos_median"] = float(np.median(cos))
            out[f"{t:g}"]["outgoing_cos_max"] = float(cos.max())
            print(f"{label:28s} t={t:.2f}: outgoing cos(a_i, -a_j) median {np.median(cos):.2f}, max {cos.max():.2f}")
    print(f"{label:28s} median |b| {bias.abs().median():.3f}, median ||w|| {weight.norm(dim=1).median():.3f}")
    top = negated_copies(weight, bias, threshold=1e-9)
    print(f"{label:28s} reciprocal matches: {top.count}, their cosines: max {top.cosine.max(initial=0):.3f}, "
          f"90th pct {np.quantile(top.cosine, 0.9) if top.count else 0:.3f}")
    out["median_abs_bias"] = float(bias.abs().median())
    out["median_weight_norm"] = float(weight.norm(dim=1).median())
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--thresholds", default="0.8,0.6,0.5,0.3")
    ap.add_argument("--out", default=None, help="JSON file for the counts")
    args = ap.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    thresholds = [float(t) for t in args.thresholds.split(",")]
    s = C.settings("laptop")
    record = {"budget": "laptop", "settings": s.to_dict(), "thresholds": thresholds, "runs": [],
              "command": "python benchmarks/negated_copies.py " + " ".join(sys.argv[1:] if argv is None else argv)}
    for seed in seeds:
        train_set, test_set = C.load_data(s, seed=seed)
        t0 = time.perf_counter()
        results = C.train_networks(s, train_set, test_set, seed=seed, names=NAMES, progress=False)
        print(f"seed {seed}: networks ready in {time.perf_counter() - t0:.1f} s "
              f"(from cache: {[r.from_cache for r in results.values()]})")
        row = {"seed": seed}
        for name in NAMES:
            first, second = results[name].model.layers[0], results[name].model.layers[1]
            row[name] = describe(f"{name} s{seed}", first.weight.detach(), first.bias.detach(), thresholds,
                                 outgoing=second.weight)
            act = name.split("-")[0]
            init = C.build_mlp(act, "autoencode", s.hidden, seed=seed, first_init_scale=s.first_init_scale).layers[0]
            row[f"untrained-{act}"] = describe(f"untrained {act} s{seed}", init.weight.detach(), init.bias.detach(),
                                               thresholds)
        record["runs"].append(row)
    if args.out:
        write_json(args.out, record)


if __name__ == "__main__":
    main()
