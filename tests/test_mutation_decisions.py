"""Small helpers of the decisions, pinned where mutation testing found them unwitnessed.

Every expected value is written by hand; each helper is checked in both directions.
"""

from __future__ import annotations

import pytest

from vllm_evidence.decisions._sources import arm_name, route_source
from vllm_evidence.decisions.identity import Derivation, _unquote, derivation


class NotFound:
    """Stands for a route outcome arm: only its class name is read."""


class Unauthorized:
    """Stands for a route outcome arm: only its class name is read."""


def test_arm_names_are_snake_case_without_a_leading_underscore() -> None:
    assert arm_name(NotFound()) == "not_found"
    assert arm_name(Unauthorized()) == "unauthorized"


def test_a_route_source_as_json() -> None:
    assert route_source("/metrics").as_json() == {"kind": "front_door", "where": "GET /metrics"}


@pytest.mark.parametrize(
    ("served", "path", "expected"),
    [
        ("/models/m/", "/models/m/", Derivation.EQUALS_PATH),
        ("m", "/models/m/", Derivation.FINAL_PATH_COMPONENT),
        ("mX", "/models/mX", Derivation.FINAL_PATH_COMPONENT),
        ("m", "/models/mX", Derivation.NOT_DERIVABLE),
        ("models/m", "/models/m", Derivation.NOT_DERIVABLE),
        ("m", "m/", Derivation.NOT_DERIVABLE),
    ],
)
def test_derivation(served: str, path: str, expected: Derivation) -> None:
    assert derivation(served, path) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("'a'", "a"),
        ('"a"', "a"),
        ("''", ""),
        ("'", "'"),
        ("a'", "a'"),
        ("'a\"", "'a\""),
        ("XabX", "XabX"),
        ("a", "a"),
        (None, None),
    ],
)
def test_unquote_strips_one_matching_pair_of_quotes(text: str | None, expected: str | None) -> None:
    assert _unquote(text) == expected
