"""Per-line parsing of a vLLM startup log: one logical line in, one typed observation out.

This module knows the *text* vLLM prints (``vllm-upstream.md`` §4, and vLLM's source for
v0.6.6.post1 to v0.33); :mod:`vllm_evidence.capture.startup_log` knows files, launches and
wrapping.  A line is recognised only when its message *starts* with one of the formats
below; anything else is skipped, never guessed at.

What a logical line may carry, outside in:

* a wrapper: journald (``Sep 03 02:11:14 host vllm[12]: ``), an ISO-8601 timestamp
  (``kubectl logs --timestamps``, docker), a compose service column (``vllm-1  | ``);
* process tags, possibly nested: ``(EngineCore_DP0 pid=12)``, ``(VllmWorker TP1 pid=13)``,
  ``(EngineCore_0 pid=1) (RayWorkerWrapper pid=345, ip=10.42.9.225)``, Ray's bare
  ``(pid=345, ip=…)``;
* vLLM's record prefix: ``INFO 09-03 02:12:26 [kv_cache_utils.py:849] `` (≥ v0.8.5) or
  ``INFO 12-27 10:00:00 gpu_executor.py:76] `` (v0.6.6, no ``[``), or a Python-logging
  prefix ``INFO:vllm.v1.core.kv_cache_utils:``; or none at all (a log with the prefixes
  stripped);
* then the message, possibly followed by Ray's ``[repeated 3x across cluster]``.

ANSI colour codes and carriage returns are removed before any of this.

Recognised messages (each regex is anchored at the message start; a capacity or memory
line may carry trailing text after its unit, which a wrong hard-wrap join can append):

========================  ==================================================================
version                    logo line ``… version 0.32.0``; ``vLLM API server version X``;
                           ``vLLM server version X, serving model M``; the engine-init
                           line's ``(vX)``
non-default args           ``non-default args: {...}`` (served names, parallel sizes as given)
engine init                ``Initializing a V1 LLM engine (vX) with config: k=v, …`` and V0
                           ``Initializing an LLM engine (vX) with config: …``
ranks                      ``world_size=2 rank=1 local_rank=1 distributed_init_method=… backend=…``;
                           ``rank 1 in world size 2 is assigned as DP rank 0, …, TP rank 1, …``
routes                     ``Route: /server_info, Methods: GET``
development mode           ``SECURITY WARNING: Development endpoints are enabled!``
capacity                   ``# GPU blocks: N, # CPU blocks: M`` (any device word);
                           ``GPU KV cache size: N tokens``; ``Maximum concurrency for L tokens
                           per request: X.XXx``; ``<DEV> KV cache size: N tokens, Maximum
                           concurrency for L tokens per request: X.XXx``
available memory           ``Available KV cache memory: X GiB`` (negative kept)
executor markers           the file of the record prefix (``ray_distributed_executor.py``, …),
                           ``DP group leader:`` (MultiprocExecutor), worker process tags
========================  ==================================================================
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterator
from typing import final

import attrs
from packaging.version import InvalidVersion, Version

from vllm_evidence._seal import Sealed, minter
from vllm_evidence.adapters._text import top_level_pieces
from vllm_evidence.measure import (
    BlockCount,
    Concurrency,
    GiB,
    MeasureParseFailure,
    TokenCount,
)
from vllm_evidence.upstream.laws import ExecutorBackend

__all__ = [
    "AvailableMemoryObservation",
    "BlocksObservation",
    "CapacityFormat",
    "EngineConfigObservation",
    "ExecutorBackend",
    "ExecutorMarker",
    "ExecutorObservation",
    "NonDefaultArgsObservation",
    "ProcessTag",
    "RankForm",
    "RankObservation",
    "RouteObservation",
    "VersionObservation",
    "VersionSource",
    "split_top_level",
]

_PUBLIC = "vllm_evidence.capture.startup_log.read_startup_log()"

# --------------------------------------------------------------------------------------
# Lexical layer: ANSI, carriage returns, wrappers, tags, record prefix, Ray dedup suffix.

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

#: A physical line that begins a new record: a tag, a vLLM/uvicorn/Python-logging
#: prefix, or a wrapper.  Used by the capture layer to refuse joining such a line
#: onto the line before it.
RECORD_START_RE = re.compile(
    r"(?:\((?:[^()]*? )?pid=\d+"
    r"|" + _LEVELS + r"(?: \d\d-\d\d |:)"
    r"|[A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d "
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d"
    r"|\[[A-Z]\d{4} "  # glog/c10 "[W1130 04:11:13…]"
    r"|[\w.-]+\s+\|\ "  # a docker-compose service column "vllm-1  | "
    r'|\{"log":'  # a docker json-file record
    r"|#@ )"
)


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


@final
@attrs.frozen(init=False)
class ProcessTag(Sealed):
    """The process a line came from, as its ``(name pid=N[, ip=A])`` tag printed it."""

    __public_constructor__ = _PUBLIC

    name: str | None
    """``EngineCore_DP0``, ``VllmWorker TP1``, ``RayWorkerWrapper``; ``None`` for Ray's bare
    ``(pid=…)``."""
    pid: int
    ip: str | None
    outer: str | None
    """The enclosing tag as printed (``EngineCore_0 pid=1159``) for a nested Ray tag."""

    @property
    def text(self) -> str:
        """The tag as one string: ``EngineCore_0 pid=1159 > RayWorkerWrapper pid=345, ip=…``."""
        inner = f"{self.name + ' ' if self.name else ''}pid={self.pid}"
        if self.ip is not None:
            inner += f", ip={self.ip}"
        return f"{self.outer} > {inner}" if self.outer else inner

    def as_json(self) -> dict[str, object]:
        """The tag as a JSON object."""
        return {"name": self.name, "pid": self.pid, "ip": self.ip, "tag": self.text}


_mint_tag = minter(ProcessTag, ProcessTag.__attrs_init__)


@attrs.frozen
class Header:
    """What came before the message on one logical line (internal)."""

    process: ProcessTag | None
    file: str | None
    repeated: int | None
    message: str


def split_header(text: str) -> Header:
    """Split a cleaned logical line into wrapper, tags, record prefix, message, dedup suffix."""
    pos = 0
    m = _WRAPPER_RE.match(text)
    if m:
        pos = m.end()
    elif not text.startswith("(") and _PREFIX_RE.match(text) is None:
        # VLLM_LOGGING_PREFIX puts any text before vLLM's own record head.
        head = RECORD_HEAD_RE.search(text, 0, _PREFIX_SEARCH)
        if head is not None:
            pos = head.start()
    tags: list[tuple[str | None, int, str | None]] = []
    while True:
        t = _TAG_RE.match(text, pos)
        if t is None:
            break
        tags.append((t["name"], int(t["pid"]), t["ip"]))
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
    process: ProcessTag | None = None
    if tags:
        name, pid, ip = tags[-1]
        outer = None
        if len(tags) > 1:
            oname, opid, oip = tags[-2]
            outer = f"{oname + ' ' if oname else ''}pid={opid}" + (f", ip={oip}" if oip else "")
        process = _mint_tag(name=name, pid=pid, ip=ip, outer=outer)
    return Header(process=process, file=file, repeated=repeated, message=message.rstrip())


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


def _unquote(text: str) -> str | None:
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    return None


def parse_name_list(value: str) -> tuple[str, ...] | None:
    """``['a', 'b']`` or ``'a'`` or ``a`` → names; ``None`` for ``None`` or empty."""
    v = value.strip()
    if v in ("None", "", "[]"):
        return None
    if v.startswith("[") and v.endswith("]"):
        names = [_unquote(p) or p for p in split_top_level(v[1:-1])]
        return tuple(n for n in names if n) or None
    return (_unquote(v) or v,)


def parse_int_text(value: str | None) -> int | None:
    """A plain decimal integer, or ``None`` (``None``, quoted, negative, anything else)."""
    if value is None or not value.isascii() or not value.isdigit():
        return None
    return int(value)


def parse_bool_text(value: str | None) -> bool | None:
    """``True``/``False`` as Python prints them, else ``None``."""
    return {"True": True, "False": False}.get(value or "")


# --------------------------------------------------------------------------------------
# Observations.


class VersionSource(enum.Enum):
    """Which line a self-reported version came from."""

    BANNER = "banner"
    API_SERVER = "api_server_version"
    SERVER = "server_version"
    ENGINE_INIT = "engine_init"


@final
@attrs.frozen(init=False)
class VersionObservation(Sealed):
    """A version the process printed about itself (self-reported, not proof of code)."""

    __public_constructor__ = _PUBLIC

    text: str
    version: Version | None
    """``None`` when ``text`` is not a PEP 440 version."""
    source: VersionSource
    line: int
    process: ProcessTag | None


_mint_version = minter(VersionObservation, VersionObservation.__attrs_init__)


@final
@attrs.frozen(init=False)
class NonDefaultArgsObservation(Sealed):
    """The ``non-default args: {...}`` line: what the operator gave, not what resolved."""

    __public_constructor__ = _PUBLIC

    args: tuple[tuple[str, str], ...]
    """Every top-level ``key: value`` pair, value as printed."""
    served_model_names: tuple[str, ...] | None
    tensor_parallel_size: int | None
    pipeline_parallel_size: int | None
    data_parallel_size: int | None
    line: int
    process: ProcessTag | None

    def get(self, key: str) -> str | None:
        """The printed value of ``key``, or ``None``."""
        return dict(self.args).get(key)

    @property
    def model(self) -> str | None:
        """The ``model`` argument without its quotes (a hub id or a local path), or ``None``."""
        printed = self.get("model")
        return None if printed is None else (_unquote(printed) or printed)


_mint_args = minter(NonDefaultArgsObservation, NonDefaultArgsObservation.__attrs_init__)


@final
@attrs.frozen(init=False)
class EngineConfigObservation(Sealed):
    """The engine-init line: the engine's resolved configuration as it printed it."""

    __public_constructor__ = _PUBLIC

    engine: str
    """``"v1"`` (``Initializing a V1 LLM engine``) or ``"v0"``."""
    version_text: str
    entries: tuple[tuple[str, str], ...]
    """Every top-level ``key=value`` pair, value as printed."""
    tensor_parallel_size: int | None
    pipeline_parallel_size: int | None
    data_parallel_size: int | None
    decode_context_parallel_size: int | None
    prefill_context_parallel_size: int | None
    max_seq_len: TokenCount | None
    kv_cache_dtype: str | None
    enable_prefix_caching: bool | None
    served_model_name: str | None
    distributed_executor_backend: str | None
    line: int
    process: ProcessTag | None

    def get(self, key: str) -> str | None:
        """The printed value of ``key``, or ``None`` when the line does not print it."""
        return dict(self.entries).get(key)


_mint_engine = minter(EngineConfigObservation, EngineConfigObservation.__attrs_init__)


class RankForm(enum.Enum):
    """Which per-rank line a rank observation came from."""

    WORLD_SIZE = "world_size"
    """``world_size=2 rank=1 local_rank=1 distributed_init_method=… backend=nccl``"""
    ASSIGNMENT = "assignment"
    """``rank 1 in world size 2 is assigned as DP rank 0, PP rank 0, TP rank 1, …``"""


@final
@attrs.frozen(init=False)
class RankObservation(Sealed):
    """One worker's line naming its global rank and the world size it joined."""

    __public_constructor__ = _PUBLIC

    form: RankForm
    rank: int
    world_size: int
    local_rank: int | None
    backend: str | None
    """The torch.distributed backend (``nccl``, ``gloo``) on the world-size form."""
    group_ranks: tuple[tuple[str, int | None], ...]
    """``(("DP", 0), ("PP", 0), ("TP", 1), ("EP", None))`` on the assignment form."""
    repeated: int | None
    """Ray's ``[repeated Nx across cluster]``: N more workers printed a similar line."""
    line: int
    process: ProcessTag | None

    @property
    def pid(self) -> int | None:
        """The pid of the worker process, from its tag."""
        return self.process.pid if self.process else None

    def group_rank(self, group: str) -> int | None:
        """The rank in ``group`` (``"TP"``, ``"PP"``, ``"DP"``, …), or ``None``."""
        return dict(self.group_ranks).get(group)


_mint_rank = minter(RankObservation, RankObservation.__attrs_init__)


@final
@attrs.frozen(init=False)
class RouteObservation(Sealed):
    """One ``Route: /path, Methods: GET, HEAD`` line of the registered route table."""

    __public_constructor__ = _PUBLIC

    path: str
    methods: tuple[str, ...]
    line: int


_mint_route = minter(RouteObservation, RouteObservation.__attrs_init__)


class CapacityFormat(enum.Enum):
    """Which capacity line format an entry was read from."""

    V0_BLOCKS = "v0_blocks"
    V1_TWO_LINE = "v1_two_line"
    V1_ONE_LINE = "v1_one_line"


@final
@attrs.frozen(init=False)
class CapacityObservation(Sealed):
    """One capacity report; a figure the log did not print is ``None``, never 0."""

    __public_constructor__ = _PUBLIC

    format: CapacityFormat
    device: str | None
    """``GPU``, ``CPU``, ``XPU``, ``GPU + host``, or V0's device word (``cuda``)."""
    tokens: TokenCount | None
    max_model_len: TokenCount | None
    max_concurrency: Concurrency | None
    line: int
    """The first line of the entry (the size, blocks, or concurrency line)."""
    concurrency_line: int | None
    """The line the concurrency figure came from, when it is a separate line."""
    process: ProcessTag | None


_mint_capacity = minter(CapacityObservation, CapacityObservation.__attrs_init__)


@final
@attrs.frozen(init=False)
class BlocksObservation(Sealed):
    """A V0 ``# <device> blocks: N[, # CPU blocks: M]`` line."""

    __public_constructor__ = _PUBLIC

    device: str
    device_blocks: BlockCount
    cpu_blocks: BlockCount | None
    line: int
    process: ProcessTag | None


_mint_blocks = minter(BlocksObservation, BlocksObservation.__attrs_init__)


@final
@attrs.frozen(init=False)
class AvailableMemoryObservation(Sealed):
    """A worker's ``Available KV cache memory: X GiB`` (negative values are kept)."""

    __public_constructor__ = _PUBLIC

    gib: GiB
    repeated: int | None
    line: int
    process: ProcessTag | None

    @property
    def text(self) -> str:
        """The figure exactly as printed (``"-0.53"``): the exact decimal, never rounded."""
        return str(self.gib.value)


_mint_memory = minter(AvailableMemoryObservation, AvailableMemoryObservation.__attrs_init__)


class ExecutorMarker(enum.Enum):
    """What a line showed about the executor backend."""

    CONFIG_FIELD = "config_field"
    """``distributed_executor_backend=ray`` in the engine-init configuration (resolved)."""
    ARG = "non_default_arg"
    """``'distributed_executor_backend': 'mp'`` among the non-default args (as given)."""
    RAY_EXECUTOR_FILE = "ray_executor_file"
    """A record from a Ray executor file (``ray_distributed_executor.py``, ``ray_executor*.py``)."""
    RAY_WORKER_TAG = "ray_worker_tag"
    """A ``(RayWorkerWrapper pid=…)`` process tag."""
    MP_EXECUTOR_FILE = "mp_executor_file"
    """A record from ``mp_distributed_executor.py`` or ``multiproc_gpu_executor.py`` (V0)."""
    MP_LEADER_LINE = "mp_leader_line"
    """``DP group leader: …`` (``MultiprocExecutor._init_executor``; Ray V2 overrides it)."""
    MULTIPROC_EXECUTOR_FILE = "multiproc_executor_file"
    """Any other record from ``multiproc_executor.py``: mp, or from v0.20 Ray's V2
    executor, which subclasses ``MultiprocExecutor`` and shares its worker code."""
    VLLM_WORKER_TAG = "vllm_worker_tag"
    """A ``(VllmWorker …)`` tag: MultiprocExecutor's workers; from v0.20 Ray V2's workers
    subclass the same ``WorkerProc``."""
    UNIPROC_EXECUTOR_FILE = "uniproc_executor_file"
    """A record from ``uniproc_executor.py`` (uni, or the external-launcher executor)."""
    SINGLE_GPU_EXECUTOR_FILE = "single_gpu_executor_file"
    """A record from v0.6.6's ``gpu_executor.py`` (single-GPU executor, today's ``uni``)."""


_RAY_V2_SINCE = Version("0.20.0")


@final
@attrs.frozen(init=False)
class ExecutorObservation(Sealed):
    """One line showing something about the executor backend, and where."""

    __public_constructor__ = _PUBLIC

    marker: ExecutorMarker
    named: ExecutorBackend | None
    """The backend the line names, for the config-field and argument markers."""
    line: int
    process: ProcessTag | None

    def compatible(self, version: Version | None) -> frozenset[ExecutorBackend]:
        """The backends this marker is consistent with, for the launch's ``version``.

        Markers shared by mp and Ray's V2 executor count as mp only for a version known
        to be older than v0.20.0, where that executor did not exist.
        """
        b = ExecutorBackend
        match self.marker:
            case ExecutorMarker.CONFIG_FIELD | ExecutorMarker.ARG:
                return frozenset({self.named}) if self.named else frozenset()
            case ExecutorMarker.RAY_EXECUTOR_FILE | ExecutorMarker.RAY_WORKER_TAG:
                return frozenset({b.RAY})
            case ExecutorMarker.MP_EXECUTOR_FILE | ExecutorMarker.MP_LEADER_LINE:
                return frozenset({b.MP})
            case ExecutorMarker.MULTIPROC_EXECUTOR_FILE | ExecutorMarker.VLLM_WORKER_TAG:
                if version is not None and version < _RAY_V2_SINCE:
                    return frozenset({b.MP})
                return frozenset({b.MP, b.RAY})
            case ExecutorMarker.UNIPROC_EXECUTOR_FILE:
                return frozenset({b.UNI, b.EXTERNAL_LAUNCHER})
            case ExecutorMarker.SINGLE_GPU_EXECUTOR_FILE:
                return frozenset({b.UNI})


_mint_executor = minter(ExecutorObservation, ExecutorObservation.__attrs_init__)

_FILE_MARKERS: dict[str, ExecutorMarker] = {
    "ray_distributed_executor.py": ExecutorMarker.RAY_EXECUTOR_FILE,
    "ray_executor.py": ExecutorMarker.RAY_EXECUTOR_FILE,
    "ray_executor_v2.py": ExecutorMarker.RAY_EXECUTOR_FILE,
    "ray_gpu_executor.py": ExecutorMarker.RAY_EXECUTOR_FILE,
    "mp_distributed_executor.py": ExecutorMarker.MP_EXECUTOR_FILE,
    "multiproc_gpu_executor.py": ExecutorMarker.MP_EXECUTOR_FILE,
    "multiproc_executor.py": ExecutorMarker.MULTIPROC_EXECUTOR_FILE,
    "uniproc_executor.py": ExecutorMarker.UNIPROC_EXECUTOR_FILE,
    "gpu_executor.py": ExecutorMarker.SINGLE_GPU_EXECUTOR_FILE,
}


def _backend_named(value: str | None) -> ExecutorBackend | None:
    if value is None:
        return None
    v = value.strip().strip("'\"")
    try:
        return ExecutorBackend(v)
    except ValueError:
        return None


# --------------------------------------------------------------------------------------
# Two-line capacity halves (joined by the capture layer).


@attrs.frozen
class SizeLine:
    """``GPU KV cache size: N tokens`` alone (internal; the capture layer pairs it)."""

    device: str
    tokens: TokenCount
    line: int
    process: ProcessTag | None


@attrs.frozen
class ConcurrencyLine:
    """``Maximum concurrency for L tokens per request: X.XXx`` alone (internal)."""

    max_model_len: TokenCount
    max_concurrency: Concurrency
    line: int
    process: ProcessTag | None


@attrs.frozen
class DevModeWarning:
    """``SECURITY WARNING: Development endpoints are enabled!`` (internal)."""

    line: int


Observation = (
    VersionObservation
    | NonDefaultArgsObservation
    | EngineConfigObservation
    | RankObservation
    | RouteObservation
    | CapacityObservation
    | BlocksObservation
    | AvailableMemoryObservation
    | ExecutorObservation
    | SizeLine
    | ConcurrencyLine
    | DevModeWarning
)

# --------------------------------------------------------------------------------------
# Message formats.

#: Cheap prefilter: a logical line that contains none of these cannot be recognised.
#: (``executor`` catches the executor file names in record prefixes.)
KEYWORDS: tuple[str, ...] = (
    "KV cache",
    "Maximum concurrency",
    " blocks: ",
    "version",
    "non-default args",
    "args: Namespace(",
    "Initializing",
    "world size",
    "world_size=",
    "Route: ",
    "Development endpoints",
    "executor",
    "DP group leader",
)
KEYWORDS_RE = re.compile("|".join(re.escape(k) for k in KEYWORDS))
KEYWORDS_BYTES_RE = re.compile("|".join(re.escape(k) for k in KEYWORDS).encode())

_NUM = r"[0-9][0-9,]*"
_DEC = r"[0-9]+(?:\.[0-9]+)?"
_ONE_LINE_RE = re.compile(
    rf"(?P<dev>[A-Z]+(?: \+ host)?) KV cache size: (?P<tok>{_NUM}) tokens, "
    rf"Maximum concurrency for (?P<len>{_NUM}) tokens per request: (?P<conc>{_DEC})x"
)
_SIZE_RE = re.compile(rf"(?P<dev>[A-Z]+) KV cache size: (?P<tok>{_NUM}) tokens(?!,)")
_CONC_RE = re.compile(
    rf"Maximum concurrency for (?P<len>{_NUM}) tokens per request: (?P<conc>{_DEC})x"
)
_BLOCKS_RE = re.compile(
    r"# (?P<dev>[A-Za-z]+) blocks: (?P<n>[0-9]+)(?:, # CPU blocks: (?P<cpu>[0-9]+))?(?![0-9,])"
)
_MEMORY_RE = re.compile(r"Available KV cache memory: (?P<g>-?[0-9]+(?:\.[0-9]+)?) GiB")
_BANNER_RE = re.compile(r"[\s█▄▀]*[█▄▀][\s█▄▀]*version (?P<v>[0-9]\S*)\s*$")
_API_VERSION_RE = re.compile(r"vLLM API server version (?P<v>[0-9]\S*)\s*$")
_SERVER_VERSION_RE = re.compile(r"vLLM server version (?P<v>[0-9]\S*), serving model ")
_ARGS_RE = re.compile(r"non-default args: (?P<d>\{.*\})\s*$")
#: Before the ``non-default args`` line (0.6.x, 0.7.x) the API server logged every
#: argument: ``args: Namespace(host=None, port=8000, model='m', block_size=16, …)``.
_NAMESPACE_RE = re.compile(r"args: Namespace\((?P<d>.*)\)\s*$")
#: Argument names whose values are secrets: never kept, never printed.
_SECRET_ARG_RE = re.compile(r"key|token|secret|password|credential", re.IGNORECASE)
REDACTED = "'***'"
_ENGINE_RE = re.compile(
    r"Initializing a(?P<v1> V1)?n? LLM engine \(v(?P<v>[^)\s]+)\) with config: (?P<cfg>.*)$"
)
_WORLD_RE = re.compile(
    r"world_size=(?P<ws>[0-9]+) rank=(?P<r>[0-9]+) local_rank=(?P<lr>[0-9]+) "
    r"distributed_init_method=\S* backend=(?P<b>\S+)\s*$"
)
_ASSIGN_RE = re.compile(
    r"rank (?P<r>[0-9]+) in world size (?P<ws>[0-9]+) is assigned as (?P<groups>.*?)\s*$"
)
_GROUP_RE = re.compile(r"(?P<g>[A-Z]+) rank (?P<v>[0-9]+|N/A)")
_ROUTE_RE = re.compile(r"Route: (?P<p>/\S*), Methods: (?P<m>[A-Z]+(?:, [A-Z]+)*)\s*$")
_DEV_MODE = "SECURITY WARNING: Development endpoints are enabled!"


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except (InvalidVersion, ValueError):  # ValueError: a number past int()'s digit limit
        return None


def _tokens(text: str) -> TokenCount | None:
    parsed = TokenCount.parse(text, thousands=True)
    return None if isinstance(parsed, MeasureParseFailure) else parsed


def _concurrency(text: str) -> Concurrency | None:
    parsed = Concurrency.parse(text)
    return None if isinstance(parsed, MeasureParseFailure) else parsed


def parse_logical_line(text: str, line: int) -> list[Observation]:
    """Every observation one cleaned logical line carries (usually none or one)."""
    if KEYWORDS_RE.search(text) is None:
        return []
    h = split_header(text)
    out: list[Observation] = []
    proc = h.process
    if h.file in _FILE_MARKERS:
        out.append(
            _mint_executor(marker=_FILE_MARKERS[h.file], named=None, line=line, process=proc)
        )
    msg = h.message
    if msg.startswith("Route: "):
        if m := _ROUTE_RE.match(msg):
            out.append(_mint_route(path=m["p"], methods=tuple(m["m"].split(", ")), line=line))
    elif "KV cache size" in msg:
        if m := _ONE_LINE_RE.match(msg):
            tok, length, conc = _tokens(m["tok"]), _tokens(m["len"]), _concurrency(m["conc"])
            if tok is not None and length is not None and conc is not None:
                out.append(
                    _mint_capacity(
                        format=CapacityFormat.V1_ONE_LINE,
                        device=m["dev"],
                        tokens=tok,
                        max_model_len=length,
                        max_concurrency=conc,
                        line=line,
                        concurrency_line=None,
                        process=proc,
                    )
                )
        elif (m := _SIZE_RE.match(msg)) and (tok := _tokens(m["tok"])) is not None:
            out.append(SizeLine(device=m["dev"], tokens=tok, line=line, process=proc))
    elif msg.startswith("Maximum concurrency"):
        m = _CONC_RE.match(msg)
        if m:
            length, conc = _tokens(m["len"]), _concurrency(m["conc"])
            if length is not None and conc is not None:
                out.append(
                    ConcurrencyLine(
                        max_model_len=length, max_concurrency=conc, line=line, process=proc
                    )
                )
    elif msg.startswith("# "):
        if m := _BLOCKS_RE.match(msg):
            cpu = BlockCount(int(m["cpu"])) if m["cpu"] is not None else None
            out.append(
                _mint_blocks(
                    device=m["dev"],
                    device_blocks=BlockCount(int(m["n"])),
                    cpu_blocks=cpu,
                    line=line,
                    process=proc,
                )
            )
    elif msg.startswith("Available KV cache memory"):
        if m := _MEMORY_RE.match(msg):
            gib = GiB.parse(m["g"])
            if not isinstance(gib, MeasureParseFailure):
                out.append(_mint_memory(gib=gib, repeated=h.repeated, line=line, process=proc))
    elif "world size" in msg or msg.startswith("world_size="):
        out.extend(_rank(msg, h, line))
    elif msg.startswith("Initializing"):
        out.extend(_engine(msg, line, proc))
    elif msg.startswith(("non-default args", "args: Namespace(")):
        out.extend(_args(msg, line, proc))
    elif "version" in msg:
        for regex, source in (
            (_API_VERSION_RE, VersionSource.API_SERVER),
            (_SERVER_VERSION_RE, VersionSource.SERVER),
            (_BANNER_RE, VersionSource.BANNER),
        ):
            if m := regex.match(msg):
                out.append(
                    _mint_version(
                        text=m["v"],
                        version=_version(m["v"]),
                        source=source,
                        line=line,
                        process=proc,
                    )
                )
                break
    elif msg.startswith(_DEV_MODE):
        out.append(DevModeWarning(line=line))
    elif msg.startswith("DP group leader:") and h.file == "multiproc_executor.py":
        out.append(
            _mint_executor(
                marker=ExecutorMarker.MP_LEADER_LINE, named=None, line=line, process=proc
            )
        )
    return out


def _rank(msg: str, h: Header, line: int) -> list[Observation]:
    if m := _WORLD_RE.match(msg):
        return [
            _mint_rank(
                form=RankForm.WORLD_SIZE,
                rank=int(m["r"]),
                world_size=int(m["ws"]),
                local_rank=int(m["lr"]),
                backend=m["b"],
                group_ranks=(),
                repeated=h.repeated,
                line=line,
                process=h.process,
            )
        ]
    if m := _ASSIGN_RE.match(msg):
        groups = tuple(
            (g["g"], None if g["v"] == "N/A" else int(g["v"]))
            for g in _GROUP_RE.finditer(m["groups"])
        )
        return [
            _mint_rank(
                form=RankForm.ASSIGNMENT,
                rank=int(m["r"]),
                world_size=int(m["ws"]),
                local_rank=None,
                backend=None,
                group_ranks=groups,
                repeated=h.repeated,
                line=line,
                process=h.process,
            )
        ]
    return []


def _engine(msg: str, line: int, proc: ProcessTag | None) -> list[Observation]:
    m = _ENGINE_RE.match(msg)
    if m is None:
        return []
    entries = parse_config_text(m["cfg"])
    get = dict(entries).get
    max_seq = get("max_seq_len")
    served = get("served_model_name")
    backend_text = get("distributed_executor_backend")
    out: list[Observation] = [
        _mint_version(
            text=m["v"],
            version=_version(m["v"]),
            source=VersionSource.ENGINE_INIT,
            line=line,
            process=proc,
        ),
        _mint_engine(
            engine="v1" if m["v1"] else "v0",
            version_text=m["v"],
            entries=entries,
            tensor_parallel_size=parse_int_text(get("tensor_parallel_size")),
            pipeline_parallel_size=parse_int_text(get("pipeline_parallel_size")),
            data_parallel_size=parse_int_text(get("data_parallel_size")),
            decode_context_parallel_size=parse_int_text(get("decode_context_parallel_size")),
            prefill_context_parallel_size=parse_int_text(get("prefill_context_parallel_size")),
            max_seq_len=_tokens(max_seq) if max_seq is not None else None,
            kv_cache_dtype=get("kv_cache_dtype"),
            enable_prefix_caching=parse_bool_text(get("enable_prefix_caching")),
            served_model_name=None if served in (None, "None") else (_unquote(served) or served),
            distributed_executor_backend=backend_text,
            line=line,
            process=proc,
        ),
    ]
    named = _backend_named(backend_text)
    if named is not None:
        out.append(
            _mint_executor(marker=ExecutorMarker.CONFIG_FIELD, named=named, line=line, process=proc)
        )
    return out


def _redact(args: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """Replace every secret-named argument's value (an API key, a hub token) by ``'***'``."""
    return tuple(
        (k, REDACTED if _SECRET_ARG_RE.search(k) and v not in ("None", "[]", "''") else v)
        for k, v in args
    )


def _args(msg: str, line: int, proc: ProcessTag | None) -> list[Observation]:
    m = _ARGS_RE.match(msg)
    if m is not None:
        args = _redact(parse_dict_text(m["d"]))
    else:
        namespace = _NAMESPACE_RE.match(msg)
        if namespace is None:
            return []
        args = _redact(parse_config_text(namespace["d"]))
    get = dict(args).get
    served = get("served_model_name")
    out: list[Observation] = [
        _mint_args(
            args=args,
            served_model_names=parse_name_list(served) if served is not None else None,
            tensor_parallel_size=parse_int_text(get("tensor_parallel_size")),
            pipeline_parallel_size=parse_int_text(get("pipeline_parallel_size")),
            data_parallel_size=parse_int_text(get("data_parallel_size")),
            line=line,
            process=proc,
        )
    ]
    named = _backend_named(get("distributed_executor_backend"))
    if named is not None:
        out.append(_mint_executor(marker=ExecutorMarker.ARG, named=named, line=line, process=proc))
    return out


def tag_markers(process: ProcessTag | None, line: int) -> list[ExecutorObservation]:
    """Executor markers carried by a recognised line's process tag."""
    if process is None or process.name is None:
        return []
    if process.name.startswith("RayWorkerWrapper"):
        marker = ExecutorMarker.RAY_WORKER_TAG
    elif process.name.startswith("VllmWorker"):
        marker = ExecutorMarker.VLLM_WORKER_TAG
    else:
        return []
    return [_mint_executor(marker=marker, named=None, line=line, process=process)]
