"""The trainer: one training loop over actions, and a cache of trained models.

:func:`train` trains any module on ``(samples, labels)``. The samples are moved to the
device once, preprocessed there block by block (``preprocess``; :class:`Normalize` for
images), taken in a seeded order and, when ``TrainConfig.augment_mirror``, acted on by a
random element of the group per sample. The penalty, for ``symmetry = (rho_in, rho_out)``
(actions of one finite group G), is a mean over coordinates and over the elements g ≠ e
(or over ``penalty_samples`` elements drawn per batch):

.. math::
    P_{\\mathrm{equi}} = \\operatorname{mean}\\,\\big(f(\\rho_{\\mathrm{in}}(g) x)
    - \\rho_{\\mathrm{out}}(g) f(x)\\big)^2, \\qquad
    P_{\\mathrm{inv}} = \\operatorname{mean}\\,\\big(f(\\rho_{\\mathrm{in}}(g) x) - f(x)\\big)^2,

switched on after ``penalty_start`` of training and ramped up linearly over
``penalty_ramp`` (an abrupt switch blew up Adam on large autoencoders). Images are a
preset, not a mode: :func:`image_preset` gives the mirror as the symmetry and
:class:`Normalize`. :func:`cached_train` keys trained models on disk by content and an
interrupted run resumes from its last checkpoint with the weights of an uninterrupted one.

The package's modules, by concern: :mod:`eqlib.train.config` (:class:`TrainConfig`,
:class:`TrainResult`), :mod:`eqlib.train.schedules` (learning rate and penalty weight over
training), :mod:`eqlib.train.checks` (the arguments), :mod:`eqlib.train.preset`
(:class:`Normalize`, :func:`image_preset`, :func:`evaluate_accuracy`),
:mod:`eqlib.train.identity` (a run's key, by content), :mod:`eqlib.train.state` (optimizer,
history, checkpoints), :mod:`eqlib.train.steps` (one epoch, :func:`penalty_term`),
:mod:`eqlib.train.loop` (:func:`train`) and :mod:`eqlib.train.cache` (:func:`cached_train`);
every public name is importable from, and documented under, ``eqlib.train``.

Chapter: *Reproducing the CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from .config import LR_MAX, TrainConfig, TrainResult  # noqa: F401  (LR_MAX: as before the split)
from .schedules import learning_rate_at, penalty_weight_at
from .preset import Normalize, evaluate_accuracy, image_preset
from .steps import _act_each, _random_crops, penalty_term  # noqa: F401  (the tests use both)
from .loop import train
from .cache import cached_train

__all__ = ["TrainConfig", "TrainResult", "train", "cached_train", "image_preset", "Normalize",
           "penalty_term", "penalty_weight_at", "learning_rate_at", "evaluate_accuracy"]
