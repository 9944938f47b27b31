"""Bounds on the numbers a server or a log reports: what a real deployment can have.

Sizes from the wire drive work (the expected ranks, the engines a capacity must cover),
so they are read only within these bounds; a larger figure is reported as not read,
never allocated.  Decimal integers are read only up to :data:`MAX_INT_DIGITS` digits
(Python's own ``int()`` refuses past 4,300 digits with a ``ValueError``).
"""

from __future__ import annotations

__all__ = ["MAX_INT_DIGITS", "MAX_WORLD_SIZE", "wire_int"]

#: The most ranks (TP × PP × PCP × DP) — and so the most DP engines, and the largest
#: single size — a deployment read by this package can have.  The largest deployments
#: run thousands of accelerators; 65,536 leaves a wide margin and keeps every set the
#: decisions build from it small.
MAX_WORLD_SIZE = 65_536

#: Digits past which a decimal integer from the wire is not read.
MAX_INT_DIGITS = 18


def wire_int(text: str) -> int | None:
    """A non-negative decimal integer of at most :data:`MAX_INT_DIGITS` ASCII digits."""
    if not text.isascii() or not text.isdigit() or len(text) > MAX_INT_DIGITS:
        return None
    return int(text)
