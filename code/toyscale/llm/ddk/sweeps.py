"""Two sweeps over seeds: the KL weight γ (chosen on validation) and the gap-spread boundary (CLAIMS.md §7).

`gamma_sweep` trains KD and DDK at each γ of a grid, from the same warm student, and records each
arm's validation mean ratio (what chooses γ) and its test numbers (how sensitive the verdicts are to
the choice). `gap_boundary` trains KD and DDK across the heterogeneity h of the domains, from
equal gaps (h = 0, where DDK has nothing to follow) to the chapter's five distinct domains (h = 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from toyscale.core.boundary import Boundary
from toyscale.core.progress import progress

from .experiment import (
    Config,
    Result,
    _fit_and_measure,
    gap_spread,
    mix_domains,
    perplexity_ratio,
    prepare,
    student_nats,
)

#: The metrics each sweep keeps per arm: validation and test mean ratio, test worst-domain ratio.
SWEEP_METRICS = ("val_mean_ratio", "mean_ratio", "max_ratio")


def gamma_sweep(config: Config, gammas: Sequence[float], seeds: Sequence[int]) -> dict[str, np.ndarray]:
    """KD and DDK at each γ (and CPT, which has none), per seed: arrays `<arm>_<metric>` of shape (seeds, γ).

    CPT's arrays repeat its one run across the γ axis. Every arm starts from the seed's warm student
    and is scored and stopped on validation exactly as in `run`.
    """
    if not gammas or not all(g >= 0 for g in gammas):
        raise ValueError(f"gammas must be a non-empty sequence of weights >= 0, got {gammas}")
    out = {f"{arm}_{m}": np.zeros((len(seeds), len(gammas))) for arm in ("cpt", "kd", "ddk") for m in SWEEP_METRICS}
    for i, seed in enumerate(progress(seeds, desc="γ sweep: seeds")):
        data, warm = prepare(config, seed)
        data = mix_domains(data, config.heterogeneity, seed)
        cpt, _ = _fit_and_measure("cpt", "cpt", warm, data, config, seed)
        for j, gamma in enumerate(gammas):
            tuned = replace(config, gamma=float(gamma))
            for m in SWEEP_METRICS:
                out[f"cpt_{m}"][i, j] = cpt[m]
            for arm in ("kd", "ddk"):
                scores, _ = _fit_and_measure(arm, arm, warm, data, tuned, seed)
                for m in SWEEP_METRICS:
                    out[f"{arm}_{m}"][i, j] = scores[m]
    return out


def _known_point(result: Result | None, h: float) -> tuple[dict, dict, float] | None:
    """KD's and DDK's metrics and the gap spread at h, if `run` already trained them (its own world, or
    its control's): the same computation, so the sweep need not repeat it."""
    if result is None:
        return None
    config = result.config
    if h == config.heterogeneity and {"kd", "ddk"} <= set(result.metrics):
        return result.metrics["kd"], result.metrics["ddk"], result.gap_spread["default"]
    if h == config.control_heterogeneity and "control" in result.gap_spread:
        return result.metrics["kd, equal gaps"], result.metrics["ddk, equal gaps"], result.gap_spread["control"]
    return None


def gap_boundary(
    config: Config, points: Sequence[float], seeds: Sequence[int], known: Sequence[Result] = ()
) -> tuple[Boundary, Boundary, np.ndarray]:
    """Where DDK's effects live: KD − DDK on the worst-domain and on the mean test ratio across h.

    Returns the worst-domain boundary, the mean boundary (each Δ positive where DDK is better) and
    the spread of the warm student's validation gaps at each point and seed (`gap_spread`). One
    corpus, teacher and warm student per seed serve every point. `known`: results of `run(config)` on
    some of the seeds, whose default world and control's world are taken as they are, not retrained.
    """
    if not points or not all(0 <= h <= 1 for h in points):
        raise ValueError(f"points must be heterogeneities in [0, 1], got {points}")
    by_seed = {r.seed: r for r in known if r.config == config}
    worst = np.zeros((len(points), len(seeds)))
    mean = np.zeros_like(worst)
    spread = np.zeros_like(worst)
    for j, seed in enumerate(progress(seeds, desc="gap boundary: seeds")):
        for i, h in enumerate(points):
            found = _known_point(by_seed.get(seed), h)
            if found is None:
                shared, warm = prepare(config, seed)
                data = mix_domains(shared, h, seed)
                found = (
                    _fit_and_measure("kd", "kd", warm, data, config, seed)[0],
                    _fit_and_measure("ddk", config.method, warm, data, config, seed)[0],
                    gap_spread(perplexity_ratio(student_nats(warm, data.val), data.teacher_val_nats)),
                )
            kd, ddk, spread[i, j] = found
            worst[i, j] = kd["max_ratio"] - ddk["max_ratio"]
            mean[i, j] = kd["mean_ratio"] - ddk["mean_ratio"]
    parameter = "heterogeneity h of the domains"
    return (
        Boundary(parameter, tuple(float(p) for p in points), tuple(seeds), worst, "Δ worst-domain ratio (KD − DDK)"),
        Boundary(parameter, tuple(float(p) for p in points), tuple(seeds), mean, "Δ mean ratio (KD − DDK)"),
        spread,
    )
