"""``/health``: only the status speaks, and only some statuses speak about the engine."""

from __future__ import annotations

import pytest

from vllm_evidence._adapters.health import HealthAnswer, parse_health


def test_health_status_only() -> None:
    ok = parse_health(200)
    assert isinstance(ok, HealthAnswer)
    assert ok.healthy
    dead = parse_health(503)
    assert isinstance(dead, HealthAnswer)
    assert not dead.healthy
    assert parse_health(404) is None
    assert parse_health(302) is None


@pytest.mark.parametrize(
    ("status", "engine_answer"),
    [(200, True), (499, False), (500, True), (503, True), (599, True), (600, False), (404, False)],
)
def test_health_statuses_that_speak_about_the_engine(status: int, engine_answer: bool) -> None:
    answer = parse_health(status)
    assert (answer is not None) is engine_answer
    if answer is not None:
        assert answer.status == status
