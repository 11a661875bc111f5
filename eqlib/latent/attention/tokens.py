"""Token actions: how a group acts on token sequences, and the patch tokens of images.

:class:`TokenAction` permutes tokens and acts linearly on each token's features,
``g·X = Π_g X R_gᵀ``; :func:`patch_mirror_action` is the mirror on the patch tokens of
an image (:func:`eqlib.images.patchify`). :class:`ByElement` is the mapping keyed by group element
that every attention result uses.

Chapter: *Attention* (book/part2/08_attention).
"""
from __future__ import annotations

import numpy as np
import torch

from ...actions import Action, PermutationAction, check_homomorphism
from ...actions.base import _check_group
from ...groups import FiniteGroup, GroupElement, flip
from ...validation import check_int, check_shape, check_tensor
from ..result import MonomialAction

__all__ = ["ByElement", "TokenAction", "patch_mirror_action"]

Tensor = torch.Tensor


def _permutation_homomorphism_error(group: FiniteGroup, perms: np.ndarray) -> float:
    """:func:`eqlib.actions.check_homomorphism` of g ↦ (i moves to perms[g][i]); 0 iff
    perms[a·b] = perms[a] ∘ perms[b] for all a, b (permutations compose exactly)."""
    inv = torch.as_tensor(np.argsort(np.asarray(perms), axis=1))  # (k z)_j = z_{perm^{-1}(j)}
    return check_homomorphism(MonomialAction(group, inv, torch.ones(inv.shape)))


class ByElement(dict):
    """A dict keyed by group elements that also looks elements up by name.

    ``d[g]`` and ``d[g.name]`` give the same value; iteration yields the elements.

    Chapter: *Attention* (book/part2/08_attention).
    """

    def __init__(self, group: FiniteGroup, items=()):
        super().__init__()
        self.group = group
        for key, value in dict(items).items():
            self[key] = value

    def _key(self, key):
        return self.group[key] if isinstance(key, str) else key

    def __getitem__(self, key):
        return super().__getitem__(self._key(key))

    def __setitem__(self, key, value):
        key = self._key(key)
        if not isinstance(key, GroupElement) or key.group != self.group:
            raise TypeError(f"keys must be elements of {self.group.name} (or their names), got {key!r}")
        super().__setitem__(key, value)

    def __contains__(self, key) -> bool:
        try:
            return super().__contains__(self._key(key))
        except KeyError:
            return False

    def get(self, key, default=None):
        return self[key] if key in self else default


# -- actions on token sequences -------------------------------------------------------
class TokenAction(Action):
    """G acting on token sequences (n, d) by ``g·X = Π_g X R_gᵀ``.

    Args:
        group: a permutation group of the n token positions (it must carry
            ``permutations``, as :func:`~eqlib.groups.symmetric` and
            :func:`~eqlib.groups.from_permutations` give); token i moves to position g(i).
        feature_action: an :class:`~eqlib.actions.Action` of the same group on R^d
            acting on every token's features, or None for the trivial one.
        token_dim: d, needed when ``feature_action`` is None.
        token_perms: optional (``|G|``, n) array overriding ``group.permutations`` (for a
            group such as :func:`~eqlib.groups.flip` that acts on tokens through a
            homomorphism into S_n).

    Chapter: *Attention* (book/part2/08_attention).
    """

    def __init__(self, group: FiniteGroup, feature_action: Action | None = None, token_dim: int | None = None,
                 token_perms: np.ndarray | None = None):
        _check_group(group)
        if feature_action is not None and not isinstance(feature_action, Action):
            raise TypeError(f"feature_action must be an Action of {group.name} or None, got {feature_action!r:.80}")
        perms = token_perms if token_perms is not None else getattr(group, "permutations", None)
        if perms is None:
            raise ValueError(f"{group.name} carries no token permutations; pass token_perms of shape (|G|, n)")
        perms = np.asarray(perms, dtype=np.int64)
        if perms.ndim != 2 or perms.shape[0] != group.order:
            raise ValueError(f"token_perms must have shape ({group.order}, n), got {perms.shape}")
        if feature_action is not None and feature_action.group != group:
            raise ValueError("the feature action must be an action of the same group")
        if feature_action is None and token_dim is None:
            raise ValueError("give a feature_action or the token_dim of a trivial feature action")
        self.group = group
        self.perms = perms
        self.inv = np.argsort(perms, axis=1)
        self.n_tokens = perms.shape[1]
        self.token_dim = feature_action.dim if feature_action is not None else check_int("token_dim", token_dim, 1)
        self.feature_action = feature_action
        self.dim = self.n_tokens * self.token_dim
        self.shape = (self.n_tokens, self.token_dim)
        # a homomorphism check on the token part (the feature part is an Action already)
        if _permutation_homomorphism_error(group, perms) != 0:
            raise ValueError("token_perms is not a homomorphism: perm(a·b) ≠ perm(a)∘perm(b) for some a, b")

    def token_permutation(self, g: GroupElement) -> np.ndarray:
        """π_g as an array: token i moves to position π_g[i]."""
        return self.perms[self._check(g)].copy()

    def permute_tokens(self, g: GroupElement, x: Tensor) -> Tensor:
        """Π_g X: tokens only (axis -2), features untouched."""
        check_tensor("x", x)
        if x.ndim < 2 or x.shape[-2] != self.n_tokens:
            raise ValueError(f"x must have shape (..., {self.n_tokens}, d) ({self.n_tokens} tokens), got "
                             f"{tuple(x.shape)}")
        return x[..., torch.as_tensor(self.inv[self._check(g)], device=x.device), :]

    def feature_matrix(self, g: GroupElement) -> Tensor:
        """R_g, shape (d, d)."""
        if self.feature_action is None:
            self._check(g)
            return torch.eye(self.token_dim)
        return self.feature_action.matrix(g)

    def act(self, g: GroupElement, x: Tensor) -> Tensor:
        check_tensor("x", x)
        if x.ndim == 0:
            raise ValueError(f"x must have shape (..., {self.n_tokens}, {self.token_dim}), got a 0-d tensor")
        if tuple(x.shape[-2:]) != self.shape:
            if x.shape[-1] == self.dim:  # flat vectors (as Action.matrix uses)
                return self.act(g, x.reshape(*x.shape[:-1], *self.shape)).reshape(x.shape)
            raise ValueError(f"x must have shape (..., {self.n_tokens}, {self.token_dim}) (tokens, features) "
                             f"or (..., {self.dim}), got {tuple(x.shape)}")
        y = self.permute_tokens(g, x)
        if self.feature_action is not None:
            y = self.feature_action.act(g, y)
        return y


def patch_mirror_action(shape: tuple[int, int, int], patch: int) -> TokenAction:
    """The horizontal mirror Z2 acting on patch tokens of images of ``shape`` (C, H, W).

    Mirroring the image permutes the patches (column j ↔ last − j of the grid) and
    mirrors the pixels inside each patch, so that
    ``patchify(flip(x)) = action.act(m, patchify(x))``.

    Chapter: *Attention*.
    """
    C, H, W = shape
    if H % patch or W % patch:
        raise ValueError(f"image size {H}×{W} is not a multiple of the patch size {patch}")
    gh, gw = H // patch, W // patch
    G = flip()
    grid = np.arange(gh * gw).reshape(gh, gw)
    token_perms = np.stack([grid.reshape(-1), grid[:, ::-1].reshape(-1)])  # an involution: its own inverse
    pix = torch.arange(C * patch * patch).reshape(C, patch, patch)
    mirrored = torch.flip(pix, dims=(-1,)).reshape(-1).numpy()
    feat = PermutationAction.from_generators(G, {G["m"]: mirrored})
    return TokenAction(G, feat, token_perms=token_perms)
