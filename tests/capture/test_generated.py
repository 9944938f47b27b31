"""_capture/generated.py: a batch from given answers, the probe's sealed path minus the
transport (the test kit's socket-free draws)."""

from __future__ import annotations

import hashlib
import itertools

import pytest

from vllm_evidence._capture.batch import CaptureOrigin, ExchangeRole, Transport
from vllm_evidence._capture.generated import _answered_batch
from vllm_evidence.errors import InputError
from vllm_evidence.upstream._routes import PROBE_ROUTES, Route

JSON = (("content-type", "application/json"),)
METRICS = b"process_start_time_seconds 1.7e+09\n"
ANSWERS = {
    Route.METRICS: (200, (("content-type", "text/plain"),), METRICS),
    Route.VERSION: (200, JSON, b'{"version":"0.32.0"}'),
    Route.HEALTH: (503, (), b""),
}


def test_the_batch_reads_the_probe_routes_in_probe_order() -> None:
    batch = _answered_batch("http://127.0.0.1:8000", ANSWERS)
    assert batch.origin is CaptureOrigin.GENERATED
    assert [e.route for e in batch.exchanges] == [r for r in PROBE_ROUTES if r is not Route.METRICS]
    assert batch.bracket_open.role is ExchangeRole.BRACKET_OPEN
    assert batch.bracket_close.role is ExchangeRole.BRACKET_CLOSE
    everything = batch.all_exchanges()
    assert all(e.transport is Transport.ANSWERED for e in everything)
    # each exchange ends before the next starts, on both clocks
    for before, after in itertools.pairwise(everything):
        assert before.ended_monotonic_ns <= after.started_monotonic_ns
        assert before.ended_at <= after.started_at


def test_answers_are_kept_with_their_digest_and_status() -> None:
    batch = _answered_batch("http://127.0.0.1:8000", ANSWERS)
    version = batch.exchange(Route.VERSION)
    assert version is not None
    assert version.body == b'{"version":"0.32.0"}'
    assert version.body_sha256 == hashlib.sha256(b'{"version":"0.32.0"}').hexdigest()
    assert version.header("content-type") == "application/json"
    assert version.header("content-length") == "20"
    health = batch.exchange(Route.HEALTH)
    assert health is not None
    assert health.status == 503
    assert batch.bracket_open.body == batch.bracket_close.body == METRICS


def test_a_route_without_an_answer_is_404_not_found() -> None:
    batch = _answered_batch("http://127.0.0.1:8000", ANSWERS)
    models = batch.exchange(Route.MODELS)
    assert models is not None
    assert (models.status, models.body) == (404, b'{"detail":"Not Found"}')


def test_without_development_routes_only_the_core_routes_are_read() -> None:
    batch = _answered_batch("http://127.0.0.1:8000", ANSWERS, development_routes=False)
    assert [e.route for e in batch.exchanges] == [Route.VERSION, Route.MODELS, Route.HEALTH]
    with_dev = _answered_batch("http://127.0.0.1:8000", ANSWERS)
    assert Route.SERVER_INFO in [e.route for e in with_dev.exchanges]


def test_a_closing_metrics_answer_is_the_closing_bracket_only() -> None:
    later = b"process_start_time_seconds 1.8e+09\n"
    batch = _answered_batch("http://127.0.0.1:8000", ANSWERS, closing_metrics=(200, (), later))
    assert batch.bracket_open.body == METRICS
    assert batch.bracket_close.body == later


def test_the_target_is_cleaned_like_a_probes() -> None:
    batch = _answered_batch("http://127.0.0.1:08000/prefix/", ANSWERS)
    assert batch.target == "http://127.0.0.1:8000/prefix"
    with pytest.raises(InputError):
        _answered_batch("ftp://127.0.0.1:1", ANSWERS)
    with pytest.raises(InputError, match="user information"):
        _answered_batch("http://user:pw@127.0.0.1:8000/prefix/", ANSWERS)


def test_a_generated_batch_sent_nothing() -> None:
    assert _answered_batch("http://127.0.0.1:8000", ANSWERS).request_lines() == ()
