"""The shared training loop, seeding, devices, tables and timing."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from toyscale.core import (
    Stopwatch,
    Table,
    device,
    peak_memory_mb,
    rng,
    seed_everything,
    set_threads,
    train,
)


def _fit_line(seed: int) -> tuple[list[float], torch.Tensor]:
    seed_everything(seed)
    X = torch.linspace(-1, 1, 64).unsqueeze(1)
    y = 3 * X - 1
    model = nn.Linear(1, 1)

    def loss_fn(m: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return nn.functional.mse_loss(m(batch[0]), batch[1])

    history = train(model, loss_fn, lambda epoch: [(X[:32], y[:32]), (X[32:], y[32:])], epochs=150, lr=0.05).losses
    return history, torch.cat([model.weight.detach().ravel(), model.bias.detach()])


def test_train_fits_a_line_and_returns_one_loss_per_epoch() -> None:
    history, params = _fit_line(0)
    assert len(history) == 150 and history[-1] < 0.01 * history[0]
    torch.testing.assert_close(params, torch.tensor([3.0, -1.0]), atol=0.05, rtol=0)


def test_same_seed_same_numbers() -> None:
    assert _fit_line(3)[0] == _fit_line(3)[0]
    assert rng(5).random() == rng(5).random()


def test_train_rejects_bad_settings() -> None:
    model = nn.Linear(1, 1)
    with pytest.raises(ValueError, match="epochs"):
        train(model, lambda m, b: m(b).sum(), lambda e: [torch.ones(1, 1)], epochs=0, lr=0.1)
    with pytest.raises(ValueError, match="lr"):
        train(model, lambda m, b: m(b).sum(), lambda e: [torch.ones(1, 1)], epochs=1, lr=0.0)
    with pytest.raises(ValueError, match="no batch"):
        train(model, lambda m, b: m(b).sum(), lambda e: [], epochs=1, lr=0.1)
    with pytest.raises(ValueError, match="scalar"):
        train(model, lambda m, b: m(b), lambda e: [torch.ones(2, 1)], epochs=1, lr=0.1)


def test_seeds_and_threads_are_validated() -> None:
    with pytest.raises(ValueError, match="seed"):
        seed_everything(-1)
    with pytest.raises(ValueError, match="threads"):
        set_threads(0)


def test_device_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOYSCALE_DEVICE", "cpu")
    assert device() == torch.device("cpu")
    monkeypatch.setenv("TOYSCALE_DEVICE", "tpu")
    with pytest.raises(ValueError, match="TOYSCALE_DEVICE"):
        device()


def test_table_text_and_html() -> None:
    table = Table.from_nested({"jrc": {"auc": 0.81234, "ece": 0.00456}, "pointwise": {"auc": 0.8}}, "arm")
    assert table.columns == ["arm", "auc", "ece"]
    assert "0.8123" in str(table) and "<td>jrc</td>" in table._repr_html_()
    with pytest.raises(ValueError, match="columns"):
        Table(["a"], [[1, 2]])


def test_stopwatch_and_memory() -> None:
    with Stopwatch() as watch:
        np.ones(10**6).sum()
    assert watch.seconds > 0
    assert peak_memory_mb() > 10
