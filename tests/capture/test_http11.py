"""The probe's HTTP/1.1 response reader (``_capture/_http11.py``) against h11.

h11 is the reader the probe used before (and httpcore uses): on generated answers —
valid and damaged heads, every framing, informational answers, obsolete folding, bare
LF line ends, split at random places — both must give the same status, headers and body
(or both refuse), and a connection is kept only where h11 would keep it.  The cases
after the differential test pin each rule by itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import h11
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_evidence._capture._http11 import (
    MAX_INFORMATIONAL,
    ProtocolError,
    RemoteProtocolError,
    ResponseReader,
    declared_too_large,
)

HEAD_BOUND = 64 * 1024


@dataclass(frozen=True)
class Read:
    """What a reader made of the bytes: an answer, a refusal, or no answer yet."""

    outcome: str  # "answer", "error", "incomplete", "nothing"
    status: int = 0
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    reusable: bool = False


def _joined(raw: list[tuple[bytes, bytes]]) -> tuple[tuple[str, str], ...]:
    merged: dict[str, str] = {}
    for name, value in raw:
        key = name.decode("ascii").lower()
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            text = value.decode("latin-1")
        merged[key] = f"{merged[key]}, {text}" if key in merged else text
    return tuple(merged.items())


def by_h11(pieces: list[bytes], eof: bool, cap: int) -> Read:
    """The answer as the probe read it through h11 (the code this reader replaced)."""
    http = h11.Connection(h11.CLIENT, max_incomplete_event_size=HEAD_BOUND)
    http.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
    http.send(h11.EndOfMessage())
    feed = [*pieces, b""] if eof else list(pieces)
    status, size = 0, 0
    headers: tuple[tuple[str, str], ...] = ()
    chunks: list[bytes] = []
    try:
        while True:
            event = http.next_event()
            if event is h11.NEED_DATA:
                if not feed:
                    return Read("incomplete")
                data = feed.pop(0)
                if not data and not any(pieces):
                    return Read("nothing")
                http.receive_data(data)
                continue
            if isinstance(event, h11.InformationalResponse):
                continue
            if isinstance(event, h11.Response):
                status = event.status_code
                headers = _joined(list(event.headers))
                fields = dict(headers)
                # A length counts only where it frames the body (no 204/304, no chunks).
                if (
                    status not in (204, 304)
                    and "transfer-encoding" not in fields
                    and declared_too_large(fields.get("content-length", ""), cap)
                ):
                    return Read("answer", status, headers, None)
                continue
            if isinstance(event, h11.Data):
                size += len(event.data)
                if size > cap:
                    return Read("answer", status, headers, None)
                chunks.append(bytes(event.data))
                continue
            if isinstance(event, h11.EndOfMessage):
                trailing, closed = http.trailing_data
                rest = b"".join(feed) + trailing
                # Kept: h11 is ready for the next cycle, nothing came after the answer,
                # and the server has not closed (an answer read until close).
                reusable = http.their_state is h11.DONE and not rest and not closed
                return Read("answer", status, headers, b"".join(chunks), reusable)
            return Read("error")  # ConnectionClosed before the answer ended
    except h11.ProtocolError:
        return Read("error")


def by_reader(pieces: list[bytes], eof: bool, cap: int) -> Read:
    reader = ResponseReader(max_head_bytes=HEAD_BOUND, max_body_bytes=cap)
    try:
        done = False
        for piece in pieces:
            if reader.feed(piece) and not done:
                done = True
        if not done and eof:
            if not reader.feed_eof():
                return Read("nothing")
            done = True
    except ProtocolError:
        return Read("error")
    if not done:
        return Read("incomplete")
    body = None if reader.too_large else reader.body
    return Read("answer", reader.status, reader.headers, body, reader.reusable)


# --- generated answers ----------------------------------------------------------------

_names = st.sampled_from(
    [
        *("Content-Type", "X-Request-Id", "connection", "Server", "content-length", "ETag"),
        *("Transfer-Encoding", "CONTENT-LENGTH"),
    ]
)
_values = st.sampled_from(
    [
        *("text/plain", "close", "keep-alive", "Keep-Alive, Close", "5", "0", "007", "5 ,5"),
        *("abc", "a  b", "", "caf\xe9", "5, 5", "x\x01", "chunked", "identity"),
    ]
)


@st.composite
def _header_line(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 30)) == 0:
        return draw(st.sampled_from([b"bad line", b": novalue", b" folded", b"X :y", b"X: a\x00b"]))
    name, value = draw(_names), draw(_values)
    space = draw(st.sampled_from(["", " ", "\t", "  "]))
    trail = draw(st.sampled_from(["", " ", "\t"]))
    line = f"{name}:{space}{value}{trail}".encode("latin-1")
    if draw(st.integers(0, 12)) == 0:
        line += b"\r\n" + draw(st.sampled_from([b" more", b"\tmore", b"   "]))  # obs-fold
    return line


@st.composite
def _body_and_framing(draw: st.DrawFn) -> tuple[list[bytes], bytes]:
    """Framing header lines and the body bytes that follow the head."""
    body = draw(st.binary(max_size=40))
    kind = draw(st.sampled_from(["length", "chunked", "close", "short", "damaged-chunks"]))
    if kind == "length":
        return [b"Content-Length: %d" % len(body)], body
    if kind == "short":
        return [b"Content-Length: %d" % (len(body) + draw(st.integers(1, 9)))], body
    if kind == "close":
        return [], body
    wire = b""
    rest = body
    while rest:
        size = draw(st.integers(1, max(1, len(rest))))
        ext = draw(st.sampled_from([b"", b";name=value", b";x", b" "]))
        digits = draw(st.sampled_from([b"%x", b"%X", b"00%x"])) % size
        wire += b"%s%s\r\n%s\r\n" % (digits, ext, rest[:size])
        rest = rest[size:]
    wire += b"0\r\n" + draw(st.sampled_from([b"\r\n", b"X-Trailer: 1\r\n\r\n", b"\n"]))
    if kind == "damaged-chunks":
        at = draw(st.integers(0, max(0, len(wire) - 1)))
        wire = wire[:at] + draw(st.sampled_from([b"Z", b"\n", b"", b"\r"])) + wire[at + 1 :]
    coding = draw(st.sampled_from([b"chunked", b"Chunked", b"gzip, chunked"]))
    return [b"Transfer-Encoding: " + coding], wire


@st.composite
def answers(draw: st.DrawFn) -> tuple[list[bytes], bool, int]:
    """An answer's bytes, split into reads; whether the server then closes; the cap."""
    version = draw(st.sampled_from([b"1.1", b"1.1", b"1.0"]))
    status = draw(st.sampled_from([200, 200, 404, 500, 204, 304, 302]))
    reason = draw(st.sampled_from([b" OK", b"", b" ", b" Not\tFound", b" caf\xe9"]))
    framing, body = draw(_body_and_framing())
    lines = framing + draw(st.lists(_header_line(), max_size=4))
    lines = draw(st.permutations(lines))
    head = [b"HTTP/" + version + b" %d" % status + reason, *lines]
    if draw(st.integers(0, 8)) == 0:
        head[0] = draw(st.sampled_from([b"HTTP/1.1 20 OK", b"HTTP/11 200 OK", b"http/1.1 200"]))
    end = draw(st.sampled_from([b"\r\n", b"\r\n", b"\n"]))
    wire = end.join(head) + end + end + body
    if draw(st.integers(0, 5)) == 0:
        wire = b"HTTP/1.1 100 Continue\r\n\r\n" + wire
    if draw(st.integers(0, 6)) == 0:
        wire += b"HTTP/1.1 200 OK\r\n"  # bytes after the answer
    cuts = sorted(draw(st.lists(st.integers(0, len(wire)), max_size=5)))
    pieces = [wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)], strict=True)]
    pieces = [p for p in pieces if p] or [b""]
    cap = draw(st.sampled_from([1 << 20, 16, 3]))
    return pieces, draw(st.booleans()), cap


@settings(max_examples=1500, deadline=None)
@given(answers())
def test_the_reader_reads_what_h11_reads(case: tuple[list[bytes], bool, int]) -> None:
    pieces, eof, cap = case
    assert by_reader(pieces, eof, cap) == by_h11(pieces, eof, cap)


# --- each rule by itself --------------------------------------------------------------


def _read(wire: bytes, *, eof: bool = False, cap: int = 1 << 20) -> Read:
    ours = by_reader([wire], eof, cap)
    assert ours == by_h11([wire], eof, cap)  # every case here is one h11 reads the same
    return ours


def test_a_length_framed_answer_on_a_kept_alive_connection() -> None:
    read = _read(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello")
    assert (read.status, read.body, read.reusable) == (200, b"hello", True)
    assert read.headers == (("content-length", "5"), ("x-a", "b"))


def test_bare_line_feeds_and_a_missing_reason_are_read() -> None:
    read = _read(b"HTTP/1.1 200\nContent-Length: 2\n\nok")
    assert (read.status, read.body) == (200, b"ok")


def test_a_folded_header_line_is_joined_by_one_space() -> None:
    read = _read(b"HTTP/1.1 200 OK\r\nX-A: one\r\n  two\r\nContent-Length: 0\r\n\r\n")
    assert dict(read.headers)["x-a"] == "one two"


def test_informational_answers_are_passed_over() -> None:
    wire = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early\r\nLink: x\r\n\r\n"
    read = _read(wire + b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    assert (read.status, read.body) == (404, b"")


def test_chunks_with_extensions_and_trailers_are_read_whole() -> None:
    wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    wire += b"3;a=b\r\nabc\r\n2 \r\nde\r\n0\r\nX-T: 1\r\n\r\n"
    read = _read(wire)
    assert (read.body, read.reusable) == (b"abcde", True)
    assert dict(read.headers)["transfer-encoding"] == "chunked"


def test_chunks_beat_a_length() -> None:
    wire = b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert _read(wire + b"2\r\nok\r\n0\r\n\r\n").body == b"ok"


def test_an_answer_without_length_runs_until_the_server_closes() -> None:
    wire = b"HTTP/1.1 200 OK\r\n\r\nall of it"
    assert _read(wire).outcome == "incomplete"
    read = _read(wire, eof=True)
    assert (read.body, read.reusable) == (b"all of it", False)


def test_no_body_after_204_or_304_whatever_the_length_says() -> None:
    for status in (204, 304):
        read = _read(b"HTTP/1.1 %d X\r\nContent-Length: 7\r\n\r\n" % status)
        assert (read.status, read.body, read.reusable) == (status, b"", True)


@pytest.mark.parametrize(
    ("wire", "reusable"),
    [
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", False),
        (b"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, CLOSE\r\nContent-Length: 0\r\n\r\n", False),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", False),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200", False),  # more came
        (b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", True),
    ],
)
def test_a_connection_is_kept_only_after_a_clean_http11_answer(wire: bytes, reusable: bool) -> None:
    assert _read(wire).reusable is reusable


@pytest.mark.parametrize(
    "wire",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n",  # conflicting list
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: " + b"9" * 21 + b"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n folded first\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX A: b\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX-A: b\x00c\r\n\r\n",
        b"\r\nHTTP/1.1 200 OK\r\n\r\n",
        b"SSH-2.0-OpenSSH\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX",  # footer
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n",  # size
    ],
)
def test_damaged_answers_are_refused(wire: bytes) -> None:
    assert _read(wire).outcome == "error"


def test_agreeing_repeated_lengths_are_one_header() -> None:
    read = _read(b"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nok")
    assert (read.headers, read.body) == ((("content-length", "2"),), b"ok")


def test_a_body_cut_short_is_an_error_that_says_how_much_came() -> None:
    reader = ResponseReader(max_head_bytes=HEAD_BOUND, max_body_bytes=100)
    assert not reader.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
    with pytest.raises(RemoteProtocolError, match=r"received 3 bytes, expected 10"):
        reader.feed_eof()


def test_nothing_at_all_is_not_an_answer_and_not_an_error() -> None:
    reader = ResponseReader(max_head_bytes=HEAD_BOUND, max_body_bytes=100)
    assert reader.feed_eof() is False
    assert not reader.received


def test_a_length_past_the_cap_reads_nothing_and_keeps_no_connection() -> None:
    reader = ResponseReader(max_head_bytes=HEAD_BOUND, max_body_bytes=4)
    assert reader.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")
    assert (reader.too_large, reader.body, reader.reusable) == (True, None, False)


def test_chunks_past_the_cap_are_dropped_as_they_arrive() -> None:
    reader = ResponseReader(max_head_bytes=HEAD_BOUND, max_body_bytes=5)
    assert not reader.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
    assert reader.feed(b"3\r\ndef\r\n")
    assert (reader.too_large, reader.body) == (True, None)


def test_a_head_past_its_bound_is_refused_as_soon_as_the_bound_is_passed() -> None:
    reader = ResponseReader(max_head_bytes=1000, max_body_bytes=100)
    assert not reader.feed(b"HTTP/1.1 200 OK\r\nX: " + b"a" * 900)
    with pytest.raises(RemoteProtocolError, match="longer than 1000 bytes"):
        reader.feed(b"a" * 200)


def test_a_chunk_size_line_past_the_bound_is_refused() -> None:
    reader = ResponseReader(max_head_bytes=100, max_body_bytes=100)
    reader.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    with pytest.raises(RemoteProtocolError, match="chunk-size line longer than 100"):
        reader.feed(b"1;" + b"x" * 200)


def test_an_error_quotes_no_more_than_a_short_prefix() -> None:
    reader = ResponseReader(max_head_bytes=HEAD_BOUND, max_body_bytes=100)
    with pytest.raises(RemoteProtocolError) as caught:
        reader.feed(b"NOT-HTTP " + b"s3cr3t" * 1000 + b"\r\n\r\n")
    assert len(str(caught.value)) < 120
    assert str(caught.value).endswith("…")


def test_one_byte_at_a_time_reads_the_same_answer() -> None:
    """Every search resumes where the last stopped and consumed bytes are dropped in
    bulk: a large answer fed byte by byte is read whole (quadratic work would not end
    within the suite's time)."""
    body = bytes(range(256)) * 1200  # 307,200 bytes
    chunked = b"".join(
        b"%x\r\n%s\r\n" % (len(body[i : i + 999]), body[i : i + 999])
        for i in range(0, len(body), 999)
    )
    wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked + b"0\r\n\r\n"
    reader = ResponseReader(max_head_bytes=HEAD_BOUND, max_body_bytes=1 << 20)
    done = [reader.feed(wire[i : i + 1]) for i in range(len(wire))]
    assert done.index(True) == len(wire) - 1
    assert reader.body == body


def test_informational_answers_without_end_are_refused() -> None:
    reader = ResponseReader(max_head_bytes=HEAD_BOUND, max_body_bytes=100)
    continues = b"HTTP/1.1 100 Continue\r\n\r\n"
    assert not reader.feed(continues * MAX_INFORMATIONAL)
    with pytest.raises(RemoteProtocolError, match="more than 32 informational answers"):
        reader.feed(continues)


def test_thousands_of_repeats_of_one_header_are_joined_in_order() -> None:
    head = b"".join(b"X-A: %d\r\n" % i for i in range(5000))
    read = _read(b"HTTP/1.1 200 OK\r\n" + head + b"Content-Length: 0\r\n\r\n")
    assert dict(read.headers)["x-a"] == ", ".join(str(i) for i in range(5000))
