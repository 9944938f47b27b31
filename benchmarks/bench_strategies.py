"""Benchmark: examples per second and the share of draws rejected, per strategy and knob
combination of the test kit (:mod:`vllm_evidence.testing._strategies`).

Run: ``python benchmarks/bench_strategies.py [--examples 200] [--quick]``.

Each row runs one ``@given`` test of ``--examples`` examples through hypothesis's own
engine (generation phase only, no example database, no deadline), as a downstream lane's
test would draw them; the test body only touches the drawn value.  It prints:

* ``ex/s``: valid examples per second of wall-clock time (drawing, building the sealed
  batch, the engine's bookkeeping; not the test's own assertions), and ``ex/cpu-s`` the
  same per second of this process's CPU time (what a machine shared with other jobs
  still shows);
* ``rejected``: the share of test cases thrown away by ``assume`` or ``.filter`` (an
  observation with status ``gave_up`` for any other reason than size), and ``overrun``
  the share the engine itself cut off ("exceeded maximum test case size": a mutation of
  an earlier example that asked for more choices than it replayed), both read through
  hypothesis's observability callbacks in a second run (they slow a run down, so the
  rates are timed in a run without them).

Knob combinations: every ``servers()`` knob alone and the combinations the issue names
(TP=4 with rank 2 missing, DP=2, each backend and none printed, zero capacity, a pinned
release), ``mixed_builds()``, and, for comparison, ``captured_readbacks()`` (every probe
route, built in-process) and ``startup_log_examples()``.  ``--quick`` runs only
``servers()`` with no knobs.

``--share N`` measures instead what the default draws give a three-claim admission
policy (parallel, capacity and health coverage each established about the serving
process): over ``N`` default ``servers()`` draws, the share it admits, the share of
``mixed_builds()`` that a log-only version of it (the log's claims for its own launch,
no log join) admits, and each claim's reasons.  ``docs/testing.md`` quotes it.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.internal.observability import with_observability_callback
from hypothesis.strategies import SearchStrategy

from vllm_evidence._assessment import Claim, Subject, assess, claim_established
from vllm_evidence.testing._strategies import (
    GeneratedServer,
    captured_readbacks,
    launches,
    mixed_builds,
    servers,
    startup_log_examples,
)

#: The claims the three-claim policy of ``--share`` requires.
THREE_CLAIMS: tuple[Claim, ...] = ("parallel", "capacity", "health_coverage")


def _run(strategy: SearchStrategy[Any], examples: int) -> int:
    """Run one ``@given`` test of ``examples`` examples; return how many it saw."""
    seen = 0

    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def body(value: object) -> None:
        nonlocal seen
        seen += value is not None

    body()
    return seen


def measure(strategy: SearchStrategy[Any], examples: int) -> tuple[float, float, float, float]:
    """``(examples per wall-clock s, per CPU s, rejected share, overrun share)``.

    The rate is timed without observability (its callbacks cost more than the draws);
    the shares come from a second run with them.
    """
    start, cpu = time.perf_counter(), time.process_time()
    seen = _run(strategy, examples)
    elapsed, used = time.perf_counter() - start, time.process_time() - cpu
    reasons: list[str] = []

    def observe(observation: Any) -> None:
        if getattr(observation, "type", None) == "test_case":
            status = str(observation.status)
            reasons.append("" if status != "gave_up" else str(observation.status_reason))

    with with_observability_callback(observe):
        _run(strategy, examples)
    total = len(reasons) or 1
    overrun = sum(1 for r in reasons if "maximum test case size" in r)
    rejected = sum(1 for r in reasons if r and "maximum test case size" not in r)
    return seen / elapsed, seen / used, rejected / total, overrun / total


def rows(*, quick: bool) -> list[tuple[str, Callable[[], SearchStrategy[Any]]]]:
    out: list[tuple[str, Callable[[], SearchStrategy[Any]]]] = [("servers()", servers)]
    if quick:
        return out
    out += [
        ("servers(release='0.32.0')", lambda: servers(release="0.32.0")),
        ("servers(release='0.6.6.post1')", lambda: servers(release="0.6.6.post1")),
        ("servers(tensor_parallel_size=4)", lambda: servers(tensor_parallel_size=4)),
        ("servers(pipeline_parallel_size=2)", lambda: servers(pipeline_parallel_size=2)),
        ("servers(data_parallel_size=2)", lambda: servers(data_parallel_size=2)),
        (
            "servers(tensor_parallel_size=4, missing_ranks=[2])",
            lambda: servers(tensor_parallel_size=4, missing_ranks=[2]),
        ),
        ("servers(missing_ranks=[0, 5])", lambda: servers(missing_ranks=[0, 5])),
        ("servers(backend='mp')", lambda: servers(backend="mp")),
        ("servers(backend='ray')", lambda: servers(backend="ray")),
        ("servers(backend='uni')", lambda: servers(backend="uni")),
        ("servers(backend='unprinted')", lambda: servers(backend="unprinted")),
        ("servers(zero_capacity=True)", lambda: servers(zero_capacity=True)),
        ("servers(restarted=True)", lambda: servers(restarted=True)),
        ("mixed_builds()", mixed_builds),
        (
            "mixed_builds(release='0.32.0', tensor_parallel_size=2)",
            lambda: mixed_builds(release="0.32.0", tensor_parallel_size=2),
        ),
        ("launches()", launches),
        ("startup_log_examples()", startup_log_examples),
        ("captured_readbacks()", captured_readbacks),
    ]
    return out


def _each(strategy: SearchStrategy[Any], examples: int, use: Callable[[Any], None]) -> None:
    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def body(value: object) -> None:
        use(value)

    body()


def share(examples: int) -> None:
    """Print what ``examples`` default draws give a three-claim policy (see the module)."""
    admitted, drawn = 0, 0
    reasons: dict[str, Counter[str]] = {claim: Counter() for claim in THREE_CLAIMS}

    def serve(server: GeneratedServer) -> None:
        nonlocal admitted, drawn
        assessment = server.assess()
        drawn += 1
        admitted += all(claim_established(assessment, c) for c in THREE_CLAIMS)
        for claim in THREE_CLAIMS:
            reasons[claim][getattr(assessment, claim).reason.value] += 1

    fooled, careful, mixed = 0, 0, 0

    def mix(server: GeneratedServer) -> None:
        nonlocal fooled, careful, mixed
        launch_only = assess(None, server.startup_log())
        mixed += 1
        fooled += all(
            claim_established(launch_only, c, subject=Subject.LAUNCH) for c in THREE_CLAIMS
        )
        careful += all(claim_established(server.assess(), c) for c in THREE_CLAIMS)

    start = time.perf_counter()
    _each(servers(), examples, serve)
    _each(mixed_builds(), examples, mix)
    elapsed = time.perf_counter() - start
    print(
        f"servers(): {admitted} of {drawn} draws ({admitted / drawn:.1%}) three-claim "
        "admissible (parallel, capacity, health coverage established for the serving process)"
    )
    print(
        f"mixed_builds(): a log-only three-claim policy admits {fooled} of {mixed} "
        f"({fooled / mixed:.1%}); the careful one (serving claims) admits {careful}"
    )
    for claim, counts in reasons.items():
        shown = ", ".join(f"{reason} {n}" for reason, n in counts.most_common())
        print(f"  {claim}: {shown}")
    print(f"({elapsed:.0f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--share", type=int, metavar="N", default=None)
    args = parser.parse_args(argv)
    if args.share is not None:
        share(args.share)
        return 0
    print(f"{'strategy':<56} {'ex/s':>7} {'ex/cpu-s':>9} {'rejected':>9} {'overrun':>8}")
    for name, make in rows(quick=args.quick):
        rate, cpu_rate, rejected, overrun = measure(make(), args.examples)
        print(f"{name:<56} {rate:>7.1f} {cpu_rate:>9.1f} {rejected:>8.1%} {overrun:>8.1%}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
