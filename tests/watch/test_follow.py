"""The log follower (:mod:`vllm_evidence._capture.follow`): appended bytes only, and every
way the file under the path can change said as a state or an event, never raised.

Each expected offset, byte string and event is written by hand from what the test did
to the file.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vllm_evidence._capture.follow import FollowEvent, FollowState, LogFollower


def write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def test_the_first_poll_reads_the_file_and_begins_it(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    write(log, b"one\ntwo\n")
    poll = LogFollower(log).poll()
    assert poll.state is FollowState.FOLLOWING
    assert poll.data == b"one\ntwo\n"
    assert (poll.start, poll.offset, poll.file_bytes) == (0, 8, 8)
    assert poll.restart
    assert poll.event is None


def test_a_later_poll_reads_only_the_appended_bytes(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    write(log, b"one\n")
    follower = LogFollower(log)
    follower.poll()
    append(log, b"two\nthr")
    poll = follower.poll()
    assert (poll.data, poll.start, poll.offset) == (b"two\nthr", 4, 11)
    assert not poll.restart
    assert poll.event is None


def test_nothing_appended_reads_nothing(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    write(log, b"one\n")
    follower = LogFollower(log)
    follower.poll()
    poll = follower.poll()
    assert (poll.data, poll.offset, poll.restart, poll.event) == (b"", 4, False, None)


def test_a_rotated_log_is_a_new_file_read_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    write(log, b"old launch\n")
    follower = LogFollower(log)
    follower.poll()
    log.rename(tmp_path / "vllm.log.1")
    write(log, b"new launch, longer than the old one\n")
    poll = follower.poll()
    assert poll.event is FollowEvent.ROTATED
    assert poll.restart
    assert (poll.data, poll.start) == (b"new launch, longer than the old one\n", 0)
    assert poll.detail is not None
    assert "another file is at the path" in poll.detail


def test_a_truncated_log_is_read_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    write(log, b"a long first launch\n")
    follower = LogFollower(log)
    follower.poll()
    with log.open("r+b") as handle:  # the same inode, emptied, as a launcher does
        handle.truncate(0)
        handle.write(b"short\n")
    poll = follower.poll()
    assert poll.event is FollowEvent.TRUNCATED
    assert (poll.data, poll.start, poll.restart) == (b"short\n", 0, True)
    assert poll.detail == "truncated from 20 to 6 bytes: read from its start"


def test_a_log_emptied_and_written_past_the_offset_is_rewritten(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    write(log, b"first launch\n")
    follower = LogFollower(log)
    follower.poll()
    inode = log.stat().st_ino
    with log.open("r+b") as handle:
        handle.truncate(0)
        handle.write(b"second launch, already longer\n")
    assert log.stat().st_ino == inode  # not a rotation: the same file
    poll = follower.poll()
    assert poll.event is FollowEvent.REWRITTEN
    assert (poll.data, poll.start) == (b"second launch, already longer\n", 0)


def test_the_same_bytes_before_the_offset_are_not_a_rewrite(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    write(log, b"x" * 10_000)
    follower = LogFollower(log)
    follower.poll()
    append(log, b"y")
    poll = follower.poll()
    assert (poll.event, poll.data, poll.start) == (None, b"y", 10_000)


def test_a_limit_reads_no_further_and_a_lower_limit_rewinds(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    write(log, b"0123456789")
    follower = LogFollower(log)
    assert follower.poll(limit=4).data == b"0123"
    assert follower.poll(limit=8).data == b"4567"
    poll = follower.poll(limit=2)
    assert poll.event is FollowEvent.REWOUND
    assert (poll.data, poll.start, poll.offset) == (b"01", 0, 2)


def test_max_bytes_spreads_a_long_file_over_polls(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    write(log, b"abcdefghij")
    follower = LogFollower(log, max_bytes=4)
    parts = [follower.poll() for _ in range(4)]
    assert [p.data for p in parts] == [b"abcd", b"efgh", b"ij", b""]
    assert [p.restart for p in parts] == [True, False, False, False]
    assert [p.file_bytes for p in parts] == [10, 10, 10, 10]


def test_a_missing_path_is_a_state_and_its_return_reads_from_the_start(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    follower = LogFollower(log)
    never = follower.poll()
    assert (never.state, never.data, never.file_bytes) == (FollowState.MISSING, b"", None)
    write(log, b"hello\n")
    assert follower.poll().data == b"hello\n"
    log.unlink()
    gone = follower.poll()
    assert gone.state is FollowState.MISSING
    assert gone.detail == "no such file"
    write(log, b"hello again\n")
    back = follower.poll()
    assert back.state is FollowState.FOLLOWING
    assert back.restart
    assert (back.data, back.start) == (b"hello again\n", 0)


def test_a_directory_in_the_logs_place_is_unreadable(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    write(log, b"hello\n")
    follower = LogFollower(log)
    follower.poll()
    log.unlink()
    log.mkdir()
    poll = follower.poll()
    assert poll.state is FollowState.UNREADABLE
    assert poll.detail == "not a regular file (a directory)"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_in_the_logs_place_is_refused_not_waited_on(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    os.mkfifo(log)
    poll = LogFollower(log).poll()
    assert poll.state is FollowState.UNREADABLE
    assert poll.detail == "not a regular file (a FIFO, a socket or a device)"


def test_a_bad_limit_or_max_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_bytes must be positive"):
        LogFollower(tmp_path / "x", max_bytes=0)
    with pytest.raises(ValueError, match="limit must not be negative"):
        LogFollower(tmp_path / "x").poll(limit=-1)
