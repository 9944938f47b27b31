"""A capture batch built in-process from given answers: the probe's sealed path without
the transport (package-internal; the test kit's socket-free draws use it).

:func:`_answered_batch` mints the exchanges and the batch through the same functions a
probe ends in (:func:`~vllm_evidence._capture.batch._new_exchange`, which digests each body
and keeps only the recorded headers, and :func:`~vllm_evidence._capture.batch._new_batch`,
which checks the bracket), in the order a probe reads: ``/metrics`` twice, the other
routes, ``/metrics`` twice again.  Nothing is sent anywhere.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from vllm_evidence._capture.batch import (
    CaptureBatch,
    CaptureOrigin,
    Exchange,
    ExchangeRole,
    Transport,
    _new_batch,
    _new_exchange,
)
from vllm_evidence._capture.http import _CORE_ROUTES, DEFAULT_MAX_BODY_BYTES, clean_target
from vllm_evidence.upstream._routes import PROBE_ROUTES, Route

__all__: list[str] = []

#: One answer: its status, its headers and its body.
_Answer = tuple[int, tuple[tuple[str, str], ...], bytes]

#: How long each generated exchange lasts on the clocks (one microsecond).
_STEP_NS = 1_000


def _answered_batch(
    target: str,
    answers: Mapping[Route, _Answer],
    *,
    closing_metrics: _Answer | None = None,
    development_routes: bool = True,
    bracket_metrics: tuple[_Answer, _Answer, _Answer, _Answer] | None = None,
) -> CaptureBatch:
    """The batch a probe of ``target`` would have read had the server given ``answers``.

    ``answers`` holds ``/metrics`` (every bracket read, unless ``closing_metrics`` gives
    the two closing ones: a restart; each end's twin is its first read's answer, as one
    process gives) and any other probe route; a route the probe reads that
    has no answer is answered 404 ``{"detail":"Not Found"}``, as vLLM answers a route it
    did not register.  ``development_routes`` is the probe's option of that name.
    ``bracket_metrics`` gives the four ``/metrics`` answers in probe order (the opening
    read, its twin, the closing read, its twin) instead: several processes, for one.
    Timestamps are this process's clocks, one microsecond per exchange, in probe order.
    The batch's origin is :attr:`~vllm_evidence._capture.batch.CaptureOrigin.GENERATED`.
    """
    base = clean_target(target)
    start_ns = time.monotonic_ns()
    wall = datetime.now(UTC)
    step = 0

    def exchange(route: Route, role: ExchangeRole, answer: _Answer | None) -> Exchange:
        nonlocal step
        status, headers, body = (
            answer
            if answer is not None
            else (404, (("content-type", "application/json"),), b'{"detail":"Not Found"}')
        )
        begin, step = step, step + 1
        return _new_exchange(
            route=route,
            role=role,
            transport=Transport.ANSWERED,
            status=status,
            headers=(*headers, ("content-length", str(len(body)))),
            body=body,
            size_limit=DEFAULT_MAX_BODY_BYTES,
            started_monotonic_ns=start_ns + begin * _STEP_NS,
            ended_monotonic_ns=start_ns + step * _STEP_NS,
            started_at=wall + timedelta(microseconds=begin),
            ended_at=wall + timedelta(microseconds=step),
            detail="",
        )

    routes = [
        r
        for r in PROBE_ROUTES
        if r is not Route.METRICS and (r in _CORE_ROUTES or development_routes)
    ]
    closing_answer = answers.get(Route.METRICS) if closing_metrics is None else closing_metrics
    first, twin, last, last_twin = (
        (answers.get(Route.METRICS),) * 2 + (closing_answer,) * 2
        if bracket_metrics is None
        else bracket_metrics
    )
    opening = exchange(Route.METRICS, ExchangeRole.BRACKET_OPEN, first)
    opening_twin = exchange(Route.METRICS, ExchangeRole.BRACKET_OPEN, twin)
    middle = tuple(exchange(r, ExchangeRole.ROUTE, answers.get(r)) for r in routes)
    closing = exchange(Route.METRICS, ExchangeRole.BRACKET_CLOSE, last)
    closing_twin = exchange(Route.METRICS, ExchangeRole.BRACKET_CLOSE, last_twin)
    return _new_batch(
        batch_id=uuid.uuid4().hex,
        target=base,
        bracket_open=opening,
        exchanges=middle,
        bracket_close=closing,
        bracket_open_twin=opening_twin,
        bracket_close_twin=closing_twin,
        origin=CaptureOrigin.GENERATED,
    )
