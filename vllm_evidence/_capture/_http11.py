"""One HTTP/1.1 response to a GET, read from bytes as they arrive (no I/O here).

The probe's connections (:mod:`vllm_evidence._capture._wire`) feed each read into a
:class:`ResponseReader` and learn when the answer is complete, what it was, and whether
the connection can carry the next request.  The grammar is h11's (the HTTP/1.1 reader
httpcore uses), and the test suite reads generated responses with both and requires the
same answer or an error from both (``tests/capture/test_http11.py``).

**Why not h11 itself: measured, h11 costs the fleet target.**  The target is a fleet of
200 read at least 15x faster than one server after another (``docs/performance.md``);
with this reader the command meets it on a quiet host by a margin of 0-20 % (15.1-18.3x),
and a fleet is bound by its CPU per server.  With h11 in this reader's place
(``benchmarks/bench_http_reader.py``'s ``H11Reader``: the same interface and bounds),
interleaved in one run on 2026-12-02, on a host running at a quarter of its quiet pace::

    python benchmarks/bench_http_reader.py --fleet --pairs 9

the library's fleet of 200 took **1.144x the CPU per server with h11** (median of 9
rounds; 6.47 against 7.20 ms) and 1.26x the wall time, its speed-up over one after
another 6.21x against 5.39x; a second such run, 1.174x.  The reader alone
(``bench_http_reader.py --pairs 5``): h11 3.6x the CPU of one batch's ten answers.
``bench_fleet.py --pairs 5 --also-pythonpath DIR`` (DIR: a tree with ``H11Reader`` in
place; the command, fresh processes) read 7.09x with this reader against 4.85x with h11
(medians) in one run and 3.83x against 4.00x in a second, both far below 15x on that
host and within its noise.  So h11 would take most of the margin the command has: the
reader stays, and this is what it reads:

* a head is a status line (``HTTP/d.d SP 3DIGIT [SP reason]``) and header lines up to a
  blank line; lines end in CRLF or a bare LF; a line that begins with blanks continues
  the one before it (obsolete folding, joined by one space); informational answers
  (1xx) are passed over;
* ``Content-Length`` (repeats and comma lists must agree; at most 20 digits) and
  ``Transfer-Encoding: chunked`` (the only coding read; it beats a length); 204 and 304
  have no body; without either, the body runs until the server closes;
* chunks: a hex size of at most 20 digits, extensions ignored, CRLF after each chunk's
  data, trailer lines read and dropped;
* the connection is kept for another request only after an HTTP/1.1 answer that ended
  cleanly, without ``Connection: close``, and with no byte after it.

Hostile bytes: a head (and each chunk-size or trailer line) is bounded by
``max_head_bytes`` and found by a search that resumes where the last one stopped, so
reading is linear in the bytes however they are split; a body is counted as it arrives
and dropped at ``max_body_bytes`` (one declared past the cap is not read at all); no
error text quotes more than a short prefix of what the server sent.
"""

from __future__ import annotations

import functools
import re
from typing import Final, final

__all__ = [
    "MAX_INFORMATIONAL",
    "LocalProtocolError",
    "ProtocolError",
    "RemoteProtocolError",
    "ResponseReader",
    "declared_too_large",
    "header_line_ok",
    "request_bytes",
]


class ProtocolError(Exception):
    """Bytes that are not HTTP/1.1, either way."""


class RemoteProtocolError(ProtocolError):
    """The server's bytes are not an HTTP/1.1 response."""


class LocalProtocolError(ProtocolError):
    """A request this client will not send (nothing was sent)."""


_TOKEN = rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+"
_FIELD_VCHAR = rb"[^\x00\s]"
#: A header value: visible characters (and obs-text) with blanks inside only.
_FIELD_VALUE = rb"(?:" + _FIELD_VCHAR + rb"+(?:[ \t]+" + _FIELD_VCHAR + rb"+)*)?"
_STATUS_LINE = re.compile(rb"HTTP/([0-9]\.[0-9]) ([0-9]{3})(?: (?:[ \t]|" + _FIELD_VCHAR + rb")*)?")
_HEADER_LINE = re.compile(rb"(" + _TOKEN + rb"):[ \t]*(" + _FIELD_VALUE + rb")[ \t]*")
#: A head as nearly every server writes it: the status line and each header line ended
#: by CRLF, no line folded.  Read by two matches; any other head line by line.
_PLAIN_HEAD = re.compile(
    _STATUS_LINE.pattern + rb"\r\n((?:" + _HEADER_LINE.pattern + rb"\r\n)*)\r\n"
)
_PLAIN_FIELD = re.compile(_HEADER_LINE.pattern + rb"\r\n")
_REQUEST_NAME = re.compile(_TOKEN)
_REQUEST_VALUE = re.compile(_FIELD_VALUE)
_CHUNK_HEADER = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;.*)?[ \t]*\r\n")
_BLANK_LINE = re.compile(rb"\n\r?\n")
_FOLD = re.compile(rb"[ \t]+")
_DIGITS = re.compile(rb"[0-9]+")

#: Longest Content-Length read (h11's bound).
_LENGTH_DIGITS: Final = 20
#: Most informational (1xx) answers passed over before the answer: a server that sends
#: them without end is refused rather than read until the request's time runs out.
MAX_INFORMATIONAL: Final = 32
#: How much of a server's bytes an error message quotes.
_QUOTED: Final = 40

# Reader states.
_HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_END, _TRAILER, _UNTIL_CLOSE, _DONE = range(8)


def declared_too_large(content_length: str, max_body_bytes: int) -> bool:
    """Whether a ``Content-Length`` value declares a body past the cap (read without
    converting a number of more than 15 digits; a value that is no number declares
    nothing and the body is read up to the cap)."""
    return (
        content_length.isascii()
        and content_length.isdigit()
        and (len(content_length) > 15 or int(content_length) > max_body_bytes)
    )


#: The refusal of a request line or header that is not ASCII (its value may be a key).
_NOT_ASCII: Final = "illegal request header: not ASCII (its value is not shown)"


def request_bytes(
    path: str, authority: str, headers: list[tuple[str, str]], *, json_body: bytes | None = None
) -> bytes:
    """A GET of ``path`` with ``Host: authority`` then ``headers``, as bytes, by the same
    grammar the answers are read with; :class:`LocalProtocolError` (quoting nothing: a
    value can be a credential) for a header that would not be one header line.

    With ``json_body``, a POST of it instead (``Content-Type: application/json`` and its
    ``Content-Length`` after ``headers``): the gate's generation canary, never a probe."""
    method = "GET" if json_body is None else "POST"
    try:
        line = f"{method} {path} HTTP/1.1\r\nHost: {authority}\r\n".encode("ascii")
    except UnicodeEncodeError:
        raise LocalProtocolError(_NOT_ASCII) from None
    if json_body is None:
        return line + _header_block(tuple(headers))
    framing = (("Content-Type", "application/json"), ("Content-Length", str(len(json_body))))
    return line + _header_block((*headers, *framing)) + json_body


@functools.lru_cache(maxsize=16)
def _header_block(headers: tuple[tuple[str, str], ...]) -> bytes:
    """``headers`` as header lines and the blank line, each checked.  Cached: every
    request of a probe (of a fleet, as a rule) carries the same headers."""
    try:
        wire = [(name.encode("ascii"), value.encode("ascii")) for name, value in headers]
    except UnicodeEncodeError:
        raise LocalProtocolError(_NOT_ASCII) from None
    for name, value in wire:
        if not _REQUEST_NAME.fullmatch(name) or not _REQUEST_VALUE.fullmatch(value):
            msg = "illegal request header (its value is not shown)"
            raise LocalProtocolError(msg)
    return b"".join(name + b": " + value + b"\r\n" for name, value in wire) + b"\r\n"


def header_line_ok(name: str, value: str) -> bool:
    """Whether ``name: value`` is one request header line by the grammar
    :func:`request_bytes` writes with (a token, then a field value in ASCII)."""
    try:
        wire_name, wire_value = name.encode("ascii"), value.encode("ascii")
    except UnicodeEncodeError:
        return False
    return bool(_REQUEST_NAME.fullmatch(wire_name) and _REQUEST_VALUE.fullmatch(wire_value))


def _quote(data: bytes | bytearray) -> str:
    shown = bytes(data[:_QUOTED])
    return repr(shown) + ("…" if len(data) > _QUOTED else "")


def _lines(head: bytes) -> list[bytes]:
    """A head's lines, CRLF or LF, without the blank line that ends it."""
    lines = head.split(b"\n")
    del lines[-2:]
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


def _header_fields(lines: list[bytes]) -> list[tuple[bytes, bytes]]:
    """Header lines (obsolete folding undone) as (name, value) pairs, each checked."""
    fields: list[tuple[bytes, bytes]] = []
    last: bytes | None = None
    for line in lines:
        fold = _FOLD.match(line)
        if fold is not None:
            if last is None:
                msg = "continuation line at start of headers"
                raise RemoteProtocolError(msg)
            last += b" " + line[fold.end() :]
            continue
        if last is not None:
            fields.append(_field(last))
        last = line
    if last is not None:
        fields.append(_field(last))
    return fields


def _field(line: bytes) -> tuple[bytes, bytes]:
    found = _HEADER_LINE.fullmatch(line)
    if found is None:
        msg = f"illegal header line: {_quote(line)}"
        raise RemoteProtocolError(msg)
    return found.group(1).lower(), found.group(2)


def _normalized(fields: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """h11's checks and rewrites: one agreed Content-Length, one ``chunked`` coding."""
    out: list[tuple[bytes, bytes]] = []
    length: bytes | None = None
    coded = False
    for name, value in fields:
        if name == b"content-length":
            lengths = {part.strip() for part in value.split(b",")}
            if len(lengths) != 1:
                msg = "conflicting Content-Length headers"
                raise RemoteProtocolError(msg)
            agreed = lengths.pop()
            if not _DIGITS.fullmatch(agreed) or len(agreed) > _LENGTH_DIGITS:
                msg = "bad Content-Length"
                raise RemoteProtocolError(msg)
            if length is None:
                length = agreed
                out.append((name, agreed))
            elif length != agreed:
                msg = "conflicting Content-Length headers"
                raise RemoteProtocolError(msg)
            # an agreeing repeat: h11 reports the header once
        elif name == b"transfer-encoding":
            if coded:
                msg = "multiple Transfer-Encoding headers"
                raise RemoteProtocolError(msg)
            if value.lower() != b"chunked":
                msg = "Only Transfer-Encoding: chunked is supported"
                raise RemoteProtocolError(msg)
            coded = True
            out.append((name, b"chunked"))
        else:
            out.append((name, value))
    return out


def _decoded(fields: list[tuple[bytes, bytes]]) -> tuple[tuple[str, str], ...]:
    """Header pairs decoded as httpx decodes them (names lower-case, values UTF-8 when
    they are valid UTF-8, else latin-1), repeated names joined with ``, `` in first order."""
    merged: dict[str, list[str]] = {}
    for name, value in fields:
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            text = value.decode("latin-1")
        merged.setdefault(name.decode("ascii"), []).append(text)
    # Joined once a name: a head of thousands of repeats of one name costs no more than
    # its length (joining as they came would copy the growing value each time).
    return tuple((key, ", ".join(values)) for key, values in merged.items())


def _comma_values(fields: list[tuple[bytes, bytes]], name: bytes) -> list[bytes]:
    return [
        part.strip().lower()
        for key, value in fields
        if key == name
        for part in value.split(b",")
        if part.strip()
    ]


@final
class ResponseReader:
    """Reads the answer to one GET from bytes fed in as they arrive.

    :meth:`feed` and :meth:`feed_eof` return ``True`` once the answer is complete (then
    :attr:`status`, :attr:`headers`, :attr:`body` — ``None`` with :attr:`too_large` when
    the body passed the cap — and :attr:`reusable` are set) and raise
    :class:`RemoteProtocolError` on bytes that are not an answer.  :attr:`received` says
    whether any byte came at all.
    """

    __slots__ = (
        "_buffer",
        "_chunks",
        "_informational",
        "_keep_alive",
        "_max_body",
        "_max_head",
        "_remaining",
        "_search",
        "_size",
        "_start",
        "_state",
        "body",
        "headers",
        "received",
        "reusable",
        "status",
        "too_large",
    )

    def __init__(self, *, max_head_bytes: int, max_body_bytes: int) -> None:
        self._max_head = max_head_bytes
        self._max_body = max_body_bytes
        self._buffer = bytearray()
        self._start = 0  # the first byte not yet read
        self._search = 0  # where the next line search resumes
        self._state = _HEAD
        self._remaining = 0
        self._size = 0
        self._chunks: list[bytes] = []
        self._keep_alive = False
        self._informational = 0
        self.received: bool = False
        self.status: int = 0
        self.headers: tuple[tuple[str, str], ...] = ()
        self.body: bytes | None = None
        self.too_large: bool = False
        self.reusable: bool = False

    @property
    def done(self) -> bool:
        """Whether the answer is complete."""
        return self._state == _DONE

    def feed(self, data: bytes | memoryview) -> bool:
        """Take the next bytes the server sent; ``True`` once the answer is complete."""
        if self._state == _DONE:
            # Bytes after the answer: the connection is not kept.
            self.reusable = False
            return True
        if data:
            self.received = True
            self._buffer += data
        self._advance()
        return self._state == _DONE

    def feed_eof(self) -> bool:
        """The server closed its side; ``True`` if that completes the answer."""
        if self._state == _DONE:
            return True
        if self._state == _UNTIL_CLOSE:
            self._finish()
            return True
        if not self.received:
            return False  # nothing at all came back: the caller decides what that means
        msg = "peer closed connection without sending complete message"
        if self._state == _LENGTH:
            got = self._size
            msg += f" body (received {got} bytes, expected {got + self._remaining})"
        raise RemoteProtocolError(msg)

    # -- states ------------------------------------------------------------------------

    def _advance(self) -> None:
        while True:
            state = self._state
            if state == _HEAD:
                if not self._read_head():
                    return
            elif state == _LENGTH:
                if not self._take(self._remaining):
                    return
                if self._remaining == 0:
                    self._finish()
            elif state == _UNTIL_CLOSE:
                self._take(len(self._buffer) - self._start)
                return
            elif state == _CHUNK_SIZE:
                if not self._read_chunk_size():
                    return
            elif state == _CHUNK_DATA:
                if not self._take(self._remaining):
                    return
                if self._remaining == 0:
                    self._state = _CHUNK_END
            elif state == _CHUNK_END:
                if len(self._buffer) - self._start < 2:
                    if bytes(self._buffer[self._start : self._start + 1]) not in (b"", b"\r"):
                        self._malformed_chunk_end()
                    return
                if self._buffer[self._start : self._start + 2] != b"\r\n":
                    self._malformed_chunk_end()
                self._consume(2)
                self._state = _CHUNK_SIZE
            elif state == _TRAILER:
                if not self._read_trailer():
                    return
            else:  # _DONE
                return
            if self._state == _DONE:
                return

    def _consume(self, count: int) -> None:
        self._start += count
        self._search = self._start
        if self._start > 65536 and self._start * 2 > len(self._buffer):
            del self._buffer[: self._start]
            self._search -= self._start
            self._start = 0

    def _find_lines_end(self) -> int:
        """End of the first blank line at or after the read position, or -1."""
        buffer, start = self._buffer, self._start
        found = _BLANK_LINE.search(buffer, max(start, self._search - 2))
        if found is None:
            self._search = len(buffer)
            if len(buffer) - start > self._max_head:
                msg = f"a head or trailer longer than {self._max_head} bytes"
                raise RemoteProtocolError(msg)
            return -1
        end = found.end()
        if end - start > self._max_head:
            msg = f"a head or trailer longer than {self._max_head} bytes"
            raise RemoteProtocolError(msg)
        return end

    def _read_head(self) -> bool:
        buffer, start = self._buffer, self._start
        first = bytes(buffer[start : start + 2])
        if first[:1] == b"\n" or first == b"\r\n":
            msg = "no response line received"
            raise RemoteProtocolError(msg)
        end = self._find_lines_end()
        if end < 0:
            return False
        head = bytes(buffer[start:end])
        self._consume(end - start)
        plain = _PLAIN_HEAD.fullmatch(head)
        if plain is not None:
            version, code_text = plain.group(1), plain.group(2)
            fields = _normalized(
                [(name.lower(), value) for name, value in _PLAIN_FIELD.findall(plain.group(3))]
            )
        else:
            lines = _lines(head)
            status = _STATUS_LINE.fullmatch(lines[0])
            if status is None:
                msg = f"illegal status line: {_quote(lines[0])}"
                raise RemoteProtocolError(msg)
            version, code_text = status.group(1), status.group(2)
            fields = _normalized(_header_fields(lines[1:]))
        code = int(code_text)
        if code < 200:
            self._informational += 1
            if self._informational > MAX_INFORMATIONAL:
                msg = f"more than {MAX_INFORMATIONAL} informational answers"
                raise RemoteProtocolError(msg)
            return True  # informational: read the next head
        self.status = code
        self.headers = _decoded(fields)
        self._keep_alive = version >= b"1.1" and b"close" not in _comma_values(
            fields, b"connection"
        )
        length = next((value for name, value in fields if name == b"content-length"), None)
        if code in (204, 304):
            self._remaining = 0
            self._state = _LENGTH
        elif any(name == b"transfer-encoding" for name, _ in fields):
            self._state = _CHUNK_SIZE
        elif length is not None:
            if declared_too_large(length.decode("ascii"), self._max_body):
                self._cut_off()
                return True
            self._remaining = int(length)
            self._state = _LENGTH
        else:
            self._keep_alive = False
            self._state = _UNTIL_CLOSE
        return True

    def _take(self, most: int) -> bool:
        """Move up to ``most`` body bytes from the buffer; ``False`` when none was there."""
        available = len(self._buffer) - self._start
        count = min(most, available)
        if count <= 0:
            return most == 0
        self._size += count
        if self._size > self._max_body:
            self._cut_off()
            return True
        with memoryview(self._buffer) as view:  # one copy (a bytearray slice is another)
            self._chunks.append(bytes(view[self._start : self._start + count]))
        self._consume(count)
        if self._state != _UNTIL_CLOSE:
            self._remaining -= count
        return True

    def _read_chunk_size(self) -> bool:
        buffer, start = self._buffer, self._start
        end = buffer.find(b"\r\n", max(start, self._search - 1))
        if end < 0:
            self._search = len(buffer)
            if len(buffer) - start > self._max_head:
                msg = f"a chunk-size line longer than {self._max_head} bytes"
                raise RemoteProtocolError(msg)
            return False
        line = bytes(buffer[start : end + 2])
        found = _CHUNK_HEADER.fullmatch(line)
        if found is None:
            msg = f"illegal chunk header: {_quote(line)}"
            raise RemoteProtocolError(msg)
        self._consume(end + 2 - start)
        self._remaining = int(found.group(1), 16)
        self._state = _CHUNK_DATA if self._remaining else _TRAILER
        return True

    def _malformed_chunk_end(self) -> None:
        got = bytes(self._buffer[self._start : self._start + 2])
        msg = f"malformed chunk footer: {got!r} (expected b'\\r\\n')"
        raise RemoteProtocolError(msg)

    def _read_trailer(self) -> bool:
        buffer, start = self._buffer, self._start
        first = bytes(buffer[start : start + 2])
        if first[:1] == b"\n":
            self._consume(1)
        elif first == b"\r\n":
            self._consume(2)
        else:
            if first in (b"", b"\r"):
                return False
            end = self._find_lines_end()
            if end < 0:
                return False
            _normalized(_header_fields(_lines(bytes(buffer[start:end]))))
            self._consume(end - start)
        self._finish()
        return True

    def _finish(self) -> None:
        self._state = _DONE
        self.body = b"".join(self._chunks)
        self._chunks = []
        self.reusable = self._keep_alive and self._start == len(self._buffer)

    def _cut_off(self) -> None:
        self._state = _DONE
        self.too_large = True
        self.body = None
        self._chunks = []
        self.reusable = False
