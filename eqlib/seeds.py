"""The one seed helper: every random function of eqlib takes ``seed`` and turns it into a
generator here, with ONE meaning of ``seed=None``: the fixed default seed
:data:`DEFAULT_SEED` (0). eqlib never draws fresh entropy, so a call without a seed is
reproducible; pass different integers for different draws.

Chapter: *Models, latent spaces and submodels* (every random function takes a seed).
"""
from __future__ import annotations

import contextlib
import hashlib
import random
from collections.abc import Iterator

import numpy as np
import torch

from .validation import check_int, show

__all__ = ["DEFAULT_SEED", "MAX_SEED", "derive_seed", "spawn", "torch_generator", "numpy_rng", "torch_seeded", "seed_everything"]

#: what ``seed=None`` means everywhere in eqlib
DEFAULT_SEED = 0

#: The largest seed; torch's generators take 64-bit seeds (signed, so that every seed
#: has one meaning on every backend); bools and non-integral floats are refused too
MAX_SEED = 2**63 - 1


def _seed(seed: object) -> int:
    if seed is None:
        return DEFAULT_SEED
    if isinstance(seed, (torch.Generator, np.random.Generator)):
        raise TypeError(f"seed must be an int >= 0 or None here, got {show(seed)}")
    out = check_int("seed", seed, 0)
    if out > MAX_SEED:
        raise ValueError(f"seed must be an integer >= 0 and <= 2**63 - 1 (torch's generators take 64-bit "
                         f"seeds), got {show(seed)}")
    return out


def torch_generator(seed: int | torch.Generator | None, device: str | torch.device | None = None) -> torch.Generator:
    """A ``torch.Generator`` seeded with ``seed`` (None: :data:`DEFAULT_SEED`); a Generator
    passes through unchanged (to share one stream across calls).

    Chapter: *Models, latent spaces and submodels*.
    """
    if isinstance(seed, torch.Generator):
        return seed
    if device is not None:
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError, ValueError) as exc:
            raise ValueError(f"device must name a device (e.g. 'cpu'), got {show(device)} ({exc})") from None
        if dev.type == "meta":
            raise ValueError("device must be a real device (cpu, cuda): a meta generator draws no numbers")
        device = dev
    gen = torch.Generator(device=device) if device is not None else torch.Generator()
    return gen.manual_seed(_seed(seed))


def derive_seed(seed: int | None, key: str) -> int:
    """A seed for the stream named ``key`` under ``seed`` (None: :data:`DEFAULT_SEED`):
    the first 63 bits of BLAKE2b(``seed``, ``key``). Streams of different keys, or of the
    same key under different seeds, are unrelated, unlike ``seed + 1`` offsets, which make
    the stream "data" of seed 1 the stream "init" of seed 2.

    Examples:
        >>> derive_seed(0, "crops") == derive_seed(0, "crops")
        True
        >>> derive_seed(0, "crops") != derive_seed(0, "init") != derive_seed(1, "crops")
        True

    Chapter: *Models, latent spaces and submodels*.
    """
    seed = _seed(seed)
    if not isinstance(key, str) or not key:
        raise TypeError(f"key must be a non-empty string naming the stream, got {show(key)}")
    digest = hashlib.blake2b(f"{seed}\x00{key}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & MAX_SEED


def spawn(seed: int | None, key: str, device: str | torch.device | None = None) -> torch.Generator:
    """A ``torch.Generator`` for the stream named ``key`` under ``seed``: every generator
    derived from one seed (data order, crops, probes, ...) comes from here, seeded with
    :func:`derive_seed`.

    Examples:
        >>> a, b = spawn(3, "probes"), spawn(3, "probes")
        >>> bool(torch.equal(torch.rand(4, generator=a), torch.rand(4, generator=b)))
        True

    Chapter: *Models, latent spaces and submodels*.
    """
    return torch_generator(derive_seed(seed, key), device=device)


def numpy_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A ``numpy.random.Generator`` seeded with ``seed`` (None: :data:`DEFAULT_SEED`); a
    Generator passes through unchanged.

    Chapter: *Models, latent spaces and submodels*.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(_seed(seed))


@contextlib.contextmanager
def torch_seeded(seed: int | None) -> Iterator[None]:
    """Run a block with torch's global CPU generator seeded with ``seed`` (None:
    :data:`DEFAULT_SEED`) and restore it afterwards: for code that draws from the global
    generator (``torch.nn`` initialisers) without touching anyone else's stream.

    Chapter: *Models, latent spaces and submodels*.
    """
    seed = _seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def seed_everything(seed: int | None) -> None:
    """Seed the global generators of torch (every device), numpy and Python's ``random``
    with ``seed`` (None: :data:`DEFAULT_SEED`): the one place eqlib seeds global state,
    for code it does not own (a student's notebook cells run by the grader).

    Chapter: *Models, latent spaces and submodels*.
    """
    seed = _seed(seed)
    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)
    random.seed(seed)
