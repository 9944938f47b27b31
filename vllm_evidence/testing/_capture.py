"""A capture directory's content as a value (no hypothesis needed to use it)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import final

import attrs

from vllm_evidence.upstream.routes import Route

__all__ = ["CaptureDirectory"]


@final
@attrs.frozen(eq=False)
class CaptureDirectory:
    """A bare capture directory's content: route bodies, statuses, and a startup log.

    :meth:`write` lays it out as ``<stem>.body``/``<stem>.headers`` files (what
    :func:`~vllm_evidence.testing.serve_capture` serves and
    :func:`~vllm_evidence.load` reads) plus ``startup.log``.
    """

    bodies: Mapping[Route, bytes]
    statuses: Mapping[Route, int]
    """A route's HTTP status, where it is not 200."""
    startup_log: bytes | None

    def write(self, directory: str | Path) -> Path:
        """Write the files into ``directory`` (created if needed); return its path."""
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        for route, body in self.bodies.items():
            status = self.statuses.get(route, 200)
            kind = "text/plain; version=1.0.0; charset=utf-8"
            if route is not Route.METRICS:
                kind = "application/json"
            reason = {200: "OK", 401: "Unauthorized", 404: "Not Found"}.get(status, "Error")
            (path / f"{route.stem}.body").write_bytes(body)
            (path / f"{route.stem}.headers").write_text(
                f"HTTP/1.1 {status} {reason}\ncontent-type: {kind}\n", encoding="utf-8"
            )
        if self.startup_log is not None:
            (path / "startup.log").write_bytes(self.startup_log)
        return path
