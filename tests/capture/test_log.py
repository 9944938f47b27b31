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

from vllm_evidence.adapters.startup_log import (
    KEYWORDS,
    KEYWORDS_BYTES_RE,
    LogReadFailure,
    LogReadFailureReason,
    StartupLog,
    keyword_line_starts,
    read_startup_log,
)
from vllm_evidence.capture.log import BLOCK_BYTES

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
    st.sampled_from([b"", b"K", b"x", b"z", b"D"]),
    st.booleans(),
)
def test_line_starts_equal_one_regex_search(
    pieces: list[bytes], rare: bytes, after_sample: bool
) -> None:
    # A run of one rare byte makes it dense: seen in the sample, the keyword is searched
    # through its next byte; past the sample, its pass gives up and the whole keyword is
    # searched.  Every way of finding a keyword is exercised.
    dense = rare * 70_000 + b"\n"
    head = b"." * 70_000 + b"\n" + dense if after_sample else dense
    block = head + b"".join(pieces) + b"\n"
    assert keyword_line_starts(block) == _regex_line_starts(block)


_RARE = sorted({b for k in KEYWORDS for b in k.encode()})


@pytest.mark.parametrize("after_sample", [False, True])
@pytest.mark.parametrize("rare", _RARE)
def test_every_keyword_found_whatever_byte_is_dense(rare: int, after_sample: bool) -> None:
    dense = bytes((rare,)) * 70_000 + b"\n"
    head = b"." * 70_000 + b"\n" + dense if after_sample else dense
    lines = [b"x" + k.encode() + b"y" for k in KEYWORDS] + [k.encode() for k in KEYWORDS]
    block = head + b"\n".join([*lines, b"no keyword here"]) + b"\n"
    found = keyword_line_starts(block)
    assert found == _regex_line_starts(block)
    assert len(found) >= 2 * len(KEYWORDS)


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
