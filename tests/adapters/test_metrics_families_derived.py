"""``MetricsObservation.vllm_families`` is derived from the body when first read.

Expected family names are written by hand from the bodies below; the scan's count is
read by a counting stand-in for ``_declared``.
"""

from __future__ import annotations

import pytest

from vllm_evidence._adapters import metrics
from vllm_evidence._adapters.metrics import CACHE_CONFIG_INFO, MetricsObservation, parse_metrics

SERIES = 'vllm:cache_config_info{block_size="16",engine="0"} 1.0\n'
START = "process_start_time_seconds 1.7e+09\n"
BODY = (
    "# HELP vllm:num_requests_running Requests running.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    'vllm:num_requests_running{engine="0"} 3.0\n'
    "# TYPE vllm:cache_config_info gauge\n" + SERIES + START
)


def _parsed(text: str) -> MetricsObservation:
    parsed = parse_metrics(text.encode())
    assert isinstance(parsed, MetricsObservation)
    return parsed


def test_the_families_are_not_scanned_until_read(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = metrics._declared

    def counting(text: str, jumps: int | None = None) -> set[str]:
        calls.append(len(text))
        return real(text, jumps)

    monkeypatch.setattr(metrics, "_declared", counting)
    observation = _parsed(BODY)
    assert calls == []  # parsed: series and marker read, no declaration scanned
    assert observation.vllm_families == {"vllm:num_requests_running", CACHE_CONFIG_INFO}
    assert observation.vllm_families == {"vllm:num_requests_running", CACHE_CONFIG_INFO}
    assert calls == [len(BODY)]  # once, when first read


def test_undeclared_cache_config_samples_still_name_their_family() -> None:
    assert _parsed(SERIES + START).vllm_families == {CACHE_CONFIG_INFO}
    assert _parsed("# TYPE other gauge\nother 1\n" + START).vllm_families == frozenset()


def test_equal_when_series_marker_and_families_are_whatever_the_counters_read() -> None:
    one = _parsed(BODY)
    other = _parsed(BODY.replace("} 3.0\n", "} 7.0\n"))  # another read: a counter moved
    assert one == other
    assert hash(one) == hash(other)
    assert len({one, other}) == 1


def test_other_families_make_another_observation() -> None:
    one = _parsed(BODY)
    fewer = _parsed(BODY.replace("vllm:num_requests_running", "other_running"))
    assert one.cache_config_info == fewer.cache_config_info
    assert one.process_start_time == fewer.process_start_time
    assert one != fewer
    other_start = _parsed(BODY.replace("1.7e+09", "1.8e+09"))
    assert one != other_start
    assert one != "not an observation"


def test_the_repr_shows_the_families_and_never_the_body() -> None:
    text = repr(_parsed(BODY))
    assert "vllm_families={'vllm:cache_config_info', 'vllm:num_requests_running'}" in text
    assert "bytes" not in text
    assert "_body" not in text
    assert "Requests running" not in text
