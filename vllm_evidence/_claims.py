"""The claim names an assessment decides, shared by the CLI's ``--require``."""

from __future__ import annotations

#: The claims ``--require`` can name, in report order.
CLAIMS: tuple[str, ...] = (
    "parallel",
    "capacity",
    "served_identity",
    "health_coverage",
    "front_door_join",
)
