"""``GET /metrics``: a targeted scanner for the few series this package reads.

It does not parse the whole exposition.  It finds, by prefix, the sample lines of
``vllm:cache_config_info`` and ``process_start_time_seconds`` and parses only those
(labels unescaped exactly as the text exposition format defines: ``\\\\``, ``\\"``
and ``\\n``; any other backslash stays as written), and it collects the
``vllm:`` family names the body declares.  On well-formed text it yields the same samples as
``prometheus_client``'s parser, which the test suite checks differentially.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from decimal import Decimal, InvalidOperation
from types import MappingProxyType
from typing import final

import attrs

from vllm_evidence._seal import Sealed, minter
from vllm_evidence.adapters.failure import BodyParseFailure, fail
from vllm_evidence.upstream.routes import Route

__all__ = [
    "CACHE_CONFIG_INFO",
    "PROCESS_START_TIME",
    "CacheConfigSeries",
    "MetricsObservation",
    "ProcessStartTime",
    "ScannedSample",
    "parse_metrics",
    "scan_metrics",
]

CACHE_CONFIG_INFO = "vllm:cache_config_info"
PROCESS_START_TIME = "process_start_time_seconds"

# One pass finds both things the scan reads, each at a line's start: a family
# declaration (``# HELP vllm:…`` / ``# TYPE vllm:…``, blanks before the ``#``) and a
# sample line of a targeted name (any whitespace before it; the name followed by ``{``,
# a blank or the line's end; the rest of the line taken with it).  Its literal leading
# ``\n`` lets the regex engine skip from newline to newline in C; the body's first line
# is matched without it.  The per-line work is bounded by the line, so the scan is
# linear in the body however its lines are shaped.
_LINE_BODY = (
    r"(?:[ \t]*#[ \t]+(?:HELP|TYPE)[ \t]+(vllm:[a-zA-Z0-9_:]+)"
    r"|[^\S\n]*(vllm:cache_config_info|process_start_time_seconds)(?=[{ \t\r\f\v\n]|\Z)"
    r"([^\n]*))"
)
_LINE = re.compile("\n" + _LINE_BODY)
_FIRST_LINE = re.compile(_LINE_BODY)
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_ESCAPES = {"\\": "\\", "n": "\n", '"': '"'}
_BLANKS = " \t\r\f\v"


class _ScanError(ValueError):
    """A targeted line that is not a well-formed sample."""


@final
@attrs.frozen
class ScannedSample:
    """One sample line as the scanner read it (the raw scan result, not evidence)."""

    name: str
    labels: Mapping[str, str]
    value: Decimal
    timestamp_ms: Decimal | None


# A label set without a backslash, as the reader below accepts it, in one match (a
# cache-config series carries ~40 labels); the pairs are then read by one findall.
_B = r"[ \t\r\f\v]*"
_PLAIN_LABELS = re.compile(
    rf'\{{{_B}(?:[a-zA-Z_][a-zA-Z0-9_]*{_B}={_B}"[^"\\]*"{_B}(?:,{_B}|(?=\}})))*\}}'
)
_PLAIN_PAIR = re.compile(rf'([a-zA-Z_][a-zA-Z0-9_]*){_B}={_B}"([^"\\]*)"')


def _parse_labels(text: str, start: int) -> tuple[dict[str, str], int]:
    """Parse ``{…}`` starting at ``text[start] == "{"``; return labels and the index after ``}``."""
    plain = _PLAIN_LABELS.match(text, start)
    if plain is not None:
        pairs = _PLAIN_PAIR.findall(text, start, plain.end())
        labels = dict(pairs)
        if len(labels) == len(pairs) and "__name__" not in labels:
            return labels, plain.end()
    return _read_labels(text, start)


def _read_labels(text: str, start: int) -> tuple[dict[str, str], int]:
    """:func:`_parse_labels` one character at a time: escapes, and the damage named."""
    labels: dict[str, str] = {}
    i = start + 1
    n = len(text)
    while True:
        while i < n and text[i] in _BLANKS:
            i += 1
        if i < n and text[i] == "}":
            return labels, i + 1
        match = _LABEL_NAME.match(text, i)
        if match is None:
            msg = "bad label name"
            raise _ScanError(msg)
        name = match.group()
        i = match.end()
        while i < n and text[i] in _BLANKS:
            i += 1
        if i >= n or text[i] != "=":
            msg = "missing '=' after label name"
            raise _ScanError(msg)
        i += 1
        while i < n and text[i] in _BLANKS:
            i += 1
        if i >= n or text[i] != '"':
            msg = "label value is not quoted"
            raise _ScanError(msg)
        i += 1
        # Fast path: no backslash before the closing quote.
        close = text.find('"', i)
        if close < 0:
            msg = "unterminated label value"
            raise _ScanError(msg)
        backslash = text.find("\\", i, close)
        if backslash < 0:
            value = text[i:close]
            i = close + 1
        else:
            parts: list[str] = []
            while True:
                if i >= n:
                    msg = "unterminated label value"
                    raise _ScanError(msg)
                ch = text[i]
                if ch == '"':
                    i += 1
                    break
                if ch == "\\" and i + 1 < n and text[i + 1] in _ESCAPES:
                    parts.append(_ESCAPES[text[i + 1]])
                    i += 2
                    continue
                parts.append(ch)
                i += 1
            value = "".join(parts)
        if name in labels or name == "__name__":
            msg = f"duplicate or reserved label {name!r}"
            raise _ScanError(msg)
        labels[name] = value
        while i < n and text[i] in _BLANKS:
            i += 1
        if i < n and text[i] == ",":
            i += 1
        elif i < n and text[i] == "}":
            return labels, i + 1
        else:
            msg = "expected ',' or '}' after a label"
            raise _ScanError(msg)


def _number(text: str) -> Decimal:
    if "_" in text:
        msg = f"bad number {text!r}"
        raise _ScanError(msg)
    try:
        float(text)  # the exposition's number grammar is Go's/Python's float grammar
        return Decimal(text)
    except (ValueError, InvalidOperation) as exc:
        msg = f"bad number {text!r}"
        raise _ScanError(msg) from exc


def _parse_line(name: str, rest: str) -> ScannedSample:
    labels: dict[str, str] = {}
    stripped = rest.lstrip(_BLANKS)
    if stripped.startswith("{"):
        labels, end = _parse_labels(stripped, 0)
        stripped = stripped[end:]
    fields = stripped.split()
    if not fields or len(fields) > 2:
        msg = "expected a value and at most a timestamp"
        raise _ScanError(msg)
    value = _number(fields[0])
    timestamp = _number(fields[1]) if len(fields) == 2 else None
    return ScannedSample(
        name=name, labels=MappingProxyType(labels), value=value, timestamp_ms=timestamp
    )


def scan_metrics(text: str) -> tuple[list[ScannedSample], frozenset[str]]:
    """Scan exposition text: the targeted samples, in order, and the ``vllm:`` families.

    The families are the names declared by ``# HELP``/``# TYPE`` lines (vLLM's
    exposition declares every family it serves), plus ``vllm:cache_config_info``
    when its samples appear without a declaration (as in trimmed dumps).

    Raises :class:`ValueError` when a targeted line is malformed.
    """
    found = _LINE.findall(text)
    first = _FIRST_LINE.match(text)
    if first is not None:
        found.insert(0, first.groups())
    samples = [_parse_line(name, rest) for _, name, rest in found if name]
    families = {family for family, _, _ in found if family}
    if any(s.name == CACHE_CONFIG_INFO for s in samples):
        families.add(CACHE_CONFIG_INFO)
    return samples, frozenset(families)


@final
@attrs.frozen(init=False, repr=False)
class CacheConfigSeries(Sealed):
    """One ``vllm:cache_config_info`` series: every label, as served, and its value.

    Label values are wire text (``"None"`` means unset); parse them with the measures.
    """

    __public_constructor__ = "vllm_evidence.adapters.metrics.parse_metrics()"

    label_pairs: tuple[tuple[str, str], ...]
    """Every label, sorted by name."""
    value: Decimal
    """The gauge's value (``1.0`` in every vLLM release)."""

    @property
    def labels(self) -> dict[str, str]:
        """The labels as a fresh dict."""
        return dict(self.label_pairs)

    def label(self, name: str) -> str | None:
        """One label's wire text, or ``None`` when the series has no such label."""
        for key, value in self.label_pairs:
            if key == name:
                return value
        return None

    @property
    def engine(self) -> str | None:
        """The ``engine`` label (a DP engine index, ≥0.9.2), or ``None`` (V0)."""
        return self.label("engine")


_mint_series = minter(CacheConfigSeries, CacheConfigSeries.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class ProcessStartTime(Sealed):
    """``process_start_time_seconds``: the answering API-server process's start, exact.

    Two markers are the same incarnation only when their decimals are equal; the
    value is never rounded through a float.
    """

    __public_constructor__ = "vllm_evidence.adapters.metrics.parse_metrics()"

    seconds: Decimal
    """Seconds since the epoch, exactly as printed (``1.79601185221e+09``)."""


_mint_start = minter(ProcessStartTime, ProcessStartTime.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class MetricsObservation(Sealed):
    """What one ``/metrics`` body says about the things this package reads."""

    __public_constructor__ = "vllm_evidence.adapters.metrics.parse_metrics()"

    cache_config_info: tuple[CacheConfigSeries, ...]
    """Every ``vllm:cache_config_info`` series, in served order (one per engine)."""
    process_start_time: ProcessStartTime | None
    """The incarnation marker, or ``None`` when absent (multi-process registry mode)."""
    vllm_families: frozenset[str]
    """Names of the ``vllm:`` metric families declared (``# HELP``/``# TYPE``), plus
    ``vllm:cache_config_info`` whenever its samples are present."""

    def series_by_engine(self) -> Iterator[tuple[str | None, CacheConfigSeries]]:
        """Each cache-config series with its ``engine`` label."""
        for series in self.cache_config_info:
            yield series.engine, series


_mint_metrics = minter(MetricsObservation, MetricsObservation.__attrs_init__)


#: The first line of a text exposition: a comment, or a sample (name, then labels or value).
_EXPOSITION_START = re.compile(r"#|[a-zA-Z_:][a-zA-Z0-9_:]*[ \t{]")
_NOT_BLANK = re.compile(r"\S")


def parse_metrics(body: bytes) -> MetricsObservation | BodyParseFailure:
    """Read a Prometheus text exposition body."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return fail(Route.METRICS, f"not UTF-8 ({exc.reason} at byte {exc.start})")
    try:
        samples, families = scan_metrics(text)
    except _ScanError as exc:
        return fail(Route.METRICS, f"malformed targeted sample: {exc}")
    series: list[CacheConfigSeries] = []
    starts: list[Decimal] = []
    for sample in samples:
        if sample.name == CACHE_CONFIG_INFO:
            series.append(
                _mint_series(label_pairs=tuple(sorted(sample.labels.items())), value=sample.value)
            )
        elif sample.labels:
            return fail(Route.METRICS, f"{PROCESS_START_TIME} carries labels")
        else:
            starts.append(sample.value)
    start: ProcessStartTime | None = None
    if starts:
        if len(starts) > 1:
            return fail(Route.METRICS, f"{PROCESS_START_TIME} appears {len(starts)} times")
        if not starts[0].is_finite():
            return fail(Route.METRICS, f"{PROCESS_START_TIME} is not finite")
        start = _mint_start(seconds=starts[0])
    # The first non-blank character, found without copying the body (``strip`` would).
    begins = _NOT_BLANK.search(text)
    if begins is None:
        return fail(Route.METRICS, "empty body")
    if not _EXPOSITION_START.match(text, begins.start()):
        # An HTML page, JSON, or any other 200 that is not the text exposition format.
        first = text[begins.start() : begins.start() + 40].partition("\n")[0]
        return fail(Route.METRICS, f"not Prometheus text exposition (begins {first!r})")
    return _mint_metrics(
        cache_config_info=tuple(series),
        process_start_time=start,
        vllm_families=families,
    )
