"""``check``: record afresh into a temporary directory, then run the tests that committed
fixtures pass on those fresh captures."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from live_vllm.common import PYTEST_TIMEOUT_S, REPO, log
from live_vllm.recording import record
from live_vllm.releases import VLLM_VERSION, Release
from live_vllm.scenarios import CHECK_SCENARIO_NAMES

__all__ = ["LIVE_TESTS", "RELEASE_TESTS", "check", "check_release", "print_timings"]

#: What ``check`` runs on the fresh captures of 0.32.0.
LIVE_TESTS = ("tests/properties/test_real_fixtures.py", "tests/live")
#: What ``check --release X`` runs on the fresh captures of another release.
RELEASE_TESTS = ("tests/properties/test_release_fixtures.py", "tests/test_real_releases.py")


def print_timings(timings: dict[str, float]) -> None:
    """Each step's seconds, then the total, on stdout."""
    total = sum(timings.values())
    for name, secs in timings.items():
        print(f"  {name:<20} {secs:7.1f} s")
    print(f"  {'total':<20} {total:7.1f} s")


def _test_fresh(
    out: Path, tests: Sequence[str], timings: dict[str, float], what: str, extra: dict[str, str]
) -> int:
    """Run ``tests`` with ``VLLM_EVIDENCE_LIVE_CAPTURES`` naming the fresh captures."""
    env = dict(os.environ, VLLM_EVIDENCE_LIVE_CAPTURES=str(out), **extra)
    log(f"running the {what} tests on the fresh captures: pytest {' '.join(tests)}")
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=REPO,
        env=env,
        timeout=PYTEST_TIMEOUT_S,
        check=False,
    )
    timings["pytest"] = time.monotonic() - t0
    print_timings(timings)
    if proc.returncode != 0:
        print(f"LIVE TIER FAILED: the {what} tests failed on fresh captures", file=sys.stderr)
        return 1
    return 0


def check() -> int:
    """Record 0.32.0's four scenarios and the gate's worker kill afresh, then run the
    live tests on them (the key of the run in ``VLLM_EVIDENCE_LIVE_SECRET``, for the tests
    to look for)."""
    with tempfile.TemporaryDirectory(prefix="live-vllm-captures-") as tmp:
        out = Path(tmp) / f"vllm-{VLLM_VERSION}-cpu"
        run, timings = record(CHECK_SCENARIO_NAMES, out)
        secret = {"VLLM_EVIDENCE_LIVE_SECRET": run.api_key}
        if _test_fresh(out, LIVE_TESTS, timings, "live", secret):
            return 1
        print("live tier passed")
        return 0


def check_release(release: Release, names: Sequence[str]) -> int:
    """Record the scenarios afresh, then check them as committed fixtures are."""
    with tempfile.TemporaryDirectory(prefix="live-vllm-captures-") as tmp:
        out = Path(tmp) / f"vllm-{release.version}-cpu"
        _, timings = record(names, out, release=release)
        if _test_fresh(out, RELEASE_TESTS, timings, "release", {}):
            return 1
        print(f"live tier passed (vLLM {release.version})")
        return 0
