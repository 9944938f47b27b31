"""pytest plugin (``pytest11`` entry point): the ``vllm_front_door`` fixture factory.

::

    def test_something(vllm_front_door):
        door = vllm_front_door()                      # the recorded vLLM 0.32.0 server
        door = vllm_front_door(my_capture_dir, faults={Route.HEALTH: Fault(status=503)})

Every stub the factory started in a test is stopped when the test ends (its port is
closed).  A :class:`~vllm_evidence.testing.CaptureDirectory` is written under the
test's ``tmp_path`` first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from importlib import resources
from pathlib import Path

import pytest

from vllm_evidence.testing._capture import CaptureDirectory
from vllm_evidence.testing.stub import Fault, FrontDoorFactory, StubFrontDoor, serve_capture
from vllm_evidence.upstream.routes import Route

__all__ = ["FrontDoorFactory", "vllm_front_door"]

_DEMO = "vllm-0.32.0-cpu-tp1-devmode"


@pytest.fixture
def vllm_front_door(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrontDoorFactory]:
    """Start stub front doors for this test; all are stopped after it."""
    with ExitStack() as stack:
        demo = stack.enter_context(
            resources.as_file(resources.files("vllm_evidence") / "demo_data" / _DEMO)
        )

        def start(
            directory: str | Path | CaptureDirectory | None = None,
            *,
            faults: Mapping[Route, Fault] | None = None,
            api_key: str | None = None,
            restart_after_metrics_reads: int | None = None,
        ) -> StubFrontDoor:
            if directory is None:
                directory = demo
            elif isinstance(directory, CaptureDirectory):
                directory = directory.write(tmp_path_factory.mktemp("vllm-capture"))
            return stack.enter_context(
                serve_capture(
                    directory,
                    faults=faults,
                    api_key=api_key,
                    restart_after_metrics_reads=restart_after_metrics_reads,
                )
            )

        yield start
