"""The gate as the container's entrypoint: ``vllm-evidence launch --serve HOST:PORT
--require … -- vllm serve …``.

The launcher owns its child (:func:`vllm_evidence._launch.launch`): it started it, so it
knows its pid and its start time as ``/proc`` gives them, it tees its log, and its
process tree is its own.  Each round (:class:`LaunchRounds`) it

1. probes its own child on loopback — the port of the child's command line
   (``--port N``, vLLM's default 8000), ``https`` when it is given ``--ssl-certfile``,
   with the API key of its command line (``--api-key``) or of ``VLLM_API_KEY``;
2. reads the log it wrote, through its own descriptor, up to the length it has written
   (a round whose log did not grow reuses the last reading), and builds the launch
   receipt **in memory** from what it observed — the same receipt ``launch --receipt``
   writes (:func:`~vllm_evidence._launch.receipt_record`), read back by the receipt's
   own strict parser and marked observed in process (its bytes unsigned: written out,
   they would join nothing): no receipt crosses a process boundary, and the log join is
   decided by the start time the front door is seen to carry;
3. reads its process tree (:func:`~vllm_evidence._capture.proc.read_proc`, typed by
   :func:`~vllm_evidence._adapters.process_tree.observe_process_tree`, each pid's first
   start time carried from round to round so a pid taken by another process is seen),
   and assesses (:func:`~vllm_evidence._assessment.assess`) with the tree among the
   evidence: a worker the log names that is gone is a lost rank *this round*, before
   vLLM's ``/health`` says so.  A new ``process_start_time_seconds`` on the front door
   is another process: the start times first seen are forgotten.

:func:`launch_gate` binds the gate's address first (an address in use is a one-line
error and the child never starts), then runs the child; ``/live`` is 200 while the
rounds run and the child does; the launcher exits with the child's status, as
``launch`` does.  A child listening on a Unix socket (``--uds``) cannot be probed here: a
one-line error says so.  A port set only in a ``--config`` file is not seen: give
``--port`` on the command line.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Sequence
from decimal import Decimal
from typing import IO, BinaryIO

import attrs

from vllm_evidence._adapters.process_tree import ProcessTree, observe_process_tree
from vllm_evidence._adapters.receipt import LaunchReceipt, _observed_in_process
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._assessment import assess
from vllm_evidence._capture.http import probe
from vllm_evidence._capture.proc import read_proc
from vllm_evidence._capture.process import ChildStarted, LogProgress, SignalRelay, scrub_argv
from vllm_evidence._claims import GateClaim
from vllm_evidence._gate.canary import run_canary
from vllm_evidence._gate.loop import GateLoop
from vllm_evidence._gate.server import GateServer, parse_address
from vllm_evidence._gate.snapshot import Gate, GateTarget, TargetRound
from vllm_evidence._launch import LogReader, launch, receipt_record
from vllm_evidence._readback import CapturedReadback, readback_from_batch
from vllm_evidence._scrub import remember, scrub
from vllm_evidence.errors import InputError

__all__ = ["ChildFrontDoor", "LaunchRounds", "child_front_door", "launch_gate"]

#: vLLM's default port (``vllm serve``, the OpenAI-compatible server).
DEFAULT_PORT = 8000
_ANY_HOST = frozenset({"", "0.0.0.0", "::", "[::]"})  # noqa: S104  # vLLM's "every interface"


@attrs.frozen
class ChildFrontDoor:
    """Where the launcher reaches its own child's front door."""

    url: str
    api_key: str | None
    verify: bool
    """Whether TLS is verified (never for the child's own certificate on loopback)."""


def _option(command: Sequence[str], name: str) -> str | None:
    """The value of ``name`` (``--port 8000`` or ``--port=8000``); the last one given."""
    found = None
    for index, arg in enumerate(command):
        if arg == name and index + 1 < len(command):
            found = command[index + 1]
        elif arg.startswith(name + "="):
            found = arg[len(name) + 1 :]
    return found


def child_front_door(command: Sequence[str]) -> ChildFrontDoor:
    """The child's front door as its command line gives it (see the module); an
    :class:`InputError` for a port that is not one, or a Unix socket."""
    if _option(command, "--uds") is not None:
        msg = "the command serves on a Unix socket (--uds): the gate probes a TCP port only"
        raise InputError(msg)
    port_text = _option(command, "--port")
    port = DEFAULT_PORT
    if port_text is not None:
        if not port_text.isdigit() or not 0 < int(port_text) <= 65535:
            msg = f"the command's --port {port_text[:20]!r} is not a port"
            raise InputError(msg)
        port = int(port_text)
    host = _option(command, "--host")
    if host is None or host in _ANY_HOST:
        host = "127.0.0.1"
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    tls = _option(command, "--ssl-certfile") is not None
    key = _option(command, "--api-key") or os.environ.get("VLLM_API_KEY") or None
    return ChildFrontDoor(
        url=f"{'https' if tls else 'http'}://{shown}:{port}", api_key=key, verify=not tls
    )


@attrs.define
class _LogReading:
    size: int
    log: StartupLog | None


class LaunchRounds:
    """The launcher's rounds over its own child (see the module); also the launch's
    observer (:class:`~vllm_evidence._launch.LaunchObserver`)."""

    def __init__(
        self,
        command: Sequence[str],
        front_door: ChildFrontDoor,
        *,
        timeout_s: float,
        proc: str = "/proc",
        canary: bool = False,
    ) -> None:
        self._argv = scrub_argv(command)
        self._canary = canary
        self.front_door = front_door
        self._timeout = timeout_s
        self._proc = proc
        self._host = socket.gethostname()
        self._lock = threading.Lock()
        self._child: ChildStarted | None = None
        self._progress: LogProgress | None = None
        self._log: LogReader | None = None
        self._reading: _LogReading | None = None
        self._tree: ProcessTree | None = None
        self._marker: Decimal | None = None

    # -- the observer ------------------------------------------------------------------

    def started(self, child: ChildStarted, progress: LogProgress, log: LogReader) -> None:
        """The child runs: keep what the launcher saw of it."""
        with self._lock:
            self._child, self._progress, self._log = child, progress, log

    def progressed(self, progress: LogProgress) -> None:
        """The log grew: keep its length and digest."""
        with self._lock:
            self._progress = progress

    # -- what a round reads ------------------------------------------------------------

    def child_running(self) -> bool:
        """Whether the child runs (``/proc`` says it is neither gone nor a zombie)."""
        child = self._child
        if child is None:
            return False
        tree = observe_process_tree(read_proc(self._proc), child.pid)
        if tree.unavailable is not None:
            try:
                os.kill(child.pid, 0)
            except OSError:
                return False
            return True
        return tree.start_ticks(child.pid) is not None

    def _witness(self) -> tuple[StartupLog | None, LaunchReceipt | None]:
        """The log as written so far, and the receipt of it, built in memory."""
        with self._lock:
            child, progress, reader = self._child, self._progress, self._log
        if child is None or progress is None or reader is None or progress.size == 0:
            return None, None
        reading = self._reading
        if reading is None or reading.size != progress.size:
            read = read_startup_log(reader.prefix(progress.size), first_bytes=progress.size)
            reading = _LogReading(progress.size, read if isinstance(read, StartupLog) else None)
            self._reading = reading
        if reading.log is None:
            return None, None
        record = receipt_record(child, self._argv, self._host, reader.name, progress)
        return reading.log, _observed_in_process(record, "the launcher's own observation")

    def _process_tree(self, readback: CapturedReadback) -> ProcessTree | None:
        """The child's tree now, keeping the start times first seen — unless the front
        door carries another ``process_start_time_seconds`` than before: another
        process, whose pids are new."""
        child = self._child
        if child is None:
            return None
        markers = readback.bracket.markers()
        marker = None if markers is None else markers[0]
        earlier = self._tree
        if marker is not None:
            if self._marker is not None and marker != self._marker:
                earlier = None
            self._marker = marker
        self._tree = observe_process_tree(read_proc(self._proc), child.pid, earlier=earlier)
        return self._tree

    async def round(self) -> list[TargetRound]:
        """Probe the child, read the log and the receipt and the tree, assess."""
        door = self.front_door
        batch = await probe(
            door.url,
            api_key=door.api_key,
            timeout=self._timeout,
            deadline=3 * self._timeout,
            verify=door.verify,
        )
        readback = readback_from_batch(batch)
        log, receipt = self._witness()
        tree = self._process_tree(readback)
        assessment = assess(readback, log, receipt=receipt, process_tree=tree)
        canary = None
        if self._canary:
            canary = await run_canary(
                door.url,
                assessment,
                api_key=door.api_key,
                timeout_s=self._timeout,
                verify=door.verify,
            )
        return [TargetRound(batch.target, assessment, canary)]


class _Observer:
    """The launch's observer: the rounds, and the gate started with the child."""

    def __init__(self, rounds: LaunchRounds, loop: GateLoop, server: GateServer) -> None:
        self._rounds, self._loop, self._server = rounds, loop, server

    def started(self, child: ChildStarted, progress: LogProgress, log: LogReader) -> None:
        self._rounds.started(child, progress, log)
        self._server.start()
        self._loop.start()

    def progressed(self, progress: LogProgress) -> None:
        self._rounds.progressed(progress)


def launch_gate(
    command: Sequence[str],
    *,
    serve: str,
    required: Sequence[GateClaim],
    interval_s: float = 5.0,
    canary: bool = False,
    receipt: str | os.PathLike[str] | None = None,
    log: str | os.PathLike[str] | None = None,
    follow_symlinks: bool = False,
    stdout: BinaryIO | None = None,
    stderr: BinaryIO | None = None,
    notices: IO[str] | None = None,
    proc: str = "/proc",
    signals: SignalRelay | None = None,
) -> int:
    """Run ``command`` under the gate (see the module); return its exit status.

    ``canary``: send the generation canary each round (:mod:`vllm_evidence._gate.canary`)
    and serve the ``generation`` claim; it may then be required.

    Raises :class:`~vllm_evidence.errors.InputError` before the child starts for an empty
    command, no required claim, ``generation`` required without ``canary``, an address
    that is not ``HOST:PORT`` or cannot be bound, a child front door that cannot be
    probed, and everything
    :func:`~vllm_evidence._launch.launch` refuses."""
    if not command:
        msg = "no command to launch (give it after --)"
        raise InputError(msg)
    if not required:
        msg = "--serve needs --require CLAIM …: /ready answers for the claims it requires"
        raise InputError(msg)
    front_door = child_front_door(command)
    if front_door.api_key is not None:
        remember(front_door.api_key)
    address = parse_address(serve)
    gate = Gate([GateTarget.of(front_door.url)], required, canary=canary)
    timeout = min(5.0, max(1.0, interval_s))
    rounds = LaunchRounds(command, front_door, timeout_s=timeout, proc=proc, canary=canary)
    loop = GateLoop(
        gate,
        rounds.round,
        interval_s,
        stale_after_s=3 * timeout + 3 * interval_s + 30.0,
        notices=notices,
    )

    def liveness() -> tuple[bool, str]:
        if not rounds.child_running():
            return False, "the launched command is not running"
        return loop.alive()

    server = GateServer(gate, address, liveness)
    say = notices if notices is not None else sys.stderr
    say.write(
        f"vllm-evidence launch: the gate serves {scrub(server.url)} (/ready /live /metrics "
        f"/assessment), probing {scrub(front_door.url)} every {interval_s:g} s\n"
    )
    say.flush()
    try:
        return launch(
            command,
            receipt=receipt,
            log=log,
            follow_symlinks=follow_symlinks,
            stdout=stdout,
            stderr=stderr,
            notices=notices,
            proc=proc,
            signals=signals,
            observer=_Observer(rounds, loop, server),
        )
    finally:
        loop.stop()
        server.close()
