"""A capture directory's content as a value (no hypothesis needed to use it)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import final

import attrs

from vllm_evidence._capture.batch import CaptureBatch
from vllm_evidence._capture.generated import _answered_batch
from vllm_evidence.upstream._routes import Route

__all__ = ["CaptureDirectory"]

#: Where a batch built in-process says it was read (nothing listens; nothing is sent).
GENERATED_TARGET = "http://127.0.0.1:8000"

_JSON = (("content-type", "application/json"),)
_TEXT = (("content-type", "text/plain; version=1.0.0; charset=utf-8"),)


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


def _generated_batch(
    capture: CaptureDirectory,
    *,
    closing_metrics: bytes | None = None,
    development_routes: bool = True,
) -> CaptureBatch:
    """The batch a probe of ``capture`` served by the stub reads, built in-process (no
    socket): each route's body with its status and the content type :meth:`write`
    records, a route without a body 404, ``closing_metrics`` for the closing bracket
    when it differs (a restart)."""
    answers = {
        route: (
            capture.statuses.get(route, 200),
            _TEXT if route is Route.METRICS else _JSON,
            body,
        )
        for route, body in capture.bodies.items()
    }
    closing = None if closing_metrics is None else (200, _TEXT, closing_metrics)
    return _answered_batch(
        GENERATED_TARGET,
        answers,
        closing_metrics=closing,
        development_routes=development_routes,
    )
