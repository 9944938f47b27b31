"""``_scrub.scrub``: the one function every rendered and saved string passes through."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from vllm_evidence._scrub import REDACTED, SHORT_SECRET, remember, scrub, scrub_body


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        ("http://alice:S3cretPW@h:1/?x=1 must not carry a query", "S3cretPW"),
        ("https://u:p%40ss@h/x", "p%40ss"),
        ("see http://tok@h", "tok@"),
        ("Authorization: Bearer abc.def", "abc.def"),
        ('{"authorization": "Basic dXNlcjpwdw=="}', "dXNlcjpwdw=="),
        ("illegal header line: bytearray(b'X-Echo Bearer zz9')", "zz9"),
        ("http://h/login?token=T0K3N&auth=Bearer%20Q", "T0K3N"),
        ("http://h/login?api_key=K&x=1", "api_key=K"),
    ],
)
def test_credentials_in_text_are_removed(text: str, gone: str) -> None:
    out = scrub(text)
    assert gone not in out
    assert REDACTED in out


def test_a_remembered_secret_is_removed_as_given_and_percent_encoded() -> None:
    remember("K+y/1=")
    assert scrub("a K+y/1= b K%2By%2F1%3D c") == f"a {REDACTED} b {REDACTED} c"
    assert scrub_body(b"x K+y/1= y") == b"x *** y"


def test_a_secret_passed_in_is_removed_without_being_remembered() -> None:
    assert scrub("one XYZ", secrets=["XYZ"]) == f"one {REDACTED}"
    assert scrub("one XYZ") == "one XYZ"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\x1b[31mb", "a\\x1b[31mb"),
        ("nul\x00", "nul\\x00"),
        ("two\nlines\r", "two\\x0alines\\x0d"),
        ("c1\x9b", "c1\\x9b"),
        ("bidi\u202egpj.exe", "bidi\\u202egpj.exe"),
        ("zw\u200bj", "zw\\u200bj"),
        ("lone\ud800", "lone\\ud800"),
    ],
)
def test_text_has_every_control_character_escaped(raw: str, shown: str) -> None:
    assert scrub(raw) == shown


def test_json_text_keeps_its_meaning_and_loses_raw_controls() -> None:
    document = {"id": "m\x1b\x9b\u202e\x7f", "url": "http://a:pw@h"}
    text = scrub(json.dumps(document, ensure_ascii=False), form="json")
    assert not any(ch in text for ch in "\x1b\x9b\u202e\x7f")
    assert json.loads(text) == {"id": "m\x1b\x9b\u202e\x7f", "url": "http://***@h"}


def test_ordinary_report_text_is_unchanged() -> None:
    text = "capacity ESTABLISHED 2 engines × 41,216 tokens → basic health: token budget"
    assert scrub(text) == text


# --- the word shortcut: the same output as every pattern run on every text -------------

_PIECES = (
    "http://",
    "https://u:p@",
    "@",
    "Authorization: ",
    "proxy-AUTHORIZATION=",
    "Bearer ",
    "BASIC ",
    "basic%20",
    "token=",
    "API-KEY=",
    "Password=",
    "auth=",
    "x",
    " ",
    "&",
    "\n",
    "\x7f",
    "é",
    "\u0130",  # İ: matches "i" case-insensitively
    "\u017f",  # long s: matches "s"
    "\u212a",  # Kelvin sign: matches "k"
    "\u202e",
    "=" * 40,  # two of these: past the count where the words are searched one by one
)


def _every_pattern(text: str, form: str) -> str:
    """The scrubber as it was before the shortcut: every pattern on every text."""
    from vllm_evidence import _scrub as s

    text = s._USERINFO_RE.sub(rf"\1{REDACTED}@", text)
    text = s._AUTH_HEADER_RE.sub(rf"\1{REDACTED}", text)
    text = s._SCHEME_TOKEN_RE.sub(rf"\1 {REDACTED}", text)
    text = s._PARAM_RE.sub(rf"\1{REDACTED}", text)
    if form == "line":
        return s._CONTROL_RE.sub(s._escape, text)
    if form == "json":
        return s._JSON_RAW_RE.sub(s._json_escape, text)
    return text


@settings(max_examples=500, deadline=None)
@given(
    pieces=st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=4)), max_size=12),
    form=st.sampled_from(["line", "json", "secrets"]),
)
def test_the_word_shortcut_changes_no_output(pieces: list[str], form: str) -> None:
    text = "".join(pieces)
    assert scrub(text, form=form) == _every_pattern(text, form)  # type: ignore[arg-type]


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=())))
def test_printability_is_read_from_the_folded_bytes_as_from_the_text(text: str) -> None:
    from vllm_evidence._scrub import _folded, _printable

    assert _printable(_folded(text)) == text.isprintable()


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([b"=", b"key", b"token", b"x", b"pwd", b"=="]), max_size=80))
@example([b"="] * 70 + [b"token", b"="])
@example([b"="] * 70 + [b"token"])
def test_secret_parameter_words_are_found_however_many_equals_there_are(
    pieces: list[bytes],
) -> None:
    from vllm_evidence._scrub import _PARAM_WORDS, _has_param_word

    lower = b"".join(pieces)
    assert _has_param_word(lower) == any(word in lower for word in _PARAM_WORDS)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("pa\u017f\u017fword=hunter2", "pa\u017f\u017fword=***"),  # non-ASCII: every pattern
        ("apiKey=\u212a", "apiKey=***"),
        # the words folded: each of the four letters stands in a word the shortcut seeks
        ("author\u0130zation: tok3n \u00d7 2", "author\u0130zation: *** \u00d7 2"),
        ("\u00e9 \u017fecret=abc", "\u00e9 \u017fecret=***"),
        ("\u00e9 api_\u212aey=abc", "\u00e9 api_\u212aey=***"),
        ("\u00e9 BA\u0131SIC x", "\u00e9 BA\u0131SIC x"),  # the scheme words are literal
        ("ranks \u00d7 2 \u2026 no words", "ranks \u00d7 2 \u2026 no words"),
        ("a\x7fb", "a\\x7fb"),  # DEL is ASCII and still escaped
        ("plain ascii, no words", "plain ascii, no words"),
    ],
)
def test_texts_the_shortcut_must_not_skip(text: str, shown: str) -> None:
    assert scrub(text) == shown


@pytest.mark.parametrize(
    ("secret", "text", "expected"),
    [
        # A one-letter key: the letter inside words, numbers and names is left alone;
        # where it stands alone it goes, even as a word (the price of a guessable key).
        ("a", "a batch: ranks [0, 1]; rank a", "*** batch: ranks [0, 1]; rank ***"),
        ("1", "ranks [0, 1] of 12, v0.1.1", "ranks [0, ***] of 12, v0.1.1"),
        ("k3y", "Bearer k3y; echoed 'k3y'", "Bearer ***; echoed '***'"),
        ("k3y", "monk3ys k3y_x x-k3y", "monk3ys k3y_x x-k3y"),
        # At SHORT_SECRET characters and above, every occurrence goes.
        ("12345678", "x12345678y 12345678", f"x{REDACTED}y {REDACTED}"),
    ],
)
def test_a_short_key_is_scrubbed_only_where_it_stands_alone(
    secret: str, text: str, expected: str
) -> None:
    assert scrub(text, secrets=[secret]) == expected


def test_a_short_key_in_a_body_is_scrubbed_where_it_stands_alone() -> None:
    assert scrub_body(b"batch, key a!", secrets=["a"]) == b"batch, key ***!"
    assert scrub_body(b"xa12345678", secrets=["12345678"]) == b"xa***"


def test_the_short_key_boundary_is_eight_characters() -> None:
    assert SHORT_SECRET == 8
    assert scrub("x1234567y", secrets=["1234567"]) == "x1234567y"
    assert scrub("x12345678y", secrets=["12345678"]) == f"x{REDACTED}y"
