"""Startup logs of many vLLM releases, with the figures each launch printed.

* :func:`startup_log_examples` draws a whole log (:class:`GeneratedLog`) in one
  release's format, restarts included, with what each launch printed
  (:class:`GeneratedLaunch`, :class:`GeneratedCapacity`); :func:`startup_logs` draws its
  bytes and :func:`read_startup_logs` the :class:`StartupLog` the reader makes of them.
* :func:`_capacity_report` and :func:`_capacity_messages` are the one capacity-line
  generator: the figures a capacity report prints and its lines, in the V0 blocks
  format, the V1 two-line format, or the one-line format of 0.32 on.
* :func:`_reader_launches` and :func:`_render_reader_launch` draw free-form launches for
  the reader's own property tests: capacity reports in either V1 format, any number,
  mixed in one launch, after the version line of 0.6.6, 0.10.1.1, 0.11 or 0.32, with
  ANSI tags or none.

A new release's log format goes here: its process-tag names in :func:`_engine_tag` and
:func:`_worker_tag`, what its launch prints (banner, argument line, rank and memory
lines, which capacity format and how often) in :func:`_launch`, gated on
``_at_least(release, "<the release>")``, and its route table in :func:`_route_table`.
A new capacity-line format is a new ``format`` name in :func:`_capacity_messages`.
The release itself is added to :data:`~._common.RELEASES` first.

This module imports hypothesis but never pytest.
"""

from __future__ import annotations

import io
import random
from collections.abc import Callable
from typing import Final, final

import attrs
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence.testing._strategies._common import (
    _at_least,
    _check_range,
    _config_text,
    _model_paths,
    _names,
    _Parallel,
    _release,
)
from vllm_evidence.testing._strategies._log_lines import (
    GeneratedCapacity,
    _capacity_messages,
    _capacity_report,
    _capacity_tokens,
    _devices,
    _memory_message,
)

__all__ = [
    "GeneratedCapacity",
    "GeneratedLaunch",
    "GeneratedLog",
    "read_startup_logs",
    "startup_log_examples",
    "startup_logs",
]

# --------------------------------------------------------------------------------------
# Startup logs


@final
@attrs.frozen
class GeneratedLaunch:
    """One launch of a generated log, with the figures it printed.

    Everything here is what the launch's lines print, so a test can compare what a
    reader or a decision made of the log with what was generated.
    """

    release: str
    """The vLLM release whose formats the launch is printed in (one of :data:`RELEASES`)."""
    api_server_pid: int | None
    """The ``(APIServer pid=N)`` tag's pid; ``None`` before process tags (0.6.6)."""
    tensor_parallel_size: int
    """TP as the engine-init line (and, from 0.10.2, the argument line) prints it."""
    pipeline_parallel_size: int
    """PP, likewise."""
    data_parallel_size: int | None
    """``None`` where the engine-init line does not print it (before 0.10.2)."""
    served_model_name: str
    """The one served model name the launch prints."""
    model: str
    """The model argument the launch prints (``model='…'`` on its engine-init line)."""
    max_model_len: int
    """The context length the engine-init line prints (``max_seq_len=…``)."""
    capacity: tuple[GeneratedCapacity, ...]
    """Every capacity report printed, in order (one per DP engine, repeated per worker
    where the release printed it per worker)."""
    available_memory: tuple[str, ...]
    """Each started worker's ``Available KV cache memory`` figure as printed."""
    ranks: tuple[tuple[int, int], ...]
    """``(rank, world_size)`` of each ``world_size=… rank=… local_rank=…`` worker line, in
    rank order: the workers that printed their start-up line.  ``rank`` is the global
    rank in the TP×PP world (``world_size`` = TP×PP).  Printed from 0.10.2 and only with
    one DP engine: empty before 0.10.2 or with DP > 1 (the parallel decision then refuses
    ``population_unobserved``).  A rank in :attr:`missing_ranks` is absent here; every
    other rank of the world is present."""
    development_mode: bool | None
    """``True`` when the printed route table has the development routes; ``None`` when
    it has not or no route table was printed (a line's absence is never "off")."""
    missing_ranks: tuple[int, ...] = ()
    """The ranks whose worker never printed its start-up lines (the ``missing_ranks``
    knob), sorted."""
    executor_backend: str | None = None
    """The ``distributed_executor_backend`` the engine-init line prints (the ``backend``
    knob, or the drawn one); ``None`` when it prints none."""
    resolved_backend: str | None = None
    """The executor backend the launch ran with, printed or not: :attr:`executor_backend`
    where the line prints one, else the one vLLM resolves for this world (``mp`` for more
    than one worker across DP engines, ``uni`` for one; ``None`` for one worker in 0.6.6,
    whose single-GPU executor has no backend name).  A development-mode front door's
    ``/server_info?config_format=json`` names it."""


@final
@attrs.frozen
class GeneratedLog:
    """A generated startup log and what it holds, launch by launch."""

    text: bytes
    """The log file's bytes (UTF-8; LF or CRLF line ends; maybe a docker or compose
    prefix on every line)."""
    launches: tuple[GeneratedLaunch, ...]
    """Each launch the log records, in order (a restart appends one)."""


# --------------------------------------------------------------------------------------
# Startup logs, release by release


_RECORD_NOISE = (
    "INFO {d} [__init__.py:241] Automatically detected platform cuda.",
    "WARNING {d} [system_utils.py:255] Found ulimit of 20000 and failed to automatically increase.",
    "INFO {d} [model.py:733] Resolved architecture: LlamaForCausalLM",
    "INFO {d} [cuda.py:328] Using Flash Attention backend on V1 engine.",
    "DEBUG {d} [utils.py:12] Waiting for 1 local, 0 remote core engine proc(s) to start.",
)
_BARE_NOISE = (
    "Loading safetensors checkpoint shards: 100% Completed | 1/1 [00:00<00:00,  3.21it/s]",
    "  warnings.warn(",
    "",
    "INFO:     Started server process [1]",
    'INFO:     127.0.0.1:50312 - "GET /metrics HTTP/1.1" 200 OK',
    "Capturing CUDA graphs: 10%|\u2588 | 1/10\rCapturing CUDA graphs: 100%|\u2588| 10/10",
    "[W1130 04:11:13.123456 ProcessGroupNCCL.cpp:4561] Warning: using the default backend.",
)
_NOISE_COUNTS = st.integers(0, 6)
_SEEDS = st.integers(0, 2**32 - 1)
_BANNER = (
    "\u2584\u2584 \u2584\u2588 \u2588     \u2588     \u2588 \u2580\u2584\u2580 \u2588  version "
)
_DATE = "09-03 02:12:26"


def _engine_tag(release: str, index: int, dp: int) -> str:
    if release == "0.8.5":
        return "EngineCore_0"
    if release == "0.9.2":
        return f"EngineCore_{index}"
    if _at_least(release, "0.20.0") and dp == 1:
        return "EngineCore"
    return f"EngineCore_DP{index}"


def _worker_tag(release: str, rank: int) -> str:
    if release == "0.8.5":
        return f"VllmWorker rank={rank}"
    if _at_least(release, "0.32.0"):
        return f"Worker_TP{rank}"
    return f"VllmWorker TP{rank}"


@final
@attrs.frozen
class _Knobs:
    """What a caller fixed about a generated launch (see :func:`~.launches.launches`).

    ``sizes`` draws ``(TP, PP, DP)`` for a release; ``missing`` are the global ranks whose
    worker never printed its start-up lines; ``backend`` is the executor backend the
    engine-init line prints (``None``: the field is not printed) unless ``drawn_backend``
    draws it (:func:`_printed_backends`); ``zero_capacity`` fixes whether the capacity
    lines print 0 tokens.
    """

    sizes: Callable[[str], SearchStrategy[tuple[int, int, int]]]
    missing: tuple[int, ...] = ()
    backend: str | None = None
    drawn_backend: bool = False
    """Draw the printed backend as vLLM resolves it (with a share of ``ray`` and of none
    printed) instead of printing ``backend``."""
    zero_capacity: bool | None = None
    """Every capacity report prints 0 (``True``), never 0 (``False``), or anything from 0
    (``None``: the reader's range)."""


def _default_sizes(release: str) -> SearchStrategy[tuple[int, int, int]]:
    """TP 1, 2 or 4, PP 1 or 2, DP 1 or 2 (DP only from 0.10.2), mostly 1."""
    dp = st.sampled_from([1, 1, 2]) if _at_least(release, "0.10.2") else st.just(1)
    return st.tuples(st.sampled_from([1, 1, 2, 4]), st.sampled_from([1, 1, 2]), dp)


_DEFAULT_KNOBS: Final = _Knobs(sizes=_default_sizes)


def _resolved_backend(release: str, workers: int, engines: int) -> str | None:
    """The executor backend vLLM resolves when none is given (``vllm-upstream.md`` §5,
    v0.33 ``config/parallel.py``): ``mp`` when the world across DP engines has more than
    one worker, ``uni`` for one.  0.6.6 (V0) ran one worker on its single-GPU executor,
    which has no backend name (``None``)."""
    if release == "0.6.6.post1":
        return "mp" if workers > 1 else None
    return "mp" if workers * engines > 1 else "uni"


#: How a drawn backend is printed: as vLLM resolves it, listed eight times of ten, ``ray``
#: (a launch given ``--distributed-executor-backend ray``) once, none printed once.  The
#: resolved one is first: shrinking goes to it (and hypothesis favours it: 79 to 87% of
#: 1,000 draws).
_BACKEND_SHARES: Final = ("resolved",) * 8 + ("ray", "unprinted")


def _printed_backends(resolved: str | None) -> SearchStrategy[str | None]:
    """The backend a drawn launch prints (:data:`_BACKEND_SHARES`)."""
    return st.sampled_from(_BACKEND_SHARES).map(
        lambda share: resolved if share == "resolved" else ("ray" if share == "ray" else None)
    )


@st.composite
def _launch(
    draw: st.DrawFn, release: str, api_pid: int, knobs: _Knobs = _DEFAULT_KNOBS
) -> tuple[GeneratedLaunch, list[str]]:
    v0 = release == "0.6.6.post1"
    ansi = release in ("0.10.2", "0.11.0") or (
        not v0 and not _at_least(release, "0.33.0") and draw(st.booleans())
    )

    # Each source file's line number: one draw per launch (a launch's lines come from a
    # handful of files), not one per line, which kept every draw ~20 choices longer.
    salt = draw(st.integers(0, 2999))

    def rec(tag: str | None, pid: int, file: str, msg: str, level: str = "INFO") -> str:
        if v0:
            return f"{level} {_DATE} {file}:76] {msg}"
        t = f"({tag} pid={pid})"
        if ansi:
            t = f"\x1b[1;36m{t}\x1b[0;0m"
        number = (salt + sum(map(ord, file)) * 7) % 3000 + 1
        return f"{t} {level} {_DATE} [{file}:{number}] {msg}"

    tp, pp, dp = draw(knobs.sizes(release))
    model = draw(_model_paths())
    served = draw(st.one_of(st.just(model), _names))
    max_len = draw(st.integers(1, 10**7))
    lines: list[str] = []
    engine_lines: set[int] = set()
    if _at_least(release, "0.32.0"):
        lines.append(rec("APIServer", api_pid, "api_utils.py", _BANNER + release))
    else:
        lines.append(
            rec("APIServer", api_pid, "api_server.py", f"vLLM API server version {release}")
        )
    if _at_least(release, "0.10.2"):
        args = [f"'model': '{model}'", f"'served_model_name': ['{served}']"]
        args.extend(f"'tensor_parallel_size': {tp}" for _ in range(tp > 1))
        args.extend(f"'pipeline_parallel_size': {pp}" for _ in range(pp > 1))
        args.extend(f"'data_parallel_size': {dp}" for _ in range(dp > 1))
        lines.append(
            rec("APIServer", api_pid, "utils.py", "non-default args: {" + ", ".join(args) + "}")
        )
    resolved = _resolved_backend(release, tp * pp, dp)
    printed = draw(_printed_backends(resolved)) if knobs.drawn_backend else knobs.backend
    backend = printed if printed is not None else resolved
    parallel = _Parallel(tp=tp, pp=pp, dp=dp, pcp=1, dcp=1, backend=backend or "mp")
    config = _config_text(release, model, served, parallel, max_len)
    if printed is not None:
        # the resolved backend, as the engine-init line prints it where it does
        config = config.replace(
            f"pipeline_parallel_size={pp}, ",
            f"pipeline_parallel_size={pp}, distributed_executor_backend={printed}, ",
        )
    for i in range(dp):
        pid = api_pid + 1 + i
        head = "Initializing an LLM engine" if v0 else "Initializing a V1 LLM engine"
        engine_lines.add(len(lines))
        lines.append(
            rec(
                _engine_tag(release, i, dp),
                pid,
                "core.py" if not v0 else "llm_engine.py",
                f"{head} (v{release}) with config: {config}",
            )
        )
    workers = tp * pp
    ranks: list[tuple[int, int]] = []
    memory: list[str] = []
    # Rank lines are printed from 0.10.2 with one engine; a missing rank's worker never
    # printed its start-up lines (neither its rank line nor its memory figure).
    started = [r for r in range(workers) if r not in knobs.missing]
    if _at_least(release, "0.10.2") and dp == 1:
        for r in started:
            ranks.append((r, workers))
            lines.append(
                rec(
                    _worker_tag(release, r % tp),
                    api_pid + 10 + r,
                    "parallel_state.py",
                    f"world_size={workers} rank={r} local_rank={r} "
                    "distributed_init_method=tcp://127.0.0.1:29500 backend=nccl",
                )
            )
        for r in started:
            # -80.99 .. 80.99 GiB, never a whole number of GiB: one draw
            signed = draw(st.integers(-(81 * 99 - 1), 81 * 99 - 1))
            whole, cents = abs(signed) // 99, abs(signed) % 99 + 1
            sign = "-" if signed < 0 else ""
            figure = (
                f"{sign}{whole}.{cents:02d}"
                if not _at_least(release, "0.20.0")
                else str(round(float(f"{sign}{whole}.{cents:02d}"), 2))
            )
            memory.append(figure)
            lines.append(
                rec(
                    _worker_tag(release, r % tp),
                    api_pid + 10 + r,
                    "gpu_worker.py",
                    _memory_message(figure),
                )
            )
    capacity: list[GeneratedCapacity] = []
    device = "GPU" if v0 else draw(_devices)
    repeats = workers if release in ("0.8.5", "0.9.2", "0.10.2", "0.11.0") else 1
    if v0:
        fmt = "v0_blocks"
    elif _at_least(release, "0.28.0"):
        fmt = "v1_one_line"
    else:
        fmt = "v1_two_line"
    for i in range(dp):
        report = _capacity_report(draw, fmt, device, max_len, zero=knobs.zero_capacity)
        tag, pid = _engine_tag(release, i, dp), api_pid + 1 + i
        for _ in range(repeats):
            if v0:
                blocks = draw(_capacity_tokens(zero=knobs.zero_capacity, high=10**6))
                messages = _capacity_messages(report, gpu_blocks=blocks)
                lines.extend(rec(None, 0, "gpu_executor.py", m) for m in messages)
            else:
                messages = _capacity_messages(report)
                lines.extend(rec(tag, pid, "kv_cache_utils.py", m) for m in messages)
            capacity.append(report)
    # The HTTP server's route table (launcher.py), printed once the engine is up; a log
    # cut before that has none. Development mode adds its routes (and, from 0.32, the
    # SECURITY WARNING line vLLM logs when it registers them).
    routes_printed = draw(st.booleans())
    development = draw(st.booleans()) if routes_printed and _at_least(release, "0.8.5") else False
    if routes_printed:
        if development and _at_least(release, "0.32.0"):
            lines.append(
                rec(
                    "APIServer",
                    api_pid,
                    "__init__.py",
                    "SECURITY WARNING: Development endpoints are enabled! This should NOT be "
                    "used in production!",
                    "WARNING",
                )
            )
        for path, methods in _route_table(release, development=development):
            lines.append(
                rec("APIServer", api_pid, "launcher.py", f"Route: {path}, Methods: {methods}")
            )
    # Noise anywhere after the launch's first line; a bare (prefix-less) line never
    # follows an engine-init line, the longest line (it would read as a hard wrap).
    # How many noise lines is drawn (shrinking removes them); where they go and which
    # they are comes from one drawn seed: two draws, not three per line.
    count, seed = draw(_NOISE_COUNTS), draw(_SEEDS)
    pick = random.Random(seed)  # noqa: S311  # cosmetic noise, reproducible from the draw
    spots = sorted((pick.randint(1, len(lines)) for _ in range(count)), reverse=True)
    for at in spots:
        bare = pick.random() < 0.5 and (at - 1) not in engine_lines
        if bare:
            noise = pick.choice(_BARE_NOISE)
        else:
            template = pick.choice(_RECORD_NOISE)
            level, _, rest = template.partition(" {d} ")
            file, _, msg = rest.partition("] ")
            noise = rec("APIServer", api_pid, file.strip("[").split(":")[0], msg, level)
        lines.insert(at, noise)
    launch = GeneratedLaunch(
        release=release,
        api_server_pid=None if v0 else api_pid,
        tensor_parallel_size=tp,
        pipeline_parallel_size=pp,
        data_parallel_size=dp if _at_least(release, "0.10.2") else None,
        served_model_name=served,
        model=model,
        max_model_len=max_len,
        capacity=tuple(capacity),
        available_memory=tuple(memory),
        ranks=tuple(ranks),
        development_mode=True if routes_printed and development else None,
        missing_ranks=tuple(sorted(knobs.missing)),
        executor_backend=printed,
        resolved_backend=backend,
    )
    return launch, lines


def _route_table(release: str, *, development: bool) -> list[tuple[str, str]]:
    """The routes a launch registers, as its route table prints them."""
    table = [
        ("/openapi.json", "HEAD, GET"),
        ("/docs", "HEAD, GET"),
        ("/health", "GET"),
        ("/metrics", "GET"),
        ("/tokenize", "POST"),
        ("/version", "GET"),
        ("/v1/models", "GET"),
        ("/v1/chat/completions", "POST"),
        ("/v1/completions", "POST"),
    ]
    if development:
        table += [("/server_info", "GET"), ("/reset_prefix_cache", "POST")]
        if _at_least(release, "0.10.2"):
            table.append(("/collective_rpc", "POST"))
        if _at_least(release, "0.20.0"):
            table.append(("/get_world_size", "GET"))
    return table


# What a collector puts before each line: nothing, a docker timestamp, or a
# docker-compose service column.
_WRAPPERS = ("", "2025-09-03T02:11:14.123456789Z ", "vllm-1  | ", "vllm-server-1  | ")


@st.composite
def _log(
    draw: st.DrawFn,
    release: str | None,
    min_launches: int,
    max_launches: int,
    knobs: _Knobs = _DEFAULT_KNOBS,
    releases: SearchStrategy[str] | None = None,
) -> GeneratedLog:
    count = draw(st.integers(min_launches, max_launches))
    chosen = draw(_release(release) if releases is None else releases)
    launches: list[GeneratedLaunch] = []
    lines: list[str] = []
    for i in range(count):
        launch, text = draw(_launch(chosen, 100 * (i + 1) + draw(st.integers(0, 40)), knobs))
        launches.append(launch)
        lines.extend(text)
    wrapper = draw(st.sampled_from(_WRAPPERS))
    end = draw(st.sampled_from(["\n", "\r\n"]))
    body = "".join(f"{wrapper}{line}{end}" for line in lines)
    return GeneratedLog(text=body.encode("utf-8"), launches=tuple(launches))


def startup_log_examples(
    *, release: str | None = None, min_launches: int = 1, max_launches: int = 3
) -> SearchStrategy[GeneratedLog]:
    """Generated startup logs with the figures each launch printed.

    Every launch (a restart appends one) is in one release's format (``release=None``
    draws the release):
    0.6.6's prefix without ``[`` and V0 ``# GPU blocks`` lines; process tags (ANSI
    cyan where that release colours them) and per-release engine-core and worker
    names; two-line V1 capacity with thousands separators (per worker before 0.13),
    the one-line format from 0.32; engine-init lines per DP engine; rank and
    available-memory lines; the HTTP server's route table (or none, as when a log stops
    before the server started), with the development routes when development mode is
    drawn (and, from 0.32, its ``SECURITY WARNING`` line).  Real-world noise is
    interleaved (uvicorn, progress bars with carriage returns, warnings, glog lines),
    and the whole log may be wrapped by docker timestamps or a docker-compose service
    column (``vllm-1  | ``), with CRLF line ends.
    """
    _check_range("launches", min_launches, max_launches, floor=1)
    return _log(release, min_launches, max_launches)


def startup_logs(
    *, release: str | None = None, min_launches: int = 1, max_launches: int = 3
) -> SearchStrategy[bytes]:
    """The bytes of :func:`startup_log_examples` (a log file's content)."""
    return startup_log_examples(
        release=release, min_launches=min_launches, max_launches=max_launches
    ).map(lambda example: example.text)


def _read_log(text: bytes) -> StartupLog:
    log = read_startup_log(io.BytesIO(text))
    if not isinstance(log, StartupLog):  # pragma: no cover - generated logs are never empty
        raise TypeError(log.describe())
    return log


def read_startup_logs(*, logs: SearchStrategy[bytes] | None = None) -> SearchStrategy[StartupLog]:
    """:class:`StartupLog` values, read by ``read_startup_log`` from ``logs``
    (default :func:`startup_logs`)."""
    return (startup_logs() if logs is None else logs).map(_read_log)
