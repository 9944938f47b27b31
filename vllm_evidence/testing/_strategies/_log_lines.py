"""The line-level pieces of generated startup logs: the one capacity-report generator
(both V1 formats and V0's blocks, with the figures a reader must find) and free-form
launches for the reader's own property tests.  :mod:`.logs` builds whole logs from them.

This module imports hypothesis but never pytest.
"""

from __future__ import annotations

from typing import Final, final

import attrs
from hypothesis import strategies as st

from vllm_evidence.upstream import CapacityFormat

__all__ = ["GeneratedCapacity"]


@final
@attrs.frozen
class GeneratedCapacity:
    """One capacity report a generated log printed (what a reader must find)."""

    format: str
    """``"v0_blocks"``, ``"v1_two_line"`` or ``"v1_one_line"`` (the reader's format names)."""
    device: str
    """The device the KV cache size line names (``"GPU"``, ``"CPU"``, ``"XPU"``)."""
    tokens: int | None
    """The KV cache size in tokens; ``None`` for the V0 blocks format, which prints
    blocks, not tokens."""
    max_model_len: int
    """The context length the concurrency line is for (``for N tokens per request``)."""
    concurrency: str
    """The concurrency exactly as printed (``"37.68"``)."""


# --------------------------------------------------------------------------------------
# Capacity reports: the one capacity-line generator

#: The device a V1 engine names in its KV cache size line.
_devices = st.sampled_from(["GPU", "GPU", "CPU", "XPU"])

#: The V1 capacity formats (two lines before 0.28, one line from 0.28.0: the law
#: ``capacity.log_format``), read from the one enum of them.
_V1_FORMATS: Final = tuple(f.value for f in CapacityFormat if f.value.startswith("v1_"))


def _capacity_tokens(*, zero: bool | None, high: int = 10**9) -> st.SearchStrategy[int]:
    """A KV cache size in tokens (or V0 blocks): ``zero=None`` draws from 0 (the reader's
    whole range), ``False`` from 1 (vLLM refuses to start with no KV-cache blocks:
    ``ValueError: No available memory for the cache blocks``), ``True`` is 0."""
    if zero is None:
        return st.integers(0, high)
    return st.just(0) if zero else st.integers(1, high)


def _capacity_report(
    draw: st.DrawFn, fmt: str, device: str, max_model_len: int, *, zero: bool | None = None
) -> GeneratedCapacity:
    """The figures of one capacity report in format ``fmt`` (tokens and concurrency drawn;
    ``zero`` as :func:`_capacity_tokens` takes it)."""
    tokens = draw(_capacity_tokens(zero=zero))
    concurrency = f"{draw(st.integers(0, 99999))}.{draw(st.integers(0, 99)):02d}"
    return GeneratedCapacity(
        fmt, device, None if fmt == "v0_blocks" else tokens, max_model_len, concurrency
    )


@st.composite
def _v1_capacity_reports(draw: st.DrawFn) -> GeneratedCapacity:
    """One V1 capacity report of any shape: either format, any device and context length."""
    fmt = draw(st.sampled_from(_V1_FORMATS))
    return _capacity_report(draw, fmt, draw(_devices), draw(st.integers(1, 10**7)))


def _capacity_messages(capacity: GeneratedCapacity, *, gpu_blocks: int = 0) -> list[str]:
    """The messages (the text after each record's prefix) that print ``capacity``.

    The V0 format prints ``gpu_blocks`` (blocks, not tokens) and the context length
    without thousands separators; V1 prints both with them, on two lines or (from 0.32)
    one.
    """
    c = capacity
    if c.tokens is None:  # the V0 blocks format
        return [
            f"# GPU blocks: {gpu_blocks}, # CPU blocks: 2048",
            f"Maximum concurrency for {c.max_model_len} tokens per request: {c.concurrency}x",
        ]
    size = f"{c.device} KV cache size: {c.tokens:,} tokens"
    concurrency = (
        f"Maximum concurrency for {c.max_model_len:,} tokens per request: {c.concurrency}x"
    )
    if c.format == "v1_one_line":
        return [f"{size}, {concurrency}"]
    return [size, concurrency]


def _memory_message(figure: str) -> str:
    return f"Available KV cache memory: {figure} GiB"


# --------------------------------------------------------------------------------------
# Free-form launches, for the reader's property tests


@final
@attrs.frozen
class _ReaderLaunch:
    """A free-form launch: the figures its lines print (see :func:`_reader_launches`)."""

    api_pid: int
    version: str
    capacity: tuple[GeneratedCapacity, ...]
    """V1 capacity reports, in either format, in the order printed."""
    memory: tuple[str, ...]
    """``Available KV cache memory`` figures as printed."""


@st.composite
def _reader_launches(draw: st.DrawFn, pid: int) -> _ReaderLaunch:
    """A launch whose API server has ``pid``: a version line (0.6.6 to 0.32, and 0.10.1.1,
    a release :data:`~._common.RELEASES` does not list), up to two memory figures
    (``-0.00`` to ``99.99``), and up to three capacity reports of any V1 shape."""
    version = draw(st.sampled_from(["0.10.1.1", "0.11.0", "0.32.0", "0.6.6.post1"]))
    caps = tuple(draw(st.lists(_v1_capacity_reports(), max_size=3)))
    sign = st.sampled_from(["", "-"])
    mem = tuple(
        f"{draw(sign)}{draw(st.integers(0, 99))}.{draw(st.integers(0, 99)):02d}"
        for _ in range(draw(st.integers(0, 2)))
    )
    return _ReaderLaunch(api_pid=pid, version=version, capacity=caps, memory=mem)


_READER_NOISE = (
    "INFO 09-03 02:11:08 [__init__.py:241] Automatically detected platform cuda.",
    "(VllmWorker TP0 pid=900) INFO 09-03 02:12:01 [cuda.py:328] Using Flash Attention backend.",
    "Loading safetensors checkpoint shards: 100% Completed | 1/1",
    "  warnings.warn(",
    "(APIServer pid=1) INFO:     Started server process [1]",
)


def _render_reader_launch(
    launch: _ReaderLaunch, *, ansi: bool, crlf: bool, noise: list[int]
) -> list[str]:
    """The launch as log lines, each with its line end (noise lines interleaved at the
    given positions; every record is tagged, in ANSI cyan when ``ansi``)."""

    def tag(name: str, pid: int) -> str:
        t = f"({name} pid={pid})"
        return f"\x1b[1;36m{t}\x1b[0;0m " if ansi else t + " "

    pre = "INFO 01-02 03:04:05 [kv_cache_utils.py:1] "
    out = [tag("APIServer", launch.api_pid) + pre + f"vLLM API server version {launch.version}"]
    engine = tag("EngineCore_DP0", launch.api_pid + 1) + pre
    worker = tag("Worker", launch.api_pid + 2) + pre
    out.extend(worker + _memory_message(m) for m in launch.memory)
    for c in launch.capacity:
        out.extend(engine + m for m in _capacity_messages(c))
    for i, n in enumerate(noise):
        out.insert(1 + min(n, len(out) - 1), _READER_NOISE[i % len(_READER_NOISE)])
    end = "\r\n" if crlf else "\n"
    return [line + end for line in out]
