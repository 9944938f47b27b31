"""``vllm-evidence watch URL… | --targets FILE``: rounds over many servers, and what changed.

On a terminal, a live table (one row a server, those not ready first) under a line of
counts, with the latest transitions below it; piped (or with ``--json``), JSON lines: one
``vllm-evidence.watch-transition/2`` document per transition, then one
``vllm-evidence.watch-round/2`` document per round.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from vllm_evidence._cli._output import fail, json_text, styled

if TYPE_CHECKING:
    from vllm_evidence._capture.signing import VerificationKey
    from vllm_evidence._claims import GateClaim
    from vllm_evidence.watch import Round, Target, Transition

PROG = "vllm-evidence watch"

EPILOG = """\
examples:
  vllm-evidence watch http://127.0.0.1:8000 --interval 5s --require parallel capacity
  vllm-evidence watch http://127.0.0.1:8000 --startup-log vllm.log --receipt vllm.receipt \
      --receipt-public-key receipt-public.pem
  vllm-evidence watch --targets fleet.json --json > watch.jsonl
  vllm-evidence watch --targets fleet.txt --shard 0/4 --json   # one of four watchers
  vllm-evidence watch http://a:8000 --rounds 2 --json --require parallel
  vllm-evidence watch --targets fleet.json --listen :9101 --require parallel capacity
  vllm-evidence watch http://a:8000 --canary --listen :9101 --require generation

A targets file is plain lines (a URL a line, then optionally log=PATH receipt=PATH;
blank lines and # comments skipped) or Prometheus file-based service discovery (a JSON
array, or YAML when named .yml/.yaml, of {"targets": ["host:port", ...], "labels":
{...}}; labels are carried into every output, __scheme__ picks https,
__startup_log__ and __receipt__ name a one-target group's log and receipt).  --shard I/N
keeps the servers whose URL hashes to I modulo N (I from 0): N watchers given one file
take disjoint shares that cover it, whatever its order.

Each round reads every server as probe does (the receipt, its signature checked under
--receipt-public-key: an unsigned one joins no log; then the startup log by the bytes
appended since the last round; then the front door, GET only) and prints what
changed: a claim established or refused (with its reason), a restart (a new
process_start_time_seconds), a front door that stopped or started answering, a log
rotated, truncated, rewritten or gone.  A round begins --interval after the one before
(at once when that one took longer).  Every request has its --timeout and every server
its --deadline: a server that does not answer never holds up the others.

--listen HOST:PORT serves what the gate serves, for the watched servers: /ready (200 when
every server is ready; ?target=URL for one, 404 for a server not watched), /live (the
rounds go on), /metrics (vllm_evidence_* series labelled by target and the file's labels)
and /assessment?target=URL (the last round's document).

--canary adds the claim generation: each round, after a server's probe, one POST
/v1/completions (a fixed prompt, max_tokens 1, --timeout, never retried) to the first
base model its /v1/models served that round; established only when a token came back
that round (--require generation then holds the server's readiness on it).  It costs
each server one short request per round; without --canary nothing but GETs is sent.

exit status: 0 when the last round's servers all establish every --require'd claim
(or none is required), 2 bad usage or an unreadable targets file, 3 a --require'd claim
is not established for some server in the last round (with --rounds N; without it the
watch runs until interrupted, 130 after ^C).
"""

#: ``5s``, ``500ms``, ``1m``, ``2.5`` (seconds), ``1h``.
_DURATION: Final = re.compile(r"([0-9]{1,7}(?:\.[0-9]{1,6})?)(ms|s|m|h)?")
_UNITS: Final = {None: 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
MIN_INTERVAL_S: Final = 0.05
MAX_INTERVAL_S: Final = 24 * 3600.0
#: How many transitions the live view keeps under the table.
_RECENT: Final = 10


def duration(text: str) -> float:
    """A duration (``15s``, ``500ms``, ``1m``, ``2.5``) in seconds; :class:`ValueError`
    (argparse's one-line usage error) for anything else."""
    found = _DURATION.fullmatch(text.strip())
    if found is None:
        msg = "give a duration such as 15s, 500ms or 1m"
        raise ValueError(msg)
    return float(found.group(1)) * _UNITS[found.group(2)]


def _duration_arg(text: str) -> float:
    try:
        return duration(text)
    except ValueError:
        msg = f"{text[:40]!r}: give a duration such as 15s, 500ms or 1m"
        raise argparse.ArgumentTypeError(msg) from None


def register(subparsers: Any) -> None:
    """Add the ``watch`` subcommand."""
    from vllm_evidence._claims import GATE_CLAIMS

    parser = subparsers.add_parser(
        "watch",
        help="watch live vLLM servers round after round and say what changed",
        description=(
            "Read every server each round (its front door, GET only, and its followed "
            "startup log) and print what its evidence establishes and what changed since "
            "the round before."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("urls", nargs="*", metavar="URL", help="a vLLM server's base URL")
    parser.add_argument(
        "--targets",
        metavar="FILE",
        help="more servers: plain lines or Prometheus file_sd JSON/YAML ('-': standard input)",
    )
    parser.add_argument(
        "--interval",
        type=_duration_arg,
        default=15.0,
        metavar="DURATION",
        help="how often a round begins (default 15s; 500ms, 1m, …)",
    )
    parser.add_argument(
        "--rounds", type=int, metavar="N", help="stop after N rounds (default: run until ^C)"
    )
    parser.add_argument(
        "--shard", metavar="I/N", help="watch only share I of N of the servers (I from 0)"
    )
    parser.add_argument("--startup-log", metavar="FILE", help="the one server's startup log")
    parser.add_argument(
        "--receipt",
        metavar="FILE",
        help="the launch receipt `vllm-evidence launch` keeps for the log",
    )
    from vllm_evidence._cli._fleet import add_receipt_key_argument

    add_receipt_key_argument(parser)
    key = parser.add_mutually_exclusive_group()
    key.add_argument("--api-key-env", metavar="VAR", help="read the API key from $VAR")
    key.add_argument("--api-key-file", metavar="F", help="read the API key from file F")
    parser.add_argument(
        "--no-development-routes",
        action="store_true",
        help="do not read /server_info or /get_world_size",
    )
    parser.add_argument(
        "--timeout",
        type=_duration_arg,
        metavar="DURATION",
        help="per request (default 10s, or the deadline when shorter)",
    )
    parser.add_argument(
        "--deadline",
        type=_duration_arg,
        metavar="DURATION",
        help="per server per round (default: the interval, within 10s to 30s)",
    )
    parser.add_argument(
        "--concurrency", type=int, default=64, metavar="N", help="servers read at once (64)"
    )
    tls = parser.add_mutually_exclusive_group()
    tls.add_argument("--insecure", action="store_true", help="do not verify TLS certificates")
    tls.add_argument(
        "--ca-cert", metavar="FILE", help="verify TLS against this CA file or directory"
    )
    parser.add_argument(
        "--json", action="store_true", help="JSON lines even on a terminal (always when piped)"
    )
    parser.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help="serve /ready, /live, /metrics and /assessment for the watched servers "
        "(:PORT: every interface)",
    )
    parser.add_argument(
        "--canary",
        action="store_true",
        help="each round, send each server one completion (max_tokens 1) to its first "
        "served base model, and decide the claim generation (a token came back this round)",
    )
    parser.add_argument(
        "--require",
        nargs="+",
        metavar="CLAIM",
        choices=GATE_CLAIMS,
        default=[],
        help=f"a server is ready when these are established ({', '.join(GATE_CLAIMS)}; "
        "generation with --canary); exit 3 unless every server is ready in the last round",
    )
    parser.set_defaults(handler=run)


def _targets(args: argparse.Namespace) -> list[Target]:
    """The URLs given, then the targets file's, then the shard; InputError otherwise."""
    from vllm_evidence.errors import InputError
    from vllm_evidence.watch import Shard, Target, read_targets

    targets: list[Target] = []
    for index, url in enumerate(args.urls, 1):
        try:
            targets.append(Target(url, startup_log=args.startup_log, receipt=args.receipt))
        except InputError as exc:
            msg = f"URL {index}: {exc}"
            raise InputError(msg) from None
    if args.targets is not None:
        targets.extend(read_targets(args.targets))
    if args.shard is not None:
        targets = Shard.parse(args.shard).take(targets)
    return targets


def _check(args: argparse.Namespace) -> str | None:
    """Why the arguments do not make a watch, or ``None``."""
    if not MIN_INTERVAL_S <= args.interval <= MAX_INTERVAL_S:
        return f"--interval must be between {MIN_INTERVAL_S:g} s and {MAX_INTERVAL_S:g} s"
    for name in ("timeout", "deadline"):
        value = getattr(args, name)
        if value is not None and not (math.isfinite(value) and value > 0):
            return f"--{name} must be a positive duration"
    if args.rounds is not None and args.rounds < 1:
        return "--rounds must be at least 1"
    if args.concurrency < 1:
        return "--concurrency must be at least 1"
    if not args.urls and args.targets is None:
        return "the following arguments are required: URL (or --targets FILE)"
    if args.startup_log and (len(args.urls) != 1 or args.targets is not None):
        return "--startup-log goes with one URL: a log describes one server"
    if args.receipt and not args.startup_log:
        return "--receipt goes with --startup-log: a receipt witnesses a log"
    if "generation" in args.require and not args.canary:
        return "--require generation goes with --canary: only the canary decides it"
    return None


def run(args: argparse.Namespace) -> int:
    """Watch, print, and (after ``--rounds``) gate on ``--require``."""
    import asyncio

    from vllm_evidence._cli._fleet import (
        _collect_less,
        _verify,
        concurrency_within_file_limit,
        receipt_public_key,
    )
    from vllm_evidence._cli.probe import _api_key
    from vllm_evidence._scrub import remember
    from vllm_evidence.errors import InputError

    problem = _check(args)
    if problem is not None:
        return fail(PROG, problem)
    try:
        targets = _targets(args)
        key = _api_key(args)
        remember(key)  # nothing printed from here on carries it
        receipt_key = receipt_public_key(
            args.receipt_public_key, receipts=any(t.receipt is not None for t in targets)
        )
    except InputError as exc:
        return fail(PROG, str(exc))
    if not targets:
        return fail(PROG, f"no server to watch (--shard {args.shard} holds none of them)")
    # What every round needs, imported before the first socket opens.
    import vllm_evidence._assessment
    import vllm_evidence._readback
    import vllm_evidence.watch  # noqa: F401

    _collect_less()
    concurrency = concurrency_within_file_limit(min(args.concurrency, len(targets)))
    if concurrency < min(args.concurrency, len(targets)):
        sys.stderr.write(
            f"{PROG}: note: --concurrency {args.concurrency} lowered to {concurrency}: this "
            "process may not open more files (ulimit -n)\n"
        )
    listener = None
    if args.listen is not None:
        try:
            listener = _Listener(
                targets, args.require, args.listen, args.interval, canary=args.canary
            )
        except InputError as exc:
            return fail(PROG, str(exc))
        sys.stderr.write(
            f"{PROG}: serving {listener.server.url} (/ready /live /metrics /assessment) for "
            f"{len(targets)} server(s)\n"
        )
        sys.stderr.flush()
    live = None if args.json or not styled() else _Live(args.require, canary=args.canary)
    try:
        last = asyncio.run(
            _watch(
                targets,
                args,
                key,
                concurrency,
                live,
                verify=_verify(args),
                receipt=receipt_key,
                listener=listener,
            )
        )
    except InputError as exc:
        return fail(PROG, str(exc))
    finally:
        if live is not None:
            live.stop()
        if listener is not None:
            listener.close()
    return _status(last, args.require)


class _Listener:
    """``--listen``: the gate's routes over the watched servers, fed each round."""

    def __init__(
        self,
        targets: Sequence[Target],
        required: Sequence[GateClaim],
        listen: str,
        interval: float,
        *,
        canary: bool = False,
    ) -> None:
        import time

        from vllm_evidence._gate import Gate, GateTarget
        from vllm_evidence._gate.server import GateServer, parse_address

        address = parse_address(listen, "--listen")
        self._gate_urls: dict[str, str] = {}
        gate_targets = []
        for target in targets:
            if target.url in self._gate_urls:
                continue  # the same server twice: one row in the gate
            gate_target = GateTarget.of(target.url, target.labels)
            self._gate_urls[target.url] = gate_target.url
            gate_targets.append(gate_target)
        self.gate = Gate(gate_targets, required, canary=canary)
        self._stale = 3 * interval + 60.0
        self._heartbeat = time.monotonic()
        self._clock = time.monotonic
        self.server = GateServer(self.gate, address, self._liveness, option="--listen")
        self.server.start()

    def _liveness(self) -> tuple[bool, str]:
        age = self._clock() - self._heartbeat
        if age > self._stale:
            return False, f"no round has finished for {age:.0f} s"
        return True, f"the last round finished {age:.1f} s ago"

    def record(self, round_: Round) -> None:
        """Record one watch round on the gate (the assessment of each server, or why
        there is none)."""
        from vllm_evidence._gate import TargetRound as GateRound

        results = []
        for target in round_.targets:
            why = next(iter(target.problems), None) or target.reach_detail or "no assessment"
            result = target.assessment if target.assessment is not None else why
            results.append(GateRound(self._gate_urls[target.target.url], result, target.canary))
        self.gate.record(results, duration_s=round_.duration_s)
        self._heartbeat = self._clock()

    def close(self) -> None:
        self.server.close()


async def _watch(
    targets: list[Target],
    args: argparse.Namespace,
    key: str | None,
    concurrency: int,
    live: _Live | None,
    *,
    verify: bool | str,
    receipt: VerificationKey | None,
    listener: _Listener | None = None,
) -> Round | None:
    from vllm_evidence.watch import round_lines, watch

    last = None
    async for round_ in watch(
        targets,
        interval=args.interval,
        rounds=args.rounds,
        require=args.require,
        concurrency=concurrency,
        timeout=args.timeout,
        deadline=args.deadline,
        api_key=key,
        development_routes=not args.no_development_routes,
        verify=verify,
        receipt_key=receipt,
        keep_assessments=listener is not None,  # the gate's /assessment serves them
        canary=args.canary,
    ):
        last = round_
        if listener is not None:
            listener.record(round_)
        if live is not None:
            live.show(round_)
            continue
        sys.stdout.write(
            "".join(json_text(document, indent=None) + "\n" for document in round_lines(round_))
        )
        sys.stdout.flush()
    return last


def _status(last: Round | None, required: Sequence[GateClaim]) -> int:
    """3 (with one line on stderr) when the last round has a server without a required
    claim, else 0."""
    from vllm_evidence._cli._report import report_refused

    if last is None or not required:
        return 0
    refused = {
        claim
        for target in last.targets
        for claim in required
        if (verdict := target.claim(claim)) is None or verdict.verdict != "established"
    }
    waiting = sum(not t.ready for t in last.targets)
    why = f"round {last.index}: {waiting} of {len(last.targets)} servers not ready"
    return report_refused(refused, why=why if refused else None)


# ----------------------------------------------------------------------- the live view

#: Each claim's column heading, short.
_HEADINGS: Final = {
    "parallel": "parallel",
    "capacity": "capacity",
    "served_identity": "identity",
    "health_coverage": "health",
    "front_door_join": "one process",
    "log_join": "log",
    "generation": "generation",
}
_STYLE: Final = {"established": "green", "reported": "yellow", "refused": "red"}


def transition_line(transition: Transition) -> str:
    """One transition in words: ``round 3 http://a:8000 parallel: established → refused
    (rank_lost)``."""
    from vllm_evidence.watch import ClaimChanged, LogChanged, ReachChanged, Restarted

    head = f"round {transition.round_index} {transition.target.url}"
    match transition:
        case ClaimChanged(claim=claim, before=before, after=after):
            return f"{head} {claim}: {before.verdict} → {after.verdict} ({after.reason})"
        case Restarted(before=before_start, after=after_start):
            return f"{head} restarted: process_start_time_seconds {before_start} → {after_start}"
        case ReachChanged(before=before_reach, after=after_reach, detail=detail):
            why = "" if detail is None else f" ({detail})"
            return f"{head} {before_reach.value} → {after_reach.value}{why}"
        case LogChanged(before=before_state, after=after_state, event=event, detail=detail):
            what = after_state.value if event is None else f"{after_state.value}, {event.value}"
            why = "" if detail is None else f": {detail}"
            return f"{head} log {before_state.value} → {what}{why}"


class _Live:
    """The terminal view: rich's live display, redrawn once a round."""

    def __init__(self, required: Sequence[GateClaim], *, canary: bool = False) -> None:
        from rich.console import Console
        from rich.live import Live

        from vllm_evidence._claims import CLAIMS, GATE_CLAIMS

        self._required = tuple(required)
        self._columns: tuple[GateClaim, ...] = GATE_CLAIMS if canary else CLAIMS
        self._console = Console()
        self._recent: list[str] = []
        self._live = Live(console=self._console, auto_refresh=False, transient=False)
        self._live.start()

    def stop(self) -> None:
        self._live.stop()

    def show(self, round_: Round) -> None:
        self._recent = [*self._recent, *map(transition_line, round_.transitions)][-_RECENT:]
        self._live.update(self._frame(round_), refresh=True)

    def _frame(self, round_: Round) -> Any:
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        from vllm_evidence._scrub import scrub
        from vllm_evidence.watch import Reach

        targets = sorted(round_.targets, key=lambda t: t.ready)  # not ready first
        answering = sum(t.reach is Reach.ANSWERING for t in targets)
        ready = sum(t.ready for t in targets)
        late = f", began {round_.late_s:.1f} s late" if round_.late_s >= 0.05 else ""
        head = Text(
            f"round {round_.index} · {len(targets)} servers · {answering} answering · "
            f"{ready} ready · took {round_.duration_s:.2f} s of "
            f"{round_.interval_s or 0:g} s{late}",
            style="bold",
        )
        room = max(1, self._console.height - 8 - len(self._recent))
        table = Table(show_lines=False)
        for column in ("server", "front door", *(_HEADINGS[c] for c in self._columns), "ready"):
            table.add_column(column, overflow="fold")
        for target in targets[:room]:
            labels = " ".join(f"{k}={v}" for k, v in target.target.labels)
            cells = [
                Text(scrub(f"{target.target.url} {labels}".strip())),
                Text(target.reach.value, style="" if target.reach is Reach.ANSWERING else "red"),
            ]
            for claim in self._columns:
                verdict = target.claim(claim)
                if verdict is None:
                    cells.append(Text("—"))
                    continue
                word = "yes" if verdict.verdict == "established" else verdict.reason
                cells.append(Text(word, style=_STYLE.get(verdict.verdict, "")))
            cells.append(
                Text("yes" if target.ready else "no", style="green" if target.ready else "red")
            )
            table.add_row(*cells)
        parts: list[Any] = [head, table]
        if len(targets) > room:
            rest = targets[room:]
            more = " (all ready)" if all(t.ready for t in rest) else ""
            parts.append(Text(f"… and {len(rest)} more{more}"))
        parts.extend(Text(scrub(line)) for line in self._recent)
        return Group(*parts)
