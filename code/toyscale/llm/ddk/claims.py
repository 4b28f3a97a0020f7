"""DDK's claims, their margins (set on calibration seeds), and the falsifiers under which they must fail.

Every DDK effect is judged against the baselines a practitioner would use instead: plain KD on the
uniform mix, and the static first mixture (DDK's own first, smoothed r, kept for the whole run).
CPT, continued pretraining without a teacher, is shown beside them (distillation's own gain), but no
claim credits DDK with it. That the teacher beats the student is a premise of the toy world, asserted
in the tests and the notebook, not a claim.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from toyscale.core import BASELINE_IN_PLACE, MECHANISM_OFF, Claim, Falsifier, Verdict, all_of, paired, vanishes
from toyscale.core.claims import per_seed

from .experiment import Result

# Margins and win rules from calibration seeds 1000–1003 and 1006–1009 of the default configuration (one default
# run takes over 30 s of a core, and the shared machine's time ran out before 1004, 1005, 1010 and 1011 were run:
# 8 seeds, not 12 or 20); the record: calibration/default.json beside this module. "q05" / "q95": the 5th / 95th
# percentile of the means over five-seed windows of those seeds. Each effect also needs wins on 4 of 5 seeds.
WORST_KD_MARGIN = 0.2  # method q05 0.243 > 0.2 > static_as_ddk q95 0.180, shuffled_gaps q95 0.074
WORST_STATIC_MARGIN = 0.05  # method q05 0.075 > 0.05 > static_as_ddk's 0 (the same arm twice)
CONTROL_BAND = 0.04  # equal-gaps window means q05–q95 [−0.019, −0.003]: ±0.04 passes every window
R_CHANGE_MARGIN = 0.02  # a mechanism: method q05 0.039, by construction of Eq. 2
# The mean-ratio comparisons use margin 0 with the 4-of-5 win rule; even so none passes 95 % of windows (KD 0.64,
# static 0.29, smoothing 0.64), so each is expected=False
KD_MARGIN = 0.0
STATIC_MARGIN = 0.0
SMOOTHING_MARGIN = 0.0


def _lower(results: Sequence[Result], method: str, baseline: str, metric: str, margin: float, what: str) -> Verdict:
    """`method` beats `baseline` on a lower-is-better metric, paired by seed: Δ = baseline − method."""
    return paired(
        per_seed(results, method, metric),
        per_seed(results, baseline, metric),
        margin=margin,
        higher_is_better=False,
        name=f"Δ {what} ({baseline} − {method})",
    )


def _check_kd(results: Sequence[Result]) -> Verdict:
    return _lower(results, "ddk", "kd", "mean_ratio", KD_MARGIN, "mean ratio")


def _check_static(results: Sequence[Result]) -> Verdict:
    return _lower(results, "ddk", "static", "mean_ratio", STATIC_MARGIN, "mean ratio")


def _check_worst(results: Sequence[Result]) -> Verdict:
    return all_of(
        _lower(results, "ddk", "kd", "max_ratio", WORST_KD_MARGIN, "worst-domain ratio"),
        _lower(results, "ddk", "static", "max_ratio", WORST_STATIC_MARGIN, "worst-domain ratio"),
    )


def _check_smoothing(results: Sequence[Result]) -> Verdict:
    return _lower(results, "ddk", "ddk_no_smoothing", "mean_ratio", SMOOTHING_MARGIN, "mean ratio")


def _check_steadies(results: Sequence[Result]) -> Verdict:
    return _lower(results, "ddk", "ddk_no_smoothing", "r_change", R_CHANGE_MARGIN, "L1 change of r per update")


def _check_control(results: Sequence[Result]) -> Verdict:
    return vanishes(
        per_seed(results, "ddk, equal gaps", "max_ratio"),
        per_seed(results, "kd, equal gaps", "max_ratio"),
        band=CONTROL_BAND,
        higher_is_better=False,
        name="Δ worst-domain ratio (KD − DDK) with equal gaps",
    )


CLAIMS = [
    Claim(
        id="beats_kd_on_mean",
        kind="effect",
        statement="DDK beats plain KD with a fixed uniform mix at the same data and tokens (55.41 vs 52.87 "
        "average benchmark score; continued pretraining, CPT, 50.48).",
        metric="mean over domains of the test perplexity ratio student/teacher, DDK vs KD, each at its best "
        "validation point, paired by seed (DDK − CPT and KD − CPT are shown beside it)",
        check=_check_kd,
        expected=False,
        reason=(
            "DDK trades: the tokens it moves to the lagging domains (English prose and its cipher) narrow their "
            "gaps, but the domains whose share drops towards the floor (arithmetic, records) give back about as "
            "much, so the mean stays within seed noise of KD's, ahead on some seeds and behind on others"
        ),
    ),
    Claim(
        id="dynamic_beats_static",
        kind="effect",
        statement="Updating the mixture during training beats keeping the first mixture.",
        metric="mean over domains of the test perplexity ratio, DDK vs the static first mixture (DDK's first, "
        "smoothed r kept throughout), paired by seed",
        check=_check_static,
        expected=False,
        reason=(
            "the first smoothed mixture already tilts the tokens towards the lagging domains; the updates tilt "
            "them further, which narrows the worst domain but costs the easy domains about as much as it buys, "
            "so on the mean the two trade places from seed to seed"
        ),
    ),
    Claim(
        id="narrows_worst_domain",
        kind="effect",
        statement="DDK spends its tokens where the student lags, so the worst domain's gap narrows more than "
        "under KD or a fixed mixture.",
        metric="largest test perplexity ratio over domains, DDK vs KD and vs the static first mixture, paired by seed",
        check=_check_worst,
    ),
    Claim(
        id="smoothing_improves_result",
        kind="effect",
        statement="Factor smoothing improves the result (ablation: 57.46 with smoothing, 56.56 without).",
        metric="mean over domains of the test perplexity ratio, DDK vs DDK without smoothing (Eq. 1 at every "
        "update), paired by seed",
        check=_check_smoothing,
        expected=False,
        reason=(
            "the unsmoothed mixture jumps between updates, but over the run it gives the domains nearly the same "
            "shares of tokens as the smoothed one (the gaps, measured on the whole validation split, keep their "
            "order from one update to the next), so the two end within seed noise of each other"
        ),
    ),
    Claim(
        id="smoothing_steadies_r",
        kind="mechanism",
        statement="Factor smoothing makes the mixture change smoothly between updates.",
        metric="mean L1 change of r between updates, DDK vs DDK without smoothing: Eq. 2 mixes a share "
        "1 − α of the uniform mix into every update, so it holds nearly by construction",
        check=_check_steadies,
    ),
    Claim(
        id="equal_gaps_no_gain",
        kind="control",
        statement="(negative control) With equal gaps DDK has nothing to follow: it must do what KD does.",
        metric="largest test ratio over domains, DDK vs KD, in the same corpus with its windows mixed across "
        "the domains until each domain is one distribution (heterogeneity h = 0)",
        check=_check_control,
    ),
]

# What must make each expected effect fail (CLAIMS.md §5). Each change trains only the arms its claims read.
FALSIFIERS = [
    Falsifier(
        "shuffled_gaps",
        MECHANISM_OFF,
        ("narrows_worst_domain",),
        lambda c: replace(c, method="ddk_shuffled", arms=("kd", "static", "ddk"), control=False),
        "DDK's Eq. 2 fed, at every update, the gaps of randomly permuted domains: r moves as often, but not "
        "towards where the student lags",
    ),
    Falsifier(
        "static_as_ddk",
        BASELINE_IN_PLACE,
        ("narrows_worst_domain",),
        lambda c: replace(c, method="static", arms=("kd", "static", "ddk"), control=False),
        "the static first mixture, the strongest fixed alternative on the worst domain, trained under DDK's name",
    ),
]
