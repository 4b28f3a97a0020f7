"""STAR's claims, their margins (set on calibration seeds), and the falsifiers under which they must fail.

Every comparison reads each arm at its own best validation point (`experiment`); where a baseline
comes in two forms (global or per-domain input normalization), the form with the better validation
score is the one compared, chosen per seed without looking at the test split (`strongest`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from toyscale.core import BASELINE_IN_PLACE, MECHANISM_OFF, Claim, Falsifier, Verdict, all_of, paired, vanishes, within

from .experiment import CONTROL_ARMS, Result, strongest

# Margins and win rules from `python -m toyscale calibrate star --seeds 12` on calibration seeds 1000–1011 (12
# seeds: one default run takes about 35 s; the records: calibration/default.json and fast.json beside this
# module). "q05" / "q95": the 5th / 95th percentile of the means over five-seed windows of those seeds. Every
# paired check also needs STAR to win on 4 of 5 seeds. Only pn_beats_bn clears the 95 % bar; the others keep
# the chapter's common margin and are not expected (their reasons say why).
SHARED_MARGIN = 0.001  # method q05 −0.0001 (default): passes 12 % of windows, not expected; topology_off q95 −0.0034
MULTI_TASK_MARGIN = 0.001  # method q05 −0.0004: passes 20 % of windows, not expected; mmoe_as_star q95 +0.0011
SEPARATE_MARGIN = 0.001  # method q05 +0.0014 passes 99 %, but centre_off q95 +0.0031 (fails 17 %): no margin
# separates STAR from STAR without sharing, so the lead is not credited to sharing (not expected)
TAIL_MARGIN = 0.001  # method mean +0.0020 ± 0.0155 per seed, q05 −0.0064: passes 23 % of windows, not expected
BN_MARGIN = 0.001  # method q05 +0.0024 (default), passes 100 % (fast: 90 %); bn_as_star q95 0.0000 and
# partition_off q95 −0.0339 (default) / −0.0278 (fast): both fail 100 % of windows
AUX_MARGIN = 0.001  # the other ablation's margin; method q05 −0.0002, q95 +0.0013: not expected
CONTROL_BAND = 0.003  # at ρ = 0 the window means of Δ lie in [−0.0026, −0.0015] (STAR a little below the shared
# model): a band of 0.003 holds 99.9 % of windows (0.0025: 90 %). It is wider than the margins, so it says that
# STAR gains nothing where the domains do not differ, not that it loses nothing there (the boundary shows both)
FOLD_TOLERANCE = 1e-4  # the folded model's logits may differ from STAR's by float rounding only

#: The forms of each baseline family that the validation split chooses between.
SHARED_FORMS = ("shared", "shared_pd")
MULTI_TASK_FORMS = ("mmoe", "mmoe_pd", "shared_bottom_pd")


def _values(results: Sequence[Result], arm: str | Sequence[str], metric: str) -> list[float]:
    """One value per seed of `result.metrics[arm][metric]`; for several arms, the validation-chosen one's."""
    try:
        if isinstance(arm, str):
            return [float(r.metrics[arm][metric]) for r in results]
        return [float(r.metrics[strongest(r, arm)][metric]) for r in results]
    except KeyError as error:
        raise ValueError(f"no {metric!r} for arm {arm!r} in the results ({error})") from error


def _versus(results: Sequence[Result], baseline: str | Sequence[str], metric: str, margin: float, name: str) -> Verdict:
    return paired(_values(results, "star", metric), _values(results, baseline, metric), margin=margin, name=name)


def _check_shared(results: Sequence[Result]) -> Verdict:
    return _versus(results, SHARED_FORMS, "auc_weighted", SHARED_MARGIN, "Δ AUC (STAR − shared, its better form)")


def _check_multi_task(results: Sequence[Result]) -> Verdict:
    name = "Δ AUC (STAR − the better of MMoE and shared-bottom)"
    return _versus(results, MULTI_TASK_FORMS, "auc_weighted", MULTI_TASK_MARGIN, name)


def _check_separate(results: Sequence[Result]) -> Verdict:
    return _versus(results, "separate", "auc_weighted", SEPARATE_MARGIN, "Δ AUC (STAR − separate)")


def _check_tail(results: Sequence[Result]) -> Verdict:
    return _versus(results, "separate", "auc_smallest", TAIL_MARGIN, "Δ smallest-domain AUC (STAR − separate)")


def _check_pn(results: Sequence[Result]) -> Verdict:
    return _versus(results, "star_bn", "auc_weighted", BN_MARGIN, "Δ AUC (STAR − STAR with BN, mixed batches)")


def _check_aux(results: Sequence[Result]) -> Verdict:
    return _versus(results, "star_no_aux", "auc_weighted", AUX_MARGIN, "Δ AUC (STAR − STAR without the auxiliary net)")


def _check_control(results: Sequence[Result]) -> Verdict:
    shared, star = CONTROL_ARMS
    return vanishes(
        _values(results, star, "auc_weighted"),
        _values(results, shared, "auc_weighted"),
        band=CONTROL_BAND,
        name="Δ AUC (STAR − shared, per-domain normalized) at ρ = 0",
    )


def _check_serving(results: Sequence[Result]) -> Verdict:
    ratio = [r.serving_flops["star_folded"] / r.serving_flops["shared"] for r in results]
    return all_of(
        within([r.fold_max_diff for r in results], 0.0, FOLD_TOLERANCE, name="max |logit(folded) − logit(STAR)|"),
        within(ratio, 0.0, 1.0, name="FLOPs per request, folded STAR / shared model"),
    )


CLAIMS = [
    Claim(
        id="beats_shared",
        kind="effect",
        statement="One STAR model serves all domains better than one shared model (deployed: CTR +8.0 %).",
        metric=(
            "per-domain test AUC weighted by impressions, STAR vs the shared model with the domain as an input, "
            "in the input normalization (global or per domain) its validation score prefers, paired by seed"
        ),
        check=_check_shared,
        expected=False,
        reason=(
            "given per-domain input normalization and its own mixed batches, the shared model with the domain as an "
            "input fits the toy's domains about as well: STAR's lead over the globally normalized model is "
            "per-domain normalization (the attribution grid), and its per-domain weights mostly win back what "
            "single-domain batches cost a shared network (falsifier topology_off)"
        ),
    ),
    Claim(
        id="beats_multi_task",
        kind="effect",
        statement="STAR beats the multi-task baselines shared-bottom and MMoE.",
        metric=(
            "weighted per-domain AUC, STAR vs the one of MMoE (either normalization) and shared-bottom that "
            "the validation split prefers, paired by seed"
        ),
        check=_check_multi_task,
        expected=False,
        reason=(
            "with per-domain input normalization, the gates and towers per domain of MMoE and shared-bottom give "
            "each domain its own function as the star topology's domain weights do; the difference is within "
            "the seed-to-seed noise"
        ),
    ),
    Claim(
        id="beats_separate",
        kind="effect",
        statement="STAR beats separate per-domain models, which do not use the other domains' data.",
        metric="weighted per-domain AUC, STAR vs one model per domain, each tuned and stopped on its domain",
        check=_check_separate,
        expected=False,
        reason=(
            "the lead survives with STAR's shared centre frozen at its initial values, each domain learning from "
            "its own rows only (falsifier centre_off): it comes from training the domains jointly as one model, "
            "not from sharing weights across domains, so the claim's reason for it is not shown"
        ),
    ),
    Claim(
        id="tail_beats_separate",
        kind="effect",
        statement="Sharing helps the small domains: on the smallest domain STAR beats its own separate model.",
        metric="test AUC of the smallest domain (about 5 % of the data), STAR vs its separate model, paired by seed",
        check=_check_tail,
        expected=False,
        reason=(
            "with its own rates and early stopping on its own validation AUC, the smallest domain's separate model "
            "is not starved of training, and the seed-to-seed noise of a small domain's AUC is several times what "
            "sharing adds"
        ),
    ),
    Claim(
        id="pn_beats_bn",
        kind="effect",
        statement="Partitioned normalization beats batch normalization inside STAR (in the ablations PN matters most).",
        metric="weighted per-domain AUC, STAR vs STAR with batch norm trained on mixed batches, paired by seed",
        check=_check_pn,
    ),
    Claim(
        id="aux_network_helps",
        kind="effect",
        statement="The auxiliary network on the domain indicator improves STAR.",
        metric="weighted per-domain AUC, STAR vs STAR without the auxiliary network",
        check=_check_aux,
        expected=False,
        reason=(
            "the toy's auxiliary net sees only the domain indicator, so its logit is a per-domain constant that "
            "the last layer's domain bias b_p already provides"
        ),
    ),
    Claim(
        id="no_heterogeneity_no_gain",
        kind="control",
        statement="(negative control) When every domain clicks by the same function, the star topology adds nothing.",
        metric="weighted per-domain AUC, STAR vs the per-domain-normalized shared model, in the world with ρ = 0",
        check=_check_control,
    ),
    Claim(
        id="serving_cost_of_one_model",
        kind="mechanism",
        statement="At serving, W_p ⊙ W is precomputed, so STAR costs what one shared model costs.",
        metric="folded per-domain networks against the trained STAR, and FLOPs per request against the shared model",
        check=_check_serving,
    ),
    Claim(
        id="online_ctr_rpm",
        kind="effect",
        statement="Online A/B test in Alibaba display advertising: CTR +8.0 %, RPM +6.0 %.",
        metric="none: an online test",
        check=None,
        expected=False,
        needs="an online A/B test with real users, bids and an auction",
    ),
]

# What must make each effect fail (CLAIMS.md §5). Each change trains only the arms its claims read. The
# falsifiers of the effects that are not expected stay: their calibration records show why those are not
# credited (centre_off keeps STAR's lead over the separate models without any sharing); the tests run the
# falsifiers of the expected effects.
_SHARED_ARMS = ("shared", "shared_pd", "mmoe", "mmoe_pd", "shared_bottom_pd", "star")
FALSIFIERS = [
    Falsifier(
        "topology_off",
        MECHANISM_OFF,
        ("beats_shared", "beats_multi_task"),
        lambda c: replace(c, method="star_no_topology", arms=_SHARED_ARMS, control=False),
        "STAR with every W_p fixed at ones and b_p at zeros: one shared network behind partitioned normalization",
    ),
    Falsifier(
        "shared_as_star",
        BASELINE_IN_PLACE,
        ("beats_shared",),
        lambda c: replace(c, method="shared_pd", arms=("shared", "shared_pd", "star"), control=False),
        "the per-domain-normalized shared model trained under STAR's name",
    ),
    Falsifier(
        "mmoe_as_star",
        BASELINE_IN_PLACE,
        ("beats_multi_task",),
        lambda c: replace(c, method="mmoe_pd", arms=("mmoe", "mmoe_pd", "shared_bottom_pd", "star"), control=False),
        "the per-domain-normalized MMoE trained under STAR's name",
    ),
    Falsifier(
        "centre_off",
        MECHANISM_OFF,
        ("beats_separate", "tail_beats_separate"),
        lambda c: replace(c, method="star_no_centre", arms=("separate", "star"), control=False),
        "STAR with its shared centre W, b fixed at initialization: each domain learns only from its own data",
    ),
    Falsifier(
        "separate_as_star",
        BASELINE_IN_PLACE,
        ("beats_separate", "tail_beats_separate"),
        lambda c: replace(c, method="separate", arms=("separate", "star"), control=False),
        "the separate per-domain models trained under STAR's name",
    ),
    Falsifier(
        "partition_off",
        MECHANISM_OFF,
        ("pn_beats_bn",),
        lambda c: replace(c, method="star_bn_single", arms=("star_bn", "star"), control=False),
        "STAR's single-domain batches kept, its normalization's statistics shared by all domains (batch norm)",
    ),
    Falsifier(
        "bn_as_star",
        BASELINE_IN_PLACE,
        ("pn_beats_bn",),
        lambda c: replace(c, method="star_bn", arms=("star_bn", "star"), control=False),
        "STAR with batch norm on mixed batches trained under STAR's name",
    ),
]
