"""The training loop every chapter shares: Adam over batches, mean loss per epoch."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import nn

from .progress import progress


def train(
    model: nn.Module,
    loss_fn: Callable[[nn.Module, Any], torch.Tensor],
    batches: Callable[[int], Iterable[Any]],
    *,
    epochs: int,
    lr: float,
    weight_decay: float = 0.0,
    desc: str = "training",
) -> list[float]:
    """Train `model` with Adam and return the mean loss of each epoch.

    `batches(epoch)` yields the batches of one epoch (so a chapter controls shuffling and how
    samples are grouped); `loss_fn(model, batch)` returns a scalar loss to minimise.
    """
    if not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive int, got {epochs!r}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr!r}")
    if weight_decay < 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay!r}")
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    model.train()
    history = []
    for epoch in progress(range(epochs), desc=desc, total=epochs):
        total, count = 0.0, 0
        for batch in batches(epoch):
            loss = loss_fn(model, batch)
            if loss.dim() != 0:
                raise ValueError(f"loss_fn must return a scalar, got shape {tuple(loss.shape)}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.item()
            count += 1
        if count == 0:
            raise ValueError(f"batches({epoch}) yielded no batch")
        history.append(total / count)
    model.eval()
    return history
