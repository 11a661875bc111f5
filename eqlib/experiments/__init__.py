"""One module per reproduced experiment, each with a command-line interface and a JSON of its numbers.

- :mod:`eqlib.experiments.cifar_mlp`: the CIFAR-10 MLP experiment of [SMBK26]
  (``python -m eqlib.experiments.cifar_mlp --budget full --out results/``).
- :mod:`eqlib.experiments.gcnn_barrier`: GCNN classifiers and their interpolation barriers.

Chapters: Part III, *Experiments* (book/part3).
"""
