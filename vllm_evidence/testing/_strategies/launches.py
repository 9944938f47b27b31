"""Witnessed launches: one launch's startup log, the front door of the process it
started, and the launch receipt ``vllm-evidence launch`` would have written for it.

:func:`witnessed_launches` draws a :class:`WitnessedLaunch`: a generated one-launch log
(any release's format), a minimal front door of that same process — ``/version`` of the
release, ``/metrics`` carrying its ``process_start_time_seconds``, ``/health`` 200 —
and the receipt naming the same start time (printed as the process collector prints
it), the launch's APIServer pid and the SHA-256 of the whole log.  Two draws are two
launches: their start times differ (``assume`` it where it matters).  The front door
alone establishes none of parallel, capacity, identity or coverage, so whatever a
serving claim establishes with a log came through the log join.

This module imports hypothesis but never pytest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from types import MappingProxyType
from typing import Final, final

import attrs
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from vllm_evidence._adapters.receipt import RECEIPT_SCHEMA, ReceiptRecord
from vllm_evidence._capture.process import go_float
from vllm_evidence._capture.signing import SigningKey, VerificationKey
from vllm_evidence._launch import receipt_document
from vllm_evidence.testing._capture import CaptureDirectory
from vllm_evidence.testing._strategies._common import GROUP_AWARE_RELEASES, RELEASES, _at_least
from vllm_evidence.testing._strategies.logs import (
    GeneratedLog,
    _Knobs,
    _log,
    startup_log_examples,
)
from vllm_evidence.upstream._routes import Route

__all__ = [
    "BACKENDS",
    "UNPRINTED",
    "WitnessedLaunch",
    "launcher_verification_key",
    "launches",
    "witnessed_launches",
]

#: The key the kit's launcher signs every generated receipt with: made for this process,
#: never written anywhere, so no receipt outside the kit's draws is signed by it.
_LAUNCHER_KEY: Final = SigningKey.generate()


def launcher_verification_key() -> VerificationKey:
    """The public key the kit's generated receipts are signed by (as a launcher given
    ``--receipt-signing-key`` signs its own): give it to
    ``read_launch_receipt(path, verification_key=...)``, or write its
    :meth:`~vllm_evidence._capture.signing.VerificationKey.pem` to a file for
    ``probe --receipt-public-key``."""
    return _LAUNCHER_KEY.verification_key


#: The executor backends the ``backend`` knob prints (``uni`` runs one worker).
BACKENDS: Final[tuple[str, ...]] = ("mp", "ray", "uni")
#: The ``backend`` knob's value for a launch whose log prints no backend.
UNPRINTED: Final = "unprinted"

#: The sizes a knob left open is drawn from, smallest first (shrinking goes to 1).  DP 1
#: is listed three times of four: a launch prints its workers' rank lines with one DP
#: engine.
_TP_CHOICES: Final = (1, 2, 4, 8)
_PP_CHOICES: Final = (1, 2)
_DP_CHOICES: Final = (1, 1, 1, 2)

#: How many more times each group-aware release (:data:`~._common.GROUP_AWARE_RELEASES`)
#: is listed among the releases a draw picks from: with every release allowed, 12 of the
#: 19 listed print a group-aware capacity line (0.27 on); hypothesis, which favours the
#: first of a list, drew one in 61 to 63% of 1,000 draws.
_GROUP_AWARE_EXTRA: Final = 3


@attrs.frozen
class _Plan:
    """The knobs checked against each other: what is fixed, what is left to draw."""

    releases: tuple[str, ...]
    worlds: tuple[tuple[int, int], ...]
    """The ``(TP, PP)`` pairs allowed."""
    dps: tuple[int, ...]
    missing: tuple[int, ...]
    backend: str | None
    """A backend name or :data:`UNPRINTED`; ``None`` draws it as vLLM resolves it."""
    zero_capacity: bool = False

    def knobs(self) -> _Knobs:
        worlds, dps = self.worlds, self.dps

        def sizes(release: str) -> SearchStrategy[tuple[int, int, int]]:
            allowed = dps if _at_least(release, "0.10.2") else (1,)
            return st.tuples(st.sampled_from(worlds), st.sampled_from(allowed)).map(
                lambda w: (w[0][0], w[0][1], w[1])
            )

        printed = None if self.backend in (None, UNPRINTED) else self.backend
        return _Knobs(
            sizes=sizes,
            missing=self.missing,
            backend=printed,
            drawn_backend=self.backend is None,
            zero_capacity=self.zero_capacity,
        )

    def release_strategy(self) -> SearchStrategy[str]:
        """The allowed releases, the group-aware ones listed :data:`_GROUP_AWARE_EXTRA`
        more times; the oldest stays first (shrinking goes to it)."""
        extra = tuple(r for r in self.releases if r in GROUP_AWARE_RELEASES)
        weighted = self.releases + extra * _GROUP_AWARE_EXTRA
        return st.sampled_from(weighted)


def _sizes_allowed(name: str, value: int | None, choices: tuple[int, ...]) -> tuple[int, ...]:
    if value is None:
        return choices
    if type(value) is not int or value < 1:
        msg = f"{name} must be a positive int or None, not {value!r}"
        raise ValueError(msg)
    return (value,)


def _plan(
    *,
    release: str | None,
    tensor_parallel_size: int | None,
    pipeline_parallel_size: int | None,
    data_parallel_size: int | None,
    missing_ranks: Iterable[int],
    backend: str | None,
    zero_capacity: bool = False,
) -> _Plan:
    """Check the knobs and turn them into choices: a combination no launch can have is a
    ``ValueError`` here, never an ``assume`` in a draw."""
    if release is not None and release not in RELEASES:
        msg = f"release must be one of {', '.join(RELEASES)}, not {release!r}"
        raise ValueError(msg)
    releases = RELEASES if release is None else (release,)
    given = tuple(missing_ranks)
    if any(type(r) is not int or r < 0 for r in given):
        msg = f"missing_ranks must be non-negative ints, not {given!r}"
        raise ValueError(msg)
    missing = tuple(sorted(set(given)))
    if backend is not None and backend not in (*BACKENDS, UNPRINTED):
        msg = (
            f"backend must be one of {', '.join(BACKENDS)}, {UNPRINTED!r} or None, not {backend!r}"
        )
        raise ValueError(msg)
    zero: object = zero_capacity  # untyped callers pass anything
    if type(zero) is not bool:
        msg = f"zero_capacity must be True or False, not {zero!r}"
        raise ValueError(msg)
    tps = _sizes_allowed("tensor_parallel_size", tensor_parallel_size, _TP_CHOICES)
    pps = _sizes_allowed("pipeline_parallel_size", pipeline_parallel_size, _PP_CHOICES)
    dps = _sizes_allowed("data_parallel_size", data_parallel_size, _DP_CHOICES)
    worlds = tuple((tp, pp) for tp in tps for pp in pps)
    if backend == "uni":  # one worker in the engine's process
        worlds = tuple(w for w in worlds if w == (1, 1))
    if missing:
        # Rank lines are printed from 0.10.2, with one DP engine; a missing rank is one of
        # the world's, and at least one rank is left to have printed.
        releases = tuple(r for r in releases if _at_least(r, "0.10.2"))
        dps = tuple(d for d in dps if d == 1)
        worlds = tuple(w for w in worlds if w[0] * w[1] > max(missing))
        worlds = tuple(w for w in worlds if w[0] * w[1] > len(missing))
    if any(d > 1 for d in dps) and data_parallel_size is not None:
        releases = tuple(r for r in releases if _at_least(r, "0.10.2"))
    if not (releases and worlds and dps):
        msg = (
            "no generated launch has these knobs together: missing ranks need a release "
            "from 0.10.2, DP 1 and a TP×PP world larger than the highest missing rank with "
            "a rank left; DP > 1 needs a release from 0.10.2; backend 'uni' runs TP=PP=1"
        )
        raise ValueError(msg)
    return _Plan(
        releases=releases,
        worlds=worlds,
        dps=dps,
        missing=missing,
        backend=backend,
        zero_capacity=zero_capacity,
    )


def launches(
    *,
    release: str | None = None,
    tensor_parallel_size: int | None = None,
    pipeline_parallel_size: int | None = None,
    data_parallel_size: int | None = None,
    missing_ranks: Iterable[int] = (),
    backend: str | None = None,
    zero_capacity: bool = False,
) -> SearchStrategy[GeneratedLog]:
    """One launch's startup log (a :class:`GeneratedLog` holding one launch), with knobs.

    Every knob fixes what the log prints; ``None`` draws it: TP from 1, 2, 4, 8, PP 1 or
    2, DP 1 or 2 (1 listed three times of four; DP printed from 0.10.2), the release
    from :data:`RELEASES`, each group-aware release (0.27 on: its capacity line is
    authoritative) listed four times, so that 12 of the 19 listed are one of them.
    ``missing_ranks`` drops those global ranks' worker lines (rank and memory lines): a
    worker that never started.  ``backend`` (``"mp"``, ``"ray"``, ``"uni"``) prints that
    ``distributed_executor_backend`` on the engine-init line, ``"unprinted"`` prints
    none, and ``None`` draws it as vLLM resolves it (``mp`` for more than one worker
    across the DP engines, ``uni`` for one; none in 0.6.6 for one worker) listed eight
    times of ten, ``ray`` once and none printed once.  Every capacity line prints at least
    1 token (or V0 block: vLLM does not start without KV-cache blocks) unless
    ``zero_capacity=True``, which prints 0 in every one.  Knobs are choices, not
    filters: a combination no launch can have raises ``ValueError`` when the strategy
    is made, and nothing is rejected in a draw.  The launch's figures are in
    ``.launches[0]`` (:class:`GeneratedLaunch`).
    """
    plan = _plan(
        release=release,
        tensor_parallel_size=tensor_parallel_size,
        pipeline_parallel_size=pipeline_parallel_size,
        data_parallel_size=data_parallel_size,
        missing_ranks=missing_ranks,
        backend=backend,
        zero_capacity=zero_capacity,
    )
    return _log(None, 1, 1, plan.knobs(), plan.release_strategy())


#: A boot time (``btime``) the start times are drawn after.
_BOOT = 1_790_000_000.0
#: The latest start drawn, in clock ticks (1/100 s) after boot.
_MAX_TICKS = 10**9


@final
@attrs.frozen(eq=False)
class WitnessedLaunch:
    """One launch: its log, its process's front door, and its receipt."""

    log: GeneratedLog
    """The launch's startup log (one launch)."""
    front_door: CaptureDirectory
    """``/version``, ``/metrics`` (with the start time) and ``/health`` 200 only."""
    start_time: str
    """``process_start_time_seconds`` as the front door prints it."""
    pid: int
    """The launched process's pid, as the receipt records it (the log's APIServer pid
    where the release prints one)."""
    receipt: bytes
    """The receipt's JSON (``vllm-evidence.launch-receipt/2``)."""


def _metrics(start: str) -> bytes:
    return (
        "# HELP process_start_time_seconds Start time of the process since unix epoch in "
        "seconds.\n# TYPE process_start_time_seconds gauge\n"
        f"process_start_time_seconds {start}\n"
    ).encode()


def _start_time(ticks: int) -> str:
    """``process_start_time_seconds`` of a process started ``ticks`` clock ticks after
    boot, as the process collector prints it."""
    return go_float(ticks / 100.0 + _BOOT)


def _receipt(log: GeneratedLog, start: str, pid: int) -> bytes:
    """The receipt ``vllm-evidence launch`` writes for the launch of ``log``."""
    record = ReceiptRecord(
        schema=RECEIPT_SCHEMA,
        pid=pid,
        process_start_time_seconds=start,
        start_time_unavailable=None,
        argv=["vllm", "serve", log.launches[0].served_model_name],
        host="generated-host",
        log_path="startup.log",
        log_bytes=len(log.text),
        log_sha256=hashlib.sha256(log.text).hexdigest(),
    )
    return json.dumps(receipt_document(record, _LAUNCHER_KEY)).encode()


def _front_door_bodies(release: str, start: str) -> dict[Route, bytes]:
    return {
        Route.VERSION: json.dumps({"version": release}).encode(),
        Route.METRICS: _metrics(start),
        Route.HEALTH: b"",
    }


@st.composite
def _witnessed_from(
    draw: st.DrawFn, logs: SearchStrategy[GeneratedLog], ticks: SearchStrategy[int]
) -> WitnessedLaunch:
    log = draw(logs)
    launch = log.launches[0]
    start = _start_time(draw(ticks))
    pid = launch.api_server_pid or draw(st.integers(min_value=2, max_value=4_194_304))
    door = CaptureDirectory(
        bodies=MappingProxyType(_front_door_bodies(launch.release, start)),
        statuses=MappingProxyType({}),
        startup_log=log.text,
    )
    receipt = _receipt(log, start, pid)
    return WitnessedLaunch(log=log, front_door=door, start_time=start, pid=pid, receipt=receipt)


def _witnessed(release: str | None) -> SearchStrategy[WitnessedLaunch]:
    return _witnessed_from(
        startup_log_examples(release=release, min_launches=1, max_launches=1),
        st.integers(min_value=1, max_value=_MAX_TICKS),
    )


def witnessed_launches(*, release: str | None = None) -> SearchStrategy[WitnessedLaunch]:
    """Launches with their front door and receipt (see the module); ``release=None``
    draws the release."""
    return _witnessed(release)
