"""D-CPT's claims, their margins (set on the calibration grids), and the falsifiers under which they must fail.

Every comparison is paired by grid seed, and every grid seed is an independent grid (its own
corpus split, model initialisations and batches), so a win fraction counts real replicates.
Held-out claims compare the RMSE of the held-out domain loss (bits per character) of the D-CPT
Law with that of the split's strongest baseline; which baseline is the strongest was decided on
the calibration grids. The decision claim compares decision losses (domain loss forgone plus
general loss over the limit) with every law-free policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from toyscale.core import BASELINE_IN_PLACE, MECHANISM_OFF, Claim, Falsifier, Verdict, all_of, at_most, paired

from .experiment import ARM_LABELS, BASELINE_POLICIES, LAW_FREE_LABELS, POLICY_LABELS, SPLIT_NAMES, Result

# Choices and margins from `python -m toyscale calibrate dcpt --seeds 12` on calibration grids 1000–1011,
# default config and --fast (the records: calibration/default.json and fast.json beside this module).
# "q05" / "q95": the 5th / 95th percentile of the means over five-seed windows of those seeds.
STRONGEST = {"ratio": "law_free", "model": "law_free", "late": "law_free"}  # placeholder, set from calibration
STRONGEST_POLICY = "small_grid"  # placeholder, set from calibration
RMSE_MARGIN = 0.0
INTERACTION_MARGIN = 0.0
DECISION_MARGIN = 0.0
CONTROL_BAND = 0.01


def _values(results: Sequence[Result], table: str, metric: str) -> list[float]:
    """One value per seed of `result.metrics[table][metric]`."""
    try:
        return [float(r.metrics[table][metric]) for r in results]
    except KeyError as error:
        raise ValueError(f"no {metric!r} in result.metrics[{table!r}] ({error})") from error


def _baseline_label(split: str, arm: str) -> str:
    return LAW_FREE_LABELS[split] if arm == "law_free" else ARM_LABELS[arm]


def _check_held_out(split: str):
    def check(results: Sequence[Result]) -> Verdict:
        baseline = STRONGEST[split]
        return paired(
            _values(results, "dcpt", f"rmse_{split}"),
            _values(results, baseline, f"rmse_{split}"),
            margin=RMSE_MARGIN,
            higher_is_better=False,
            name=f"Δ RMSE ({_baseline_label(split, baseline)} − D-CPT), {SPLIT_NAMES[split]}, bits/char",
        )

    return check


def _check_interaction(results: Sequence[Result]) -> Verdict:
    return paired(
        _values(results, "dcpt", "rmse_ratio"),
        _values(results, "no_interaction", "rmse_ratio"),
        margin=INTERACTION_MARGIN,
        higher_is_better=False,
        name="Δ RMSE (no interaction − D-CPT), held-out ratios, bits/char",
    )


def _check_decision(results: Sequence[Result]) -> Verdict:
    law = _values(results, "decision", "law_loss")
    return all_of(
        *(
            paired(
                law,
                _values(results, "decision", f"{policy}_loss"),
                margin=DECISION_MARGIN,
                higher_is_better=False,
                name=f"Δ decision loss ({POLICY_LABELS[policy]} − law), bits/char",
            )
            for policy in BASELINE_POLICIES
        )
    )


def _check_control(results: Sequence[Result]) -> Verdict:
    # the law's edge over carry-forward must vanish (or turn into a loss) where there is nothing to extrapolate
    return at_most(
        _values(results, "control", "delta"),
        CONTROL_BAND,
        name="Δ RMSE (carry-forward − D-CPT), the last checkpoint fitted on all before it, bits/char",
    )


CLAIMS = [
    Claim(
        id="held_out_ratio",
        kind="effect",
        statement="The D-CPT Law predicts the domain loss at unseen mixture ratios (paper: held-out R² 0.97).",
        metric=(
            "held-out RMSE of the domain loss at 3 non-adjacent interior ratios left out of the fit, D-CPT vs the "
            "strongest baseline on the calibration grids, paired by grid"
        ),
        check=_check_held_out("ratio"),
    ),
    Claim(
        id="held_out_model",
        kind="effect",
        statement="The D-CPT Law predicts the domain loss of an unseen, larger model (paper: held-out R² 0.95).",
        metric="held-out RMSE of the largest model's domain loss, fitted on the three smaller, vs the strongest",
        check=_check_held_out("model"),
    ),
    Claim(
        id="held_out_late",
        kind="effect",
        statement="The D-CPT Law predicts the domain loss after more tokens (paper: held-out R² 0.91).",
        metric="held-out RMSE of the domain loss past half the tokens, fitted on the first half, vs the strongest",
        check=_check_held_out("late"),
    ),
    Claim(
        id="interaction_term",
        kind="effect",
        statement="The r–D interaction term B·r^η/D^β makes the law predict unseen ratios better than without it.",
        metric="held-out RMSE of the domain loss at the held-out ratios, D-CPT vs the same law with B/D^β",
        check=_check_interaction,
    ),
    Claim(
        id="chosen_ratio",
        kind="effect",
        statement=(
            "Fitted on small runs, the law chooses the mixture ratio that keeps the general loss within a "
            "tolerance and minimises the domain loss, instead of a grid search."
        ),
        metric=(
            "decision loss on the largest model at the last D (domain loss forgone against the best ratio within "
            "the limit + general loss over the limit, T of the r = 0 run), the law vs each law-free policy"
        ),
        check=_check_decision,
    ),
    Claim(
        id="no_extrapolation_no_gain",
        kind="control",
        statement=(
            "(negative control) One checkpoint beyond the fitted range there is nothing to extrapolate: "
            "the law gains nothing over carrying the last checkpoint forward."
        ),
        metric="RMSE of the last checkpoint's domain loss, fitted on all before it: carry-forward − D-CPT ≤ a band",
        check=_check_control,
    ),
]

_EXPECTED_EFFECTS = tuple(c.id for c in CLAIMS if c.kind == "effect" and c.expected)
_READ = tuple(dict.fromkeys(("dcpt", "no_interaction", *STRONGEST.values())))  # the arms the claims read

# What must make each effect fail (CLAIMS.md §5). Each change skips what its claims do not read.
FALSIFIERS = [
    Falsifier(
        "law_blind_to_r",
        MECHANISM_OFF,
        _EXPECTED_EFFECTS,
        lambda c: replace(c, method="r_blind", general_fits=False, control=False, arms=_READ),
        "the D-CPT arm fits E + A/N^α + B/D^β to every ratio's points at once: the law without its ratio terms",
    ),
    Falsifier(
        "strongest_as_law",
        BASELINE_IN_PLACE,
        _EXPECTED_EFFECTS,
        lambda c: replace(c, method="strongest", general_fits=False, control=False, arms=_READ),
        "each split's strongest baseline and the strongest law-free policy, rerun under the law's name",
    ),
]
