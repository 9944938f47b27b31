"""pytest plugin (``pytest11`` entry point): the ``vllm_front_door`` fixture factory.

::

    def test_something(vllm_front_door):
        door = vllm_front_door()                      # the recorded vLLM 0.32.0 server
        door = vllm_front_door(my_capture_dir, faults={Route.HEALTH: Fault(status=503)})
        real = vllm_front_door.replay("vllm-0.32.0-cpu/tp2-devmode")   # + log and receipt

Every stub the factory started in a test is stopped when the test ends (its port is
closed).  A :class:`~vllm_evidence.testing.CaptureDirectory` is written under the
test's ``tmp_path`` first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, final

import pytest

from vllm_evidence.testing._capture import CaptureDirectory
from vllm_evidence.testing._scenarios import (
    ReplayedFrontDoor,
    real_scenario,
    real_scenarios,
)
from vllm_evidence.testing._stub import Fault, FrontDoorFactory, StubFrontDoor, serve_capture
from vllm_evidence.upstream._routes import Route

__all__ = ["DEFAULT_SCENARIO", "FrontDoorFactory", "FrontDoors", "vllm_front_door"]

#: The recorded server ``vllm_front_door()`` replays when given no directory.
DEFAULT_SCENARIO = "vllm-0.32.0-cpu/tp1-devmode"


@final
class FrontDoors:
    """The ``vllm_front_door`` fixture's value: call it to start a stub; ``replay`` a
    recorded real server with its log and receipt.  Everything it started stops after
    the test."""

    def __init__(self, stack: ExitStack, tmp_path_factory: pytest.TempPathFactory) -> None:
        self._stack = stack
        self._tmp = tmp_path_factory

    #: The recorded servers :meth:`replay` knows (see :func:`real_scenarios`).
    scenarios: tuple[str, ...] = ()

    def __call__(
        self,
        directory: str | Path | CaptureDirectory | None = None,
        *,
        faults: Mapping[Route, Fault] | None = None,
        api_key: str | None = None,
        restart_after_metrics_reads: int | None = None,
        metrics_sequence: Sequence[bytes] = (),
    ) -> StubFrontDoor:
        """Serve ``directory`` (default: the recorded :data:`DEFAULT_SCENARIO`) on a free
        port of 127.0.0.1; see :func:`~vllm_evidence.testing.serve_capture` for the
        options."""
        if directory is None:
            directory = self._stack.enter_context(real_scenario(DEFAULT_SCENARIO)).directory
        elif isinstance(directory, CaptureDirectory):
            directory = directory.write(self._tmp.mktemp("vllm-capture"))
        return self._stack.enter_context(
            serve_capture(
                directory,
                faults=faults,
                api_key=api_key,
                restart_after_metrics_reads=restart_after_metrics_reads,
                metrics_sequence=metrics_sequence,
            )
        )

    def replay(
        self,
        name: str = DEFAULT_SCENARIO,
        *,
        faults: Mapping[Route, Fault] | None = None,
        restart_after_metrics_reads: int | None = None,
        metrics_sequence: Sequence[bytes] = (),
    ) -> ReplayedFrontDoor:
        """Replay the recorded real server ``name`` (one of :attr:`scenarios`) on the
        port its log names, with its ``startup_log`` and ``receipt`` as attributes.

        When that port is taken on this machine the stub serves on a free one and
        ``on_logged_port`` is false (with the receipt, the start time still decides the
        log join; without it the join refuses ``port_contradicted``).
        An unknown name raises :class:`~vllm_evidence.errors.InputError` naming the
        known ones.
        """
        scenario = self._stack.enter_context(real_scenario(name))

        def serve(port: int) -> StubFrontDoor:
            return self._stack.enter_context(
                serve_capture(
                    scenario.directory,
                    faults=faults,
                    restart_after_metrics_reads=restart_after_metrics_reads,
                    metrics_sequence=metrics_sequence,
                    port=port,
                )
            )

        try:
            door, on_port = serve(scenario.port), scenario.port != 0
        except OSError:  # the log's port is taken here
            door, on_port = serve(0), False
        return ReplayedFrontDoor(scenario=scenario, door=door, on_logged_port=on_port)


@pytest.fixture
def vllm_front_door(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrontDoors]:
    """Stub vLLM front doors on 127.0.0.1, stopped after the test; probes read them like a
    live server.  ``door = vllm_front_door()`` replays a recorded real vLLM 0.32.0 server
    (TP=1, development mode); ``vllm_front_door(directory)`` serves a capture directory
    or a ``CaptureDirectory`` (e.g. a drawn server's ``front_door``).  Faults per route:
    ``vllm_front_door(faults={Route.HEALTH: Fault(status=503)})`` (also delay, trickle,
    oversize, truncated, garbage, reset, redirect).  A restart:
    ``vllm_front_door(restart_after_metrics_reads=1)`` (the closing ``/metrics`` reads
    see another process) or ``door.restart()``.  Recorded ``/metrics`` bodies in order:
    ``vllm_front_door(metrics_sequence=[first, second])``.  A recorded real server with
    its startup log and launch receipt: ``real =
    vllm_front_door.replay("vllm-0.32.0-cpu/tp2-devmode")``, then
    ``assess(readback_from_batch(probe_sync(real.url)), real.startup_log,
    receipt=real.receipt)``; ``vllm_front_door.scenarios`` lists the names.
    ``door.requests`` is what a stub received.  See docs/testing.md.
    """
    with ExitStack() as stack:
        doors = FrontDoors(stack, tmp_path_factory)
        doors.scenarios = real_scenarios()
        yield doors


if TYPE_CHECKING:

    def _conforms(doors: FrontDoors) -> FrontDoorFactory:
        return doors  # mypy checks the fixture's value against its published type
