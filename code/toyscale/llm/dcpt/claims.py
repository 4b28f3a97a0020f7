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

# Choices and margins from `python -m toyscale calibrate dcpt --seeds 12` on calibration grids 1000–1011 (twelve,
# not twenty: a grid is 1–2 minutes of CPU to build on a shared machine), default config (the record:
# calibration/default.json beside this module; --fast in fast.json). "q05" / "q95": the 5th / 95th percentile of
# the means over all 792 five-seed windows of those seeds; Δ > 0 means the D-CPT Law is better. The claims are
# checked on the default config (the book, `reproduce` and the tests); the fast config, whose fits refine one
# start, is too noisy for the extrapolation claim (53 % of fast windows pass), so the tests use it only for the
# falsifiers, which fail on every fast window.
# The strongest baseline of each split: the lowest mean held-out RMSE on the calibration grids (default and fast
# agree): neighbour interpolation on the ratios, per-ratio Chinchilla laws on the larger model and on later D.
STRONGEST = {"ratio": "law_free", "model": "per_ratio", "late": "per_ratio"}
# The strongest law-free policy: the lowest mean decision loss on the calibration grids (small_grid next).
STRONGEST_POLICY = "cheap_largest"
# Every RMSE margin is 0.001 bits/char, a tenth of the smallest calibration grid's checkpoint noise (0.0102).
# Against the strongest the law's Δ q95 is −0.0039 on the ratios, +0.0039 on the larger model and +0.0005 on later
# D: 1.0 % and 0.8 % of the 792 windows clear the margin there (fast: 12 % and 8 %), none on the ratios.
RMSE_MARGIN = 0.001
# Its interaction term at held-out ratios: Δ (no interaction − D-CPT) q95 −0.0005 (fast −0.0004): no window passes.
INTERACTION_MARGIN = 0.001
# Where the interaction term pays, extrapolating in N and D: Δ q05 +0.00054 (larger model) and +0.0031 (later D);
# its falsifiers' q95 are exactly 0 (no interaction under the law's name) and −0.065 (blind to r). A margin between
# them, 0.0003, with the default 4-of-5 win rule passes 97.3 % of windows (0.0005: 95.1 %; 0.001: 88 %) and fails
# every falsifier window.
EXTRAPOLATION_MARGIN = 0.0003
# Not expected: 97.3 % of default windows is barely over the 95 % line, the fast record passes 53 %, and on the
# first fresh window, the confirmation grids 3000–3004 (checked once, after every choice here was final), the
# later-D part wins on 3 of 5 grids only. The margin and rule are not retuned; the claim is reported as too close
# to the grid-to-grid noise to count.
# Decision losses, the same 0.001 bits/char: against the cheap runs' largest feasible ratio the law's Δ q95 is
# +0.0016 and against the grid search on the second-largest model +0.0068 (no window passes both); against the
# trivial policies q05 +0.22 and more.
DECISION_MARGIN = 0.001
# The control: one checkpoint out the law must not beat carry-forward at all (window means q95 −0.0093; fast −0.0094).
CONTROL_BAND = 0.0


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


def _check_extrapolation(results: Sequence[Result]) -> Verdict:
    return all_of(
        *(
            paired(
                _values(results, "dcpt", f"rmse_{split}"),
                _values(results, "no_interaction", f"rmse_{split}"),
                margin=EXTRAPOLATION_MARGIN,
                higher_is_better=False,
                name=f"Δ RMSE (no interaction − D-CPT), {SPLIT_NAMES[split]}, bits/char",
            )
            for split in ("model", "late")
        )
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
        expected=False,
        reason=(
            "between two measured ratios the domain loss is close to linear in r, so interpolating the measured "
            "neighbours at the same N and D already sits near the checkpoint noise; the law, whose constants are "
            "shared by every size, ratio and D, adds its misfit on top"
        ),
    ),
    Claim(
        id="held_out_model",
        kind="effect",
        statement="The D-CPT Law predicts the domain loss of an unseen, larger model (paper: held-out R² 0.95).",
        metric="held-out RMSE of the largest model's domain loss, fitted on the three smaller, vs the strongest",
        check=_check_held_out("model"),
        expected=False,
        reason=(
            "per-ratio Chinchilla laws fit each ratio its own size and data exponents; the D-CPT Law ties every "
            "ratio to one size term and one data exponent, and with nine ratios measured that shared form misfits "
            "more than the per-ratio laws' extra constants cost"
        ),
    ),
    Claim(
        id="held_out_late",
        kind="effect",
        statement="The D-CPT Law predicts the domain loss after more tokens (paper: held-out R² 0.91).",
        metric="held-out RMSE of the domain loss past half the tokens, fitted on the first half, vs the strongest",
        check=_check_held_out("late"),
        expected=False,
        reason=(
            "the law's r^η only scales the data term, so every ratio bends in D with one shared exponent; the "
            "per-ratio laws follow each ratio's own bend past half the tokens"
        ),
    ),
    Claim(
        id="interaction_term",
        kind="effect",
        statement="The r–D interaction term B·r^η/D^β makes the law predict unseen ratios better than without it.",
        metric="held-out RMSE of the domain loss at the held-out ratios, D-CPT vs the same law with B/D^β",
        check=_check_interaction,
        expected=False,
        reason=(
            "the interaction term changes how the data slope scales with r; at a held-out ratio inside the fitted "
            "range of N and D that slope is interpolated with or without it, and its extra exponent only adds "
            "fitting variance"
        ),
    ),
    Claim(
        id="interaction_extrapolates",
        kind="effect",
        statement=(
            "The r–D interaction term is what lets the law extrapolate: to a larger model and to later tokens it "
            "predicts better than the same law without it."
        ),
        metric=(
            "held-out RMSE of the domain loss on the held-out largest model and on the held-out later D, D-CPT vs "
            "the same law with B/D^β, paired by grid"
        ),
        check=_check_extrapolation,
        expected=False,
        reason=(
            "the interaction term's gain beyond the fitted range is positive on average but no larger than the "
            "grid-to-grid noise of the fitted laws: a five-grid window loses it on the win count about as often as "
            "the protocol tolerates on the default config, far more often on the fast one, and did so on the first "
            "fresh window"
        ),
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
        expected=False,
        reason=(
            "the choice turns on the general loss, which at high domain ratios rises with D as the model forgets, "
            "a shape the law's terms, all falling in D, cannot follow: the law's ratio overshoots the limit on most "
            "calibration grids, while the law-free policies that read the smaller models' measured losses (the "
            "largest ratio feasible in the cheap runs, a grid search on the second-largest model) measure that "
            "loss instead of predicting it; it does beat the trivial policies by far"
        ),
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

# The effect the falsifiers break: not expected, but measured, so its falsifiers still show what it rests on.
_FALSIFIED = ("interaction_extrapolates",)
_READ = ("dcpt", "no_interaction")  # the arms it reads
_SPLITS = ("model", "late")  # and its splits

# What must make the effect fail (CLAIMS.md §5). Each change skips what its claims do not read.
FALSIFIERS = [
    Falsifier(
        "law_blind_to_r",
        MECHANISM_OFF,
        _FALSIFIED,
        lambda c: replace(c, method="r_blind", general_fits=False, control=False, arms=_READ, splits=_SPLITS),
        "the D-CPT arm fits E + A/N^α + B/D^β to every ratio's points at once: the law without its ratio terms",
    ),
    Falsifier(
        "no_interaction_as_law",
        BASELINE_IN_PLACE,
        _FALSIFIED,
        lambda c: replace(c, method="no_interaction", general_fits=False, control=False, arms=_READ, splits=_SPLITS),
        "the effect's baseline, the law without its interaction term, rerun under the law's name",
    ),
]
