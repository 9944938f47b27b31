"""A startup-log file read as bytes: the keyword line finder reports exactly the lines one
search of all keywords finds; hard wraps are detected and rejoined; the file streams
through bad bytes and long lines, and a file that cannot be read is a typed failure.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vllm_evidence._adapters.startup_log import (
    KEYWORDS,
    KEYWORDS_BYTES_RE,
    LogReadFailure,
    LogReadFailureReason,
    StartupLog,
    keyword_line_starts,
    read_startup_log,
)
from vllm_evidence._capture.log import BLOCK_BYTES, LineRules

_PIECES = [k.encode() for k in KEYWORDS] + [
    b"\n",
    b" ",
    b"K",
    b"D",
    b"z",
    b"x",
    b"v",
    b"f",
    b"KV",
    b"world",
    b"size",
    b"\x1b[0m",
    b"\r",
    b"(EngineCore_DP0 pid=1) INFO 01-02 03:04:05 [core.py:1] ",
]


def _regex_line_starts(block: bytes) -> list[int]:
    starts: set[int] = set()
    for m in KEYWORDS_BYTES_RE.finditer(block):
        starts.add(block.rfind(b"\n", 0, m.start()) + 1)
    return sorted(starts)


@given(
    st.lists(st.sampled_from(_PIECES), max_size=200),
    st.sampled_from([b"", b"K", b"x", b"z", b"D", b"executor", b"version"]),
    st.booleans(),
)
def test_line_starts_equal_one_regex_search(
    pieces: list[bytes], dense: bytes, long_block: bool
) -> None:
    # A byte or keyword repeated far past one search window, then the generated lines:
    # matches near and across window cuts, and lines with many matches.
    head = (dense * (70_000 // len(dense)) + b"\n") if dense else b""
    if long_block:
        head = b"." * 70_000 + b"\n" + head
    block = head + b"".join(pieces) + b"\n"
    assert keyword_line_starts(block) == _regex_line_starts(block)


_KEYWORD_BYTES = sorted({b for k in KEYWORDS for b in k.encode()})


@pytest.mark.parametrize("dense", _KEYWORD_BYTES)
def test_every_keyword_found_whatever_byte_is_dense(dense: int) -> None:
    lines = [b"x" + k.encode() + b"y" for k in KEYWORDS] + [k.encode() for k in KEYWORDS]
    block = bytes((dense,)) * 70_000 + b"\n" + b"\n".join([*lines, b"no keyword here"]) + b"\n"
    found = keyword_line_starts(block)
    assert found == _regex_line_starts(block)
    assert len(found) >= 2 * len(KEYWORDS)


def test_a_line_longer_than_a_window_is_reported_once() -> None:
    long = b"a" * 100_000 + b"version" + b"b" * 100_000 + b"executor\n"
    block = b"Route: /x\n" + long + b"plain\n" + long
    assert keyword_line_starts(block) == [0, 10, 10 + len(long) + 6]


@pytest.mark.parametrize(
    "line",
    [
        # vLLM 0.32 (v1/metrics/loggers.py), under the real 0.32 log's record head
        (
            b"(APIServer pid=9635) INFO 11-30 05:04:22 [loggers.py:257] Engine 000: Avg prompt "
            b"throughput: 12.3 tokens/s, Avg generation throughput: 45.6 tokens/s, Running: 3 "
            b"reqs, Waiting: 0 reqs, GPU KV cache usage: 1.2%, Prefix cache hit rate: 0.0%"
        ),
        # V0 (engine/metrics.py)
        (
            b"INFO 12-27 10:00:10 metrics.py:351] Avg prompt throughput: 0.0 tokens/s, Avg "
            b"generation throughput: 0.0 tokens/s, Running: 0 reqs, Swapped: 0 reqs, Pending: 0 "
            b"reqs, GPU KV cache usage: 0.0%, CPU KV cache usage: 0.0%."
        ),
        b'INFO:     127.0.0.1:45930 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    ],
)
def test_serving_lines_are_never_decoded(line: bytes) -> None:
    # The periodic stats line and the access line hold no keyword: a serving log's bulk
    # is skipped by the byte scan, before any head parsing.
    assert keyword_line_starts(line * 3 + b"\n") == []
    assert keyword_line_starts((line + b"\n") * 3) == []


def test_keywords_are_non_empty_and_hold_no_newline() -> None:
    from vllm_evidence._capture.log import KeywordScan

    for bad in ([], [b""], [b"a\nb"]):
        with pytest.raises(ValueError, match="non-empty"):
            KeywordScan(bad)


def test_line_numbers_exact_across_blocks() -> None:
    filler = b"(VllmWorker TP0 pid=1) INFO 01-02 03:04:05 [x.py:1] Loading step\n"
    marker = (
        b"(APIServer pid=5) INFO 01-02 03:04:05 [api_server.py:1] vLLM API server version 0.9.2\n"
    )
    n = BLOCK_BYTES // len(filler) + 7  # the version line falls in the second block
    data = filler * n + marker + filler * 3 + b"last line without newline"
    log = read_startup_log(io.BytesIO(data))
    assert isinstance(log, StartupLog)
    assert log.line_count == n + 5
    assert [v.line for v in log.launches[0].versions] == [n + 1]


def _old_blocks(data: bytes, block: int, max_line: int) -> bytes:
    """The lines the reader keeps, by its first algorithm (each read appended to the line
    the last read cut, the whole cut at its last newline; a cut line past ``max_line``
    bytes keeps its first ``max_line`` and the rest up to its newline is dropped)."""
    out, carry, dropping = [], b"", False
    for i in range(0, len(data), block):
        chunk = data[i : i + block]
        if dropping:
            nl = chunk.find(b"\n")
            if nl < 0:
                continue
            chunk, dropping = chunk[nl:], False
        buf = carry + chunk
        cut = buf.rfind(b"\n")
        if cut < 0:
            carry = buf
        else:
            out.append(buf[: cut + 1])
            carry = buf[cut + 1 :]
        if len(carry) > max_line:
            carry, dropping = carry[:max_line], True
    if carry:
        out.append(carry + b"\n")
    return b"".join(out)


@given(
    st.lists(
        st.sampled_from([b"\n", b"ab", b"x" * 9, b"version", b"Route: ", b"\n\n", b"q" * 30]),
        min_size=1,
        max_size=60,
    ),
    st.integers(4, 40),
    st.integers(2, 24),
)
def test_runs_keep_exactly_the_lines_of_whole_blocks(
    pieces: list[bytes], block: int, max_line: int
) -> None:
    # Runs are cut without copying a block: the lines kept, their numbers and the
    # keyword lines found are those of cutting each block at its last newline.
    import vllm_evidence._capture.log as capture_log

    data = b"".join(pieces)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(capture_log, "BLOCK_BYTES", block)
        mp.setattr(capture_log, "MAX_LINE_BYTES", max_line)
        reader = capture_log._Reader(io.BytesIO(data))
        runs = list(reader.blocks())
        kept = _old_blocks(data, block, max_line)
        assert b"".join(b[s:e] for b, s, e in runs) == kept
        assert all(b[s:e].endswith(b"\n") and (s == 0 or b[s - 1] == 10) for b, s, e in runs)
        assert reader.size == len(data)
        lines = kept.split(b"\n")[:-1]
        want = [(i + 1, t.decode()) for i, t in enumerate(lines) if _regex_line_starts(t)]
        got = capture_log.read_log(
            io.BytesIO(data),
            _rules(),
            "off",
            lambda ll: (list(ll), ll.line_count),
        )
        assert got == (want, len(lines))


def _rules() -> LineRules:
    from vllm_evidence._adapters.startup_log.reader import _RULES

    return _RULES


# --- hard-wrap detection and rejoining ---------------------------------------------


P = "(EngineCore_DP0 pid=10) INFO 01-02 03:04:05 [kv_cache_utils.py:1] "


def _log(text: str | bytes, **kw: object) -> StartupLog:
    data = text.encode() if isinstance(text, str) else text
    log = read_startup_log(io.BytesIO(data), **kw)  # type: ignore[arg-type]  # kw is wrap_width only
    assert isinstance(log, StartupLog), log
    return log


def test_wrap_detection_needs_repeated_full_width_lines() -> None:
    long = P + "Available KV cache memory: 12.50 GiB"
    cut = 60
    wrapped = (long[:cut] + "\n" + long[cut:] + "\n") * 3
    detected = _log(wrapped)
    assert detected.wrap_width == cut
    assert [m.text for m in detected.launches[0].available_memory] == ["12.50"] * 3
    # a single cut line is not enough evidence of a terminal width
    once = _log(long[:cut] + "\n" + long[cut:] + "\n")
    assert once.wrap_width is None
    assert once.launches[0].available_memory == ()
    joined = _log(long[:cut] + "\n" + long[cut:] + "\n", wrap_width=cut)
    assert [m.text for m in joined.launches[0].available_memory] == ["12.50"]
    # without a wrap width, prefix-less lines are never joined
    off = _log(wrapped, wrap_width="off")
    assert off.wrap_width is None
    assert off.launches[0].available_memory == ()


def test_equal_length_lines_before_noise_are_not_a_terminal_wrap() -> None:
    """Found by hypothesis: complete lines of one length, each followed by a prefix-less
    noise line, looked like a wrap at that length and merged three launches into one."""
    noise = "Loading safetensors checkpoint shards: 100% Completed | 1/1\n"
    text = "".join(
        f"(APIServer pid={pid}) INFO 01-02 03:04:05 [api_server.py:1] "
        f"vLLM API server version 0.10.1.1\n{noise}"
        for pid in (100, 200, 300)
    )
    read = _log(text)
    assert read.wrap_width is None
    assert [launch.api_server_pids for launch in read.launches] == [(100,), (200,), (300,)]


def test_compose_column_starts_a_record_so_equal_engine_lines_are_not_a_wrap() -> None:
    """Every line of a docker-compose log starts with the service column."""
    col = "vllm-1  | "
    engine = (
        "(EngineCore_DP{i} pid=10{i}) INFO 01-02 03:04:05 [core.py:74] Initializing a V1 LLM "
        "engine (v0.10.2) with config: model='/m', tensor_parallel_size=1, "
        "pipeline_parallel_size=1, data_parallel_size=2\n"
    )
    text = (
        col + "(APIServer pid=9) INFO 01-02 03:04:05 [api_server.py:1] vLLM API server "
        "version 0.10.2\n"
        + col
        + engine.format(i=0)
        + col
        + engine.format(i=1)
        + col
        + "(EngineCore_DP0 pid=100) INFO 01-02 03:04:05 [kv_cache_utils.py:1] "
        "GPU KV cache size: 1,000 tokens\n"
    )
    read = _log(text)
    assert read.wrap_width is None
    launch = read.launches[0]
    assert len(launch.engine_configs) == 2
    assert [c.tokens.value if c.tokens else None for c in launch.capacity] == [1000]


def test_a_fenced_paste_of_equal_long_lines_is_not_a_terminal_wrap() -> None:
    """Issue 33 (a paste from an issue): two equal-length profiling lines, each followed
    by a head-less ``# GPU blocks`` line, and a long line before a closing code fence,
    looked like a wrap at that length and ate both blocks lines."""
    profile = "Memory profiling results: total_gpu_memory=23.58GiB " + "x" * 150 + " util=0.9"
    long_warning = "The model's max seq len (9000) is larger than " + "y" * (len(profile) - 50)
    text = "".join(
        f"```\n{profile}\n# GPU blocks: {n}, # CPU blocks: 512\n{long_warning}\n```\n"
        for n in (1478, 1952)
    )
    read = _log(text)
    assert read.wrap_width is None
    assert [b.device_blocks.value for b in read.launches[0].blocks] == [1478, 1952]


# --- streaming the file: bad bytes, long lines, typed read failures ----------------


def test_invalid_utf8_and_very_long_line() -> None:
    junk = b"\xff\xfe" + b"x" * (3 * 1024 * 1024) + b"\n"
    text = junk + (P + "Available KV cache memory: -1.50 GiB\n").encode()
    launch = _log(text).launches[0]
    assert [(m.text, m.line) for m in launch.available_memory] == [("-1.50", 2)]


def test_failures_are_typed(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    binary = tmp_path / "bin.log"
    binary.write_bytes(b"\x7fELF\x00\x00\x01")
    cases = {
        tmp_path / "missing.log": LogReadFailureReason.MISSING,
        tmp_path: LogReadFailureReason.DIRECTORY,
        empty: LogReadFailureReason.EMPTY,
        binary: LogReadFailureReason.BINARY,
    }
    for path, reason in cases.items():
        result = read_startup_log(path)
        assert isinstance(result, LogReadFailure)
        assert result.reason is reason
        assert "\n" not in result.describe()


def test_symbolic_links_that_lead_nowhere_say_so(tmp_path: Path) -> None:
    dangling = tmp_path / "dangling.log"
    dangling.symlink_to(tmp_path / "gone.log")
    loop = tmp_path / "loop.log"
    loop.symlink_to(tmp_path / "loop.log")
    missing = read_startup_log(dangling)
    assert isinstance(missing, LogReadFailure)
    assert (missing.reason, missing.detail) == (
        LogReadFailureReason.MISSING,
        "a symbolic link to a missing file",
    )
    looping = read_startup_log(loop)
    assert isinstance(looping, LogReadFailure)
    assert looping.reason is LogReadFailureReason.UNREADABLE
    assert looping.detail == "Too many levels of symbolic links"
    plain = read_startup_log(tmp_path / "never.log")
    assert isinstance(plain, LogReadFailure)
    assert (plain.reason, plain.detail) == (LogReadFailureReason.MISSING, "no such file")
    (tmp_path / "gone.log").write_text("INFO 1 x.py:1] hello\n")
    assert not isinstance(read_startup_log(dangling), LogReadFailure)
