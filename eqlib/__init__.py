"""eqlib: the library behind the executable course on layerwise equivariance.

Layers, lowest first: ``groups`` → ``actions`` → ``models`` → ``symmetries`` →
``submodels`` → ``latent`` → ``matching``; beside them ``data``, ``train``,
``experiments``, ``plots``, ``widgets``, ``exercises`` and ``assignments``.
"""
from . import actions, groups, matching, models, submodels, symmetries
from .actions import check_equivariance, check_homomorphism
from .device import default_device

__version__ = "0.1.0"
__all__ = ["groups", "actions", "models", "symmetries", "submodels", "matching", "check_equivariance", "check_homomorphism", "default_device"]
