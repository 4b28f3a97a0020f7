"""The claims the DDK chapter checks over seeds, each against a real baseline with a margin set from
measured seed noise."""

from __future__ import annotations

import math
from collections.abc import Sequence

from toyscale.core.claims import Claim, Verdict, all_of, at_most, paired, per_seed, within

from .experiment import ARMS, Result

# Margins, set from the seed noise of the paired differences, measured first on the default
# config (= Config.fast()), seeds 0-5, mean ± std (smallest, wins): CPT − DDK mean ratio
# +0.058 ± 0.015 (min +0.040, 6/6); KD − DDK mean ratio −0.004 ± 0.017 (2/6); KD − DDK worst
# domain +0.128 ± 0.122 (min −0.055, 5/6); L1 change of r per update, no smoothing − DDK
# +0.049 ± 0.009 (min +0.038, 6/6); DDK − unsmoothed mean ratio −0.021 ± 0.019; static − DDK
# mean ratio +0.036 ± 0.046 (4/6). With 160 instead of 64 validation windows per domain the worst
# domain won on 6/6 seeds and CPT on 5/6: the same effects, the noise in other places.
CPT_MARGIN = 0.02  # DDK's mean test perplexity ratio must be this much below CPT's
KD_MARGIN = 0.0  # ... and below KD's (the claim the toy does not reproduce)
WORST_MARGIN = 0.05  # DDK's worst-domain ratio must be this much below KD's
R_CHANGE_MARGIN = 0.02  # smoothing must cut the mean L1 change of r between updates by this much
SMOOTHING_TOLERANCE = 0.03  # DDK's mean ratio may exceed DDK-without-smoothing's by at most this
STATIC_MARGIN = 0.0  # the dynamic schedule against the static r₀ mix (reported either way)


def _check_cpt(results: Sequence[Result]) -> Verdict:
    return paired(
        per_seed(results, "ddk", "mean_ratio"),
        per_seed(results, "cpt", "mean_ratio"),
        margin=CPT_MARGIN,
        higher_is_better=False,
        name="Δ mean ratio (CPT − DDK)",
    )


def _check_kd(results: Sequence[Result]) -> Verdict:
    return paired(
        per_seed(results, "ddk", "mean_ratio"),
        per_seed(results, "kd", "mean_ratio"),
        margin=KD_MARGIN,
        higher_is_better=False,
        name="Δ mean ratio (KD − DDK)",
    )


def _check_worst(results: Sequence[Result]) -> Verdict:
    return paired(
        per_seed(results, "ddk", "max_ratio"),
        per_seed(results, "kd", "max_ratio"),
        margin=WORST_MARGIN,
        higher_is_better=False,
        name="Δ worst-domain ratio (KD − DDK)",
    )


def _check_smoothing(results: Sequence[Result]) -> Verdict:
    cost = [
        a - b
        for a, b in zip(
            per_seed(results, "ddk", "mean_ratio"), per_seed(results, "ddk_no_smoothing", "mean_ratio"), strict=True
        )
    ]
    return all_of(
        paired(
            per_seed(results, "ddk", "r_change"),
            per_seed(results, "ddk_no_smoothing", "r_change"),
            margin=R_CHANGE_MARGIN,
            higher_is_better=False,
            name="Δ L1 change of r per update (no smoothing − smoothing)",
        ),
        at_most(cost, SMOOTHING_TOLERANCE, "mean ratio, DDK − DDK without smoothing"),
    )


def _check_static(results: Sequence[Result]) -> Verdict:
    return paired(
        per_seed(results, "ddk", "mean_ratio"),
        per_seed(results, "static", "mean_ratio"),
        margin=STATIC_MARGIN,
        higher_is_better=False,
        name="Δ mean ratio (static r₀ − DDK)",
    )


def _check_teacher(results: Sequence[Result]) -> Verdict:
    lowest = [min(r.metrics[arm][f"ratio_{d}"] for arm in ("warm", *ARMS) for d in r.domains) for r in results]
    return within(lowest, 1.0, math.inf, "lowest test ratio over arms and domains")


CLAIMS = [
    Claim(
        id="teacher_beats_student",
        kind="mechanism",
        statement="The teacher is better than the student on every domain (the premise of distillation).",
        metric="test perplexity ratio student/teacher, every arm, every domain, every seed: above 1",
        check=_check_teacher,
    ),
    Claim(
        id="beats_cpt",
        kind="effect",
        statement="DDK beats continued pretraining of the student at the same tokens (55.41 vs CPT 50.48 "
        "average benchmark score).",
        metric="mean over domains of the test perplexity ratio, DDK vs CPT (no teacher, uniform mix), paired by seed",
        check=_check_cpt,
    ),
    Claim(
        id="beats_kd_on_mean",
        kind="effect",
        statement="DDK beats plain KD with a fixed uniform mix at the same tokens (55.41 vs 52.87).",
        metric="mean over domains of the test perplexity ratio, DDK vs KD (uniform mix), paired by seed",
        check=_check_kd,
        expected=False,
        reason=(
            "DDK trades: what the lagging domains (English prose and its cipher) gain, the domains whose share "
            "drops towards the floor (records, arithmetic) give back, and their ratios move just as fast with "
            "their share of tokens; the mean ratio stays within seed noise of KD's, winning on some seeds and "
            "losing on others"
        ),
    ),
    Claim(
        id="narrows_worst_domain",
        kind="effect",
        statement="DDK spends its tokens where the student lags, so the worst domain's gap narrows more than under KD.",
        metric="largest test perplexity ratio over domains, DDK vs KD, paired by seed",
        check=_check_worst,
    ),
    Claim(
        id="smoothing_steadies_r",
        kind="mechanism",
        statement="Factor smoothing makes the mixture change smoothly without losing the gain (ablation: 57.46 "
        "with smoothing, 56.56 without).",
        metric="mean L1 change of r between updates, DDK vs DDK without smoothing; and the mean test ratio "
        f"of DDK at most {SMOOTHING_TOLERANCE} above the unsmoothed arm's",
        check=_check_smoothing,
    ),
    Claim(
        id="dynamic_beats_static",
        kind="effect",
        statement="Updating the mixture during training beats keeping the first mixture r₀ (reported either way).",
        metric="mean over domains of the test perplexity ratio, DDK vs a static mix fixed at r₀",
        check=_check_static,
        expected=False,
        reason=(
            "the static arm's result depends on r₀: Eq. 1 is a softmax of raw ratios, so a warm student with one "
            "domain far behind gives it most of the tokens for the whole run, and a milder r₀ is a fair fixed mix; "
            "DDK and the static mix trade places from seed to seed, within seed noise on average"
        ),
    ),
]
