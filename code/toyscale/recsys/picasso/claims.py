"""PICASSO's claims, their margins (set on calibration seeds), and the falsifiers under which they must fail.

Packing is credited against per-field tables trained by the same multi-tensor Adam; caching by the
slow-link traffic of a two-tier table against a single table, under a drifting id stream. Each has
a negative control where the mechanism has nothing to act on: one field (nothing to pack) and
uniform ids (nothing hot to cache). Interleaving needs a core free for its producer thread, which
the book's 2-core machines do not have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from toyscale.core import BASELINE_IN_PLACE, MECHANISM_OFF, Claim, Falsifier, Verdict, all_of, paired, vanishes

from .experiment import Result

# Margins and win rules from `python -m toyscale calibrate picasso --seeds 12` on calibration seeds 1000–1011,
# default config and --fast (the records: calibration/default.json and fast.json beside this module).
# "q05" / "q95": the 5th / 95th percentile of the means over five-seed windows of those seeds. Speed-ups are
# ratios of the fastest of alternated calls on the loaded 2-core build machine; 12 seeds (1000–1011), since one
# default run takes about half a minute there.
# Each margin sits about halfway between the falsifiers' q95 and the method's q05; every check wins on 4 of 5 seeds.
PACKING_MARGIN = 1.0  # speed-up − 1 at the largest F: method q05 2.17 (default) / 1.82 (fast) > 1 > falsifiers q95 0.12
GROWTH_MARGIN = 0.6  # speed-up at the largest F − at F = 10: method q05 1.21 / 1.23 > 0.6 > about 0 without packing
ONE_FIELD_BAND = 0.25  # the F = 1 control's window means: [−0.08, 0.12] (default) / [−0.12, 0.21] (fast)
TRAFFIC_MARGIN = 0.13  # slow-link rows cut: method q05 0.370 / 0.267 > 0.13 > falsifiers q95 0 / 0
UNIFORM_BAND = 0.02  # the uniform-ids check's window means: [0.0098, 0.0102] / [0.0096, 0.0103], the tier's share
# interleaving_hides_the_shorter_stage passes no window on the default config (window means q95 0.03) and 28 % on the
# fast one (q05 0.32 < 0.5): expected=False; on the fast config it may print "pass (not expected)".
OVERLAP_MIN = 0.5  # interleaving must hide at least this share of the shorter stage's time


def _ratios(results: Sequence[Result], n_fields: int) -> list[float]:
    return [r.metrics["packed_speedup"][f"ratio_F{n_fields}"] for r in results]


def _check_packing(results: Sequence[Result]) -> Verdict:
    f_max = results[0].field_counts[-1]
    ones = [1.0] * len(results)
    return all_of(
        paired(_ratios(results, f_max), ones, margin=PACKING_MARGIN, name=f"packed speed-up at F = {f_max}, − 1"),
        paired(
            _ratios(results, f_max),
            _ratios(results, 10),
            margin=GROWTH_MARGIN,
            name=f"speed-up at F = {f_max} − at F = 10",
        ),
    )


def _check_one_field(results: Sequence[Result]) -> Verdict:
    return vanishes(
        _ratios(results, 1), [1.0] * len(results), band=ONE_FIELD_BAND, name="packed speed-up at F = 1, − 1"
    )


def _check_identical(results: Sequence[Result]) -> Verdict:
    same = sum(r.identical_models for r in results)
    return Verdict(same == len(results), f"bit-identical trained models on {same}/{len(results)} seeds")


def _check_overlap(results: Sequence[Result]) -> Verdict:
    return paired(
        [r.metrics["interleaved"]["hidden_share"] for r in results],
        [0.0] * len(results),
        margin=OVERLAP_MIN,
        name="share of the shorter stage hidden",
    )


def _check_traffic(results: Sequence[Result]) -> Verdict:
    return paired(
        [r.metrics["traffic"]["cut"] for r in results],
        [0.0] * len(results),
        margin=TRAFFIC_MARGIN,
        name="slow-link rows per step, cut by the fast tier",
    )


def _check_uniform(results: Sequence[Result]) -> Verdict:
    return vanishes(
        [r.metrics["traffic"]["uniform_cut"] for r in results],
        [0.0] * len(results),
        band=UNIFORM_BAND,
        name="slow-link rows cut on uniform ids",
    )


CLAIMS = [
    Claim(
        id="packing_speedup_grows_with_fields",
        kind="effect",
        statement=(
            "Packing tables with the same attributes into one lookup speeds up training, the more so the more "
            "feature fields (one of the optimizations behind the paper's up to 6× throughput)."
        ),
        metric=(
            "per-field over packed step time (forward, backward, Adam), the fastest of alternated calls; both "
            "sides use the multi-tensor Adam (foreach), so the per-tensor optimizer loop is not counted; the "
            "chapter's phase table says where the time goes"
        ),
        check=_check_packing,
    ),
    Claim(
        id="one_field_no_gain",
        kind="control",
        statement="(negative control) With one field there is nothing to pack: the two models are the same.",
        metric="per-field over packed step time at F = 1, the fastest of alternated calls",
        check=_check_one_field,
    ),
    Claim(
        id="interleaving_changes_no_number",
        kind="mechanism",
        statement="Interleaving is a schedule, not an approximation: the model trains to the same weights.",
        metric="trained parameters, serial vs interleaved pipeline, compared with torch.equal",
        check=_check_identical,
    ),
    Claim(
        id="interleaving_hides_the_shorter_stage",
        kind="effect",
        statement="Pipelining micro-batches brings the step time close to the slowest stage instead of the sum.",
        metric="(t_serial − t_interleaved) / min(t_produce, t_train), medians of alternated passes",
        check=_check_overlap,
        expected=False,
        reason=(
            "overlap needs a core free for the producer thread, and the book's machines have two shared cores: "
            "the producer and the trainer take turns instead of running side by side. No machine with spare "
            "cores was available to this re-audit"
        ),
    ),
    Claim(
        id="cache_cuts_slow_link_traffic",
        kind="effect",
        statement="Ids are skewed, so a small fast tier of hot embeddings takes most of the traffic off the slow link.",
        metric=(
            "rows moved over the slow link per training step (reads of rows the fast tier lacks, write-backs of "
            "updated rows), a two-tier table with a fast tier of 1 % of the rows (static hot set or LRU, chosen on a "
            "validation stream) vs one table in the slow tier, on an id stream whose hot set drifts"
        ),
        check=_check_traffic,
    ),
    Claim(
        id="uniform_ids_no_cache_gain",
        kind="mechanism",
        statement="On uniform ids no row is hot, and the fast tier saves only its own share of the rows.",
        metric=(
            "the same cut on a stream of uniform ids, within a band around zero; it equals the tier's share of the "
            "rows by construction and barely moves over seeds, so it is a mechanism, not a control (the skew "
            "boundary shows the effect vanishing)"
        ),
        check=_check_uniform,
    ),
    Claim(
        id="end_to_end_6x_on_gpu",
        kind="effect",
        statement="Up to 6× throughput over state-of-the-art baselines and an order of magnitude higher "
        "hardware utilization in production.",
        metric="none: GPU clusters and industrial models",
        check=None,
        expected=False,
        needs=(
            "GPU clusters and industrial models: on a CPU the ratios measure dispatch and memory overheads, "
            "not GPU kernels"
        ),
    ),
]

# What must make each effect fail (CLAIMS.md §5); each change runs only the part its claims read.
FALSIFIERS = [
    Falsifier(
        "group_of_one",
        MECHANISM_OFF,
        ("packing_speedup_grows_with_fields",),
        lambda c: replace(c, parts=("packing",), packing_method="group_of_one", loop_baseline=False),
        "the packing code with groups of one field: every field keeps its own table and its own lookup",
    ),
    Falsifier(
        "per_field_as_packed",
        BASELINE_IN_PLACE,
        ("packing_speedup_grows_with_fields",),
        lambda c: replace(c, parts=("packing",), packing_method="per_field", loop_baseline=False),
        "the per-field model timed under the packed model's name",
    ),
    Falsifier(
        "no_fast_tier",
        MECHANISM_OFF,
        ("cache_cuts_slow_link_traffic",),
        lambda c: replace(c, parts=("traffic",), cache_method="no_fast_tier"),
        "the two-tier table with an empty fast tier",
    ),
    Falsifier(
        "single_as_two_tier",
        BASELINE_IN_PLACE,
        ("cache_cuts_slow_link_traffic",),
        lambda c: replace(c, parts=("traffic",), cache_method="single"),
        "the single table's traffic under the two-tier table's name",
    ),
]
