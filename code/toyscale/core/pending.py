"""The chapters whose claims-protocol v2 re-audit has not landed (issue 39): bookkeeping, off the compute path.

While a chapter is listed, `core`'s v2 refusals do not apply to it and `toyscale audit` reports its
findings as warnings. The list decides which checks refuse, never a number a chapter computes, so
it stays off every chapter's fingerprint (`core.store.OFF_PATH`): a re-audit that removes its
chapter leaves the other chapters' calibration records and ledger entries current.
"""

from __future__ import annotations

#: Each re-audit removes its chapter; the list empties.
RE_AUDIT_PENDING: frozenset[str] = frozenset(
    {
        "ddk",
        "victor",
    }
)


def pending(chapter: str) -> bool:
    """True while `chapter` waits for its v2 re-audit: core's v2 refusals do not apply to it yet."""
    return chapter in RE_AUDIT_PENDING
