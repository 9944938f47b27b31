"""The one scrubber every string this package renders or saves goes through.

A server is not trusted: it can reflect the API key into a header, a redirect target or
an error body, put a password in a ``Location``, and put ESC, NUL or newlines in a
served model id.  A person can type ``http://alice:pw@host`` on the command line.  So
every string that leaves the package — an error line, a report line, a table cell, a
JSON document, a recorded header or transport detail saved in ``manifest.json`` — is
passed through :func:`scrub`, which

* replaces every secret this process was given (:func:`remember`: the API key of a
  probe) and its percent-encoded form with ``***`` — wherever it occurs when it has at
  least :data:`SHORT_SECRET` characters, and only where it stands alone as a token (no
  letter, digit, ``-``, ``_`` or ``.`` on either side) when shorter, so a key such as
  ``"a"`` or ``"1"`` does not turn every ``a`` or ``1`` of a report into ``***`` (a key
  that short is guessable anyway: ``probe`` says so once on stderr);
* replaces URL userinfo (``scheme://user:password@``) with ``***@``, the credential of an
  ``Authorization``/``Proxy-Authorization`` header or a ``Bearer``/``Basic`` token with
  ``***``, and the value of a ``token=``/``api_key=``/``password=``-style parameter with
  ``***``;
* for text (``form="line"``) escapes every control and invisible format character
  (C0, DEL, C1, bidirectional overrides, zero-width characters, line and paragraph
  separators, lone surrogates) as ``\\xNN``/``\\uNNNN``, so one field is one line and a
  terminal interprets nothing; for a JSON text (``form="json"``) escapes those JSON
  leaves raw as ``\\uNNNN`` (the same string to a JSON reader).

:func:`scrub_body` removes the known secrets from a raw body (bytes), the only edit the
probe makes to what a server sent.
"""

from __future__ import annotations

import functools
import re
import threading
import urllib.parse
from collections.abc import Iterable
from typing import Final, Literal

__all__ = ["REDACTED", "SHORT_SECRET", "forget_all", "remember", "scrub", "scrub_body"]

REDACTED: Final = "***"
#: A secret shorter than this is scrubbed only where it stands alone as a token.
SHORT_SECRET: Final = 8
_TOKEN_CHARS: Final = "A-Za-z0-9_.\\-"  # noqa: S105  # a character class, not a secret

_lock = threading.Lock()
_known: frozenset[str] = frozenset()


def remember(secret: str | None) -> None:
    """Scrub ``secret`` from everything this process renders or saves from now on."""
    global _known  # noqa: PLW0603  # one process-wide set, swapped whole under the lock
    if not secret:
        return
    with _lock:
        _known = _known | {secret}


def forget_all() -> None:
    """Forget every remembered secret (tests only)."""
    global _known  # noqa: PLW0603
    with _lock:
        _known = frozenset()


def _forms(secrets: Iterable[str]) -> tuple[str, ...]:
    """Each secret as given and percent-encoded, longest first (a key inside a key)."""
    return _forms_of(_known, tuple(secrets))


@functools.lru_cache(maxsize=64)
def _forms_of(known: frozenset[str], secrets: tuple[str, ...]) -> tuple[str, ...]:
    # Cached: every recorded header of every exchange is scrubbed, and the secrets
    # change once a probe, if at all.
    found = {s for s in (*known, *secrets) if s}
    found |= {urllib.parse.quote(s, safe="") for s in found}
    found |= {urllib.parse.quote_plus(s, safe="") for s in found}
    return tuple(sorted(found, key=len, reverse=True))


def _short_re(secret: str) -> re.Pattern[str]:
    """A short secret where it stands alone: no token character on either side."""
    return re.compile(f"(?<![{_TOKEN_CHARS}]){re.escape(secret)}(?![{_TOKEN_CHARS}])")


def _short_re_bytes(secret: bytes) -> re.Pattern[bytes]:
    chars = _TOKEN_CHARS.encode()
    return re.compile(b"(?<![" + chars + b"])" + re.escape(secret) + b"(?![" + chars + b"])")


_USERINFO_RE: Final = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#\s@]*(?:@[^/?#\s@]*)*@")
_AUTH_HEADER_RE: Final = re.compile(
    r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)"
    r"(?:(bearer|basic|digest|token)(?:\s+|%20|\+))?[^\s\"',;&]+"
)
_SCHEME_TOKEN_RE: Final = re.compile(
    r"\b([Bb]earer|BEARER|Basic|BASIC)(?:\s+|%20|\+)[^\s\"',;&)\]}]+"
)
_PARAM_RE: Final = re.compile(
    r"(?i)\b((?:api[_-]?key|access[_-]?token|refresh[_-]?token|token|password|passwd|pwd|"
    r"secret|auth)=)[^&\s#\"',;]+"
)
#: What json.dumps leaves raw that a terminal may act on: DEL, C1, the soft hyphen, the
#: Arabic letter mark, the Mongolian vowel separator, zero-width and bidirectional
#: characters, line and paragraph separators, word joiners and invisible operators, the
#: BOM, interlinear annotation marks, and lone surrogates.  Text escapes these and C0.
_JSON_RAW: Final = (
    "\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\ufeff\ufff9-\ufffb\ud800-\udfff"
)
_CONTROL_RE: Final = re.compile(f"[\x00-\x1f{_JSON_RAW}]")
_JSON_RAW_RE: Final = re.compile(f"[{_JSON_RAW}]")  # json.dumps escapes C0 itself


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def scrub(
    text: str, *, secrets: Iterable[str] = (), form: Literal["line", "json", "secrets"] = "line"
) -> str:
    """``text`` with every secret removed and (by ``form``) its control characters escaped.

    ``"line"``: one field or one line of text, every control character escaped.
    ``"json"``: a JSON text from :func:`json.dumps`, the controls JSON leaves raw escaped.
    ``"secrets"``: secrets removed only (a value kept as data, such as a recorded header).
    """
    for secret in _forms(secrets):
        if len(secret) >= SHORT_SECRET:
            text = text.replace(secret, REDACTED)
        elif secret in text:
            text = _short_re(secret).sub(REDACTED, text)
    text, lower = _credential_shapes(text)
    if text.isprintable() if len(text) < _LONG else _printable(lower):
        # Every character either form escapes (C0, DEL, C1, format characters, line and
        # paragraph separators, surrogates) is non-printable: nothing to escape.
        return text
    if form == "line":
        return _CONTROL_RE.sub(_escape, text)
    if form == "json":
        return _JSON_RAW_RE.sub(_json_escape, text)
    return text


#: From this length on, printability is read by :func:`_printable` (cheaper on long
#: text, dearer on a header value).
_LONG: Final = 256
#: Printable ASCII: what :func:`_printable` takes out before looking at the rest.
_PRINTABLE_ASCII: Final = bytes(range(0x20, 0x7F))


def _printable(folded: bytes) -> bool:
    """Whether the text :func:`_folded` made ``folded`` of is printable
    (:meth:`str.isprintable`).  Printable ASCII, nearly all of any text here, is taken
    out first (one table pass, ~6x cheaper than ``isprintable`` on 15 KB); what is left
    is ASCII controls and whole UTF-8 sequences, looked at as characters.  Folding and
    lower-casing map printable letters to printable letters, so the answer is the
    text's own."""
    rest = folded.translate(None, _PRINTABLE_ASCII)
    return not rest or rest.decode("utf-8", "surrogatepass").isprintable()


#: The words each credential pattern cannot match without (lower case): a pattern runs
#: only on text that holds one of its words.  Case-insensitive matching of an ASCII
#: letter also accepts four non-ASCII letters (U+0130, U+0131, U+017F, U+212A; the
#: ``re`` documentation, IGNORECASE), so those four are folded to the ASCII letter they
#: match before the words are looked for: the shortcut then holds for any text.  A
#: report or a JSON document holds none of these words, and the four patterns, which no
#: literal anchors, cost 1-2 ms each on a 13 KB document.
_PARAM_WORDS: Final = (b"key=", b"token=", b"password=", b"passwd=", b"pwd=", b"secret=", b"auth=")
_FOLD: Final = {"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"}
_FOLD_RE: Final = re.compile("[\u0130\u0131\u017f\u212a]")


def _folded(text: str) -> bytes:
    """``text``'s ASCII letters lower-cased, the four letters folded to the ASCII letters
    they match, as UTF-8 (no other character can match a word's letters; lower-casing
    bytes is several times cheaper than lower-casing a non-ASCII str)."""
    if not text.isascii() and any(letter in text for letter in _FOLD):
        text = _FOLD_RE.sub(lambda m: _FOLD[m.group(0)], text)
    return text.encode("utf-8", "surrogatepass").lower()


def _credential_shapes(text: str) -> tuple[str, bytes]:
    """URL userinfo, authorization headers, bearer/basic tokens, secret parameters → ***;
    returns the text and its :func:`_folded` bytes."""
    if "://" in text and "@" in text:
        text = _USERINFO_RE.sub(rf"\1{REDACTED}@", text)
    lower = _folded(text)
    if b"authorization" in lower:
        text = _AUTH_HEADER_RE.sub(rf"\1{REDACTED}", text)
        lower = _folded(text)
    if b"bearer" in lower or b"basic" in lower:
        text = _SCHEME_TOKEN_RE.sub(rf"\1 {REDACTED}", text)
        lower = _folded(text)
    if "=" in text and _has_param_word(lower):
        text = _PARAM_RE.sub(rf"\1{REDACTED}", text)
        lower = _folded(text)
    return text, lower


#: Past this many ``=``, :func:`_has_param_word` searches for each word instead.
_MANY_EQUALS: Final = 64


def _has_param_word(lower: bytes) -> bool:
    """Whether one of :data:`_PARAM_WORDS` is in ``lower``.  Each word ends with ``=``,
    of which a rendered text has few: the words are looked for where each ``=`` ends
    (seven substring searches of a 15 KB document cost ~50 us, as its first letters
    are common); a text of many ``=`` is searched word by word, as before."""
    if lower.count(b"=") > _MANY_EQUALS:
        return any(word in lower for word in _PARAM_WORDS)
    at = lower.find(b"=")
    while at != -1:
        if lower.endswith(_PARAM_WORDS, 0, at + 1):
            return True
        at = lower.find(b"=", at + 1)
    return False


def scrub_body(body: bytes, *, secrets: Iterable[str] = ()) -> bytes:
    """``body`` with every known secret (as given and percent-encoded) replaced by ``***``."""
    for secret in _forms(secrets):
        raw = secret.encode("utf-8", "surrogateescape")
        if len(secret) >= SHORT_SECRET:
            body = body.replace(raw, REDACTED.encode())
        elif raw in body:
            body = _short_re_bytes(raw).sub(REDACTED.encode(), body)
    return body
