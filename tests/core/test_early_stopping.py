"""The training loop's early stopping: best validation weights restored, steps reported, unchanged when off."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from toyscale.core import EarlyStopping, seed_everything, train

X = torch.randn(96, 3, generator=torch.Generator().manual_seed(1))
Y = X @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.1


def _model() -> nn.Module:
    seed_everything(7)
    return nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))


def _batches(epoch: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    order = torch.randperm(96, generator=torch.Generator().manual_seed(epoch))
    return [(X[order[i : i + 32]], Y[order[i : i + 32]]) for i in range(0, 96, 32)]


def _mse(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    return nn.functional.mse_loss(model(batch[0]), batch[1])


def _plain_adam(model: nn.Module, epochs: int, lr: float, weight_decay: float) -> list[float]:
    """The loop as it was before early stopping existed: Adam, one mean loss per epoch."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    model.train()
    losses = []
    for epoch in range(epochs):
        total, count = 0.0, 0
        for batch in _batches(epoch):
            loss = _mse(model, batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.item()
            count += 1
        losses.append(total / count)
    model.eval()
    return losses


def _params(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().ravel() for p in model.parameters()])


def test_without_early_stopping_the_loop_is_bit_identical_to_a_plain_adam_loop() -> None:
    reference_model = _model()
    reference = _plain_adam(reference_model, epochs=5, lr=0.01, weight_decay=1e-3)
    model = _model()
    log = train(model, _mse, _batches, epochs=5, lr=0.01, weight_decay=1e-3)
    assert log.losses == reference  # exactly, not approximately
    assert torch.equal(_params(model), _params(reference_model))
    assert log.scores == [] and log.best_epoch == 5 and log.steps == 15 and log.epochs_run == 5


def test_early_stopping_restores_the_best_validation_weights_and_reports_its_steps() -> None:
    # a validation score that peaks after the third epoch: training must stop `patience` epochs later
    # and hand back the weights of epoch 3
    snapshots: list[torch.Tensor] = []
    scores = iter([0.1, 0.5, 0.9, 0.7, 0.6, 0.95])

    def score(model: nn.Module) -> float:
        snapshots.append(_params(model).clone())
        return next(scores)

    model = _model()
    log = train(model, _mse, _batches, epochs=6, lr=0.01, early_stopping=EarlyStopping(score, patience=2))
    assert log.scores == [0.1, 0.5, 0.9, 0.7, 0.6]  # stopped before the sixth epoch
    assert log.best_epoch == 3 and log.steps == 9 and log.epochs_run == 5 and log.best_score == 0.9
    assert torch.equal(_params(model), snapshots[2])
    assert not model.training


def test_early_stopping_lower_is_better_and_min_delta() -> None:
    losses = iter([1.0, 0.9, 0.895, 0.894, 0.5])
    log = train(
        _model(),
        _mse,
        _batches,
        epochs=5,
        lr=0.01,
        early_stopping=EarlyStopping(lambda m: next(losses), higher_is_better=False, patience=2, min_delta=0.01),
    )
    # 0.895 and 0.894 do not improve on 0.9 by more than 0.01: stop after epoch 4, best is epoch 2
    assert log.best_epoch == 2 and log.epochs_run == 4


def test_early_stopping_with_a_budget_shorter_than_patience_keeps_the_best_epoch() -> None:
    scores = iter([0.3, 0.2])
    log = train(_model(), _mse, _batches, epochs=2, lr=0.01, early_stopping=EarlyStopping(lambda m: next(scores)))
    assert log.best_epoch == 1 and log.epochs_run == 2 and log.steps == 3


def test_early_stopping_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="patience"):
        EarlyStopping(lambda m: 0.0, patience=0)
    with pytest.raises(ValueError, match="min_delta"):
        EarlyStopping(lambda m: 0.0, min_delta=-1.0)
