"""The exit statuses of ``vllm-evidence`` (re-exported by :mod:`vllm_evidence.cli`)."""

from __future__ import annotations

__all__ = ["EXIT_OK", "EXIT_REQUIREMENT_REFUSED", "EXIT_USAGE"]

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_REQUIREMENT_REFUSED = 3
