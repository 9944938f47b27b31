"""The read releases: PEP 440 parsing, local builds, and spans between read releases."""

from __future__ import annotations

import pytest
from packaging.version import Version

from tests._evidence import release_laws as _laws
from vllm_evidence.upstream import (
    Route,
    RouteGate,
    RouteLaw,
    parse_release,
)

# --- hand-written expectations (from reference/vllm-upstream.md, not from the table) ---


def _gate(version: str, route: Route) -> RouteGate:
    law = _laws(version).route(route)
    assert isinstance(law, RouteLaw), law.statement
    return law.gate


def test_local_labels_are_builds_of_the_same_release() -> None:
    assert _gate("0.33.0+cpu", Route.SERVER_INFO) == RouteGate.DEVELOPMENT_MODE


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.25.2.dev0+g752a3a504.d20260714", "0.25.2.dev0+g752a3a504.d20260714"),
        ("0.6.6.post1", "0.6.6.post1"),
        (" 0.32.0\n", "0.32.0"),
    ],
)
def test_parse_release_accepts_pep440(text: str, expected: str) -> None:
    assert Version(expected) == parse_release(text)


@pytest.mark.parametrize("text", ["banana", "", "0.32.0 beta", "v0..1"])
def test_parse_release_refuses_non_versions(text: str) -> None:
    assert parse_release(text) is None


def test_a_span_runs_only_between_read_releases_in_order() -> None:
    from vllm_evidence.upstream._releases import span

    ok = span("0.8.5", "0.11.0")
    assert (ok.first, ok.last) == (Version("0.8.5"), Version("0.11.0"))
    for first, last in (("0.8.4", "0.11.0"), ("0.8.5", "0.11.3"), ("0.11.0", "0.8.5")):
        with pytest.raises(ValueError, match=rf"got {first}\.\.{last}$"):
            span(first, last)
