"""eqlib: the library behind the executable course on layerwise equivariance.

Layers, lowest first (CONTRIBUTING.md, "Layering"; tests/unit/test_layering.py):
``validation`` → ``seeds``/``io``/``budget``/``device`` → ``groups`` → ``actions`` →
``images`` → ``models`` → ``symmetries`` → ``submodels`` → ``latent`` →
``matching``/``data`` → ``train`` → ``analysis`` → ``plots``/``widgets`` → ``experiments`` →
``exercises``/``assignments``.
"""
from . import actions, groups, images, latent, matching, models, submodels, symmetries
from .actions import check_equivariance, check_homomorphism
from .device import default_device

__version__ = "0.1.0"
__all__ = ["groups", "actions", "images", "models", "symmetries", "submodels", "latent", "matching", "check_equivariance", "check_homomorphism", "default_device"]
