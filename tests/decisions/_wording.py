"""What every decision's wording tests share: the refusal's three words, and the
hand-written sentences more than one decision prints."""

from __future__ import annotations

from typing import Protocol

__all__ = ["OUTSIDE_99", "RESTARTED", "RESTARTED_REMEDY", "Refusal", "says"]

RESTARTED = (
    "the server restarted during the probe (process_start_time_seconds changed): "
    "/version and the other routes may come from different processes"
)
RESTARTED_REMEDY = "probe again once the server is up"
OUTSIDE_99 = (
    "vLLM 99.0 is outside the releases this law table was read from "
    "(0.6.6.post1 .. 0.33.0); nothing is established for it"
)


class Refusal(Protocol):
    """The three words every refusal arm carries (any decision's refused type)."""

    @property
    def reason(self) -> object: ...
    @property
    def detail(self) -> str: ...
    @property
    def remedy(self) -> str: ...


def says(refused: Refusal, reason: object, detail: str, remedy: str) -> None:
    """The refusal's reason, detail and remedy are exactly these."""
    assert (refused.reason, refused.detail, refused.remedy) == (reason, detail, remedy)
