"""The D-CPT experiment: fit the law to one independent grid, score it against law-free baselines, choose a ratio.

`run(config, seed=s)` reads grid seed s (committed for the book's and the calibration seeds, built
on demand for any other) and never trains a language model: it fits laws. Three held-out splits
test the law where it is used: **ratio** (three interior ratios held out, drawn per seed),
**model** (the largest model held out) and **late** (checkpoints past half the tokens held out).
On each, four predictors are fitted to the rest (or read it) and scored by the RMSE of the
held-out domain loss in bits per character: the D-CPT Law, the same law without its r–D
interaction, per-ratio Chinchilla laws interpolated in r, and a **law-free** predictor that only
reads measured neighbours (linear interpolation between the measured neighbouring ratios; the
second-largest model's curve shifted by the gap between the two general models' start losses;
the last fitted checkpoint carried forward). The grid's **checkpoint noise** (from second
differences along each curve) is the yardstick beside them.

The **extrapolation in r** (`ratio_extrapolation`) is the law's use as a mixture law: fitted on
every run at r ≤ `fit_ratio_max`, it predicts every run above, against the nearest fitted ratio,
the line in r through the two highest fitted ratios, and per-ratio Chinchilla laws (which give
the nearest fitted ratio's law beyond the fitted ratios); a validation extrapolation inside the
fitted runs is reported for the alternatives.

The **decision** fits the law to a cheap part of the grid (the three smaller models at five
ratios) and picks the domain ratio for the largest model at the last D that keeps its general
loss within (1 + T) of the same model continued on general text alone (the r = 0 run, so the
limit measures forgetting, not the general model's under-training). Law-free policies decide
from measurements: a grid search on the second-largest model, the largest ratio that was
feasible in the cheap runs, always pure domain text. Each choice is scored on the grid by its
**decision loss**: the domain loss it forgoes against the best feasible ratio plus the general
loss it exceeds the limit by, both in bits per character.

The **boundaries** (CLAIMS.md §7) move the held-out runs away from the fitted range along one
axis at a time: in r (`ratio_extrapolation_delta`: inside the fitted ratios, then the r = 1 runs
fitted on ever fewer ratios), in D (`extrapolation_delta`: each run's last checkpoint fitted on
ever fewer first checkpoints) and in N (`size_extrapolation_delta`: a size inside the fitted
ones, then the largest fitted on ever fewer smaller ones), each scoring the law against the
axis's law-free predictor and against the law without its interaction term.

The test split of every question is the held-out points (or, for the decision, the largest
model's runs); every choice (the strongest baseline, T, the margins) was made on the
calibration grids, seeds 1000 and up (see `claims`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from toyscale.core.boundary import Boundary, sweep
from toyscale.core.seeding import rng
from toyscale.llm.dcpt.grid import Grid, GridConfig, load_grid
from toyscale.llm.dcpt.law import HUBER_DELTA, Law, PerRatioLaw, choose_ratio, fit_law, fit_per_ratio, r_squared

SPLITS = ("ratio", "model", "late")
SPLIT_NAMES = {
    "ratio": "held-out ratios",
    "model": "held-out largest model",
    "late": "held-out later D",
}
ARMS = ("dcpt", "no_interaction", "per_ratio", "law_free")
LAWS = ("dcpt", "no_interaction", "per_ratio")  # the arms that fit a law
ARM_LABELS = {
    "dcpt": "D-CPT Law",
    "no_interaction": "no r–D interaction",
    "per_ratio": "per-ratio Chinchilla, interpolated",
    "law_free": "law-free",
}
LAW_FREE_LABELS = {
    "ratio": "neighbour interpolation in r",
    "model": "second-largest model, shifted",
    "late": "last checkpoint carried forward",
}
#: The decision's policies: the law, and the law-free ones it competes with.
POLICIES = ("law", "small_grid", "cheap_largest", "always_domain", "always_general")
POLICY_LABELS = {
    "law": "D-CPT Law (3 smaller sizes, 5 ratios)",
    "small_grid": "grid search on the second-largest model (9 ratios)",
    "cheap_largest": "largest ratio feasible in the cheap runs",
    "always_domain": "always r = 1 (pure domain text)",
    "always_general": "always r = 0 (general text only)",
}
BASELINE_POLICIES = POLICIES[1:]
#: The extrapolation in r (`ratio_extrapolation`): the law and its alternatives, each predicting the ratios above
#: the fitted ones from the same runs.
EXTRAPOLATION_ARMS = ("dcpt", "nearest", "linear", "per_ratio")
EXTRAPOLATION_LABELS = {
    "dcpt": "D-CPT Law",
    "nearest": "nearest fitted ratio",
    "linear": "linear in r",
    "per_ratio": "per-ratio Chinchilla",
}
#: What the D-CPT arm fits: the law, or a falsifier's change (claims.FALSIFIERS): the law blind to r, without its
#: interaction, or an alternative of the extrapolation in r (or the per-ratio laws) under the law's name.
METHODS = ("dcpt", "r_blind", "no_interaction", "per_ratio", "nearest", "linear")
#: The methods that are no law: they predict the extrapolation in r only.
READERS = ("nearest", "linear")


@dataclass(frozen=True)
class Config:
    """Toy defaults for the D-CPT experiment (the grids are trained by `grid`; see `GridConfig`)."""

    grid: GridConfig = field(default_factory=GridConfig)  # the settings every grid seed is made with
    held_out_ratios: int = 3  # interior ratios (not 0 or 1) held out in the "ratio" split, drawn per seed
    late_fraction: float = 0.5  # the "late" split fits on D ≤ this share of the largest D, tests on the rest
    starts: int = 8  # random starts of every L-BFGS fit (each screened for 20 iterations)
    refine: int = 2  # the best screened starts, run to convergence
    max_iter: int = 200  # L-BFGS iterations at most per refined start
    huber_delta: float = HUBER_DELTA  # Huber's δ on residuals of log loss
    tolerance: float = 0.05  # T: the chosen ratio's general loss may exceed the r = 0 run's by a factor (1 + T)
    decision_ratios: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)  # ratios the cheap runs for the decision train
    # the extrapolation in r (claims.EXTRAPOLATION_REGIME): fit every run at r ≤ this ratio, predict every higher one
    fit_ratio_max: float = 0.5
    extrapolation: bool = True  # score the extrapolation in r (`ratio_extrapolation`)
    decision: bool = True  # make and score the decision (a falsifier of a prediction claim skips it)
    general_fits: bool = True  # also fit the D-CPT Law to the general loss of each split (figures, no claim)
    control: bool = True  # also score the negative control: one checkpoint beyond the fitted range
    method: str = "dcpt"  # what the D-CPT arm fits; a falsifier puts the law blind to r, or without its interaction
    arms: tuple[str, ...] = ARMS  # the predictors to fit (a falsifier fits only those its claims read)
    splits: tuple[str, ...] = SPLITS  # the held-out splits to score (likewise)

    def __post_init__(self) -> None:
        if not isinstance(self.grid, GridConfig):
            raise TypeError(f"grid must be a GridConfig, got {type(self.grid).__name__}")
        interior = [r for r in self.grid.ratios if 0 < r < 1]
        most = (len(interior) + 1) // 2  # non-adjacent interior ratios
        if not isinstance(self.held_out_ratios, int) or not 1 <= self.held_out_ratios <= most:
            raise ValueError(f"held_out_ratios must be an int in [1, {most}], got {self.held_out_ratios!r}")
        if not 0 < self.late_fraction < 1:
            raise ValueError(f"late_fraction must lie in (0, 1), got {self.late_fraction!r}")
        for name in ("starts", "refine", "max_iter"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive int, got {getattr(self, name)!r}")
        if self.refine > self.starts:
            raise ValueError(f"refine ({self.refine}) must be at most starts ({self.starts})")
        if not self.huber_delta > 0:
            raise ValueError(f"huber_delta must be > 0, got {self.huber_delta!r}")
        if not self.tolerance >= 0:
            raise ValueError(f"tolerance must be >= 0, got {self.tolerance!r}")
        unknown = [r for r in self.decision_ratios if r not in self.grid.ratios]
        if len(self.decision_ratios) < 3 or unknown or 0.0 not in self.decision_ratios:
            raise ValueError(
                f"decision_ratios must be at least 3 of the grid's ratios {self.grid.ratios}, r = 0 among them, "
                f"got {self.decision_ratios}"
            )
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if any(split not in SPLITS for split in self.splits) or not (self.splits or self.extrapolation):
            raise ValueError(f"splits must be a subset of {SPLITS}, non-empty without extrapolation, got {self.splits}")
        fitted = [r for r in self.grid.ratios if r <= self.fit_ratio_max]
        if len(fitted) < 4 or len(fitted) == len(self.grid.ratios):
            raise ValueError(
                f"fit_ratio_max must leave at least 4 of the ratios {self.grid.ratios} fitted and one above, "
                f"got {self.fit_ratio_max!r}"
            )
        if self.method in READERS and (self.splits or self.control or self.decision or self.general_fits):
            raise ValueError(
                f"method {self.method!r} reads measured ratios and predicts only the extrapolation in r: "
                "use it with splits=(), control=False, decision=False and general_fits=False"
            )
        if "dcpt" not in self.arms or any(arm not in ARMS for arm in self.arms):
            raise ValueError(f"arms must be a subset of {ARMS} holding 'dcpt', got {self.arms}")

    @classmethod
    def fast(cls) -> Config:
        """Half the starts, one refined, no general-loss fits: for tests, about twice as fast."""
        return cls(starts=4, refine=1, general_fits=False)


@dataclass
class Result:
    """Everything one run measured.

    metrics[arm][metric] for the arms of `ARMS`: `rmse_<split>` and `r2_<split>` of the held-out
    domain loss (for 'dcpt' with general fits also `r2_general_<split>`); metrics['decision']: per
    policy its `<policy>_ratio`, `_regret`, `_excess` and `_loss` (the decision loss), and
    `<policy>_compute` (compute of its runs against a grid search at the largest size);
    metrics['grid']: `checkpoint_noise`; metrics['control']: the D-CPT Law and carry-forward one
    checkpoint beyond the fitted range. held_out[split]: the held-out points and every arm's
    predictions; curves: the largest model's losses against D per ratio with the laws of the
    "model" split; choice: the decision's predicted and measured losses against r.
    """

    config: Config
    seed: int
    held_out_ratios: list[float]
    metrics: dict[str, dict[str, float]]
    held_out: dict[str, dict] = field(default_factory=dict)
    curves: dict = field(default_factory=dict)
    choice: dict = field(default_factory=dict)
    laws: dict[str, Law] = field(default_factory=dict)


def held_out_ratio_draw(ratios: Sequence[float], k: int, seed: int) -> list[float]:
    """k interior ratios drawn at random, no two of them neighbours on the grid.

    Every held-out ratio keeps both its neighbours among the fitted ones, so the split tests
    interpolation between measured ratios (0 and 1 are always fitted).
    """
    ordered = sorted(ratios)
    interior = list(range(1, len(ordered) - 1))
    generator = rng(seed)
    for _ in range(1000):
        picked = sorted(int(i) for i in generator.choice(interior, size=k, replace=False))
        if all(b - a > 1 for a, b in itertools.pairwise(picked)):
            return [float(ordered[i]) for i in picked]
    raise ValueError(f"cannot hold out {k} non-adjacent interior ratios of {len(ordered)}")


def split_masks(grid: Grid, held_out_ratios: Sequence[float], late_fraction: float) -> dict[str, np.ndarray]:
    """Per split, a boolean mask of the *held-out* points (the rest is fitted on)."""
    return {
        "ratio": np.isin(grid.r, np.asarray(held_out_ratios)),
        "model": np.equal(grid.N, grid.N.max()),
        "late": np.greater(grid.D, late_fraction * grid.D.max()),
    }


def _points(grid: Grid, mask: np.ndarray, loss: str) -> dict[str, np.ndarray]:
    """The fit's points: the domain loss with the domain ratio, or the general loss with the general ratio 1 − r."""
    r = grid.r[mask] if loss == "domain" else 1.0 - grid.r[mask]
    return {"N": grid.N[mask], "D": grid.D[mask], "r": r, "L": getattr(grid, f"L_{loss}")[mask]}


def fit_arm(form: str, points: dict[str, np.ndarray], config: Config, seed: int) -> Law | PerRatioLaw:
    """Fit one law ('dcpt', 'no_interaction', 'chinchilla' pooled over r, or 'per_ratio') with the config's settings."""
    settings = dict(starts=config.starts, seed=seed, max_iter=config.max_iter, delta=config.huber_delta)
    if form == "per_ratio":
        return fit_per_ratio(points, **settings)
    if form not in ("dcpt", "no_interaction", "chinchilla"):
        raise ValueError(f"form must be 'dcpt', 'no_interaction', 'chinchilla' or 'per_ratio', got {form!r}")
    return fit_law(points, form=form, refine=config.refine, **settings)


def _law_form(config: Config) -> str:
    """The form the D-CPT arm fits: the law, or (falsifiers) the law blind to r, without its interaction, or the
    per-ratio laws."""
    forms = {"dcpt": "dcpt", "r_blind": "chinchilla", "no_interaction": "no_interaction", "per_ratio": "per_ratio"}
    if config.method not in forms:
        raise ValueError(f"method {config.method!r} fits no law")
    return forms[config.method]


# ---------------------------------------------------------------------------------------------
# Law-free predictors: they read measured neighbours and fit nothing
# ---------------------------------------------------------------------------------------------


def _curve_key(grid: Grid) -> np.ndarray:
    """One integer per (size, ratio) run: the curve a point belongs to."""
    ratio_index = np.searchsorted(np.asarray(grid.config.ratios), grid.r)
    return grid.size * 1000 + ratio_index


def neighbour_interpolation(grid: Grid, fitted: np.ndarray, held_out: np.ndarray, loss: str = "domain") -> np.ndarray:
    """At each held-out point (N, D, r): the measured losses of the nearest fitted ratios below and above, at
    the same N and checkpoint, interpolated linearly in r (the nearest one's beyond the fitted ratios)."""
    L = getattr(grid, f"L_{loss}")
    out = np.empty(int(held_out.sum()))
    for i, j in enumerate(np.flatnonzero(held_out)):
        same = fitted & np.equal(grid.N, grid.N[j]) & np.equal(grid.step, grid.step[j])
        order = np.argsort(grid.r[same])
        out[i] = np.interp(grid.r[j], grid.r[same][order], L[same][order])
    return out


def carry_forward(grid: Grid, fitted: np.ndarray, held_out: np.ndarray, loss: str = "domain") -> np.ndarray:
    """At each held-out point: the measured loss of the same run at its last fitted checkpoint."""
    L, key = getattr(grid, f"L_{loss}"), _curve_key(grid)
    out = np.empty(int(held_out.sum()))
    for i, j in enumerate(np.flatnonzero(held_out)):
        same = fitted & np.equal(key, key[j])
        out[i] = L[same][np.argmax(grid.D[same])]
    return out


def shifted_curve(grid: Grid, held_out: np.ndarray, loss: str = "domain", source: float | None = None) -> np.ndarray:
    """At each held-out point: the measured loss of the model of size `source` (default the second-largest) at
    the same D and r, shifted by the gap between the two models' losses before continual pre-training (known:
    the general models exist before any CPT run)."""
    second = float(np.unique(grid.N)[-2]) if source is None else float(source)
    start = dict(zip(grid.start_N.tolist(), getattr(grid, f"start_L_{loss}").tolist(), strict=True))
    L = getattr(grid, f"L_{loss}")
    out = np.empty(int(held_out.sum()))
    for i, j in enumerate(np.flatnonzero(held_out)):
        same = np.equal(grid.N, second) & np.equal(grid.r, grid.r[j]) & np.equal(grid.step, grid.step[j])
        out[i] = L[same][0] + start[float(grid.N[j])] - start[float(second)]
    return out


def law_free(split: str, grid: Grid, held_out: np.ndarray) -> np.ndarray:
    """The law-free predictor of a split (`LAW_FREE_LABELS`) at its held-out points."""
    if split == "ratio":
        return neighbour_interpolation(grid, ~held_out, held_out)
    if split == "model":
        return shifted_curve(grid, held_out)
    if split == "late":
        return carry_forward(grid, ~held_out, held_out)
    raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


def linear_in_r(grid: Grid, fitted: np.ndarray, held_out: np.ndarray, loss: str = "domain") -> np.ndarray:
    """At each held-out point: the line through the measured losses of the two highest fitted ratios at the same
    N and checkpoint, extended to the point's ratio (the law-free extrapolation in r that follows the slope)."""
    L = getattr(grid, f"L_{loss}")
    out = np.empty(int(held_out.sum()))
    for i, j in enumerate(np.flatnonzero(held_out)):
        same = fitted & np.equal(grid.N, grid.N[j]) & np.equal(grid.step, grid.step[j])
        order = np.argsort(grid.r[same])
        (r1, r2), (l1, l2) = grid.r[same][order][-2:], L[same][order][-2:]
        out[i] = l2 + (grid.r[j] - r2) * (l2 - l1) / (r2 - r1)
    return out


def rmse(y: np.ndarray, y_hat: np.ndarray) -> float:
    """Root mean squared error, in the losses' unit (bits per character)."""
    y, y_hat = np.asarray(y, dtype=np.float64), np.asarray(y_hat, dtype=np.float64)
    if y.shape != y_hat.shape or y.size == 0:
        raise ValueError(f"y and y_hat need the same non-empty shape, got {y.shape} and {y_hat.shape}")
    return float(np.sqrt(np.mean((y - y_hat) ** 2)))


def checkpoint_noise(grid: Grid, loss: str = "domain") -> float:
    """The noise of one measurement: σ̂ = sqrt(mean(Δ²L)² / 6) over every run's second differences along D.

    For a curve that is locally straight, L_{k−1} − 2L_k + L_{k+1} has variance 6σ² when each
    checkpoint carries independent noise of variance σ² (a curve that bends adds to it, so this
    is an upper bound).
    """
    L, key = getattr(grid, f"L_{loss}"), _curve_key(grid)
    seconds = []
    for k in np.unique(key):
        rows = np.flatnonzero(key == k)
        curve = L[rows][np.argsort(grid.D[rows])]
        seconds.append(curve[:-2] - 2 * curve[1:-1] + curve[2:])
    return float(np.sqrt(np.mean(np.concatenate(seconds) ** 2) / 6))


# ---------------------------------------------------------------------------------------------
# Held-out prediction
# ---------------------------------------------------------------------------------------------


def predictions(split: str, grid: Grid, held_out: np.ndarray, config: Config, seed: int) -> dict:
    """Every arm's prediction of the held-out domain loss of one split, fitted on (or reading) the rest.

    The 'dcpt' arm fits `config.method`'s form (the law, or a falsifier's change).
    """
    fit_points, test = _points(grid, ~held_out, "domain"), _points(grid, held_out, "domain")
    out: dict = {}
    laws: dict[str, Law | PerRatioLaw] = {}
    for arm in ARMS:
        if arm not in config.arms:
            continue
        if arm == "law_free":
            out[arm] = law_free(split, grid, held_out)
            continue
        form = _law_form(config) if arm == "dcpt" else arm
        law = fit_arm(form, fit_points, config, seed)
        laws[arm] = law
        out[arm] = law.predict(test["N"], test["D"], test["r"])
    return {"points": test, "predicted": out, "laws": laws}


def _extrapolated(arm: str, grid: Grid, fitted: np.ndarray, held_out: np.ndarray, config: Config, seed: int):
    """One arm's prediction of the held-out domain loss in the extrapolation in r, from the fitted runs."""
    if arm == "nearest":
        return neighbour_interpolation(grid, fitted, held_out)
    if arm == "linear":
        return linear_in_r(grid, fitted, held_out)
    test = _points(grid, held_out, "domain")
    law = fit_arm(arm, _points(grid, fitted, "domain"), config, seed)
    return law.predict(test["N"], test["D"], test["r"])


def extrapolation_masks(grid: Grid, fit_ratio_max: float) -> dict[str, np.ndarray]:
    """The extrapolation in r's fitted and held-out runs, and its validation inside the fitted runs.

    fit: every run at r ≤ fit_ratio_max; test: every run above; val_fit / val_test: the same split inside
    the fitted runs (their lower half of ratios fitted, at least three, the upper half predicted), so that an
    alternative is picked from the fitted runs alone, on an extrapolation of the same kind.
    """
    fitted_ratios = sorted(q for q in grid.config.ratios if q <= fit_ratio_max)
    lower = fitted_ratios[: max(3, (len(fitted_ratios) + 1) // 2)]
    if len(lower) == len(fitted_ratios):
        raise ValueError(f"fit_ratio_max = {fit_ratio_max} leaves too few fitted ratios to validate on")
    return {
        "fit": np.less_equal(grid.r, fit_ratio_max),
        "test": np.greater(grid.r, fit_ratio_max),
        "val_fit": np.less_equal(grid.r, lower[-1]) & np.less_equal(grid.r, fit_ratio_max),
        "val_test": np.greater(grid.r, lower[-1]) & np.less_equal(grid.r, fit_ratio_max),
    }


def ratio_extrapolation(grid: Grid, config: Config, seed: int) -> dict[str, dict[str, float]]:
    """Fit every run at r ≤ `config.fit_ratio_max`, predict every run above it: each arm's RMSE (bits/char).

    Per arm of `EXTRAPOLATION_ARMS`: `rmse_extrapolated` on the held-out higher ratios, and for the
    alternatives `val_rmse_extrapolated`, the same extrapolation one grid step lower inside the fitted
    runs, which picks the strongest alternative per seed. The 'dcpt' arm fits `config.method`'s form, or
    (a falsifier) reads the measured ratios as an alternative does.
    """
    masks = extrapolation_masks(grid, config.fit_ratio_max)
    actual, val_actual = grid.L_domain[masks["test"]], grid.L_domain[masks["val_test"]]
    out: dict[str, dict[str, float]] = {}
    for arm in EXTRAPOLATION_ARMS:
        how = arm
        if arm == "dcpt":
            how = config.method if config.method in READERS else _law_form(config)
        predicted = _extrapolated(how, grid, masks["fit"], masks["test"], config, seed)
        out[arm] = {"rmse_extrapolated": rmse(actual, predicted)}
        if arm != "dcpt":
            val = _extrapolated(how, grid, masks["val_fit"], masks["val_test"], config, seed)
            out[arm]["val_rmse_extrapolated"] = rmse(val_actual, val)
    return out


def extrapolation_delta(
    grid: Grid, checkpoints: int, config: Config, seed: int, *, interaction: bool = False, per_ratio: bool = False
) -> dict[str, float]:
    """Fit on each run's first `checkpoints` checkpoints, predict its last: RMSE of carry-forward and of the law.

    The boundary of the "late" question: the law's D-term is only needed when the held-out point
    lies beyond the fitted range, and carrying the last fitted checkpoint forward is what a
    practitioner does without it. One checkpoint short of the last is the negative control.
    """
    last = int(grid.step.max())
    step = grid.config.eval_every
    if not 1 < checkpoints < last // step:
        raise ValueError(f"checkpoints must lie in [2, {last // step - 1}], got {checkpoints!r}")
    fitted, held_out = grid.step <= checkpoints * step, np.equal(grid.step, last)
    free = carry_forward(grid, fitted, held_out)
    return _scored(grid, fitted, held_out, free, config, seed, interaction, per_ratio)


def ratio_extrapolation_delta(grid: Grid, steps_out: int, config: Config, seed: int) -> dict[str, float]:
    """How far in r the held-out runs lie from the fitted ratios: RMSE of the law, of neighbour interpolation (the
    nearest fitted ratio beyond them), of the line in r through the two highest fitted ratios (`linear_delta`;
    neighbour interpolation at distance 0) and of the per-ratio laws.

    `steps_out` = 0 is the "ratio" split (held-out interior ratios, each between two fitted ones);
    `steps_out` = k > 0 fits the ratios up to the k-th below r = 1 (every size, every checkpoint)
    and predicts the r = 1 runs, k grid steps of r beyond the fitted range, where neighbour
    interpolation reads the nearest fitted ratio.
    """
    ratios = sorted(grid.config.ratios)
    if not isinstance(steps_out, int) or not 0 <= steps_out <= len(ratios) - 3:
        raise ValueError(f"steps_out must be an int in [0, {len(ratios) - 3}] (3 ratios fitted), got {steps_out!r}")
    if steps_out == 0:
        held_out = np.isin(grid.r, held_out_ratio_draw(ratios, config.held_out_ratios, seed))
        fitted = ~held_out
    else:
        held_out = np.equal(grid.r, ratios[-1])
        fitted = np.less_equal(grid.r, ratios[-1 - steps_out])
    out = _scored(grid, fitted, held_out, neighbour_interpolation(grid, fitted, held_out), config, seed, per_ratio=True)
    linear = linear_in_r(grid, fitted, held_out) if steps_out else neighbour_interpolation(grid, fitted, held_out)
    out["linear_rmse"] = rmse(grid.L_domain[held_out], linear)
    out["linear_delta"] = out["linear_rmse"] - out["dcpt_rmse"]
    return out


#: The size sweep's fits: (fitted size indices, held-out size index); the first holds out a size inside the range.
SIZE_FITS = (((0, 1, 3), 2), ((0, 1, 2), 3), ((0, 1), 3))


def size_extrapolation_delta(
    grid: Grid, fitted_sizes: Sequence[int], held_size: int, config: Config, seed: int
) -> dict[str, float]:
    """How far in N the held-out model lies from the fitted sizes: RMSE of the law and of a law-free predictor.

    Fit on every run of `fitted_sizes`, predict every run of `held_size`. The law-free predictor
    interpolates the neighbouring fitted sizes in log N when the held-out size lies between two of
    them; beyond the largest, it shifts the largest fitted size's curve by their start-loss gap.
    """
    below = [s for s in fitted_sizes if s < held_size]
    if held_size in fitted_sizes or len(set(fitted_sizes)) < 2 or not below:
        raise ValueError(f"need 2+ fitted sizes, one below the held-out size {held_size}, got {fitted_sizes}")
    fitted, held_out = np.isin(grid.size, np.asarray(fitted_sizes)), np.equal(grid.size, held_size)
    above = [s for s in fitted_sizes if s > held_size]
    if above:
        predicted = size_interpolation(grid, max(below), min(above), held_out)
    else:
        predicted = shifted_curve(grid, held_out, source=float(grid.N[np.equal(grid.size, max(below))][0]))
    return _scored(grid, fitted, held_out, predicted, config, seed, per_ratio=True)


def size_interpolation(grid: Grid, low: int, high: int, held_out: np.ndarray) -> np.ndarray:
    """At each held-out point: the measured domain losses of sizes `low` and `high` at the same D and r,
    interpolated linearly in log N (the law-free predictor of a size inside the fitted range)."""
    log_n = {s: float(np.log(grid.N[np.equal(grid.size, s)][0])) for s in (low, high)}
    out = np.empty(int(held_out.sum()))
    for i, j in enumerate(np.flatnonzero(held_out)):
        ends = []
        for s in (low, high):
            same = np.equal(grid.size, s) & np.equal(grid.r, grid.r[j]) & np.equal(grid.step, grid.step[j])
            ends.append(float(grid.L_domain[same][0]))
        weight = (np.log(grid.N[j]) - log_n[low]) / (log_n[high] - log_n[low])
        out[i] = ends[0] + weight * (ends[1] - ends[0])
    return out


def _scored(
    grid: Grid,
    fitted: np.ndarray,
    held_out: np.ndarray,
    law_free_predicted: np.ndarray,
    config: Config,
    seed: int,
    interaction: bool = True,
    per_ratio: bool = False,
) -> dict[str, float]:
    """The law fitted on `fitted` against a law-free prediction of the `held_out` domain loss (RMSE, bits/char).

    `delta` = law-free − D-CPT; with `interaction`, also the law without its interaction term fitted on the same
    points, `interaction_delta` = no interaction − D-CPT (positive: the law is better); with `per_ratio`, the
    per-ratio Chinchilla laws fitted on the same points, `per_ratio_delta` = per-ratio − D-CPT.
    """
    fit_points, test = _points(grid, fitted, "domain"), _points(grid, held_out, "domain")
    law = fit_arm(_law_form(config), fit_points, config, seed)
    law_rmse = rmse(test["L"], law.predict(test["N"], test["D"], test["r"]))
    free = rmse(test["L"], law_free_predicted)
    out = {"dcpt_rmse": law_rmse, "law_free_rmse": free, "delta": free - law_rmse}
    if interaction:
        plain = fit_arm("no_interaction", fit_points, config, seed)
        out["no_interaction_rmse"] = rmse(test["L"], plain.predict(test["N"], test["D"], test["r"]))
        out["interaction_delta"] = out["no_interaction_rmse"] - law_rmse
    if per_ratio:
        laws = fit_arm("per_ratio", fit_points, config, seed)
        out["per_ratio_rmse"] = rmse(test["L"], laws.predict(test["N"], test["D"], test["r"]))
        out["per_ratio_delta"] = out["per_ratio_rmse"] - law_rmse
    return out


#: What each boundary compares the law with: the law-free predictor, and the law without its interaction term.
BOUNDARY_DELTAS = {
    "law_free": ("delta", "Δ RMSE (law-free − D-CPT), bits/char"),
    "linear": ("linear_delta", "Δ RMSE (linear in r − D-CPT), bits/char"),
    "per_ratio": ("per_ratio_delta", "Δ RMSE (per-ratio Chinchilla − D-CPT), bits/char"),
    "no_interaction": ("interaction_delta", "Δ RMSE (no interaction − D-CPT), bits/char"),
}
#: The comparisons of each axis: the law-free predictor, the per-ratio laws (the strongest alternative on the
#: held-out splits) and the law without its interaction; in r also the line through the two highest fitted ratios.
AXIS_COMPARISONS = {
    "ratio": ("law_free", "linear", "per_ratio", "no_interaction"),
    "tokens": ("law_free", "per_ratio", "no_interaction"),
    "size": ("law_free", "per_ratio", "no_interaction"),
}


def _axis_sweep(
    deltas, points: Sequence[float], seeds: Sequence[int], parameter: str, axis: str
) -> dict[str, Boundary]:
    """Every comparison of one axis (`AXIS_COMPARISONS`) from one set of fits: `deltas(point, seed)` returns
    `_scored`'s dict."""
    found: dict[tuple[float, int], dict[str, float]] = {}

    def read(key: str):
        def delta(point: float, seed: int) -> float:
            if (point, seed) not in found:
                found[point, seed] = deltas(point, seed)
            return found[point, seed][key]

        return delta

    return {
        name: sweep(read(key), points, seeds, parameter=parameter, delta_name=label)
        for name, (key, label) in BOUNDARY_DELTAS.items()
        if name in AXIS_COMPARISONS[axis]
    }


def ratio_boundary(config: Config, steps_out: Sequence[int], seeds: Sequence[int]) -> dict[str, Boundary]:
    """The boundaries in r against the held-out ratio's distance Δr from the fitted ratios (0: inside, between
    two fitted ones): the law against neighbour interpolation, and against the law without its interaction."""
    step = 1.0 / (len(config.grid.ratios) - 1)
    grids = {seed: load_grid(seed, config.grid) for seed in seeds}
    by_distance = {k * step: k for k in steps_out}
    return _axis_sweep(
        lambda distance, seed: ratio_extrapolation_delta(grids[seed], by_distance[distance], config, seed),
        list(by_distance),
        seeds,
        "distance Δr of the held-out ratio from the fitted ratios",
        "ratio",
    )


def size_boundary(config: Config, seeds: Sequence[int], fits: Sequence = SIZE_FITS) -> dict[str, Boundary]:
    """The boundaries in N against N of the held-out model over the largest fitted N (below 1: inside the fitted
    sizes): the law against the law-free predictor, and against the law without its interaction."""
    grids = {seed: load_grid(seed, config.grid) for seed in seeds}
    n_params = config.grid.n_params
    by_factor = {n_params[held] / max(n_params[s] for s in fitted): (fitted, held) for fitted, held in fits}
    return _axis_sweep(
        lambda factor, seed: size_extrapolation_delta(grids[seed], *by_factor[factor], config, seed),
        list(by_factor),
        seeds,
        "N of the held-out model over the largest fitted N",
        "size",
    )


def extrapolation_boundary(config: Config, checkpoints: Sequence[int], seeds: Sequence[int]) -> dict[str, Boundary]:
    """The boundaries in D against the extrapolation factor D_last / D_k (point k fits every run's first k
    checkpoints and predicts its last): the law against carry-forward, and against the law without its
    interaction. One checkpoint short of the last there is nothing to extrapolate (the negative control,
    `extrapolation_delta` in `run`)."""
    n = config.grid.cpt_steps // config.grid.eval_every
    grids = {seed: load_grid(seed, config.grid) for seed in seeds}
    by_factor = {n / k: k for k in checkpoints}
    return _axis_sweep(
        lambda factor, seed: extrapolation_delta(
            grids[seed], by_factor[factor], config, seed, interaction=True, per_ratio=True
        ),
        list(by_factor),
        seeds,
        "extrapolation factor D_last / D_fit",
        "tokens",
    )


# ---------------------------------------------------------------------------------------------
# The decision
# ---------------------------------------------------------------------------------------------


def _final(grid: Grid, N: float, loss: str) -> np.ndarray:
    """The grid's loss at the last checkpoint of size N, one value per ratio (in ratio order)."""
    rows = np.equal(grid.N, N) & np.equal(grid.D, grid.D.max())
    order = np.argsort(grid.r[rows])
    return getattr(grid, f"L_{loss}")[rows][order]


def general_drift(grid: Grid) -> list[float]:
    """Per size, in size order: how far general-only CPT moves the general model's loss, as a share of it.

    L_general of the r = 0 run at the last D over the general model's loss before CPT, minus 1: about 0 for
    a converged base model (the paper's premise, `claims.BASE_REGIME`), clearly negative for one that
    general text still teaches.
    """
    out = []
    for size, start in enumerate(grid.start_L_general):
        rows = np.equal(grid.size, size) & np.equal(grid.r, min(grid.config.ratios)) & np.equal(grid.D, grid.D.max())
        out.append(float(grid.L_general[rows][0] / start - 1.0))
    return out


def limit(grid: Grid, N: float, tolerance: float) -> float:
    """The general-loss limit of size N at the last D: (1 + T) times the general loss of its r = 0 run.

    The r = 0 run continues the general model on general text alone for the same tokens, so a
    ratio within the limit forgets at most T of what continued general training would give.
    """
    ratios = np.asarray(grid.config.ratios)
    return float((1.0 + tolerance) * _final(grid, N, "general")[int(np.argmin(ratios))])


def _best_feasible(grid: Grid, N: float, tolerance: float, allowed: np.ndarray | None = None) -> int:
    """Index of the ratio with the lowest measured domain loss among those within the limit (r = 0 always is)."""
    feasible = _final(grid, N, "general") <= limit(grid, N, tolerance)
    if allowed is not None:
        feasible &= allowed
    return int(np.argmin(np.where(feasible, _final(grid, N, "domain"), np.inf)))


def decision(grid: Grid, config: Config, seed: int) -> tuple[dict, dict, dict]:
    """Choose the domain ratio for the largest model at the last D, by the law and by law-free policies; score each.

    The law's cheap runs: every size but the largest, at `decision_ratios`, every checkpoint. It
    picks r* = argmin L̂_domain(N, D, r) subject to L̂_general(N, D, 1 − r) ≤ (1 + T)·L̂_general(N, D, 1),
    the last being its own prediction of the r = 0 run. Each policy is scored on the largest
    model's measured losses: regret = L_domain(r) − L_domain(best feasible r), excess = L_general(r)
    − limit, and the decision loss max(regret, 0) + max(excess, 0) (bits per character).
    """
    sizes = np.unique(grid.N)
    N_max, second, D_final = sizes[-1], sizes[-2], grid.D.max()
    ratios = np.asarray(grid.config.ratios)
    cheap = np.less(grid.N, N_max) & np.isin(grid.r, np.asarray(config.decision_ratios))
    form = _law_form(config)
    general = fit_arm(form, _points(grid, cheap, "general"), config, seed)
    domain = fit_arm(form, _points(grid, cheap, "domain"), config, seed)
    reference = float(general.predict(N_max, D_final, 1.0)[0])
    chosen = choose_ratio(general, domain, N_max, D_final, reference, config.tolerance, ratios)
    in_cheap = np.isin(ratios, np.asarray(config.decision_ratios))
    cheap_feasible = (_final(grid, second, "general") <= limit(grid, second, config.tolerance)) & in_cheap
    picks = {
        "law": int(np.argmin(np.abs(ratios - chosen.ratio))),
        "small_grid": _best_feasible(grid, second, config.tolerance),
        "cheap_largest": int(np.flatnonzero(cheap_feasible).max()),
        "always_domain": int(np.argmax(ratios)),
        "always_general": int(np.argmin(ratios)),
    }
    L_general, L_domain = _final(grid, N_max, "general"), _final(grid, N_max, "domain")
    bound = limit(grid, N_max, config.tolerance)
    best = _best_feasible(grid, N_max, config.tolerance)
    # compute ∝ N·D of each policy's runs, against a grid search of every ratio at the largest size
    full = float(N_max * len(ratios))
    compute = {
        "law": float(np.sum(sizes[:-1]) * len(config.decision_ratios)) / full,
        "small_grid": float(second * len(ratios)) / full,
        "cheap_largest": float(second * len(config.decision_ratios)) / full,
        "always_domain": 0.0,
        "always_general": 0.0,
    }
    start = float(grid.start_L_general[np.argmax(grid.start_N)])
    metrics: dict[str, float] = {"best_ratio": float(ratios[best]), "limit": bound, "start_general": start}
    for policy, i in picks.items():
        regret, excess = float(L_domain[i] - L_domain[best]), float(L_general[i] - bound)
        metrics[f"{policy}_ratio"] = float(ratios[i])
        metrics[f"{policy}_regret"] = regret
        metrics[f"{policy}_excess"] = excess
        metrics[f"{policy}_loss"] = max(regret, 0.0) + max(excess, 0.0)
        metrics[f"{policy}_compute"] = compute[policy]
    r_line = np.linspace(0.0, 1.0, 101)
    choice = {
        "r": r_line,
        "predicted_general": general.predict(N_max, D_final, 1.0 - r_line),
        "predicted_domain": domain.predict(N_max, D_final, r_line),
        "predicted_limit": (1.0 + config.tolerance) * reference,
        "grid_r": ratios,
        "actual_general": L_general,
        "actual_domain": L_domain,
        "limit": bound,
        "start_general": start,
        "picks": {policy: float(ratios[i]) for policy, i in picks.items()},
        "best": float(ratios[best]),
        "N": float(N_max),
        "D": float(D_final),
    }
    return metrics, choice, {"decision_general": general, "decision_domain": domain}


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------


def run(config: Config | None = None, *, seed: int = 0) -> Result:
    """Fit the law and its baselines on three held-out splits of grid `seed` and extrapolate it in r, then make
    the decision (each part as `config` asks)."""
    config = config or Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a dcpt.Config, got {type(config).__name__}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    grid = load_grid(seed, config.grid)
    held_ratios = held_out_ratio_draw(config.grid.ratios, config.held_out_ratios, seed)
    masks = split_masks(grid, held_ratios, config.late_fraction)

    metrics: dict[str, dict[str, float]] = {arm: {} for arm in config.arms}
    held_out: dict[str, dict] = {}
    laws: dict[str, Law] = {}
    for split in config.splits:
        found = predictions(split, grid, masks[split], config, seed)
        actual = found["points"]["L"]
        for arm, predicted in found["predicted"].items():
            metrics.setdefault(arm, {})[f"rmse_{split}"] = rmse(actual, predicted)
            metrics[arm][f"r2_{split}"] = r_squared(actual, predicted)
        laws.update({f"{arm}_{split}": law for arm, law in found["laws"].items() if isinstance(law, Law)})
        held_out[split] = {**found["points"], "predicted": found["predicted"]}
        if config.general_fits:
            general_fit, general_test = _points(grid, ~masks[split], "general"), _points(grid, masks[split], "general")
            law = fit_arm("dcpt", general_fit, config, seed)
            laws[f"dcpt_general_{split}"] = law
            predicted = law.predict(general_test["N"], general_test["D"], general_test["r"])
            metrics["dcpt"][f"r2_general_{split}"] = r_squared(general_test["L"], predicted)
            metrics["dcpt"][f"rmse_general_{split}"] = rmse(general_test["L"], predicted)
            held_out[split]["general"] = {"L": general_test["L"], "predicted": predicted}
    metrics["grid"] = {"checkpoint_noise": checkpoint_noise(grid), "general_noise": checkpoint_noise(grid, "general")}
    metrics["grid"].update({f"drift_{i}": d for i, d in enumerate(general_drift(grid))})
    if config.control:
        metrics["control"] = extrapolation_delta(grid, int(grid.step.max()) // config.grid.eval_every - 1, config, seed)
    if config.extrapolation:
        for arm, found in ratio_extrapolation(grid, config, seed).items():
            metrics.setdefault(arm, {}).update(found)
    choice: dict = {}
    if config.decision:
        metrics["decision"], choice, decision_laws = decision(grid, config, seed)
        laws.update(decision_laws)
    curves = _curves(grid, laws, config) if "dcpt_model" in laws else {}
    return Result(config, seed, held_ratios, metrics, held_out, curves, choice, laws)


def _curves(grid: Grid, laws: dict[str, Law], config: Config) -> dict:
    """The largest model's losses against D per ratio, and the "model"-split laws' predictions for it."""
    N_max = grid.N.max()
    D_line = np.geomspace(grid.D.min(), grid.D.max(), 60)
    out: dict = {"N": float(N_max), "ratios": list(config.grid.ratios), "D": {}, "domain": {}, "general": {}}
    out["D_line"] = D_line
    out["law_domain"], out["law_general"] = {}, {}
    for q in config.grid.ratios:
        rows = np.equal(grid.N, N_max) & (grid.r == q)
        order = np.argsort(grid.D[rows])
        out["D"][q] = grid.D[rows][order]
        out["domain"][q] = grid.L_domain[rows][order]
        out["general"][q] = grid.L_general[rows][order]
        out["law_domain"][q] = laws["dcpt_model"].predict(N_max, D_line, q)
        if "dcpt_general_model" in laws:
            out["law_general"][q] = laws["dcpt_general_model"].predict(N_max, D_line, 1.0 - q)
    return out
