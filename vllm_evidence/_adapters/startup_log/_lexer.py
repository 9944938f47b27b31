"""The lexical layer of a vLLM startup-log line: what comes before and after the message.

ANSI colour codes, carriage returns and docker json-file records are removed first
(:func:`clean`); then :func:`split_header` takes apart, outside in, a wrapper (journald,
an ISO-8601 timestamp with an optional CRI stream column, a compose service column),
the process tags, vLLM's record prefix (or a Python-logging prefix), and Ray's
``[repeated Nx across cluster]`` suffix.  What is left is the message the grammar reads.
Heads people paste are recognised first and marked ``transformed`` (markdown backticks,
a head with its level or time taken out,
``...``-elided fields, a host application's Python logging format, also under journald):
their message is read, their process tag is not trusted.
The value helpers at the end split ``key=value, …`` and ``{'k': v, …}`` texts tolerantly
and read the plain values vLLM prints (names, integers, booleans).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import attrs

from vllm_evidence._adapters._text import top_level_pieces
from vllm_evidence._bounds import wire_int

__all__ = [
    "RECORD_HEAD_RE",
    "RECORD_START_RE",
    "Header",
    "RawTag",
    "clean",
    "parse_bool_text",
    "parse_config_text",
    "parse_dict_text",
    "parse_int_text",
    "parse_name_list",
    "split_header",
    "split_top_level",
    "starts_record",
    "unquote",
]

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_WRAPPER_RE = re.compile(
    r"""^(?:
        [A-Z][a-z]{2}\ [ 0-9]\d\ \d\d:\d\d:\d\d\ \S+\ [^\s:\[]+(?:\[\d+\])?:\ ?   # journald
      | \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?\ ?       # ISO stamp
        (?:(?:stdout|stderr)\ [FP]\ )?                                          # CRI stream
      | [\w.-]+\s+\|\ ?                                                        # compose
    )""",
    re.VERBOSE,
)
_TAG_RE = re.compile(
    # The name may hold "key=value" words: 0.8.5 tags workers "(VllmWorker rank=1 pid=N)".
    r"\((?:(?P<name>[^()]*?) )?pid=(?P<pid>\d+)(?:, ip=(?P<ip>[0-9A-Fa-f.:]+))?\)\s?"
)
_LEVELS = r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)"
_PREFIX_RE = re.compile(
    _LEVELS + r" \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?(?P<file>[^\s\]:]+):\d+\] ?"
)
_PYLOG_RE = re.compile(_LEVELS + r":(?P<logger>vllm[\w.]*):")
_REPEATED_RE = re.compile(
    r"\s*\[repeated (?P<n>\d+)x across cluster\](?: \(Ray deduplicates logs.*)?\s*$"
)
#: vLLM's record head (tags, then level and time) anywhere near the start of a line: found
#: after a ``VLLM_LOGGING_PREFIX`` of any text.
RECORD_HEAD_RE = re.compile(
    r"(?:\((?:[^()]*? )?pid=\d+(?:, ip=[0-9A-Fa-f.:]+)?\)\s?)*"
    + _LEVELS
    + r" \d\d-\d\d \d\d:\d\d:\d\d"
)
_PREFIX_SEARCH = 80
#: Where a head that starts within the first 80 characters may end: its tags (a few
#: ``(Name pid=N, ip=A)``) and ``INFO 10-01 18:03:16``.
_HEAD_END_SEARCH = _PREFIX_SEARCH + 200


def _prefixed_head(text: str, pos: int = 0) -> re.Match[str] | None:
    """vLLM's record head after a prefix: one that *starts* within 80 characters of
    ``pos`` (a host's own timestamp, level and logger name take up most of them)."""
    head = RECORD_HEAD_RE.search(text, pos, pos + _HEAD_END_SEARCH)
    return head if head is not None and head.start() <= pos + _PREFIX_SEARCH else None


#: Heads that are not vLLM's bytes: what people paste into issues and chat, and what a
#: host application's logging prints.  A message under one of them is read, but its head
#: is *transformed*: its process tag (if any) is not trusted where the tag matters.
#: A host application's Python logging format, ``%(asctime)s %(name)s %(process)d
#: %(levelname)s``: ``2024-10-01 18:03:16,895 vllm.executor.gpu_executor 3169096 INFO``.
_HOST_LOGGING_RE = re.compile(
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?P<logger>vllm[\w.]*) \d+ " + _LEVELS + r"\s+"
)
#: vLLM's own head with fields elided by ``...``:
#: ``(EngineCore pid=...) INFO ... [kv_cache_utils.py:1733] ``.
_ELIDED_RE = re.compile(
    r"(?:\([^()]*\)\s?)*(?:" + _LEVELS + r"|\.\.\.) (?:\.\.\.|\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) "
    r"\[(?P<file>[^\s\]:]+):(?:\d+|\.\.\.)\] ?"
)
#: vLLM's own head with its level or its time taken out (``INFO [kv_cache_utils.py:1319]``,
#: ``[gpu_worker.py:701]``): what people keep of a head when they paste a message.
_PARTIAL_RE = re.compile(
    r"(?:\([^()]*\)\s?)*(?P<level>" + _LEVELS + r" )?(?P<time>\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? )?"
    r"\[(?P<file>[^\s\]:]+\.py):\d+\] ?"
)
_JOURNALD_RE = re.compile(r"[A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d \S+ [^\s:\[]+(?:\[\d+\])?: ?")

#: A physical line that begins a new record: a tag, a vLLM/uvicorn/Python-logging
#: prefix, a wrapper, or a paste's code fence.  Such a line is never joined onto the
#: line before it.
RECORD_START_RE = re.compile(
    r"(?:\((?:[^()]*? )?pid=\d+"
    r"|" + _LEVELS + r"(?: \d\d-\d\d |:)"
    r"|[A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d "
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d"
    r"|\[[A-Z]\d{4} "  # glog/c10 "[W1130 04:11:13…]"
    r"|[\w.-]+\s+\|\ "  # a docker-compose service column "vllm-1  | "
    r'|\{"log":'  # a docker json-file record
    r"|```"  # a markdown code fence around a pasted log
    r"|#@ )"
)


def starts_record(text: str) -> bool:
    """Whether a cleaned physical line begins a record (a tag, a prefix, a wrapper), also
    after a ``VLLM_LOGGING_PREFIX`` within the first 80 characters."""
    return RECORD_START_RE.match(text) is not None or _prefixed_head(text) is not None


def clean(text: str) -> str:
    """Unwrap a docker json-file record, drop ANSI codes and what a carriage return
    overwrote (keep the last segment)."""
    if text.startswith('{"log":'):
        text = _docker_json_log(text)
    if "\x1b" in text:
        text = ANSI_RE.sub("", text)
    if "\r" in text:
        text = text.rstrip("\r")
        if "\r" in text:
            text = text.rpartition("\r")[2]
    return text


def _docker_json_log(text: str) -> str:
    """The ``log`` field of a docker json-file line (``{"log":"…\\n","stream":…}``)."""
    try:
        record = json.loads(text)
    except ValueError:
        return text
    if isinstance(record, dict) and isinstance(record.get("log"), str):
        return str(record["log"]).rstrip("\n")
    return text


def unquote(text: str) -> str | None:
    """The text inside one pair of matching quotes, or ``None`` when it is not quoted."""
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    return None


@attrs.frozen
class RawTag:
    """One ``(name pid=N[, ip=A])`` process tag as printed."""

    name: str | None
    pid: int
    ip: str | None

    @property
    def text(self) -> str:
        """``name pid=N[, ip=A]``."""
        return f"{self.name + ' ' if self.name else ''}pid={self.pid}" + (
            f", ip={self.ip}" if self.ip else ""
        )


@attrs.frozen
class Header:
    """What came before the message on one logical line."""

    tag: RawTag | None
    """The innermost process tag."""
    outer: str | None
    """The enclosing tag as printed (``EngineCore_0 pid=1159``) for a nested Ray tag."""
    file: str | None
    repeated: int | None
    message: str
    transformed: bool = False
    """The head is not vLLM's bytes (backticks, ``...`` elisions, a host application's
    logging format): its process tag is not evidence of which process printed it."""


def _transformed(text: str) -> Header | None:
    """A line whose head people or a host application transformed, else ``None``."""
    body = text.strip()
    ticked = len(body) >= 2 and body[0] == "`" and body[-1] == "`"
    if ticked:
        inner = split_header(body.strip("`").strip())
        return attrs.evolve(inner, transformed=True)
    journald = _JOURNALD_RE.match(text)
    start = journald.end() if journald else 0
    host = _HOST_LOGGING_RE.match(text, start)
    if host is not None:
        logger = host["logger"].rpartition(".")[2]
        return _pasted(f"{logger}.py", text[host.end() :])
    elided = _ELIDED_RE.match(text)
    if elided is not None and "..." in text[: elided.end()]:
        return _pasted(elided["file"], text[elided.end() :])
    partial = _PARTIAL_RE.match(text)
    if partial is not None and (partial["level"] is None or partial["time"] is None):
        return _pasted(partial["file"], text[partial.end() :])
    return None


def _pasted(path: str, message: str) -> Header:
    """A transformed head's reading: its file, its message, no tag trusted."""
    return Header(
        tag=None,
        outer=None,
        file=path.rpartition("/")[2],
        repeated=None,
        message=message.rstrip(),
        transformed=True,
    )


def split_header(text: str) -> Header:
    """Split a cleaned logical line into wrapper, tags, record prefix, message, dedup suffix."""
    if (pasted := _transformed(text)) is not None:
        return pasted
    pos = 0
    m = _WRAPPER_RE.match(text)
    if m:
        pos = m.end()
    if not text.startswith("(", pos) and _PREFIX_RE.match(text, pos) is None:
        # VLLM_LOGGING_PREFIX (or a host's own prefix after a wrapper's timestamp:
        # TorchServe's ``,325 [INFO ] W-9000-… MODEL_LOG - ``) puts any text before
        # vLLM's own record head.
        head = _prefixed_head(text, pos)
        if head is not None:
            pos = head.start()
    tags: list[RawTag] = []
    while True:
        t = _TAG_RE.match(text, pos)
        if t is None:
            break
        tags.append(RawTag(name=t["name"], pid=int(t["pid"]), ip=t["ip"]))
        pos = t.end()
    file: str | None = None
    p = _PREFIX_RE.match(text, pos)
    if p:
        file = p["file"].rpartition("/")[2]
        pos = p.end()
    else:
        q = _PYLOG_RE.match(text, pos)
        if q:
            pos = q.end()
    message = text[pos:]
    repeated: int | None = None
    if "[repeated" in message:
        r = _REPEATED_RE.search(message)
        if r:
            repeated = int(r["n"])
            message = message[: r.start()]
    return Header(
        tag=tags[-1] if tags else None,
        outer=tags[-2].text if len(tags) > 1 else None,
        file=file,
        repeated=repeated,
        message=message.rstrip(),
    )


# --------------------------------------------------------------------------------------
# Tolerant ``key=value, …`` / ``{'k': v, …}`` splitting.


def split_top_level(text: str, sep: str = ",") -> Iterator[str]:
    """Split ``text`` at ``sep`` outside brackets and quotes; pieces are stripped.

    Unbalanced closing brackets are tolerated (depth never goes below 0); an unclosed
    quote or bracket runs to the end of the text.  ``<CompilationMode.X: 2>`` reprs are
    treated as brackets so their ``:``/``,`` do not split.
    """
    *head, tail = top_level_pieces(text, sep)
    yield from (piece.strip() for piece in head)
    if tail.strip():
        yield tail.strip()


_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_config_text(text: str) -> tuple[tuple[str, str], ...]:
    """``model='x', tensor_parallel_size=2, …`` → ``(("model", "'x'"), …)``.

    A piece with no ``key=`` head is joined onto the previous value (a comma inside an
    unquoted value); the first occurrence of a key wins.
    """
    pairs: list[list[str]] = []
    for piece in split_top_level(text):
        key, eq, value = piece.partition("=")
        if eq and _KEY_RE.fullmatch(key.strip()):
            pairs.append([key.strip(), value.strip()])
        elif pairs:
            pairs[-1][1] += ", " + piece
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for key, value in pairs:
        if key not in seen:
            seen.add(key)
            out.append((key, value))
    return tuple(out)


def parse_dict_text(text: str) -> tuple[tuple[str, str], ...]:
    """``{'port': 8081, 'served_model_name': ['a']}`` → ``(("port", "8081"), …)``."""
    body = text.strip()
    if body.startswith("{"):
        body = body[1:]
    if body.endswith("}"):
        body = body[:-1]
    out: list[tuple[str, str]] = []
    for piece in split_top_level(body):
        m = _DICT_ITEM_RE.match(piece)
        if m is not None:
            out.append((m["k"], m["v"].strip()))
    return tuple(out)


_DICT_ITEM_RE = re.compile(r"""(?P<q>['"])(?P<k>[^'"]*)(?P=q)\s*:\s*(?P<v>.*)""", re.DOTALL)


def parse_name_list(value: str) -> tuple[str, ...] | None:
    """``['a', 'b']`` or ``'a'`` or ``a`` → names; ``None`` for ``None`` or empty."""
    v = value.strip()
    if v in ("None", "", "[]"):
        return None
    if v.startswith("[") and v.endswith("]"):
        names = [unquote(p) or p for p in split_top_level(v[1:-1])]
        return tuple(n for n in names if n) or None
    return (unquote(v) or v,)


def parse_int_text(value: str | None) -> int | None:
    """A plain decimal integer of at most 18 digits, or ``None`` (``None``, quoted,
    negative, longer, anything else)."""
    return None if value is None else wire_int(value)


def parse_bool_text(value: str | None) -> bool | None:
    """``True``/``False`` as Python prints them, else ``None``."""
    return {"True": True, "False": False}.get(value or "")
