"""Witnessed launches: one launch's startup log, the front door of the process it
started, and the launch receipt ``vllm-evidence launch`` would have written for it.

:func:`witnessed_launches` draws a :class:`WitnessedLaunch`: a generated one-launch log
(any release's format), a minimal front door of that same process — ``/version`` of the
release, ``/metrics`` carrying its ``process_start_time_seconds``, ``/health`` 200 —
and the receipt naming the same start time (printed as the process collector prints
it), the launch's APIServer pid and the SHA-256 of the whole log.  Two draws are two
launches: their start times differ (``assume`` it where it matters).  The front door
alone establishes none of parallel, capacity, identity or coverage, so whatever a
serving claim establishes with a log came through the log join.

This module imports hypothesis but never pytest.
"""

from __future__ import annotations

import hashlib
import json
from types import MappingProxyType
from typing import final

import attrs
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from vllm_evidence.adapters.receipt import RECEIPT_SCHEMA, ReceiptRecord
from vllm_evidence.capture.process import go_float
from vllm_evidence.launch import receipt_document
from vllm_evidence.testing._capture import CaptureDirectory
from vllm_evidence.testing.strategies.logs import GeneratedLog, startup_log_examples
from vllm_evidence.upstream.routes import Route

__all__ = ["WitnessedLaunch", "witnessed_launches"]

#: A boot time (``btime``) the start times are drawn after.
_BOOT = 1_790_000_000.0


@final
@attrs.frozen(eq=False)
class WitnessedLaunch:
    """One launch: its log, its process's front door, and its receipt."""

    log: GeneratedLog
    front_door: CaptureDirectory
    """``/version``, ``/metrics`` (with the start time) and ``/health`` 200 only."""
    start_time: str
    """``process_start_time_seconds`` as the front door prints it."""
    pid: int
    receipt: bytes
    """The receipt's JSON (``vllm-evidence.launch-receipt/1``)."""


def _metrics(start: str) -> bytes:
    return (
        "# HELP process_start_time_seconds Start time of the process since unix epoch in "
        "seconds.\n# TYPE process_start_time_seconds gauge\n"
        f"process_start_time_seconds {start}\n"
    ).encode()


@st.composite
def _witnessed(draw: st.DrawFn, release: str | None) -> WitnessedLaunch:
    log = draw(startup_log_examples(release=release, min_launches=1, max_launches=1))
    launch = log.launches[0]
    ticks = draw(st.integers(min_value=1, max_value=10**9))
    start = go_float(ticks / 100.0 + _BOOT)
    pid = launch.api_server_pid or draw(st.integers(min_value=2, max_value=4_194_304))
    door = CaptureDirectory(
        bodies=MappingProxyType(
            {
                Route.VERSION: json.dumps({"version": launch.release}).encode(),
                Route.METRICS: _metrics(start),
                Route.HEALTH: b"",
            }
        ),
        statuses=MappingProxyType({}),
        startup_log=log.text,
    )
    record = ReceiptRecord(
        schema=RECEIPT_SCHEMA,
        pid=pid,
        process_start_time_seconds=start,
        start_time_unavailable=None,
        argv=["vllm", "serve", launch.served_model_name],
        host="generated-host",
        log_path="startup.log",
        log_bytes=len(log.text),
        log_sha256=hashlib.sha256(log.text).hexdigest(),
    )
    receipt = json.dumps(receipt_document(record)).encode()
    return WitnessedLaunch(log=log, front_door=door, start_time=start, pid=pid, receipt=receipt)


def witnessed_launches(*, release: str | None = None) -> SearchStrategy[WitnessedLaunch]:
    """Launches with their front door and receipt (see the module); ``release=None``
    draws the release."""
    return _witnessed(release)
