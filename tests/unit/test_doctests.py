"""The ``Examples:`` of eqlib's docstrings run (issue #24, item 5): every module's doctests
pass, and the main public functions have at least one example."""
from __future__ import annotations

import doctest
import importlib

import pytest

from test_conventions import eqlib_modules

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

#: the main public functions, each with a runnable example
MAIN = ["eqlib.groups.cyclic", "eqlib.groups.dihedral", "eqlib.actions.factories.regular",
        "eqlib.actions.equivariance.check_equivariance", "eqlib.images.mirror",
        "eqlib.symmetries.symmetry_group", "eqlib.latent.plant.plant_equivariant",
        "eqlib.latent.core.latent_actions", "eqlib.latent.units.match_units",
        "eqlib.latent.lstsq.linear_equivariance_error",
        "eqlib.matching.invert_permutation", "eqlib.validation.check_int",
        "eqlib.validation.check_float", "eqlib.seeds.derive_seed", "eqlib.seeds.spawn"]

MODULES = eqlib_modules()


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_doctests_pass(module):
    result = doctest.testmod(module, optionflags=FLAGS, verbose=False, report=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest examples of {module.__name__} failed"


@pytest.mark.parametrize("qualname", MAIN)
def test_main_functions_have_examples(qualname):
    module, _, name = qualname.rpartition(".")
    fn = getattr(importlib.import_module(module), name)
    examples = doctest.DocTestParser().get_examples(fn.__doc__ or "")
    assert "Examples:" in (fn.__doc__ or "") and examples, f"{qualname} has no doctested Examples: section"


def test_the_examples_are_found():
    assert sum(doctest.DocTestFinder().find(m) != [] for m in MODULES) >= 5
    assert sum(len(t.examples) for m in MODULES for t in doctest.DocTestFinder().find(m)) >= 30
