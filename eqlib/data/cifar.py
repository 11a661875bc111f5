"""CIFAR-10's facts (classes, official archive and checksums, split sizes), its errors,
the :class:`~eqlib.data.CIFAR10` split and :func:`~eqlib.data.subset`.

Chapters: *Groups and actions* (book/part1/02_groups_and_actions) and *Reproducing the
CIFAR-10 experiment* (book/part3/11_cifar_mlp).
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass

import torch

from ..io import CorruptFileError
from ..seeds import torch_generator
from ..validation import check_int, check_tensor

#: The official label order.
CLASSES: tuple[str, ...] = (
    "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
)
URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
MD5 = "c58f30108f718f92721af3b95e74349a"
#: SHA-256 and size in bytes of the official archive (checked beside its md5).
SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
ARCHIVE_BYTES = 170_498_071

_SPLITS = ("train", "test")
_BATCHES = {"train": [f"data_batch_{i}" for i in range(1, 6)], "test": ["test_batch"]}
_IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")
#: images per class in the official release
_OFFICIAL_PER_CLASS = {"train": 5000, "test": 1000}
#: largest archive member or file read: a 32x32 image is a few KB, an official batch about 31 MB
_MAX_IMAGE_BYTES = 1 << 20
_MAX_BATCH_BYTES = 64 << 20


# -- errors ---------------------------------------------------------------------------
class DataNotFoundError(FileNotFoundError):
    """CIFAR-10 is in none of the places searched; the message lists them and says how to get it.

    Chapter: *Groups and actions*.
    """


class CorruptDataError(CorruptFileError):
    """A data file (archive, batch, image) is truncated or damaged; the message names it.

    Chapter: *Groups and actions*.
    """


class UnsafePickleError(pickle.UnpicklingError, CorruptDataError):
    """A pickle asked for something the CIFAR-10 format never needs (it could run code).

    Chapter: *Groups and actions*.
    """


# -- the data set ---------------------------------------------------------------------
@dataclass
class CIFAR10:
    """One split of CIFAR-10.

    Attributes:
        images: uint8 tensor (N, 3, 32, 32).
        labels: int64 tensor (N,), indices into ``classes``.
        classes: class names in the official label order.
        source: the folder or archive the images were read from.
        split: ``"train"`` or ``"test"``.

    Chapters: *Groups and actions*; *Reproducing the CIFAR-10 experiment*.
    """

    images: torch.Tensor
    labels: torch.Tensor
    classes: tuple[str, ...] = CLASSES
    source: str = ""
    split: str = "train"

    def __post_init__(self) -> None:
        check_tensor("images", self.images)
        check_tensor("labels", self.labels, dtypes="integer")
        if self.images.dtype != torch.uint8 or self.images.ndim != 4 or self.images.shape[1] != 3:
            raise ValueError(f"images must be uint8 (N, 3, H, W), got {self.images.dtype} {tuple(self.images.shape)}")
        if self.labels.shape != (self.images.shape[0],):
            raise ValueError(f"need one label per image: {tuple(self.labels.shape)} vs {self.images.shape[0]} images")
        self.classes = tuple(self.classes)
        if self.labels.numel() and (int(self.labels.min()) < 0 or int(self.labels.max()) >= len(self.classes)):
            raise ValueError(f"labels must be class indices in 0..{len(self.classes) - 1}, got values in "
                             f"{int(self.labels.min())}..{int(self.labels.max())}")

    def __len__(self) -> int:
        return int(self.images.shape[0])

    def __repr__(self) -> str:
        return f"CIFAR10(split={self.split!r}, n={len(self)}, source={self.source!r})"


def subset(dataset: CIFAR10, n: int, seed: int = 0, stratified: bool = True) -> CIFAR10:
    """``n`` images of ``dataset`` drawn without replacement with a seeded generator.

    ``stratified=True`` takes ``n // 10`` images of every class (the remainder from the
    classes in label order), so classes stay balanced; otherwise a uniform sample.

    Raises:
        ValueError: if n is not in 1..len(dataset) or a class has too few images.

    Chapter: *Reproducing the CIFAR-10 experiment*.
    """
    if not isinstance(dataset, CIFAR10):
        raise TypeError(f"dataset must be a CIFAR10, got {type(dataset).__name__}")
    n = check_int("n", n, 1, len(dataset))
    gen = torch_generator(seed)
    if not stratified:
        idx = torch.randperm(len(dataset), generator=gen)[:n]
    else:
        k = len(dataset.classes)
        quota = torch.full((k,), n // k, dtype=torch.long)
        quota[: n % k] += 1
        counts = torch.bincount(dataset.labels, minlength=k)
        if bool((counts < quota).any()):
            bad = int(torch.nonzero(counts < quota)[0])
            raise ValueError(f"class {dataset.classes[bad]!r} has {int(counts[bad])} images, fewer than the "
                             f"{int(quota[bad])} a stratified subset of {n} needs; use stratified=False")
        # random order, then stable sort by label: each class's images in random order
        perm = torch.randperm(len(dataset), generator=gen)
        order = perm[torch.sort(dataset.labels[perm], stable=True).indices]
        start = torch.cumsum(counts, 0) - counts
        rank = torch.arange(len(dataset)) - start[dataset.labels[order]]
        idx = order[rank < quota[dataset.labels[order]]]
        idx = idx[torch.randperm(len(idx), generator=gen)]
    idx = idx.sort().values
    return CIFAR10(dataset.images[idx], dataset.labels[idx], dataset.classes, dataset.source, dataset.split)
