"""The joined view's small contracts: an outcome arm's name, a route source as JSON.

Pinned where mutation testing found them unwitnessed; every expected value is written by
hand.
"""

from __future__ import annotations

from vllm_evidence._readback.evidence import arm_name, route_source


class NotFound:
    """Stands for a route outcome arm: only its class name is read."""


class Unauthorized:
    """Stands for a route outcome arm: only its class name is read."""


def test_arm_names_are_snake_case_without_a_leading_underscore() -> None:
    assert arm_name(NotFound()) == "not_found"
    assert arm_name(Unauthorized()) == "unauthorized"


def test_a_route_source_as_json() -> None:
    assert route_source("/metrics").as_json() == {"kind": "front_door", "where": "GET /metrics"}
