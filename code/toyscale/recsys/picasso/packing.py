"""Packing: per-field embedding bags against one packed table with per-field row offsets."""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

# ---------------------------------------------------------------------------------------------
# Packing: per-field embedding bags against one packed table
# ---------------------------------------------------------------------------------------------


def _check_rows(rows: Tensor, n_fields: int) -> None:
    if rows.dim() != 3 or rows.shape[1] != n_fields:
        raise ValueError(f"rows must have shape (N, {n_fields}, L), got {tuple(rows.shape)}")


class FieldBags(nn.Module):
    """The baseline: one `EmbeddingBag` (sum combiner) per field, called F times.

    e_{n,f} = Σ_l W_f[id_{n,f,l}], returned as a tensor of shape (N, F, d).
    """

    def __init__(self, n_rows: Sequence[int], dim: int) -> None:
        super().__init__()
        if not n_rows or any(v < 1 for v in n_rows):
            raise ValueError(f"n_rows must be a non-empty list of positive table sizes, got {list(n_rows)}")
        self.bags = nn.ModuleList(nn.EmbeddingBag(v, dim, mode="sum") for v in n_rows)
        for bag in self.bags:
            nn.init.normal_(bag.weight, std=0.05)

    def forward(self, rows: Tensor) -> Tensor:
        """Pooled embeddings (N, F, d) of the ids `rows` (N, F, L), each id local to its field."""
        _check_rows(rows, len(self.bags))
        # e_{n,f} = Σ_l W_f[id_{n,f,l}], one lookup per field
        return torch.stack([bag(rows[:, f]) for f, bag in enumerate(self.bags)], dim=1)


class PackedEmbedding(nn.Module):
    """PICASSO's packing: the F tables as one table W of Σ_f V_f rows, and one `EmbeddingBag` call.

    Field f owns rows o_f .. o_f + V_f − 1 with o_f = Σ_{g<f} V_g, so
    e_{n,f} = Σ_l W[o_f + id_{n,f,l}]: every (record, field) pair is one bag of the single call.
    """

    def __init__(self, n_rows: Sequence[int], dim: int) -> None:
        super().__init__()
        if not n_rows or any(v < 1 for v in n_rows):
            raise ValueError(f"n_rows must be a non-empty list of positive table sizes, got {list(n_rows)}")
        self.n_fields = len(n_rows)
        self.bag = nn.EmbeddingBag(int(sum(n_rows)), dim, mode="sum")
        nn.init.normal_(self.bag.weight, std=0.05)
        # o_f = Σ_{g<f} V_g, the first row of field f in the packed table
        self.register_buffer("offsets", torch.tensor(np.r_[0, np.cumsum(n_rows)[:-1]], dtype=torch.long))

    @classmethod
    def from_weights(cls, weights: Sequence[Tensor]) -> PackedEmbedding:
        """A packed table holding exactly the given per-field tables, stacked in field order."""
        packed = cls([w.shape[0] for w in weights], weights[0].shape[1])
        with torch.no_grad():
            packed.bag.weight.copy_(torch.cat(list(weights)))
        return packed.to(weights[0].device)

    @classmethod
    def from_bags(cls, bags: FieldBags) -> PackedEmbedding:
        """A packed table holding exactly the weights of `bags`, stacked in field order."""
        return cls.from_weights([bag.weight for bag in bags.bags])

    def global_rows(self, rows: Tensor) -> Tensor:
        """Field-local ids (N, F, L) to rows of the packed table: o_f + id."""
        _check_rows(rows, self.n_fields)
        return rows + self.offsets[None, :, None]

    def forward(self, rows: Tensor, *, packed: bool = False) -> Tensor:
        """Pooled embeddings (N, F, d); `packed=True` means `rows` already hold o_f + id (the producer added it)."""
        _check_rows(rows, self.n_fields)
        flat = rows if packed else self.global_rows(rows)
        n, f, length = flat.shape
        # e_{n,f} = Σ_l W[o_f + id_{n,f,l}], one call, N·F bags of L ids
        return self.bag(flat.reshape(n * f, length)).view(n, f, -1)


class PackedGroups(nn.Module):
    """The F fields' tables packed in groups of `group_size` consecutive fields, one lookup per group.

    group_size = F is PICASSO's packing (one table, one call); group_size = 1 packs nothing: each
    field keeps its own table and its own call, through the same code.
    """

    def __init__(self, n_rows: Sequence[int], dim: int, group_size: int) -> None:
        super().__init__()
        if group_size < 1:
            raise ValueError(f"group_size must be >= 1, got {group_size}")
        self.n_fields, self.group_size = len(n_rows), group_size
        self.groups = nn.ModuleList(
            PackedEmbedding(n_rows[i : i + group_size], dim) for i in range(0, len(n_rows), group_size)
        )

    @classmethod
    def from_bags(cls, bags: FieldBags, group_size: int) -> PackedGroups:
        """Groups holding exactly the weights of `bags`."""
        weights = [bag.weight for bag in bags.bags]
        packed = cls([w.shape[0] for w in weights], weights[0].shape[1], group_size)
        packed.groups = nn.ModuleList(
            PackedEmbedding.from_weights(weights[i : i + group_size]) for i in range(0, len(weights), group_size)
        )
        return packed

    def forward(self, rows: Tensor) -> Tensor:
        """Pooled embeddings (N, F, d) of field-local ids `rows` (N, F, L)."""
        _check_rows(rows, self.n_fields)
        if len(self.groups) == 1:
            return self.groups[0](rows)
        g = self.group_size
        return torch.cat([group(rows[:, i * g : (i + 1) * g]) for i, group in enumerate(self.groups)], dim=1)


class WideAndDeep(nn.Module):
    """A wide-and-deep CTR model over F multi-hot fields.

    logit = b + Σ_f w_{n,f} + MLP([e_{n,1}, ..., e_{n,F}]), where e_{n,f} (dimension d) and the
    wide weight w_{n,f} (dimension 1) are sum-pooled embeddings of field f's ids. The deep tables
    share their attributes, and so do the wide ones: `packed=True` merges each group into one
    `PackedEmbedding` (two lookups per step instead of 2F).
    """

    def __init__(self, n_rows: Sequence[int], *, dim: int, hidden: int, packed: bool) -> None:
        super().__init__()
        table = PackedEmbedding if packed else FieldBags
        self.packed, self.n_fields = packed, len(n_rows)
        self.deep = table(n_rows, dim)
        self.wide = table(n_rows, 1)
        self.mlp = nn.Sequential(nn.Linear(len(n_rows) * dim, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, rows: Tensor) -> Tensor:
        """Click logits (N,) for field-local ids `rows` (N, F, L)."""
        deep, wide = self.deep(rows), self.wide(rows)
        # logit = Σ_f w_{n,f} + MLP([e_{n,1}, ..., e_{n,F}])
        return wide.sum(dim=(1, 2)) + self.mlp(deep.flatten(1)).squeeze(1)


def packed_copy(model: WideAndDeep, group_size: int | None = None) -> WideAndDeep:
    """The same model (same weights) with its per-field tables packed: outputs and gradients are unchanged.

    group_size None packs every field into one table; an int packs groups of that many fields
    (`PackedGroups`; 1 packs nothing).
    """
    if model.packed:
        raise ValueError("model is already packed")
    packed = copy.deepcopy(model)
    packed.packed = True
    if group_size is None:
        packed.deep = PackedEmbedding.from_bags(model.deep)
        packed.wide = PackedEmbedding.from_bags(model.wide)
    else:
        packed.deep = PackedGroups.from_bags(model.deep, group_size)
        packed.wide = PackedGroups.from_bags(model.wide, group_size)
    return packed


def click_loss(model: nn.Module, rows: Tensor, y: Tensor, batch_size: int) -> Tensor:
    """Σ_n log loss(σ(logit_n), y_n) / batch_size: summed over a micro-batch, averaged over the batch."""
    return F.binary_cross_entropy_with_logits(model(rows), y.float(), reduction="sum") / batch_size
