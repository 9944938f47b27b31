"""Shared test configuration.

* Hypothesis profiles: ``HYPOTHESIS_PROFILE=dev`` runs more examples; CI uses the
  default profile (Hypothesis loads its own derandomised ``ci`` profile when
  ``CI=true``).
* Each test starts with no remembered secret (a probe with an API key makes the
  process scrub it from everything it renders afterwards: ``vllm_evidence._scrub``).
* Suite-wide guard: every request any stub front door received -- started directly, by
  a strategy, or by the ``vllm_front_door`` fixture -- was a GET to a route.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from vllm_evidence._scrub import forget_all
from vllm_evidence.testing._stub import (
    ALLOWED_TARGETS,
    StubRequest,
    forbidden_requests,
    observe_requests,
)

# No per-example deadline outside CI either (hypothesis's own "ci" profile has none):
# machines here are shared and noisy, and a deadline is a timed test.
settings.register_profile("default", max_examples=100, deadline=None)
settings.register_profile("dev", max_examples=500, deadline=None)
settings.register_profile("fast", max_examples=20, suppress_health_check=[HealthCheck.too_slow])
if os.environ.get("CI") != "true" or "HYPOTHESIS_PROFILE" in os.environ:
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

__all__ = ["ALLOWED_TARGETS", "forbidden"]

pytest_plugins = ["pytester"]


def forbidden(requests: list[StubRequest]) -> list[StubRequest]:
    """The requests that were not a GET to a probe-readable route's target."""
    return forbidden_requests(requests)


@pytest.fixture(scope="session", autouse=True)
def stub_request_log() -> Iterator[list[StubRequest]]:
    """Every request any stub received in this session; checked when the session ends.

    ``tests/capture/test_http.py::test_session_guard_sees_the_probes_requests`` proves it is wired.
    """
    with observe_requests() as log:
        yield log
    # The gate's canary (launch --serve --canary) is the one POST a test may cause.
    assert forbidden_requests(log, canary=True) == [], (
        "the probe sent something other than GET to a route"
    )


@pytest.fixture(autouse=True)
def _forget_secrets() -> Iterator[None]:
    """A key one test probed with is not scrubbed from the next test's output."""
    forget_all()
    yield
    forget_all()
