"""Fuzzing the launcher's two writers: the log writer and the receipt writer.

* The log writer under any pattern of short writes and a failure at any call: what the
  log received is a prefix of what the child printed, in order, the digest covers exactly
  it, and a failure says the byte it stopped at (``at_byte`` equal to the size).
* The receipt writer over any command line (undecodable bytes, lone surrogates, control
  characters, secret options in both forms), any host, log path and failure reason: its
  reader (``read_launch_receipt``) reads every receipt it writes, the receipt validates
  against the published schema, and no secret value reaches the file.

Marked ``slow`` like ``test_fuzz.py``: ``VLLM_EVIDENCE_FUZZ_EXAMPLES`` sets the budget
(2% of it each here, at least 30; ``.ci/run`` runs ``-m slow tests/hostile`` with 100,000).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from vllm_evidence._adapters.receipt import read_launch_receipt
from vllm_evidence._capture.process import (
    ChildStarted,
    LogProgress,
    LogWriteFailure,
    _LogWriter,
    _why,
    go_float,
)
from vllm_evidence._launch import _write_atomically, receipt_record
from vllm_evidence.serialize import schema

TOTAL = int(os.environ.get("VLLM_EVIDENCE_FUZZ_EXAMPLES", "600"))

pytestmark = pytest.mark.slow


def fuzz() -> settings:
    return settings(
        max_examples=max(30, TOTAL * 2 // 100),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# --- the log writer ---------------------------------------------------------------------


@fuzz()
@given(
    chunks=st.lists(st.binary(min_size=1, max_size=300), max_size=30),
    takes=st.lists(st.integers(1, 400), min_size=1, max_size=50),
    fail_at=st.none() | st.integers(0, 60),
    errno=st.sampled_from([5, 27, 28, 122]),
)
def test_the_log_is_a_prefix_of_the_output_and_the_digest_covers_it_exactly(
    chunks: list[bytes], takes: list[int], fail_at: int | None, errno: int
) -> None:
    accepted = bytearray()
    calls = [0]

    def write(data: memoryview) -> int:
        call = calls[0]
        calls[0] += 1
        if call == fail_at:
            raise OSError(errno, os.strerror(errno))
        take = min(takes[call % len(takes)], len(data))
        accepted.extend(data[:take])
        return take

    writer = _LogWriter(write)
    for chunk in chunks:
        writer.put(chunk)
    writer.close()
    progress = writer.progress()
    everything = b"".join(chunks)
    assert bytes(accepted) == everything[: len(accepted)]
    assert progress.size == len(accepted)
    assert progress.sha256 == hashlib.sha256(accepted).hexdigest()
    if fail_at is not None and fail_at < calls[0]:
        assert progress.failure == LogWriteFailure(len(accepted), os.strerror(errno))
    else:
        assert progress.failure is None
        assert bytes(accepted) == everything


@fuzz()
@given(
    chunks=st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=30),
    limit=st.integers(1, 3000),
)
def test_a_log_that_falls_behind_fails_at_what_it_had_written(
    chunks: list[bytes], limit: int
) -> None:
    """The writer hangs in its first write: the queue holds at most ``limit`` bytes, and
    the chunk that would pass it waits the stall time, then fails the log at byte 0
    (nothing was written)."""
    release = threading.Event()

    def write(data: memoryview) -> int:
        release.wait(30)
        return len(data)

    writer = _LogWriter(write, backlog_limit=limit, stall_s=0.01)
    for chunk in chunks:
        writer.put(chunk)
    sizes = [len(chunk) for chunk in chunks]
    # A chunk waits for room only behind others: the first always goes in.
    fits = all(sum(sizes[: i + 1]) <= limit for i in range(1, len(sizes)))
    progress = writer.progress()
    release.set()
    writer.close()
    if fits:
        assert progress.failure is None
        assert writer.progress().size == sum(sizes)
    else:
        over = next(i for i in range(1, len(sizes)) if sum(sizes[: i + 1]) > limit)
        backlog = sum(sizes[:over])  # what was queued when the next chunk found no room
        assert progress == LogProgress(
            0,
            hashlib.sha256(b"").hexdigest(),
            LogWriteFailure(
                0,
                f"the log made no progress for 0.01 s with {backlog:,} bytes of output "
                "waiting for it",
            ),
        )
        assert writer.progress() == progress  # the hung write, once it returns, is not counted


# --- the receipt writer -----------------------------------------------------------------

SECRET_OPTIONS = ["--api-key", "--hf-token", "--token", "--password"]
_MARK = "sk-fuzz-"

#: Any text: lone surrogates and control characters included.
any_text = st.text(st.characters(exclude_categories=()), max_size=40)
#: What Python makes of a command line's bytes (undecodable ones as surrogate escapes).
argv_bytes = st.binary(max_size=40).filter(lambda b: b"\x00" not in b).map(os.fsdecode)
plain_arg = (any_text | argv_bytes).filter(lambda a: _MARK not in a)
secret = st.text("0123456789abcdef", min_size=12, max_size=24).map(lambda h: _MARK + h)


@st.composite
def command_lines(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """A command line and the secret values in it."""
    argv: list[str] = [draw(plain_arg.filter(bool))]
    secrets: list[str] = []
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.booleans()):
            value, option = draw(secret), draw(st.sampled_from(SECRET_OPTIONS))
            secrets.append(value)
            argv += [f"{option}={value}"] if draw(st.booleans()) else [option, value]
        else:
            argv.append(draw(plain_arg))
    return argv, secrets


start_times = st.floats(1e9, 4e9).map(go_float)
#: Byte counts below an exabyte (the reader reads 18 digits; no log is larger).
failures = st.none() | st.builds(
    lambda at, errno, text: LogWriteFailure(at, _why(OSError(errno, text))),
    st.integers(0, 10**18 - 1),
    st.integers(1, 133),
    any_text | st.text(max_size=3000),
)


@fuzz()
@given(
    command=command_lines(),
    host=any_text | argv_bytes,
    log_path=st.none() | any_text | argv_bytes,
    pid=st.integers(1, 2**22),
    start=st.none() | start_times,
    size=st.integers(0, 10**18 - 1),
    failure=failures,
)
def test_every_receipt_the_launcher_writes_its_reader_reads(
    command: tuple[list[str], list[str]],
    host: str,
    log_path: str | None,
    pid: int,
    start: str | None,
    size: int,
    failure: LogWriteFailure | None,
) -> None:
    from vllm_evidence._capture.process import scrub_argv

    argv, secrets = command
    child = ChildStarted(pid, start, None if start else "no /proc here")
    progress = LogProgress(
        size if failure is None else failure.at_byte, hashlib.sha256(b"x").hexdigest(), failure
    )
    record = receipt_record(child, scrub_argv(argv), host, log_path, progress)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "r.json"
        _write_atomically(path, record)
        text = path.read_text(encoding="utf-8")
        read = read_launch_receipt(path)  # never refused
    document = json.loads(text)
    Draft202012Validator(schema("launch-receipt")).validate(document)
    assert read.pid == pid
    assert read.log_bytes == progress.size
    assert len(read.argv) == len(argv)
    if failure is None:
        assert read.log_write_failure is None
        assert document["log_write_failure"] is None
    else:
        assert read.log_write_failure is not None
        assert read.log_write_failure.at_byte == failure.at_byte == read.log_bytes
    for value in secrets:
        assert value not in text
