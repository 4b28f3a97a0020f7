"""The training loop every chapter shares: Adam over batches, mean loss per epoch, optional early stopping.

With `early_stopping`, every arm gets the same maximum budget (`epochs`) and stops at its own best
validation point within it (CLAIMS.md §2): the model is scored on validation data after each epoch,
training stops after `patience` epochs without improvement, and the best weights are restored. The
log reports the epochs and optimizer steps each arm used. Without it the loop is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from .progress import progress


@dataclass(frozen=True)
class EarlyStopping:
    """Stop at the best validation score: `score(model)` after each epoch, `patience` epochs to improve.

    score: the model's validation score (called in eval mode, under no_grad); higher_is_better: its
    direction; patience: epochs without an improvement of more than `min_delta` before stopping.
    """

    score: Callable[[nn.Module], float]
    higher_is_better: bool = True
    patience: int = 2
    min_delta: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.patience, int) or self.patience < 1:
            raise ValueError(f"patience must be a positive int, got {self.patience!r}")
        if self.min_delta < 0:
            raise ValueError(f"min_delta must be >= 0, got {self.min_delta!r}")

    def improves(self, score: float, best: float) -> bool:
        """True when `score` beats `best` by more than `min_delta`."""
        gain = score - best if self.higher_is_better else best - score
        return gain > self.min_delta


@dataclass
class TrainLog:
    """What one training run did: the loss per epoch, the validation scores, and where it stopped.

    losses: mean training loss of each epoch run; scores: validation score after each epoch (empty
    without early stopping); steps_per_epoch: optimizer steps of each epoch run; best_epoch: the
    number of epochs behind the weights the model holds now (all of them without early stopping);
    max_epochs: the epoch budget it was given (0 when unknown).
    """

    losses: list[float] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    steps_per_epoch: list[int] = field(default_factory=list)
    best_epoch: int = 0
    max_epochs: int = 0

    @property
    def epochs_run(self) -> int:
        """Epochs trained, including those after the best point."""
        return len(self.losses)

    @property
    def steps(self) -> int:
        """Optimizer steps behind the weights the model holds now."""
        return sum(self.steps_per_epoch[: self.best_epoch])

    @property
    def budget(self) -> tuple[int, int]:
        """(steps behind the weights held now, steps the whole budget allows): what `result.budgets` reports.

        Epochs not run (training stopped early) count with the steps of the last epoch run.
        """
        if self.max_epochs < self.epochs_run or not self.steps_per_epoch:
            raise ValueError(f"this log has no epoch budget (max_epochs {self.max_epochs}); train() records it")
        limit = sum(self.steps_per_epoch) + (self.max_epochs - self.epochs_run) * self.steps_per_epoch[-1]
        return self.steps, limit

    @property
    def best_score(self) -> float:
        """The validation score of the weights the model holds now (nan without early stopping)."""
        return self.scores[self.best_epoch - 1] if self.scores else float("nan")


def train(
    model: nn.Module,
    loss_fn: Callable[[nn.Module, Any], torch.Tensor],
    batches: Callable[[int], Iterable[Any]],
    *,
    epochs: int,
    lr: float,
    weight_decay: float = 0.0,
    desc: str = "training",
    early_stopping: EarlyStopping | None = None,
) -> TrainLog:
    """Train `model` with Adam for at most `epochs` epochs and return the log.

    `batches(epoch)` yields the batches of one epoch (so a chapter controls shuffling and how
    samples are grouped); `loss_fn(model, batch)` returns a scalar loss to minimise. With
    `early_stopping`, the model ends holding its best validation weights.
    """
    if not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive int, got {epochs!r}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr!r}")
    if weight_decay < 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay!r}")
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    model.train()
    log = TrainLog(max_epochs=epochs)
    best_state: dict[str, torch.Tensor] | None = None
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
        log.losses.append(total / count)
        log.steps_per_epoch.append(count)
        if early_stopping is None:
            continue
        model.eval()
        with torch.no_grad():
            score = float(early_stopping.score(model))
        model.train()
        log.scores.append(score)
        if best_state is None or early_stopping.improves(score, log.best_score):
            log.best_epoch = epoch + 1
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        elif epoch + 1 - log.best_epoch >= early_stopping.patience:
            break
    if early_stopping is None:
        log.best_epoch = log.epochs_run
    elif best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return log
