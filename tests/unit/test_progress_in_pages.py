"""Progress bars in an executed notebook survive into the saved notebook (and the static page).

The book executes chapters with nbclient, which stores the widgets' state in the notebook.
A tqdm bar made with ``leave=False`` is hidden when it closes, and is stored hidden: an empty
box in the book and in a reopened notebook.
"""
from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipywidgets")

_CELL = """
import torch

from eqlib.models import MLP
from eqlib.train import TrainConfig, image_preset, train
g = torch.Generator().manual_seed(0)
images = torch.randint(0, 256, (64, 3, 32, 32), dtype=torch.uint8, generator=g)
labels = torch.randint(0, 3, (64,), generator=g)
run = train(MLP([3072, 8, 3], activations="tanh", seed=0), (images, labels),
            TrainConfig(task="classify", epochs=2, batch_size=32, lr=1e-3), device="cpu",
            **image_preset())
"""


def test_training_progress_bar_is_stored_with_the_notebook(tmp_path, monkeypatch):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(_CELL)])
    monkeypatch.setenv("EQLIB_CACHE", str(tmp_path / "cache"))
    # the kernel imports this checkout's eqlib, wherever it runs
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    views = [o["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
             for o in nb.cells[0].outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert views, f"training showed no progress bar: {nb.cells[0].outputs}"
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    stored = set(state.get("state", {}))
    missing = [v for v in views if v not in stored]
    assert not missing, f"progress bars whose widgets were not stored: {missing}"
    # a bar closed with leave=False is stored hidden: an empty box on the page
    layouts = [state["state"][v]["state"].get("layout", "").removeprefix("IPY_MODEL_") for v in views]
    hidden = [v for v, lay in zip(views, layouts) if lay in stored
              and state["state"][lay]["state"].get("visibility") == "hidden"]
    assert not hidden, f"progress bars stored hidden (empty boxes on the page): {hidden}"
    assert all(state["state"][v]["model_name"] == "HBoxModel" for v in views)
