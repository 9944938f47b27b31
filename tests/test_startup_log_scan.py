"""The keyword line finder reports exactly the lines one search of all keywords finds."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vllm_evidence.adapters.startup_log import (
    KEYWORDS,
    KEYWORDS_BYTES_RE,
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
