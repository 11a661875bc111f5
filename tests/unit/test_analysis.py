"""Tests of the spread over seeds of the CIFAR-10 experiment's numbers."""
from __future__ import annotations

import pytest

from eqlib.experiments import cifar_mlp as E


def test_seed_spread():
    runs = [{"settings": {"a": 1}, "networks": {"n": {"acc": a, "counts": {"x": c}, "name": "s"}},
             "table": [{"network": "n", "layers": 1, "mirror": "horizontal", "probe": "noise",
                        "median_error": e}]}
            for a, c, e in ((0.5, 1, 0.2), (0.7, 3, 0.4), (0.6, 2, 0.3))]
    s = E.seed_spread(runs)
    assert s["networks"]["n"]["acc"]["mean"] == pytest.approx(0.6)
    assert s["networks"]["n"]["acc"]["std"] == pytest.approx(0.1)
    assert s["networks"]["n"]["counts"]["x"] == {"mean": 2.0, "std": 1.0, "min": 1.0, "max": 3.0, "n": 3}
    assert s["table"]["n|f1|horizontal|noise"]["max"] == pytest.approx(0.4)
    with pytest.raises(ValueError, match="different settings"):
        E.seed_spread([runs[0], {**runs[1], "settings": {"a": 2}}])
    with pytest.raises(ValueError):
        E.seed_spread([])
