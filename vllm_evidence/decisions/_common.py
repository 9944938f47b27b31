"""What every decision shares: the law scope of a version, and the restart wording."""

from __future__ import annotations

from packaging.version import Version

from vllm_evidence.upstream import ReleaseLaws, VersionNotEstablished, laws_for

__all__ = ["RESTARTED", "RESTARTED_REMEDY", "scope"]

#: The detail of a front-door fact that cannot be scoped because the server restarted.
RESTARTED = (
    "the server restarted during the probe (process_start_time_seconds changed): "
    "/version and the other routes may come from different processes"
)
RESTARTED_REMEDY = "probe again once the server is up"


def scope(version: Version | None) -> ReleaseLaws | VersionNotEstablished | None:
    """The laws for a version, ``None`` when the version is unobserved."""
    return None if version is None else laws_for(version)
