"""The grammar of a vLLM startup log: one cleaned logical line in, typed observations out.

This module knows the *text* vLLM prints (``vllm-upstream.md`` §4, and vLLM's source for
v0.6.6.post1 to v0.33); :mod:`~vllm_evidence._adapters.startup_log._lexer` takes the line
apart, :mod:`vllm_evidence._capture.log` knows files and wrapping, and
:mod:`~vllm_evidence._adapters.startup_log.launch` knows launches.  A line is recognised
only when its message *starts* with one of the formats below; anything else is skipped,
never guessed at.

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
engine init                ``Initializing a V1 LLM engine (vX) with config: k=v, …``, V0
                           ``Initializing a V0 LLM engine (vX) …`` (0.8.5) and
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
compile cache              ``saved AOT compiled function to …/rank_R_D/model``,
                           ``Compiling model again due to a load failure from
                           …/rank_R_D/model, reason: …``, ``Using cache directory:
                           …/rank_R_D/<prefix> for vLLM's torch.compile`` (each possibly
                           after a ``[tag] `` prefix): a worker's engine-local rank R and
                           the DP index D of its cache directory
executor markers           the file of the record prefix (the law table's
                           :data:`~vllm_evidence.upstream.EXECUTOR_FILES`),
                           ``DP group leader:`` (MultiprocExecutor), worker process tags,
                           ``X is not supported on CPU, fallback to mp …`` (CPU platform)
force kill                 ``[shutdown] Process manager: force killing remaining process
                           NAME pid P`` and the ``[shutdown] force killing sub process NAME
                           pid C`` lines after it (0.32.0), ``… remaining processes
                           count=N``: paired by the launch assembler into an engine core's
                           killed process tree
========================  ==================================================================
"""

from __future__ import annotations

import re

from packaging.version import InvalidVersion, Version

from vllm_evidence._adapters.startup_log._lexer import (
    RawTag,
    parse_bool_text,
    parse_config_text,
    parse_dict_text,
    parse_int_text,
    parse_name_list,
    split_header,
    unquote,
)
from vllm_evidence._adapters.startup_log._workers import (
    KillLine,
    compile_cache_line,
    kill_line,
    rank_lines,
    worker_name,
)
from vllm_evidence._adapters.startup_log.observations import (
    CapacityFormat,
    ConcurrencyLine,
    DevModeWarning,
    ExecutorBackend,
    ExecutorMarker,
    LifeEvent,
    LifeKind,
    Observation,
    PastedRankLine,
    ProcessTag,
    RankObservation,
    SizeLine,
    VersionSource,
    WorkerNameForm,
    WorkerTagLine,
    _mint_args,
    _mint_blocks,
    _mint_capacity,
    _mint_engine,
    _mint_executor,
    _mint_life,
    _mint_memory,
    _mint_route,
    _mint_tag,
    _mint_version,
)
from vllm_evidence._measure import BlockCount, Concurrency, GiB, MeasureParseFailure, TokenCount
from vllm_evidence.upstream import EXECUTOR_FILES

__all__ = [
    "KEYWORDS",
    "KEYWORDS_BYTES_RE",
    "KEYWORDS_RE",
    "Read",
    "dp_engine",
    "parse_logical_line",
]

Read = Observation | KillLine
"""What one logical line can carry: an observation, or a force-kill line the launch
assembler pairs into a :class:`~vllm_evidence._adapters.startup_log.launch.ShutdownKill`."""


# --------------------------------------------------------------------------------------
# Process tags.

_ENGINE_CORE_PREFIXES = ("EngineCore_DP", "EngineCore_")
_MAX_INDEX_DIGITS = 18


def dp_engine(name: str | None) -> int | None:
    """``EngineCore_DP1`` or ``EngineCore_1`` → 1; any other name → ``None``."""
    for prefix in _ENGINE_CORE_PREFIXES:
        if name is not None and name.startswith(prefix):
            digits = name[len(prefix) :]
            if digits.isdigit() and len(digits) <= _MAX_INDEX_DIGITS:
                return int(digits)
    return None


def _process(tag: RawTag | None, outer: str | None) -> ProcessTag | None:
    if tag is None:
        return None
    return _mint_tag(
        name=tag.name,
        pid=tag.pid,
        ip=tag.ip,
        outer=outer,
        dp_engine=dp_engine(tag.name),
        worker=worker_name(tag.name),
    )


def _backend_named(value: str | None) -> ExecutorBackend | None:
    if value is None:
        return None
    v = value.strip().strip("'\"")
    try:
        return ExecutorBackend(v)
    except ValueError:
        return None


def _backend_name(printed: str | None) -> str | None:
    """A printed ``distributed_executor_backend`` value without its quotes, or ``None``."""
    if printed is None or printed == "None":
        return None
    return printed.strip("'\"")


def _block_size(printed: str | None) -> TokenCount | None:
    if printed is None:
        return None
    parsed = TokenCount.parse(printed)
    return parsed if isinstance(parsed, TokenCount) else None


# --------------------------------------------------------------------------------------
# Message formats.

#: Cheap prefilter: a logical line that contains none of these cannot be recognised.
#: (``executor`` catches the executor file names in record prefixes.)  The capacity and
#: memory keywords name their message exactly (``KV cache size``, ``KV cache memory``),
#: so vLLM's periodic stats line (``… GPU KV cache usage: 3.4%, …``, one line in ten of a
#: serving log) holds none of them and is skipped by the byte scan, before any head
#: parsing.
KEYWORDS: tuple[str, ...] = (
    "KV cache size",
    "KV cache memory",
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
    # A worker's own tag on any line (WorkerTagLine): the worker was there.
    "Worker_",
    "VllmWorker",
    "/rank_",
    # Lifecycle lines (LIFE_KEYWORDS below).
    "died",
    "fatal error",
    "EngineDeadError",
    "output_handler failed",
    "exited unexpectedly",
    "initialization failed",
    "failed to start",
    "startup complete",
    "Starting vLLM",
    "Shutting down",
    "shutdown triggered",
    "trigger received signal",
    "shutting down FastAPI",
    # A shutdown's force kill of an engine core's process tree (_workers.kill_line).
    "force killing",
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
#: The same line pasted without its leading ``# `` (markdown took it for a heading): only
#: with the ``, # CPU blocks:`` half that every release printed, so it is not a guess.
_BARE_BLOCKS_RE = re.compile(
    r"(?P<dev>[A-Za-z]+) blocks: (?P<n>[0-9]+), # CPU blocks: (?P<cpu>[0-9]+)(?![0-9,])"
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
#: ``Initializing a V1 LLM engine (vX)``, V0's ``Initializing a V0 LLM engine (vX)``
#: (v0.8.5, where V0 and V1 coexist) and the older ``Initializing an LLM engine (vX)``.
_ENGINE_RE = re.compile(
    r"Initializing a(?: V(?P<gen>[01]))?n? LLM engine (?:\(v(?P<v>[^)\s]+)\) )?with config: "
    r"(?P<cfg>.*)$"
)
#: vLLM's CPU platform (v0.8.5, v0.9.2 ``platforms/cpu.py``) rewrites any other backend
#: to mp and says so: the backend the launch resolved to.
_CPU_FALLBACK_RE = re.compile(
    r"(?P<b>\S+) is not supported on CPU, fallback to mp distributed executor backend"
)
_ROUTE_RE = re.compile(r"Route: (?P<p>/\S*), Methods: (?P<m>[A-Z]+(?:, [A-Z]+)*)\s*$")
_DEV_MODE = "SECURITY WARNING: Development endpoints are enabled!"

# Lifecycle lines: what happened to the launch after (or instead of) start-up.  Each is
# anchored at the message start except EngineDeadError, which ends a traceback line
# (``vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. …``).
_UVICORN = r"(?:(?:INFO|WARNING|ERROR):\s+)?"
_LIFE_RES: tuple[tuple[re.Pattern[str], LifeKind], ...] = (
    (re.compile(_UVICORN + r"Application startup complete\."), LifeKind.SERVING),
    (re.compile(r"Starting vLLM (?:API )?server (?:[0-9]+ )?on "), LifeKind.SERVING),
    (
        re.compile(
            r"Worker proc (?P<name>\S+) died unexpectedly"
            r"(?: \(exit code: (?P<code>-?[0-9]{1,6}|None)\))?"
        ),
        LifeKind.WORKER_DIED,
    ),
    (
        # RayExecutorV2 prints the rank as a list: ``rank=[1]``.
        re.compile(r"RayWorkerProc (?P<name>rank=\[?(?P<rank>[0-9]{1,9})\]?) died unexpectedly"),
        LifeKind.WORKER_DIED,
    ),
    (
        re.compile(
            r"Worker (?P<name>\S+) pid (?P<pid>[0-9]{1,9}) died, exit code: "
            r"(?P<code>-?[0-9]{1,6}|None)"
        ),
        LifeKind.WORKER_DIED,
    ),
    (re.compile(r"EngineCore encountered a fatal error"), LifeKind.ENGINE_DEAD),
    (re.compile(r"AsyncLLM output_handler failed"), LifeKind.ENGINE_DEAD),
    (re.compile(r"\[shutdown\] MPClient: engine core exited unexpectedly"), LifeKind.ENGINE_DEAD),
    # The client's engine monitor, 0.10.1.1 to 0.19.0 (v1/engine/core_client.py).
    (re.compile(r"Engine core proc \S+ died unexpectedly"), LifeKind.ENGINE_DEAD),
    (re.compile(r"(?:\S*\.)?EngineDeadError\b"), LifeKind.ENGINE_DEAD),
    (re.compile(r"(?:RuntimeError: )?Engine core initialization failed"), LifeKind.INIT_FAILED),
    # The engine core's own word (v1/engine/core.py), and V0's engine process.
    (re.compile(r"EngineCore failed to start"), LifeKind.INIT_FAILED),
    (re.compile(r"Engine process failed to start"), LifeKind.INIT_FAILED),
    (re.compile(r"\[shutdown\] API server: shutdown triggered"), LifeKind.ENDED),
    (re.compile(r"\[shutdown\] EngineCore: trigger received signal"), LifeKind.ENDED),
    # ≤ 0.22 ``Shutting down FastAPI HTTP server.``; 0.23+ ``[shutdown] API server: shutting
    # down FastAPI HTTP server`` (the watchdog's path after an engine death too).
    (
        re.compile(r"(?:\[shutdown\] API server: s|S)hutting down FastAPI HTTP server"),
        LifeKind.ENDED,
    ),
    (re.compile(_UVICORN + r"Shutting down\s*$"), LifeKind.ENDED),
)
#: A substring every lifecycle message holds: the cheap test before the regexes.
_LIFE_HINTS = (
    "startup complete",
    "Starting vLLM",
    "died",
    "fatal error",
    "output_handler failed",
    "exited unexpectedly",
    "EngineDeadError",
    "initialization failed",
    "failed to start",
    "shutdown triggered",
    "trigger received signal",
    "Shutting down",
    "shutting down FastAPI",
)
#: ``VllmWorker-N`` (V1 ``MultiprocExecutor``'s process name): the executor's rank N.
_WORKER_NAME_RE = re.compile(r"VllmWorker-(?P<rank>[0-9]{1,9})")


def _life(msg: str, line: int, proc: ProcessTag | None) -> LifeEvent | None:
    """The lifecycle event a message states, or ``None``."""
    if not any(hint in msg for hint in _LIFE_HINTS):
        return None
    for regex, kind in _LIFE_RES:
        m = regex.match(msg)
        if m is None:
            continue
        groups = m.groupdict()
        name = groups.get("name")
        rank_text = groups.get("rank")
        if rank_text is None and name is not None:
            worker = _WORKER_NAME_RE.fullmatch(name)
            rank_text = worker["rank"] if worker else None
        code = groups.get("code")
        pid = groups.get("pid")
        return _mint_life(
            kind=kind,
            line=line,
            process=proc,
            worker=name,
            worker_rank=None if rank_text is None else int(rank_text),
            worker_pid=None if pid is None else int(pid),
            exit_code=None if code in (None, "None") else int(code),
        )
    return None


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


def parse_logical_line(text: str, line: int) -> list[Read]:
    """Every observation one cleaned logical line carries (usually none or one)."""
    if KEYWORDS_RE.search(text) is None:
        return []
    h = split_header(text)
    out: list[Read] = []
    # A transformed head's tag is not the printing process's word for itself.
    proc = None if h.transformed else _process(h.tag, h.outer)
    if h.file in EXECUTOR_FILES:
        out.append(
            _mint_executor(marker=EXECUTOR_FILES[h.file], named=None, line=line, process=proc)
        )
    msg = h.message
    event = _life(msg, line, proc)
    if event is not None:
        out.append(event)
        return out
    if "force killing" in msg and not h.transformed:
        # Which process printed a kill line is what pairs it: only under vLLM's own tag.
        kill = kill_line(msg, line, proc)
        if kill is not None:
            out.append(kill)
            return out
    if "/rank_" in msg and not h.transformed:
        cache = compile_cache_line(msg, line, proc)
        if cache is not None:
            out.append(cache)
            return out
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
    elif msg.startswith("# ") or " blocks: " in msg[:24]:
        if m := _BLOCKS_RE.match(msg) or _BARE_BLOCKS_RE.match(msg):
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
        if not h.transformed:  # a rank is evidence only under vLLM's own head and tag
            out.extend(rank_lines(msg, h, line, proc))
        else:  # what a paste names, kept apart: no decision reads it
            pasted = rank_lines(msg, h, line, None)
            out.extend(
                PastedRankLine(rank=r, line=line) for r in pasted if isinstance(r, RankObservation)
            )
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
    elif _CPU_FALLBACK_RE.match(msg):
        out.append(
            _mint_executor(
                marker=ExecutorMarker.CPU_FALLBACK_LINE,
                named=ExecutorBackend.MP,
                line=line,
                process=proc,
            )
        )
    elif msg.startswith("DP group leader:") and h.file == "multiproc_executor.py":
        out.append(
            _mint_executor(
                marker=ExecutorMarker.MP_LEADER_LINE, named=None, line=line, process=proc
            )
        )
    if proc is not None and proc.outer is None and _names_a_place(proc):
        out.append(WorkerTagLine(process=proc, line=line))
    return out


def _names_a_place(proc: ProcessTag) -> bool:
    """Whether the tag is a worker's whose name says something of its place (a group
    index or a rank): its line shows that worker was there."""
    worker = proc.worker
    return worker is not None and (worker.form is not WorkerNameForm.UNREAD)


def _engine(msg: str, line: int, proc: ProcessTag | None) -> list[Observation]:
    m = _ENGINE_RE.match(msg)
    if m is None:
        return []
    entries = parse_config_text(m["cfg"])
    get = dict(entries).get
    max_seq = get("max_seq_len")
    served = get("served_model_name")
    backend_text = get("distributed_executor_backend")
    out: list[Observation] = []
    if m["v"] is not None:  # the oldest releases print no version on this line
        out.append(
            _mint_version(
                text=m["v"],
                version=_version(m["v"]),
                source=VersionSource.ENGINE_INIT,
                line=line,
                process=proc,
            )
        )
    out.append(
        _mint_engine(
            engine="v1" if m["gen"] == "1" else "v0",
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
            served_model_name=None if served in (None, "None") else (unquote(served) or served),
            distributed_executor_backend=backend_text,
            executor_backend_name=_backend_name(backend_text),
            block_size=_block_size(get("block_size")),
            line=line,
            process=proc,
        )
    )
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
            block_size=_block_size(get("block_size")),
            port=parse_int_text(get("port")),
            line=line,
            process=proc,
        )
    ]
    named = _backend_named(get("distributed_executor_backend"))
    if named is not None:
        out.append(_mint_executor(marker=ExecutorMarker.ARG, named=named, line=line, process=proc))
    return out
