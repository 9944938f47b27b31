"""``GET /health``: the status code only (what a 200 covers is a decision, not a parse)."""

from __future__ import annotations

from typing import final

import attrs

from vllm_evidence._seal import Sealed, minter

__all__ = ["HealthAnswer", "parse_health"]


@final
@attrs.frozen(init=False, repr=False)
class HealthAnswer(Sealed):
    """The status ``/health`` answered with; its body carries nothing (empty on 200)."""

    __public_constructor__ = "vllm_evidence.readback_from_batch()"

    status: int
    """200 (frontend has not marked the engine dead) or a 5xx (it has)."""

    @property
    def healthy(self) -> bool:
        """Whether the answer was 200."""
        return self.status == 200


_mint_health = minter(HealthAnswer, HealthAnswer.__attrs_init__)


def parse_health(status: int) -> HealthAnswer | None:
    """The answer for a status ``/health`` gives about the engine: 200, or 500-599.

    Other statuses (404, 401, a redirect) say nothing about the engine: ``None``.
    """
    if status == 200 or 500 <= status <= 599:
        return _mint_health(status=status)
    return None
