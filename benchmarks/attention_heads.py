"""Which heads of the attention autoencoder trade places under the mirror, at H heads, on
several seeds: chapter 11's attention part (``eqlib.experiments.cifar_parts.attention_experiment``)
alone, without the four MLPs that ``python -m eqlib.experiments.cifar_mlp --parts attention``
also trains.

For each seed it prints and writes (JSON, ``--out``) the head permutation read from the
parameters and from the attention maps, the heads it moves, and the residuals that say how
well a head permutation explains the layer (0: exactly).

    EQLIB_DATA=... python benchmarks/attention_heads.py --heads 6 --seeds 0,1,2 --budget full
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import torch

from eqlib.analysis import end_to_end_error
from eqlib.experiments.cifar_parts import PatchAttentionAutoencoder, attention_experiment
from eqlib.images import prepare_images
from eqlib.latent.attention import recover_attention_action
from eqlib.latent.attention.recover import _best_maps_residual
from eqlib.experiments.cifar_setup import load_data, settings
from eqlib.experiments.records import write_json


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--heads", type=int, default=6)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--budget", default="full")
    parser.add_argument("--epochs", type=int, default=None, help="attention epochs (default: the budget's)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", default=None, help="JSON file for the results")
    args = parser.parse_args()
    overrides = {"attention_heads": args.heads}
    if args.epochs is not None:
        overrides["attention_epochs"] = args.epochs
    s = settings(args.budget, **overrides)
    rows = []
    for seed in [int(x) for x in args.seeds.split(",")]:
        t = time.perf_counter()
        tr, te = load_data(s, None, seed=seed)
        att = attention_experiment(s, tr, te, seed=seed, device=args.device, progress=False)
        model, action = att["model"], att["action"]
        m = action.group["m"]
        with torch.no_grad():  # chance level: the maps of m·X against those of another batch
            x, other = (model.tokens(prepare_images(te.images[a:a + 256])) for a in (0, 256))
            inv = torch.as_tensor(np.argsort(action.token_permutation(m)))
            maps_other = model.attention.layers[0].attention_maps(other)[..., inv, :][..., inv]
            chance = _best_maps_residual(model.attention.layers[0].attention_maps(action.act(m, x)), maps_other)
        init = PatchAttentionAutoencoder(s.attention_patch, s.attention_heads, seed=seed).eval()
        with torch.no_grad():  # the positional residual at initialisation (before training)
            init_latent = recover_attention_action(init.attention, action, init.tokens(prepare_images(te.images[:256])))
        row = {"seed": seed, "heads": args.heads, "epochs": s.attention_epochs,
               "positional_residual_init": init_latent.positional_residual["m"],
               "maps_residual_chance": chance,
               "end_to_end_vertical": end_to_end_error(model, te.images[:1000], "autoencode", "vertical"),
               **{k: att[k] for k in ("head_perm", "head_perm_maps", "swapped_heads", "maps_residual",
                                      "maps_residual_maps", "maps_residual_best",
                                      "output_residual", "positional_residual", "end_to_end", "task_loss")},
               "seconds": round(time.perf_counter() - t, 1)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        write_json(args.out, {"budget": args.budget, "settings": s.to_dict(), "runs": rows,
                              "command": "python benchmarks/attention_heads.py " + " ".join(sys.argv[1:])})


if __name__ == "__main__":
    main()
