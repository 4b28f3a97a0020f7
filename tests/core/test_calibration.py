"""Calibration: five-seed windows, pass rates with the current margins, falsifier fail rates."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import pytest

from toyscale.core import MECHANISM_OFF, Claim, Falsifier, paired
from toyscale.core.calibration import calibrate, windows
from toyscale.core.environment import environment


@dataclass(frozen=True)
class _Config:
    gain: float = 0.3


@dataclass
class _Result:
    score: float
    baseline: float


def _run(config: _Config, *, seed: int) -> _Result:
    wobble = 0.1 * math.sin(seed)  # a paired difference that moves with the seed
    return _Result(score=0.5 + config.gain + wobble, baseline=0.5)


def _claim(margin: float) -> Claim:
    return Claim(
        "better",
        "A beats B",
        "score",
        lambda rs: paired([r.score for r in rs], [r.baseline for r in rs], margin=margin, name="Δ score"),
        "effect",
    )


def test_windows_are_every_five_seed_subset_or_a_fixed_sample() -> None:
    assert len(windows(7)) == 21 and all(len(w) == 5 for w in windows(7))
    sample = windows(30, limit=100)
    assert len(sample) == 100 and sample == windows(30, limit=100) and len(set(sample)) == 100
    with pytest.raises(ValueError, match="at least 5"):
        windows(4)


def test_calibrate_reports_spread_pass_rate_and_falsifier_fail_rate() -> None:
    seeds = range(1000, 1010)
    results = [_run(_Config(), seed=s) for s in seeds]
    off = Falsifier("off", MECHANISM_OFF, ("better",), lambda c: replace(c, gain=0.0), "no gain")
    falsified = [(off, [_run(_Config(gain=0.0), seed=s) for s in seeds])]
    record = calibrate("toy", [_claim(0.1)], results, seeds, falsified=falsified)
    (claim,) = record.claims
    assert claim.pass_rate == 1.0 and claim.parts[0].name == "Δ score"
    assert claim.parts[0].mean == pytest.approx(0.3 + 0.1 * sum(math.sin(s) for s in seeds) / 10)
    assert claim.parts[0].window_mean_q05 < claim.parts[0].mean
    assert record.falsifiers[0].fail_rates == {"better": 1.0}
    # a margin above most window means passes few windows, and the table says so
    tight = calibrate("toy", [_claim(0.33)], results, seeds)
    assert 0.0 < tight.claims[0].pass_rate < 0.95
    assert "margin too tight" in str(tight.table())
    assert record.as_dict()["claims"][0]["parts"][0]["margin"] == 0.1


def test_environment_names_versions_cpu_threads_and_device() -> None:
    env = environment()
    for key in ("toyscale", "git_commit", "python", "torch", "numpy", "cpu", "cores", "torch_threads", "device"):
        assert key in env
    assert env["torch_threads"] >= 1 and env["device"]
