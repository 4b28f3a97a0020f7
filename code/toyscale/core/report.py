"""How claims are shown: the claims table every chapter prints, and the short numbers line of a check.

Display only, kept off every chapter's fingerprint (`core.store.OFF_PATH`): changing how a table
reads leaves every calibration record and ledger entry current. A table cell holds what a reader
compares at a glance (the claim, the paper's words, the toy's numbers, the verdict); what is
measured, the full check and why a claim is not expected are the table's notes, one per claim,
printed under it.
"""

from __future__ import annotations

from collections.abc import Sequence

from .claims import CONTROL, EFFECT, ClaimOutcome, status_legend
from .table import Table, mean_std

#: A cell shows this many of a claim's single checks; the rest are in its note (a cell stays readable).
SHOWN_CHECKS = 2


def readable(claim_id: str) -> str:
    """A claim id as a table shows it: 'gauc_over_pointwise' → 'gauc over pointwise'."""
    return claim_id.replace("_", " ")


def numbers_line(name: str, values: Sequence[float], margin: float, kind: str) -> str:
    """'Δ AUC: +0.0123 ± 0.0040 (margin 0.005), 5/5 seeds positive': a check's numbers in one short line.

    The mean and sample sd of its per-seed values; for an effect or a control its margin (a band's
    half-width); for a paired difference (a name with Δ) how many seeds favour the method.
    """
    if not values:
        return f"{name or 'value'}: no values"
    mean, sd = mean_std(list(values))
    text = f"{name or 'value'}: {mean:+.4f} ± {sd:.4f}"
    if kind in (EFFECT, CONTROL):
        text += f" (margin {margin:g})"
        if "Δ" in name:
            text += f", {sum(v > 0 for v in values)}/{len(values)} seeds positive"
    return text


def _numbers(outcome: ClaimOutcome) -> str:
    """The numbers cell: the regime, then each single check's line, or why nothing was measured."""
    claim = outcome.claim
    if not claim.measurable:
        return "not measured"
    leaves = [leaf for leaf in outcome.verdict.leaves() if leaf.values]
    shown = leaves[:SHOWN_CHECKS] if len(leaves) > SHOWN_CHECKS + 1 else leaves
    text = "; ".join(numbers_line(leaf.name, leaf.values, leaf.margin, claim.kind) for leaf in shown)
    if len(shown) < len(leaves):
        text += f"; and {len(leaves) - len(shown)} more checks (in the note)"
    text = text or outcome.verdict.detail
    if claim.regime:
        text = f"[regime: {claim.regime.label()}] {text}"
    if outcome.undertrained:
        text += " (undertrained)"
    return text


def _note(outcome: ClaimOutcome) -> str:
    """The note under the table: what is measured, the full check, and why a claim is not expected."""
    claim = outcome.claim
    if not claim.measurable:
        return f"Not measured: the toy needs {claim.needs}."
    text = f"Measured: {claim.metric}. Check: {outcome.verdict.detail}."
    why = claim.reason or claim.needs
    if why and not claim.expected:
        text += f" Why it is not expected: {why}."
    if outcome.undertrained:
        text += f" Undertrained: {outcome.undertrained}."
    return text


def claims_table(outcomes: Sequence[ClaimOutcome]) -> Table:
    """The table every chapter shows: the claim, its kind, the paper's words, the toy's numbers, the verdict.

    Each claim's note (what is measured, the check in full, why it is not expected) follows the table.
    A control whose method loses beyond its band gets a row of its own.
    """
    rows, notes = [], []
    for o in outcomes:
        name = readable(o.claim.id)
        rows.append([name, o.claim.kind, o.claim.statement, _numbers(o), o.status])
        notes.append((name, _note(o)))
        if o.control_loss:
            rows.append([f"{name} (loss)", o.claim.kind, "", o.control_loss, "loss beyond the band"])
    seeds = sorted({s for o in outcomes for s in o.seeds})
    caption = f"Claims checked over seeds {_seed_range(seeds)}. " if seeds else "Claims. "
    caption += status_legend([o.status for o in outcomes]) + " Each claim's note follows the table."
    return Table(["claim", "kind", "the paper says", "the toy's numbers", "verdict"], rows, caption, notes)


def _seed_range(seeds: Sequence[int]) -> str:
    """'0–4' for consecutive seeds, else the list."""
    if len(seeds) > 2 and list(seeds) == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)
