"""The D-CPT Law, its fit (Huber loss, L-BFGS, analytic gradients, several starts), its baselines and its use.

The law (D-CPT, Eq. 1) predicts a loss from model size N, continual pre-training tokens D and
mixture ratio r:

    L(N, D, r) = E + A / N^α + B · r^η / D^β + C / (r + ε)^γ .

It is fitted once for the domain loss with r the domain ratio, and once for the general loss
with r the general ratio 1 − r_domain. The term B·r^η/D^β is the r–D interaction: how fast the
loss falls with more tokens depends on how much of them is the loss's own domain. Two simpler
forms are the baselines: `no_interaction` (B / D^β, the same D-slope at every ratio) and
`chinchilla`, E + A/N^α + B/D^β, fitted separately at each ratio (`PerRatioLaw`) and
interpolated linearly between ratios.

Every parameter is stored as its logarithm θ = log p, so E, A, B, C, ε and the exponents α, β,
η, γ stay positive whatever L-BFGS does. The fit minimises the mean Huber loss of the residuals
of the *log* loss, log L̂ − log L. Chinchilla's fits used δ = 10⁻³, about the noise of their
losses; the grid's checkpoints are noisier (about 1 %), so here δ = 10⁻²: quadratic within the
noise, linear beyond it, so a few bad checkpoints cannot drag the law. The gradient is computed
from the law's partial derivatives written out by hand (`law_and_jacobian`), not by autograd.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

# parameter names of each form, in the order of θ
FORMS: dict[str, tuple[str, ...]] = {
    "dcpt": ("E", "A", "alpha", "B", "beta", "eta", "C", "gamma", "eps"),
    "no_interaction": ("E", "A", "alpha", "B", "beta", "C", "gamma", "eps"),
    "chinchilla": ("E", "A", "alpha", "B", "beta"),
}

# where random starts of log p are drawn (uniformly), per parameter
START_BOX: dict[str, tuple[float, float]] = {
    "E": (-1.0, 1.0),  # E from 0.37 to 2.7 bits per character
    "A": (-4.0, 1.0),  # A and B in units where N and D are scaled to their geometric means (see fit_law)
    "alpha": (math.log(0.05), 0.0),
    "B": (-4.0, 1.0),
    "beta": (math.log(0.05), 0.0),
    "eta": (math.log(0.05), math.log(2.0)),
    "C": (-4.0, 0.0),
    "gamma": (math.log(0.05), 0.0),
    "eps": (math.log(1e-3), math.log(0.3)),
}

HUBER_DELTA = 1e-2  # on residuals of log loss: 1 %, about the checkpoint-to-checkpoint noise of the grid
SCREEN_ITER = 20  # L-BFGS iterations every random start gets before the best few are refined
_THETA_LIMIT = 40.0  # |log p| is clamped here inside the law, so that no line-search probe overflows
_DTYPE = torch.float64
_FIT_DEVICE = torch.device("cpu")  # a few hundred scalars: the CPU beats kernel launches on any machine


def _check_form(form: str) -> tuple[str, ...]:
    if form not in FORMS:
        raise ValueError(f"form must be one of {sorted(FORMS)}, got {form!r}")
    return FORMS[form]


def _as_column(values: object, name: str, n: int | None = None) -> Tensor:
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    if n is not None and array.size not in (1, n):
        raise ValueError(f"{name} must hold one value or {n}, got {array.size}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite")
    return torch.as_tensor(array, dtype=_DTYPE, device=_FIT_DEVICE)


def _check_inputs(N: object, D: object, r: object) -> tuple[Tensor, Tensor, Tensor]:
    """N, D, r as broadcast float64 tensors; N and D positive, r in [0, 1]."""
    n = max(np.size(N), np.size(D), np.size(r))
    N_, D_, r_ = _as_column(N, "N", n), _as_column(D, "D", n), _as_column(r, "r", n)
    if bool((N_ <= 0).any()):
        raise ValueError("N (model parameters) must be > 0")
    if bool((D_ <= 0).any()):
        raise ValueError("D (tokens) must be > 0")
    if bool(((r_ < 0) | (r_ > 1)).any()):
        raise ValueError("r (mixture ratio) must lie in [0, 1]")
    return torch.broadcast_tensors(N_, D_, r_)


def law_and_jacobian(
    form: str, theta: Tensor, N: Tensor, D: Tensor, r: Tensor, group: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """L̂ of `form` at every point and its Jacobian ∂L̂/∂θ (n × k), θ = log of the parameters.

    `theta` is one parameter vector (k,) or one per group (G, k), point i using row `group[i]`
    (several independent fits at once). With p = e^θ, ∂L̂/∂θ_p = p · ∂L̂/∂p; writing
    T_A = A N^−α, T_B = B r^η D^−β and T_C = C (r+ε)^−γ:
    ∂/∂θ_E = E; ∂/∂θ_A = T_A; ∂/∂θ_α = −α ln N · T_A; ∂/∂θ_B = T_B; ∂/∂θ_β = −β ln D · T_B;
    ∂/∂θ_η = η ln r · T_B (0 at r = 0); ∂/∂θ_C = T_C; ∂/∂θ_γ = −γ ln(r+ε) · T_C;
    ∂/∂θ_ε = −γ ε/(r+ε) · T_C. (The no-interaction form has T_B = B D^−β; chinchilla has no T_C.)
    Row i of the Jacobian holds the derivatives by the parameters of point i's group.
    """
    names = _check_form(form)
    if theta.dim() == 1:
        theta = theta[None, :]
    if theta.dim() != 2 or theta.shape[1] != len(names):
        raise ValueError(
            f"theta must have shape ({len(names)},) or (G, {len(names)}) for {form!r}, got {tuple(theta.shape)}"
        )
    if group is None:
        group = torch.zeros(len(N), dtype=torch.long, device=theta.device)
    rows = theta[group]  # (n, k): each point's parameters
    p = dict(zip(names, torch.exp(rows.clamp(-_THETA_LIMIT, _THETA_LIMIT)).unbind(1), strict=True))
    log_N, log_D = torch.log(N), torch.log(D)
    columns: dict[str, Tensor] = {}
    # T_A = A / N^α
    T_A = p["A"] * _safe_exp(-p["alpha"] * log_N)
    columns["E"] = p["E"]
    columns["A"] = T_A
    columns["alpha"] = -p["alpha"] * log_N * T_A
    if form == "dcpt":
        # T_B = B · r^η / D^β (r^η = 0 at r = 0, and so is its derivative)
        positive = r > 0
        log_r = torch.log(torch.where(positive, r, torch.ones_like(r)))
        T_B = torch.where(positive, p["B"] * _safe_exp(p["eta"] * log_r - p["beta"] * log_D), torch.zeros_like(r))
        columns["eta"] = p["eta"] * log_r * T_B
    else:
        # T_B = B / D^β
        T_B = p["B"] * _safe_exp(-p["beta"] * log_D)
    columns["B"] = T_B
    columns["beta"] = -p["beta"] * log_D * T_B
    L = p["E"] + T_A + T_B
    if form != "chinchilla":
        # T_C = C / (r + ε)^γ
        log_shifted = torch.log(r + p["eps"])
        T_C = p["C"] * _safe_exp(-p["gamma"] * log_shifted)
        columns["C"] = T_C
        columns["gamma"] = -p["gamma"] * log_shifted * T_C
        columns["eps"] = -p["gamma"] * p["eps"] / (r + p["eps"]) * T_C
        L = L + T_C
    # zero the derivative of a clamped θ, as the clamp does
    inside = (rows.abs() < _THETA_LIMIT).to(_DTYPE)
    J = torch.stack([columns[name] for name in names], dim=1) * inside
    return L, J


def _safe_exp(x: Tensor) -> Tensor:
    """e^x with x capped at 60, so that a far-off line-search probe gives a huge loss, not inf or nan."""
    return torch.exp(x.clamp(max=60.0))


def huber(residual: Tensor, delta: float = HUBER_DELTA) -> Tensor:
    """Huber_δ(x) = x²/2 for |x| ≤ δ, δ(|x| − δ/2) beyond: quadratic near zero, linear in the tails."""
    a = residual.abs()
    return torch.where(a <= delta, 0.5 * residual**2, delta * (a - 0.5 * delta))


def objective_and_gradient(
    form: str,
    theta: Tensor,
    N: Tensor,
    D: Tensor,
    r: Tensor,
    L: Tensor,
    delta: float = HUBER_DELTA,
    group: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """J(θ) = mean Huber_δ(log L̂ − log L), its gradient by the chain rule, and J per group.

    ∂J/∂θ = mean[ ψ_δ(res) · (1/L̂) · ∂L̂/∂θ ], where ψ_δ(x) = clamp(x, −δ, δ) is Huber's derivative.
    With groups (θ of shape (G, k)) the value is the sum over groups of each group's mean, and the
    gradient has θ's shape.
    """
    theta2 = theta if theta.dim() == 2 else theta[None, :]
    if group is None:
        group = torch.zeros(len(N), dtype=torch.long)
    n_groups = theta2.shape[0]
    counts = torch.bincount(group, minlength=n_groups).to(_DTYPE).clamp_min(1)
    L_hat, jacobian = law_and_jacobian(form, theta2, N, D, r, group)
    residual = torch.log(L_hat) - torch.log(L)
    per_group = torch.zeros(n_groups, dtype=_DTYPE).index_add(0, group, huber(residual, delta)) / counts
    # ψ_δ(res) / L̂, weighted by 1 / (points in the group)
    weight = residual.clamp(-delta, delta) / L_hat / counts[group]
    gradient = torch.zeros_like(theta2).index_add(0, group, jacobian * weight[:, None])
    return per_group.sum(), gradient.reshape(theta.shape), per_group


def _lbfgs(
    form: str, theta0: Tensor, data: tuple[Tensor, ...], group: Tensor | None, max_iter: int, delta: float
) -> tuple[Tensor, Tensor]:
    """Run torch's L-BFGS (strong Wolfe) from theta0 with the analytic gradient; return θ and J per group."""
    theta = theta0.clone().requires_grad_(True)
    optimizer = torch.optim.LBFGS(
        [theta],
        lr=1.0,
        max_iter=max_iter,
        tolerance_grad=1e-12,
        tolerance_change=1e-14,
        history_size=20,
        line_search_fn="strong_wolfe",
    )

    def closure() -> Tensor:
        with torch.no_grad():
            value, gradient, _ = objective_and_gradient(form, theta, *data, delta=delta, group=group)
        theta.grad = gradient
        return value

    optimizer.step(closure)
    with torch.no_grad():
        final = theta.detach().clamp(-_THETA_LIMIT, _THETA_LIMIT)
        per_group = objective_and_gradient(form, final, *data, delta=delta, group=group)[2]
    return final, per_group


def _random_starts(names: tuple[str, ...], shape: tuple[int, ...], generator: np.random.Generator) -> Tensor:
    low = np.array([START_BOX[n][0] for n in names])
    high = np.array([START_BOX[n][1] for n in names])
    return torch.tensor(generator.uniform(low, high, size=(*shape, len(names))), dtype=_DTYPE)


@dataclass(frozen=True)
class Law:
    """A fitted law: its form, its parameters (natural scale), and the fit's final objective."""

    form: str
    params: dict[str, float]
    objective: float

    def predict(self, N: object, D: object, r: object) -> np.ndarray:
        """L̂(N, D, r) as a float64 array."""
        return predict(self.form, self.params, N, D, r)


def predict(form: str, params: Mapping[str, float], N: object, D: object, r: object) -> np.ndarray:
    """The law of `form` with `params` at the points (N, D, r), as a float64 array."""
    names = _check_form(form)
    missing = [n for n in names if n not in params]
    if missing:
        raise ValueError(f"params of form {form!r} must name {list(names)}, missing {missing}")
    if any(not params[n] > 0 for n in names):
        raise ValueError(f"every parameter must be > 0, got {dict(params)}")
    N_, D_, r_ = _check_inputs(N, D, r)
    theta = torch.tensor([math.log(params[n]) for n in names], dtype=_DTYPE)
    with torch.no_grad():
        return law_and_jacobian(form, theta, N_, D_, r_)[0].numpy()


def dcpt_law(N: object, D: object, r: object, params: Mapping[str, float]) -> np.ndarray:
    """The D-CPT Law, L = E + A/N^α + B·r^η/D^β + C/(r+ε)^γ, at the points (N, D, r)."""
    return predict("dcpt", params, N, D, r)


def _points(points: Mapping[str, object]) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    if not isinstance(points, Mapping):
        raise TypeError(f"points must be a mapping with keys N, D, r, L, got {type(points).__name__}")
    missing = [k for k in ("N", "D", "r", "L") if k not in points]
    if missing:
        raise ValueError(f"points must hold the keys N, D, r, L; missing {missing}")
    N, D, r = _check_inputs(points["N"], points["D"], points["r"])
    L = _as_column(points["L"], "L", len(N))
    if len(L) != len(N) or len(N) == 0:
        raise ValueError(f"points need the same number (> 0) of N, D, r and L values, got {len(N)} and {len(L)}")
    if bool((L <= 0).any()):
        raise ValueError("L (losses) must be > 0")
    return N, D, r, L


def fit_law(
    points: Mapping[str, object],
    *,
    form: str = "dcpt",
    starts: int = 8,
    seed: int = 0,
    max_iter: int = 200,
    delta: float = HUBER_DELTA,
    refine: int = 2,
) -> Law:
    """Fit a law of `form` to `points` (keys N, D, r, L): L-BFGS from `starts` random starts, the best kept.

    Each start draws θ = log p uniformly in `START_BOX` and runs `SCREEN_ITER` iterations of
    L-BFGS (strong Wolfe line search) on the mean Huber loss of log residuals, with the
    hand-written gradient; the `refine` best starts then run to convergence (at most `max_iter`
    iterations), and the lowest final objective wins. Deterministic in `seed`.
    """
    names = _check_form(form)
    _check_fit_settings(starts, max_iter, delta)
    if not isinstance(refine, int) or not 1 <= refine <= starts:
        raise ValueError(f"refine must be an int in [1, starts = {starts}], got {refine!r}")
    data, scale = _scaled(_points(points))
    thetas = _random_starts(names, (starts,), np.random.default_rng(seed))
    screened = []
    for theta0 in thetas:
        theta, per_group = _lbfgs(form, theta0, data, None, min(SCREEN_ITER, max_iter), delta)
        value = per_group.item()
        screened.append((value if math.isfinite(value) else math.inf, theta.reshape(-1)))
    best: tuple[float, Tensor] | None = None
    for value, theta0 in sorted(screened, key=lambda item: item[0])[:refine]:
        if not math.isfinite(value):
            continue
        theta, per_group = _lbfgs(form, theta0, data, None, max_iter, delta)
        final = per_group.item()
        if math.isfinite(final) and (best is None or final < best[0]):
            best = (final, theta.reshape(-1))
    if best is None:
        raise RuntimeError(f"every one of the {starts} starts of the {form} fit diverged")
    return Law(form, _unscale(names, best[1], scale), best[0])


def _scaled(data: tuple[Tensor, ...]) -> tuple[tuple[Tensor, ...], tuple[float, float]]:
    """(N/N₀, D/D₀, r, L) with N₀, D₀ the geometric means of the points, and (N₀, D₀).

    In these units A/N^α = A′/(N/N₀)^α with A′ = A/N₀^α, the size of the N-term at a typical N, so
    log A′ and α are far less correlated than log A and α: L-BFGS converges in fewer iterations.
    """
    N, D, r, L = data
    N0, D0 = torch.exp(torch.log(N).mean()).item(), torch.exp(torch.log(D).mean()).item()
    return (N / N0, D / D0, r, L), (N0, D0)


def _unscale(names: tuple[str, ...], theta: Tensor, scale: tuple[float, float]) -> dict[str, float]:
    """Parameters in natural units from θ fitted in scaled units: A = A′·N₀^α, B = B′·D₀^β."""
    params = {n: math.exp(v) for n, v in zip(names, theta.tolist(), strict=True)}
    N0, D0 = scale
    params["A"] *= N0 ** params["alpha"]
    params["B"] *= D0 ** params["beta"]
    return params


def _check_fit_settings(starts: int, max_iter: int, delta: float) -> None:
    if not isinstance(starts, int) or starts < 1:
        raise ValueError(f"starts must be a positive int, got {starts!r}")
    if not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive int, got {max_iter!r}")
    if not delta > 0:
        raise ValueError(f"delta must be > 0, got {delta!r}")


@dataclass(frozen=True)
class PerRatioLaw:
    """The per-ratio baseline: a Chinchilla law E + A/N^α + B/D^β fitted at each training ratio.

    At a ratio between two fitted ones the prediction is the linear interpolation, in r, of theirs;
    outside the fitted range it is the nearest fitted ratio's.
    """

    laws: dict[float, Law]

    def predict(self, N: object, D: object, r: object) -> np.ndarray:
        N_, D_, r_ = (t.numpy() for t in _check_inputs(N, D, r))
        fitted = np.array(sorted(self.laws))
        table = np.stack([self.laws[q].predict(N_, D_, 1.0) for q in fitted])  # (ratios, points)
        out = np.empty_like(r_)
        for i, q in enumerate(r_):
            out[i] = np.interp(q, fitted, table[:, i])
        return out


def fit_per_ratio(
    points: Mapping[str, object], *, starts: int = 8, seed: int = 0, max_iter: int = 200, delta: float = HUBER_DELTA
) -> PerRatioLaw:
    """One Chinchilla fit per distinct ratio in `points` (each needs at least 5 points).

    The fits are independent, so they run as one L-BFGS over all ratios' parameters at once (the
    objective is the sum of the ratios' objectives): `starts` random starts are screened for
    `SCREEN_ITER` iterations, each ratio keeps its best, and all are then refined together.
    """
    names = FORMS["chinchilla"]
    _check_fit_settings(starts, max_iter, delta)
    (N, D, r, L), scale = _scaled(_points(points))
    ratios = sorted(set(r.tolist()))
    group = torch.as_tensor(np.searchsorted(ratios, r.numpy()), dtype=torch.long)
    counts = torch.bincount(group, minlength=len(ratios))
    if int(counts.min()) < len(names):
        raise ValueError(
            f"every ratio needs at least {len(names)} points, got {dict(zip(ratios, counts.tolist(), strict=True))}"
        )
    generator = np.random.default_rng(seed)
    data = (N, D, r, L)
    best_value = torch.full((len(ratios),), math.inf, dtype=_DTYPE)
    best_theta = torch.zeros(len(ratios), len(names), dtype=_DTYPE)
    for _ in range(starts):
        # screen: a few iterations from a random start for every ratio at once
        start = _random_starts(names, (len(ratios),), generator)
        theta, per_group = _lbfgs("chinchilla", start, data, group, min(SCREEN_ITER, max_iter), delta)
        better = torch.isfinite(per_group) & (per_group < best_value)
        best_value = torch.where(better, per_group, best_value)
        best_theta[better] = theta[better]
    if not bool(torch.isfinite(best_value).all()):
        raise RuntimeError(f"the per-ratio fit diverged at every one of {starts} starts for some ratio")
    # refine: every ratio from its best screened start, to convergence
    theta, per_group = _lbfgs("chinchilla", best_theta, data, group, max_iter, delta)
    better = torch.isfinite(per_group) & (per_group < best_value)
    best_value = torch.where(better, per_group, best_value)
    best_theta[better] = theta[better]
    laws = {
        q: Law("chinchilla", _unscale(names, best_theta[g], scale), best_value[g].item()) for g, q in enumerate(ratios)
    }
    return PerRatioLaw(laws)


def r_squared(y: Sequence[float] | np.ndarray, y_hat: Sequence[float] | np.ndarray) -> float:
    """The coefficient of determination R² = 1 − Σ(y − ŷ)² / Σ(y − ȳ)² (1 is perfect; < 0 is worse than ȳ)."""
    y, y_hat = np.asarray(y, dtype=np.float64), np.asarray(y_hat, dtype=np.float64)
    if y.shape != y_hat.shape or y.size < 2:
        raise ValueError(f"y and y_hat need the same shape and at least 2 values, got {y.shape} and {y_hat.shape}")
    total = float(((y - y.mean()) ** 2).sum())
    if total == 0:
        raise ValueError("y is constant: R² is undefined")
    return 1.0 - float(((y - y_hat) ** 2).sum()) / total


@dataclass(frozen=True)
class Choice:
    """A chosen domain ratio and what the laws predict there."""

    ratio: float
    general_loss: float  # predicted general loss at the chosen ratio
    domain_loss: float  # predicted domain loss at the chosen ratio
    feasible: bool  # whether any candidate met the general-loss limit


def choose_ratio(
    general: Law | PerRatioLaw,
    domain: Law | PerRatioLaw,
    N: float,
    D: float,
    start_general_loss: float,
    tolerance: float,
    candidates: Sequence[float],
) -> Choice:
    """The D-CPT Law's first use: r* = argmin_r L̂_domain(N, D, r) s.t. L̂_general(N, D, 1 − r) ≤ (1 + T)·L_g⁰.

    `general` is fitted with the general ratio (1 − r), `domain` with the domain ratio r;
    L_g⁰ = `start_general_loss`, the general model's loss before continual pre-training. When no
    candidate keeps the general loss within the limit, the one with the lowest predicted general
    loss is returned with feasible=False.
    """
    candidates = np.asarray(candidates, dtype=np.float64).reshape(-1)
    if candidates.size == 0 or np.any((candidates < 0) | (candidates > 1)):
        raise ValueError(f"candidates must be a non-empty list of ratios in [0, 1], got {candidates.tolist()}")
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance!r}")
    if not start_general_loss > 0:
        raise ValueError(f"start_general_loss must be > 0, got {start_general_loss!r}")
    L_general = general.predict(N, D, 1.0 - candidates)
    L_domain = domain.predict(N, D, candidates)
    # feasible: L̂_general ≤ (1 + T) · L_g⁰
    feasible = L_general <= (1.0 + tolerance) * start_general_loss
    i = int(np.argmin(np.where(feasible, L_domain, np.inf) if feasible.any() else L_general))
    return Choice(float(candidates[i]), float(L_general[i]), float(L_domain[i]), bool(feasible.any()))


def choose_ratio_limited(
    domain: Law | PerRatioLaw, N: float, domain_tokens: float, max_tokens: float, candidates: Sequence[float]
) -> Choice:
    """The law's use with scarce domain data: r* = argmin_r L̂_domain(N, D_dom / r, r), D_dom / r ≤ D_max.

    With only `domain_tokens` of domain text, a run at ratio r lasts D = D_dom / r tokens (the rest
    general text); runs longer than `max_tokens` are not allowed. (No general-loss limit here:
    general_loss is reported as nan.)
    """
    candidates = np.asarray(candidates, dtype=np.float64).reshape(-1)
    if not domain_tokens > 0 or not max_tokens >= domain_tokens:
        raise ValueError(f"need 0 < domain_tokens <= max_tokens, got {domain_tokens!r} and {max_tokens!r}")
    allowed = candidates[
        (candidates > 0) & (candidates <= 1) & (domain_tokens / np.maximum(candidates, 1e-12) <= max_tokens)
    ]
    if allowed.size == 0:
        raise ValueError(f"no candidate ratio in {candidates.tolist()} keeps D_dom / r within max_tokens")
    L_domain = domain.predict(N, domain_tokens / allowed, allowed)
    i = int(np.argmin(L_domain))
    return Choice(float(allowed[i]), float("nan"), float(L_domain[i]), True)
