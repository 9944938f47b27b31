"""``GET /metrics``: a targeted scanner for the few series this package reads.

It does not parse the whole exposition.  It finds, by prefix, the sample lines of
``vllm:cache_config_info`` and ``process_start_time_seconds`` and parses only those
(labels unescaped exactly as the text exposition format defines: ``\\\\``, ``\\"``
and ``\\n``; any other backslash stays as written), and it collects the
``vllm:`` family names the body declares.  On well-formed text it yields the same samples as
``prometheus_client``'s parser, which the test suite checks differentially.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from decimal import Decimal, InvalidOperation
from types import MappingProxyType
from typing import final

import attrs

from vllm_evidence._adapters.failure import BodyParseFailure, fail
from vllm_evidence._bounds import wire_int
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.upstream._routes import Route

__all__ = [
    "CACHE_CONFIG_INFO",
    "PROCESS_START_TIME",
    "CacheConfigSeries",
    "MetricsObservation",
    "ProcessStartTime",
    "ScannedSample",
    "declared_families",
    "parse_metrics",
    "scan_metrics",
    "scan_samples",
]

CACHE_CONFIG_INFO = "vllm:cache_config_info"
PROCESS_START_TIME = "process_start_time_seconds"

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


# A label set as every exposition writes it (``{a="x",b="y"}``: no blanks, no backslash),
# in one match (a cache-config series carries ~40 labels).  Its values hold no ``"``, so
# splitting at ``"`` separates names and values exactly, in C.
_NAME = r"[a-zA-Z_][a-zA-Z0-9_]*"
_LABEL_NAME = re.compile(_NAME)
_CANONICAL_LABELS = re.compile(
    r'\{(?:[a-zA-Z_][a-zA-Z0-9_]*+="[^"\\]*+",)*+(?:[a-zA-Z_][a-zA-Z0-9_]*+="[^"\\]*+")?\}'
)
# The same with blanks around names, ``=`` and commas; its pairs are read by one findall.
_B = r"[ \t\r\f\v]*"
_PLAIN_LABELS = re.compile(rf'\{{{_B}(?:{_NAME}{_B}={_B}"[^"\\]*"{_B}(?:,{_B}|(?=\}})))*\}}')
_PLAIN_PAIR = re.compile(rf'({_NAME}){_B}={_B}"([^"\\]*)"')


def _parse_labels(text: str, start: int) -> tuple[dict[str, str], int]:
    """Parse ``{…}`` starting at ``text[start] == "{"``; return labels and the index after ``}``."""
    canonical = _CANONICAL_LABELS.match(text, start)
    if canonical is not None:
        end = canonical.end()
        # ``a="x",b="y",`` split at ``"``: names (with ``=`` and commas) and values alternate.
        parts = text[start + 1 : end - 1].split('"')
        values = parts[1::2]
        names = "".join(parts[0:-1:2])[:-1].split("=,") if values else []
        labels = dict(zip(names, values, strict=False))
        if len(labels) == len(values) and "__name__" not in labels:
            return labels, end
        return _read_labels(text, start)  # a repeated or reserved name: say which
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


# One regex pass per thing the scan reads would visit every line; instead each search
# below runs on the fastest primitive that can find it:
#
# - a targeted sample line: ``str.find`` of the name (a vectorised substring search),
#   then the line-start test on the few places it occurs;
# - a family declaration: from ``#`` to ``#``.  Where they are sparse (a large body of
#   many engines' samples, its ~150 declarations spread out) each is reached by
#   ``str.find`` (memchr) and read by one ``match``; where they are dense (one in a few
#   KiB, as in a single server's body) one regex pass over the rest is cheaper than a
#   Python step per ``#``.
#
# Each search only looks at bytes after the previous hit, and the rest of a line is read
# only for a line that starts with a target, so the scan is linear in the body however
# its lines are shaped.
_TARGETS = (CACHE_CONFIG_INFO, PROCESS_START_TIME)
_AFTER_NAME = frozenset("{ \t\r\f\v\n")
# ``#`` then HELP/TYPE and a vllm: name.  The lookbehind (after the ``#``, so the regex
# engine still skips from ``#`` to ``#`` in C) says what stands before it.  The first
# branch is the declaration as every exposition writes it (a newline, then ``# HELP `` or
# ``# TYPE `` with one space each): its name is captured, and a ``# HELP`` line followed
# by the ``# TYPE`` line of the same name is read as one match (its doc text skipped
# whole: a ``#`` inside it declares nothing).  The second branch is any other spacing, or
# a ``#`` after a blank (maybe a line indented with blanks, maybe text inside another
# line): nothing is captured, and the exact line rule below decides.
_DECLARATION = re.compile(
    r"#(?:(?<=\n#) (?:HELP|TYPE) (vllm:[a-zA-Z0-9_:]+)"
    r"(?: [^\n]*+\n# TYPE \1(?![a-zA-Z0-9_:]))?+"
    r"|(?<=[\n \t]#)[ \t]+(?:HELP|TYPE)[ \t]+vllm:)"
)
# A declaration at a line's start, any blanks before its ``#``: the exact rule.
_DECLARED = r"[ \t]*#[ \t]+(?:HELP|TYPE)[ \t]+(vllm:[a-zA-Z0-9_:]+)"
_DECLARED_LINE = re.compile("\n" + _DECLARED)
_FIRST_DECLARED = re.compile(_DECLARED)
#: Bodies from this size on reach their ``#`` one by one (memchr, a Python step each)
#: while they stay rarer than one per :data:`_SPARSE` characters on average: in a large
#: body the ~150 declarations of vLLM's families are spread among many engines' samples.
#: A smaller body is read by one regex pass (~3.5 GB/s, ~0.15 µs a declaration) — a
#: single server's ~55 KB holds one ``#`` every ~300 bytes, where a jump would cost more.
_JUMP_FROM = 256 * 1024
_SPARSE = 4096


def _declared(text: str, jumps: int | None = None) -> set[str]:
    """The ``vllm:`` names declared by a ``# HELP``/``# TYPE`` line.

    ``jumps``: how many ``#`` to reach one by one before one regex pass reads the rest
    (by default none below :data:`_JUMP_FROM` characters, one per :data:`_SPARSE` from it).
    """
    if jumps is None:
        jumps = len(text) // _SPARSE if len(text) >= _JUMP_FROM else 0
    hits: list[str] = []
    at = text.find("#", 1)
    while at >= 0 and jumps > 0:
        jumps -= 1
        found = _DECLARATION.match(text, at)
        if found is not None:
            hits.append(found.group(1) or "")
        at = text.find("#", at + 1)
    if at >= 0:
        hits += _DECLARATION.findall(text, at)  # an unmatched group reads ""
    names = set(hits)
    if "" in names:
        # A ``#`` after a blank, or spaced otherwise: read every line by the exact rule.
        names = set(_DECLARED_LINE.findall(text))
    first = _FIRST_DECLARED.match(text)
    if first is not None:
        names.add(first.group(1))
    return names


def _sample_lines(text: str) -> list[tuple[int, str, str]]:
    """Each line whose first non-blank text is a targeted name followed by ``{``, a blank
    or the line's end: its offset, the name, and the rest of the line."""
    found: list[tuple[int, str, str]] = []
    for name in _TARGETS:
        size = len(name)
        searched = 0  # no newline search goes back past the previous occurrence
        at = text.find(name)
        while at >= 0:
            newline = text.rfind("\n", searched, at)
            if newline >= 0:
                start = newline + 1
            elif searched == 0:
                start = 0
            else:
                start = -1  # the previous occurrence is on this line, before this one
            end = at + size
            if (
                start >= 0
                and (start == at or text[start:at].isspace())
                and (end == len(text) or text[end] in _AFTER_NAME)
            ):
                line_end = text.find("\n", end)
                found.append((at, name, text[end:] if line_end < 0 else text[end:line_end]))
            searched = end
            at = text.find(name, end)
    found.sort()
    return found


def scan_samples(text: str) -> list[ScannedSample]:
    """The targeted samples of exposition text, in order.

    Raises :class:`ValueError` when a targeted line is malformed.
    """
    return [_parse_line(name, rest) for _, name, rest in _sample_lines(text)]


def declared_families(text: str, *, cache_config_seen: bool) -> frozenset[str]:
    """The ``vllm:`` families of exposition text: the names declared by ``# HELP``/``# TYPE``
    lines (vLLM's exposition declares every family it serves), plus
    ``vllm:cache_config_info`` when ``cache_config_seen`` (its samples appear without a
    declaration in trimmed dumps)."""
    families = _declared(text)
    if cache_config_seen:
        families.add(CACHE_CONFIG_INFO)
    return frozenset(families)


def scan_metrics(text: str) -> tuple[list[ScannedSample], frozenset[str]]:
    """Scan exposition text: the targeted samples, in order (:func:`scan_samples`), and the
    ``vllm:`` families (:func:`declared_families`).

    Raises :class:`ValueError` when a targeted line is malformed.
    """
    samples = scan_samples(text)
    seen = any(s.name == CACHE_CONFIG_INFO for s in samples)
    return samples, declared_families(text, cache_config_seen=seen)


@final
@attrs.frozen(init=False, repr=False)
class CacheConfigSeries(Sealed):
    """One ``vllm:cache_config_info`` series: every label, as served, and its value.

    Label values are wire text (``"None"`` means unset); parse them with the measures.
    """

    __public_constructor__ = "vllm_evidence.readback_from_batch()"

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

    @property
    def engine_index(self) -> int | None:
        """The ``engine`` label as the DP engine index vLLM prints (``str(index)``: ASCII
        decimal digits, at most 18); ``None`` without the label (V0) or for any other
        text, which names no engine."""
        engine = self.engine
        index = None if engine is None else wire_int(engine)
        return index if index is not None and str(index) == engine else None


_mint_series = minter(CacheConfigSeries, CacheConfigSeries.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class ProcessStartTime(Sealed):
    """``process_start_time_seconds``: the answering API-server process's start, exact.

    Two markers are the same incarnation only when their decimals are equal; the
    value is never rounded through a float.
    """

    __public_constructor__ = "vllm_evidence.readback_from_batch()"

    seconds: Decimal
    """Seconds since the epoch, exactly as printed (``1.79601185221e+09``)."""


_mint_start = minter(ProcessStartTime, ProcessStartTime.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False, eq=False)
class MetricsObservation(Sealed):
    """What one ``/metrics`` body says about the things this package reads.

    Equal when their series, marker and families are equal (whatever else the bodies
    hold: counters move between two reads of one process).
    """

    __public_constructor__ = "vllm_evidence.readback_from_batch()"
    __repr_derived__ = ("vllm_families",)

    cache_config_info: tuple[CacheConfigSeries, ...]
    """Every ``vllm:cache_config_info`` series, in served order (one per engine)."""
    process_start_time: ProcessStartTime | None
    """The incarnation marker, or ``None`` when absent (multi-process registry mode)."""
    _body: bytes = attrs.field(repr=False)
    """The body read (the exchange's own bytes object, not a copy): what
    :attr:`vllm_families` is derived from."""

    @functools.cached_property
    def vllm_families(self) -> frozenset[str]:
        """Names of the ``vllm:`` metric families declared (``# HELP``/``# TYPE``), plus
        ``vllm:cache_config_info`` whenever its samples are present.

        Derived from the body when first read, not at parse time: no decision reads it
        (the document shows it), and a watch that never renders a round's four bodies
        never pays for scanning their declarations (a fifteenth of a round's CPU)."""
        return declared_families(
            self._body.decode("utf-8"), cache_config_seen=bool(self.cache_config_info)
        )

    def _key(self) -> tuple[object, ...]:
        return (self.cache_config_info, self.process_start_time, self.vllm_families)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MetricsObservation):
            return NotImplemented
        return self is other or self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

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
        samples = scan_samples(text)
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
        body=body,
    )
