"""A startup log read as it grows (:mod:`vllm_evidence._adapters.startup_log.followed`).

The oracle is the whole-file reader, ``read_startup_log``, run over a file of exactly the
bytes fed so far: every prefix of real and generated logs, cut at arbitrary places
(mid-line, mid-wrap, inside the first block's sample), gives the same digest, size, line
count, wrap width and launches.  The hand-written cases check what a watch relies on:
an appended death line appears, a log read earlier is not changed by later bytes, a reset
begins again, an empty or binary log is the reader's failure.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._paths import PUBLIC
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._adapters.startup_log.followed import FollowedStartupLog
from vllm_evidence._capture.log import LogReadFailure, LogReadFailureReason
from vllm_evidence.testing._strategies import startup_logs

ROOT = Path(__file__).resolve().parents[2]
KILL = ROOT / "tests/fixtures/real/vllm-0.32.0-cpu/tp2-worker-kill/startup.log"
WRAPPED = PUBLIC / "startup-log/dennislee22-v0.10.1.1-qwen2-7b-ray-2nodes-wrapped147.txt"
REAL_LOGS = sorted((ROOT / "tests/fixtures/real").rglob("startup.log")) + sorted(
    (PUBLIC / "startup-log").glob("*.txt")
)


def lines_of(path: Path) -> list[bytes]:
    """A file's physical lines, each with its newline (split at newlines only)."""
    return [line + b"\n" for line in path.read_bytes().split(b"\n")[:-1]]


def whole(data: bytes) -> StartupLog | LogReadFailure:
    """The oracle: the whole-file reader over exactly these bytes."""
    return read_startup_log(io.BytesIO(data))


def same(followed: StartupLog | LogReadFailure, read: StartupLog | LogReadFailure) -> None:
    if isinstance(read, LogReadFailure):
        assert isinstance(followed, LogReadFailure)
        assert followed.reason is read.reason
        return
    assert isinstance(followed, StartupLog)
    assert (followed.sha256, followed.size_bytes) == (read.sha256, read.size_bytes)
    assert (followed.line_count, followed.wrap_width) == (read.line_count, read.wrap_width)
    assert followed.launches == read.launches


def fed(data: bytes, cuts: list[int]) -> FollowedStartupLog:
    reader = FollowedStartupLog("followed.log")
    start = 0
    for cut in [*sorted(cuts), len(data)]:
        reader.feed(data[start:cut])
        start = max(start, cut)
    return reader


@pytest.mark.parametrize("path", REAL_LOGS, ids=lambda p: p.parent.name + "/" + p.name[:40])
def test_every_real_log_fed_in_pieces_reads_as_the_whole_file(path: Path) -> None:
    data = path.read_bytes()
    reader = FollowedStartupLog("followed.log")
    step = max(1, len(data) // 7) + 13  # cuts fall mid-line
    for end in range(step, len(data) + step, step):
        reader.feed(data[end - step : end])
        same(reader.startup_log(), whole(data[:end]))


@settings(max_examples=40)
@given(data=startup_logs(max_launches=2), cuts=st.lists(st.integers(0, 60_000), max_size=6))
def test_a_generated_log_cut_anywhere_reads_as_the_whole_file(data: bytes, cuts: list[int]) -> None:
    points = sorted({min(c, len(data)) for c in cuts})
    reader = FollowedStartupLog("followed.log")
    start = 0
    for point in [*points, len(data)]:
        reader.feed(data[start:point])
        start = point
        same(reader.startup_log(), whole(data[:point]))


def test_a_hard_wrapped_log_fed_a_line_at_a_time_joins_as_the_whole_file() -> None:
    data = WRAPPED.read_bytes()
    reader = FollowedStartupLog("followed.log")
    for line in lines_of(WRAPPED):
        reader.feed(line)
    read = reader.startup_log()
    assert isinstance(read, StartupLog)
    assert read.wrap_width == 147  # the width the fixture's name records
    same(read, whole(data))


def test_an_appended_death_line_appears_and_a_log_read_before_does_not_change() -> None:
    lines = lines_of(KILL)
    death = lines[165]  # line 166 of the real log
    assert b"Worker proc VllmWorker-1 died unexpectedly" in death
    reader = FollowedStartupLog("followed.log")
    reader.feed(b"".join(lines[:165]))
    before = reader.startup_log()
    assert isinstance(before, StartupLog)
    assert before.launches[-1].worker_deaths == ()
    reader.feed(death)
    after = reader.startup_log()
    assert isinstance(after, StartupLog)
    assert [event.line for event in after.launches[-1].worker_deaths] == [166]
    assert before.launches[-1].worker_deaths == ()  # the earlier log is its own value
    assert after.size_bytes == before.size_bytes + len(death)
    assert after.sha256 == hashlib.sha256(b"".join(lines[:166])).hexdigest()


def test_a_partial_last_line_is_read_as_a_line_and_completed_by_the_next_feed() -> None:
    data = lines_of(KILL)
    head, death = b"".join(data[:165]), data[165]
    reader = FollowedStartupLog("followed.log")
    reader.feed(head + death[:-1])  # the line without its newline yet
    partial = reader.startup_log()
    assert isinstance(partial, StartupLog)
    assert partial.line_count == 166
    reader.feed(b"\n")
    complete = reader.startup_log()
    assert isinstance(complete, StartupLog)
    assert complete.line_count == 166
    assert [e.line for e in complete.launches[-1].worker_deaths] == [166]


def test_reset_begins_the_log_again() -> None:
    reader = FollowedStartupLog("followed.log")
    reader.feed(KILL.read_bytes())
    reader.reset()
    line = (
        b"(APIServer pid=7) INFO 12-02 13:40:00 [api_server.py:1] vLLM API server version 0.32.0\n"
    )
    reader.feed(line)
    read = reader.startup_log()
    assert isinstance(read, StartupLog)
    assert read.line_count == 1
    assert read.size_bytes == len(line)
    assert read.sha256 == hashlib.sha256(line).hexdigest()
    assert [str(v.version) for v in read.launches[0].versions] == ["0.32.0"]


def test_nothing_fed_is_an_empty_log_and_nul_bytes_a_binary_one() -> None:
    empty = FollowedStartupLog("followed.log").startup_log()
    assert isinstance(empty, LogReadFailure)
    assert empty.reason is LogReadFailureReason.EMPTY
    binary = FollowedStartupLog("followed.log")
    binary.feed(b"\x00\x01\x02 not text\n")
    failure = binary.startup_log()
    assert isinstance(failure, LogReadFailure)
    assert failure.reason is LogReadFailureReason.BINARY


def test_a_nul_after_the_last_newline_is_not_binary_until_its_line_ends() -> None:
    # The whole-file reader looks for NUL in its first run of whole lines only.
    reader = FollowedStartupLog("followed.log")
    reader.feed(b"a line\n\x00tail")
    assert isinstance(reader.startup_log(), StartupLog)
    assert isinstance(whole(b"a line\n\x00tail"), StartupLog)
    reader.feed(b"\n")
    assert isinstance(reader.startup_log(), LogReadFailure)
    assert isinstance(whole(b"a line\n\x00tail\n"), LogReadFailure)


def test_a_bad_wrap_width_is_refused() -> None:
    with pytest.raises(ValueError, match="wrap_width must be"):
        FollowedStartupLog("x", wrap_width=0)
