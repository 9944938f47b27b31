"""The gate's rounds, one after another on a thread of their own.

:class:`GateLoop` calls its ``rounds`` function once per interval (a round that takes
longer than the interval is followed at once by the next), records what it gave on the
:class:`~vllm_evidence._gate.Gate`, and keeps a heartbeat: :meth:`GateLoop.alive` is what
``/live`` reads.  A round that raises is a round all the same: every target is recorded
``not_assessed`` with the error's one line (said once on the notices stream), and the
loop goes on — one failure never ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import IO

from vllm_evidence._gate.snapshot import Gate, GateSnapshot, TargetRound
from vllm_evidence._scrub import scrub
from vllm_evidence.errors import InputError

__all__ = ["MAX_INTERVAL_S", "MIN_INTERVAL_S", "GateLoop", "Rounds", "parse_interval"]

Rounds = Callable[[], Awaitable[Sequence[TargetRound]]]
"""One round: each target's result."""

#: The shortest and longest interval between rounds.
MIN_INTERVAL_S = 0.05
MAX_INTERVAL_S = 3600.0

_INTERVAL = re.compile(r"([0-9]{1,7}(?:\.[0-9]{1,6})?)(ms|s|m|h)?")
_UNITS = {None: 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_interval(text: str) -> float:
    """``5s``, ``500ms``, ``1m``, ``2.5`` (seconds) as seconds; an :class:`InputError`
    naming the form otherwise, or outside :data:`MIN_INTERVAL_S`..:data:`MAX_INTERVAL_S`."""
    match = _INTERVAL.fullmatch(text.strip())
    if match is None:
        msg = f"--interval {text[:40]!r}: give a duration such as 5s, 500ms or 1m"
        raise InputError(msg)
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if not MIN_INTERVAL_S <= seconds <= MAX_INTERVAL_S:
        msg = (
            f"--interval {text[:40]!r}: must be between {MIN_INTERVAL_S:g} s and "
            f"{MAX_INTERVAL_S:g} s"
        )
        raise InputError(msg)
    return seconds


class GateLoop:
    """Rounds every ``interval_s`` seconds onto ``gate`` (see the module).

    ``stale_after_s``: how long without a finished round before :meth:`alive` says the
    loop is stuck (default: three intervals plus a minute, past any round's deadline)."""

    def __init__(
        self,
        gate: Gate,
        rounds: Rounds,
        interval_s: float,
        *,
        stale_after_s: float | None = None,
        notices: IO[str] | None = None,
    ) -> None:
        if not (math.isfinite(interval_s) and interval_s > 0):
            msg = "the interval must be a positive number of seconds"
            raise InputError(msg)
        self.gate = gate
        self._rounds = rounds
        self.interval_s = interval_s
        self._stale = stale_after_s if stale_after_s is not None else 3 * interval_s + 60.0
        self._notices = notices
        self._said: set[str] = set()
        self._heartbeat = time.monotonic()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._stopping = threading.Event()
        self._started = threading.Event()

    def _notice(self, text: str) -> None:
        say = self._notices if self._notices is not None else sys.stderr
        with contextlib.suppress(OSError, ValueError):
            say.write(f"vllm-evidence gate: {scrub(text)}\n")
            say.flush()

    async def run_round(self) -> GateSnapshot:
        """One round, recorded; the new snapshot."""
        started = time.monotonic()
        try:
            results: Sequence[TargetRound] = await self._rounds()
        except Exception as exc:  # noqa: BLE001  # a round that fails is recorded, never fatal
            why = " ".join(f"the round failed: {type(exc).__name__}: {exc}".split())[:300]
            if type(exc).__name__ not in self._said:
                self._said.add(type(exc).__name__)
                self._notice(f"{why}; the rounds go on")
            results = [TargetRound(t.target, why) for t in self.gate.snapshot.targets]
        snapshot = self.gate.record(results, duration_s=time.monotonic() - started)
        self._heartbeat = time.monotonic()
        return snapshot

    async def _run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._heartbeat = time.monotonic()
        self._started.set()
        if self._stopping.is_set():
            return
        while True:
            begun = time.monotonic()
            await self.run_round()
            wait = max(0.0, begun + self.interval_s - time.monotonic())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), wait)
            if self._stop.is_set():
                return

    def start(self) -> None:
        """Run the rounds on a daemon thread until :meth:`stop`."""
        self._thread = threading.Thread(
            target=asyncio.run, args=(self._run(),), name="gate-rounds", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """End the rounds (the one under way is left to finish, up to ``timeout``)."""
        self._stopping.set()
        thread = self._thread
        if thread is None:
            return
        self._started.wait(timeout)
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed already
                loop.call_soon_threadsafe(stop.set)
        thread.join(timeout)

    def alive(self) -> tuple[bool, str]:
        """``(alive, why)``: the rounds run, and one finished within ``stale_after_s``."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            return False, "the gate's rounds are not running"
        age = time.monotonic() - self._heartbeat
        if age > self._stale:
            return False, f"no round has finished for {age:.0f} s"
        return True, f"rounds every {self.interval_s:g} s; the last finished {age:.1f} s ago"
