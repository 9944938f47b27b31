"""The upstream audit: do the law table's laws for a release hold for that release?

Run inside a vLLM environment, :func:`vllm_evidence._audit.installed.probe_installed_vllm`
imports vLLM and extracts
plain data (its version, the label names of a default ``CacheConfig``, the source text
of its capacity log, the backend names it accepts, and its registered routes with and
without development mode).  Everything else here is a pure comparison of that data with
the laws :func:`~vllm_evidence.upstream.laws_for` gives for the version, so it is
tested without vLLM.

Each question gets one :class:`Finding`: ``held``, ``differs`` (expected vs found) or
``not_checkable`` (and why).  What an import cannot show -- what ``/health`` covers at
run time, what a model card's ``root`` is, what the incarnation marker marks -- is
``not_checkable``, never ``held``.

A version outside every read release has no laws: every question is ``not_checkable``
and nothing differs (the audit checks the laws the table claims, and it claims none).
"""

from __future__ import annotations

import ast
import enum
import re
from collections.abc import Iterable
from pathlib import Path
from typing import assert_never

import attrs

from vllm_evidence.upstream._laws import (
    CacheConfigLabelsLaw,
    CapacityAuthority,
    CapacityFormat,
    CapacityLaw,
    CapacityLogFormatLaw,
    CapacitySource,
    ExecutorBackend,
    ExecutorMarkerLaw,
    HealthFailureLaw,
    HealthLaw,
    IncarnationMarkerLaw,
    Law,
    LawNotEstablished,
    ModelCardLaw,
    ParallelEvidenceLaw,
    ReleaseLaws,
    RouteGate,
    RouteLaw,
    VersionNotEstablished,
)

__all__ = [
    "EXECUTOR_BACKENDS_KEY",
    "SCHEMA",
    "Finding",
    "Installed",
    "RouteTable",
    "Unavailable",
    "Verdict",
    "audit",
    "capacity_formats_in_source",
    "check_cache_config_labels",
    "check_capacity_label",
    "check_capacity_log_format",
    "check_executor_backends",
    "check_route",
    "engine_label_added",
    "exit_status",
    "route_table_from_log",
]

SCHEMA = "vllm-evidence.audit/3"

#: The audit's own question: the ``ExecutorBackend`` vocabulary the health laws use.
EXECUTOR_BACKENDS_KEY = "executor.backends"

_ONE_LINE = "KV cache size: %s tokens, Maximum concurrency for %s tokens per request: %.2fx"
_TWO_LINE_SIZE = "KV cache size: %s tokens"
_TWO_LINE_CONCURRENCY = "Maximum concurrency for %s tokens per request: %.2fx"
_ENGINE_LABEL = re.compile(r"""metrics_info\[\s*["']engine["']\s*\]\s*=""")
_CAPACITY_LABELS = frozenset({"kv_cache_size_tokens", "kv_cache_max_concurrency"})


class Verdict(enum.Enum):
    """What the audit found for one question."""

    HELD = "held"
    DIFFERS = "differs"
    NOT_CHECKABLE = "not_checkable"


@attrs.frozen
class Unavailable:
    """A piece of installed data the probe could not get, and why."""

    why: str


@attrs.frozen
class RouteTable:
    """Registered ``(path, METHOD)`` pairs of one launch mode, and where they came from."""

    routes: frozenset[tuple[str, str]]
    origin: str


@attrs.frozen
class Installed:
    """What the probe extracted from the installed vLLM (plain data)."""

    version: str
    cache_config_labels: frozenset[str] | Unavailable
    """``metrics_info()`` keys of a default ``CacheConfig``, plus ``engine`` when the
    metrics logger adds it."""
    capacity_source: str | Unavailable
    """The source text of ``vllm/v1/core/kv_cache_utils.py``."""
    executor_backends: tuple[str, ...] | Unavailable
    dev_routes: RouteTable | Unavailable
    plain_routes: RouteTable | Unavailable
    guarded_prefixes: tuple[str, ...] | Unavailable = Unavailable("not probed")
    """The path prefixes ``--api-key`` guards (``GUARDED_PREFIX`` of the authentication
    middleware, from 0.32)."""


@attrs.frozen
class Finding:
    """The audit's answer for one question."""

    key: str
    verdict: Verdict
    expected: str
    found: str
    note: str
    """How it was checked (held, differs) or why it could not be (not checkable)."""
    law: Law | LawNotEstablished | None
    """The law checked; ``None`` for the audit's own question (executor backends)."""

    @property
    def detail(self) -> str:
        """One cell for a person."""
        if self.verdict is Verdict.NOT_CHECKABLE:
            return self.note
        text = f"expected {self.expected}; found {self.found}"
        return f"{text} ({self.note})" if self.note else text


def _not_checkable(law: Law | LawNotEstablished, why: str) -> Finding:
    return Finding(law.question.key, Verdict.NOT_CHECKABLE, "", "", why, law)


def _compared(
    law: Law | None, key: str, *, same: bool, expected: str, found: str, note: str
) -> Finding:
    verdict = Verdict.HELD if same else Verdict.DIFFERS
    return Finding(key, verdict, expected, found, note, law)


def _names(names: Iterable[str]) -> str:
    return ", ".join(sorted(names)) or "none"


# --------------------------------------------------------------------------------------
# Pure checks.


def engine_label_added(loggers_source: str) -> bool:
    """Whether the metrics logger's source sets an ``engine`` key on ``metrics_info``."""
    return _ENGINE_LABEL.search(loggers_source) is not None


def check_cache_config_labels(
    law: CacheConfigLabelsLaw, found: frozenset[str] | Unavailable
) -> Finding:
    """The law's label set against the installed ``CacheConfig``'s."""
    if isinstance(found, Unavailable):
        return _not_checkable(law, found.why)
    missing, unexpected = law.labels - found, found - law.labels
    if not missing and not unexpected:
        shown = f"the same {len(found)}"
    else:
        shown = f"{len(found)}; missing {_names(missing)}; unexpected {_names(unexpected)}"
    return _compared(
        law,
        law.question.key,
        same=not missing and not unexpected,
        expected=f"{len(law.labels)} labels",
        found=shown,
        note="metrics_info() keys of a default CacheConfig, plus engine",
    )


def check_capacity_label(law: CapacityLaw, found: frozenset[str] | Unavailable) -> Finding:
    """Whether ``kv_cache_size_tokens`` and ``kv_cache_max_concurrency`` exist as the
    law's authority says (``AUTHORITATIVE``: both; ``ABSENT``: neither)."""
    if law.source is not CapacitySource.LABEL_KV_CACHE_SIZE_TOKENS:
        return _not_checkable(law, "what this source means is run-time behaviour")
    if law.authority is CapacityAuthority.AUTHORITATIVE:
        expected = _CAPACITY_LABELS
    elif law.authority is CapacityAuthority.ABSENT:
        expected = frozenset()
    else:  # pragma: no cover - the table gives this source no other authority
        return _not_checkable(law, f"no field check for {law.authority.value}")
    if isinstance(found, Unavailable):
        return _not_checkable(law, found.why)
    present = found & _CAPACITY_LABELS
    return _compared(
        law,
        law.question.key,
        same=present == expected,
        expected=f"CacheConfig fields {_names(expected)}",
        found=f"CacheConfig fields {_names(present)}",
        note="whether the figure is group-aware is not visible in the fields",
    )


def capacity_formats_in_source(source: str) -> frozenset[CapacityFormat]:
    """The capacity-line formats whose format strings appear in ``source``.

    Adjacent string literals are one constant after parsing, so a format string split
    over lines is still found.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return frozenset()
    strings = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]
    found: set[CapacityFormat] = set()
    if any(_ONE_LINE in s for s in strings):
        found.add(CapacityFormat.V1_ONE_LINE)
    if any(s.endswith(_TWO_LINE_SIZE) for s in strings) and any(
        s.startswith(_TWO_LINE_CONCURRENCY) for s in strings
    ):
        found.add(CapacityFormat.V1_TWO_LINE)
    return frozenset(found)


def check_capacity_log_format(law: CapacityLogFormatLaw, source: str | Unavailable) -> Finding:
    """The law's capacity-line shape against the format strings in the installed source."""
    if isinstance(source, Unavailable):
        return _not_checkable(law, source.why)
    found = capacity_formats_in_source(source)
    return _compared(
        law,
        law.question.key,
        same=found == {law.format},
        # The audit document names a V1 format as the laws document does: no prefix.
        expected=law.format.value.removeprefix("v1_"),
        found=_names(f.value.removeprefix("v1_") for f in found),
        note="format strings in vllm/v1/core/kv_cache_utils.py",
    )


def _expected_registration(gate: RouteGate) -> tuple[bool, bool]:
    """(registered with development mode, registered without it)."""
    match gate:
        case RouteGate.ALWAYS:
            return True, True
        case (
            RouteGate.DEVELOPMENT_MODE
            | RouteGate.DEVELOPMENT_MODE_AND_GENERATE_TASK
            | RouteGate.DEVELOPMENT_MODE_QUERY_IGNORED
        ):
            return True, False
        case RouteGate.NOT_REGISTERED:
            return False, False
        case _:  # pragma: no cover
            assert_never(gate)


def _registration(table: RouteTable, path: str, method: str) -> str:
    if (path, method) in table.routes:
        return "registered"
    others = sorted(m for p, m in table.routes if p == path)
    return f"registered for {', '.join(others)} only" if others else "not registered"


def check_route(
    law: RouteLaw,
    dev: RouteTable | Unavailable,
    plain: RouteTable | Unavailable,
    guarded: tuple[str, ...] | Unavailable = Unavailable("not probed"),
) -> Finding:
    """The law's gate against the route tables of a development-mode and a plain launch,
    and its ``--api-key`` guard against the prefixes the middleware guards."""
    route = law.route
    want_dev, want_plain = _expected_registration(law.gate)
    halves: list[tuple[str, bool, str, str]] = []
    missing: list[str] = []
    for mode, table, want in (("dev", dev, want_dev), ("plain", plain, want_plain)):
        if isinstance(table, Unavailable):
            missing.append(f"{mode}: {table.why}")
            continue
        got = _registration(table, route.path, route.method)
        expected = "registered" if want else "not registered"
        halves.append((mode, got == expected, expected, got))
    if isinstance(guarded, tuple) and law.gate is not RouteGate.NOT_REGISTERED:
        want_guard = "guarded" if law.api_key_guarded else "open"
        got_guard = "guarded" if route.path.startswith(guarded) else "open"
        halves.append(("--api-key", got_guard == want_guard, want_guard, got_guard))
    if not halves:
        return _not_checkable(law, "; ".join(missing))
    expected = "; ".join(f"{mode} {want}" for mode, _, want, _ in halves)
    found = "; ".join(f"{mode} {got}" for mode, _, _, got in halves)
    agree = all(ok for _, ok, _, _ in halves)
    origins = [
        f"{mode}: {t.origin}"
        for mode, t in (("dev", dev), ("plain", plain))
        if isinstance(t, RouteTable)
    ]
    if isinstance(guarded, tuple):
        origins.append(f"guarded prefixes {_names(guarded)}")
    notes = [f"{route.method} {route.path}; " + "; ".join(origins)]
    if route.query is not None:
        notes.append("a route table cannot show whether the query is honoured")
    if isinstance(guarded, Unavailable):
        notes.append(f"the --api-key guard is not checked ({guarded.why})")
    if missing and agree:
        return _not_checkable(
            law, f"{found} as expected, but no route table for {'; '.join(missing)}"
        )
    return _compared(
        law, law.question.key, same=agree, expected=expected, found=found, note="; ".join(notes)
    )


def check_executor_backends(found: tuple[str, ...] | Unavailable) -> Finding:
    """``ExecutorBackend`` (the health laws' vocabulary) against the installed Literal."""
    expected = frozenset(b.value for b in ExecutorBackend)
    if isinstance(found, Unavailable):
        return Finding(EXECUTOR_BACKENDS_KEY, Verdict.NOT_CHECKABLE, "", "", found.why, None)
    return _compared(
        None,
        EXECUTOR_BACKENDS_KEY,
        same=frozenset(found) == expected,
        expected=_names(expected),
        found=_names(found),
        note="DistributedExecutorBackend in vllm.config.parallel",
    )


_RUN_TIME = "run-time behaviour; an import cannot show it"


def _check(answer: Law | LawNotEstablished, installed: Installed) -> Finding:
    match answer:
        case LawNotEstablished():
            return _not_checkable(answer, f"no law: {answer.statement}")
        case RouteLaw():
            return check_route(
                answer, installed.dev_routes, installed.plain_routes, installed.guarded_prefixes
            )
        case CacheConfigLabelsLaw():
            return check_cache_config_labels(answer, installed.cache_config_labels)
        case CapacityLogFormatLaw():
            return check_capacity_log_format(answer, installed.capacity_source)
        case CapacityLaw():
            return check_capacity_label(answer, installed.cache_config_labels)
        case HealthLaw():
            return _not_checkable(answer, f"what /health covers is {_RUN_TIME}")
        case HealthFailureLaw():
            return _not_checkable(answer, f"the status of a dead engine's /health is {_RUN_TIME}")
        case IncarnationMarkerLaw():
            return _not_checkable(answer, f"the /metrics registry mode is {_RUN_TIME}")
        case ModelCardLaw():
            return _not_checkable(answer, f"a model card's id and root are {_RUN_TIME}")
        case ParallelEvidenceLaw():
            return _not_checkable(answer, f"what {answer.route.target} reports is {_RUN_TIME}")
        case ExecutorMarkerLaw():
            return _not_checkable(answer, f"which executor prints a log line is {_RUN_TIME}")
        case _:  # pragma: no cover
            assert_never(answer)


def audit(laws: ReleaseLaws | VersionNotEstablished, installed: Installed) -> tuple[Finding, ...]:
    """One finding per question of the table, then the executor-backend vocabulary."""
    backends = check_executor_backends(installed.executor_backends)
    if isinstance(laws, VersionNotEstablished):
        from vllm_evidence.upstream._table import LAW_TABLE

        return (
            *(
                Finding(q.key, Verdict.NOT_CHECKABLE, "", "", laws.statement, None)
                for q, _ in LAW_TABLE
            ),
            backends,
        )
    return (*(_check(answer, installed) for _, answer in laws.answers), backends)


def exit_status(findings: Iterable[Finding]) -> int:
    """1 when any law differs, else 0."""
    return 1 if any(f.verdict is Verdict.DIFFERS for f in findings) else 0


# --------------------------------------------------------------------------------------
# Route tables from a startup log.


def route_table_from_log(path: Path, *, development_mode: bool) -> RouteTable | str:
    """The route table of the last launch in a startup log that printed one.

    Returns a one-line error when the log cannot be read, has no route table, or its
    launch's development mode is not ``development_mode`` (a launch that shows no
    development mode is taken as the plain one: the operator named the mode).
    """
    from vllm_evidence._adapters.startup_log import LogReadFailure, read_startup_log

    log = read_startup_log(path)
    if isinstance(log, LogReadFailure):
        return log.describe()
    launches = [launch for launch in log.launches if launch.routes]
    if not launches:
        return f"{path}: no route table (no 'Route: …, Methods: …' lines)"
    launch = launches[-1]
    dev = launch.development_mode is True
    if dev is not development_mode:
        if dev:
            return f"{path}: its launch ran with development mode on"
        return f"{path}: its launch shows no development mode (no /server_info route, no warning)"
    routes = frozenset(
        (route.path, method.upper()) for route in launch.routes for method in route.methods
    )
    return RouteTable(routes, f"the route table of {path.name}")
