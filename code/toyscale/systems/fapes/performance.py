"""The performance model: step time and statistical efficiency (Pollux's, reconstructed), fitted from observed steps.

The true step time has a term the fitted form lacks (contention among a job's workers on shared
links, κ(g − 1)²), so the fitted model is mis-specified, as any real one is, and its accuracy on
configurations a job never ran is a measurement, not an identity.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

import numpy as np

if TYPE_CHECKING:  # Job is only named in annotations; cluster imports this module
    from .cluster import Job


# ---------------------------------------------------------------------------------------------
# The performance model (Pollux's, reconstructed)
# ---------------------------------------------------------------------------------------------


def step_time(params: dict | Job, gpus: int, batch: int) -> float:
    """Seconds per step: t(g, m) = α + β·m/g + [g > 1]·(γ + δ·(g − 1) + κ·(g − 1)²).

    Pollux's form (compute of the local batch m/g, then a synchronization that grows with g), plus
    a contention term κ(g − 1)² that only the true jobs have (κ = 0 in a fitted model's parameters).
    """
    p = params if isinstance(params, dict) else params.__dict__
    if gpus < 1 or batch < 1:
        raise ValueError(f"gpus and batch must be >= 1, got {gpus}, {batch}")
    peers = gpus - 1
    sync = p["gamma"] + p["delta"] * peers + p.get("kappa", 0.0) * peers**2 if gpus > 1 else 0.0
    # compute of the local batch m/g, then the gradient synchronization
    return p["alpha"] + p["beta"] * batch / gpus + sync


def statistical_efficiency(phi: float, batch: int, m0: int) -> float:
    """Progress per sample at batch m relative to m0: E(m) = (φ + m0)/(φ + m) (Pollux, Eq. 6)."""
    return (phi + m0) / (phi + batch)


def goodput_rate(params: dict | Job, gpus: int, batch: int) -> float:
    """Goodput in m0-samples per minute: throughput × efficiency = 60·m/t(g, m) · E(m)."""
    p = params if isinstance(params, dict) else params.__dict__
    # goodput = throughput (samples/s) × statistical efficiency, per minute
    return 60.0 * batch / step_time(p, gpus, batch) * statistical_efficiency(p["phi"], batch, p["m0"])


def _features(gpus: int, batch: int) -> np.ndarray:
    multi = 1.0 if gpus > 1 else 0.0
    return np.array([1.0, batch / gpus, multi, multi * (gpus - 1)])


class PerformanceModel:
    """A job's step-time and efficiency model, fitted only from the steps it has observed.

    θ = (α, β, γ, δ) minimizes Σ_i ((x_i·θ − t_i)/t_i)² + λ·Σ_k ((θ_k − θ0_k)/θ0_k)²: relative
    least squares on the observed step times t_i at configurations x_i = (1, m/g, [g>1],
    [g>1](g − 1)), pulled towards a population prior θ0 where the observations say nothing
    (ridge). φ is the geometric mean of the noisy noise-scale estimates the job reported. The
    form has no contention term: where the true κ(g − 1)² matters, the fit is biased.
    """

    # population medians of the trace, what an operator knows before a job runs
    PRIOR: ClassVar[dict[str, float]] = {"alpha": 0.02, "beta_m0": 0.4, "gamma": 0.04, "delta": 0.006}
    PRIOR_PHI_RATIO = 5.0  # φ/m0 before any observation

    def __init__(self, m0: int, ridge: float = 0.05):
        self.m0 = m0
        self.ridge = ridge
        self.theta0 = np.array(
            [self.PRIOR["alpha"], self.PRIOR["beta_m0"] / m0, self.PRIOR["gamma"], self.PRIOR["delta"]]
        )
        self.X: list[np.ndarray] = []
        self.t: list[float] = []
        self.log_phi: list[float] = []
        self.configs: set[tuple[int, int]] = set()
        self._theta = self.theta0.copy()
        self._params = self._make_params()
        self._goodput: dict[tuple[int, int], float] = {}  # predictions of the current fit

    def observe(self, gpus: int, batch: int, seconds: float, phi_estimate: float) -> None:
        """Add one observed mean step time and one noise-scale estimate, and refit."""
        self.X.append(_features(gpus, batch))
        self.t.append(seconds)
        self.log_phi.append(math.log(phi_estimate))
        self.configs.add((gpus, batch))
        X = np.array(self.X) / np.array(self.t)[:, None]
        y = np.ones(len(self.t))
        # ridge towards θ0 in relative units: rows √λ·diag(1/θ0), targets √λ
        R = math.sqrt(self.ridge) * np.diag(1.0 / self.theta0)
        A = np.vstack([X, R])
        b = np.concatenate([y, math.sqrt(self.ridge) * np.ones(4)])
        theta = np.linalg.lstsq(A, b, rcond=None)[0]
        self._theta = np.maximum(theta, 1e-6)
        self._params = self._make_params()
        self._goodput.clear()

    @property
    def max_observed_gpus(self) -> int:
        return max((g for g, _ in self.configs), default=0)

    def params(self) -> dict:
        """The fitted parameters in the same form as a Job's true ones."""
        return self._params

    def _make_params(self) -> dict:
        a, b, c, d = self._theta
        phi = self.m0 * (math.exp(np.mean(self.log_phi)) / self.m0 if self.log_phi else self.PRIOR_PHI_RATIO)
        return dict(alpha=a, beta=b, gamma=c, delta=d, phi=phi, m0=self.m0)

    def predict_step(self, gpus: int, batch: int) -> float:
        return step_time(self.params(), gpus, batch)

    def predict_goodput(self, gpus: int, batch: int) -> float:
        key = (gpus, batch)
        if key not in self._goodput:
            self._goodput[key] = goodput_rate(self.params(), gpus, batch)
        return self._goodput[key]


def held_out_error(model: PerformanceModel, job: Job, max_gpus: int) -> float:
    """Mean |predicted − true| / true step time over the configurations the job never ran on."""
    errors = []
    for g in range(1, max_gpus + 1):
        for m in job.batch_choices(g):
            if (g, m) not in model.configs:
                true = step_time(job, g, m)
                errors.append(abs(model.predict_step(g, m) - true) / true)
    return float(np.mean(errors)) if errors else float("nan")
