"""The one top-level scanner the HTTP adapters and the log reader share: brackets, quotes,
escapes and enum reprs; strict (names the damage) and tolerant (takes what it can).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_evidence._adapters._text import strict_top_level_pieces, top_level_pieces
from vllm_evidence._adapters.startup_log import (
    split_top_level,
)


def test_the_scanner_skips_escaped_quotes_and_reads_enum_reprs() -> None:
    assert top_level_pieces(r"a='x\', y', b=2") == [r"a='x\', y'", " b=2"]
    assert top_level_pieces("m=<Mode.X: 3, 4>, n=1") == ["m=<Mode.X: 3, 4>", " n=1"]
    assert top_level_pieces("a=1<2, b=3") == ["a=1<2", " b=3"]
    assert top_level_pieces("a=1, b=<") == ["a=1", " b=<"]
    assert top_level_pieces("a;b", ";") == ["a", "b"]
    assert top_level_pieces("x, y,z") == ["x", " y", "z"]


def test_the_strict_scanner_names_an_unclosed_enum_repr() -> None:
    damage = strict_top_level_pieces("a=<B, c=1")
    assert isinstance(damage, ValueError)
    assert str(damage) == "unclosed bracket, expected '>'"


def test_split_top_level_respects_brackets_and_quotes() -> None:
    pieces = list(split_top_level("a='x, y', b=[1, 2], c={'k': (3, 4)}, d=<E.X: 2>, e=5"))
    assert pieces == ["a='x, y'", "b=[1, 2]", "c={'k': (3, 4)}", "d=<E.X: 2>", "e=5"]


def test_the_strict_and_tolerant_splits_share_one_scanner() -> None:
    from vllm_evidence._adapters.server_info import split_config_text

    text = "mode=<CompilationMode.VLLM_COMPILE: 3>, sizes=[1, 2], name='a, b'"
    assert list(split_top_level(text)) == [
        "mode=<CompilationMode.VLLM_COMPILE: 3>",
        "sizes=[1, 2]",
        "name='a, b'",
    ]
    assert split_config_text(text) == {
        "mode": "<CompilationMode.VLLM_COMPILE: 3>",
        "sizes": "[1, 2]",
        "name": "'a, b'",
    }
    # damage: the log reader takes what it can, the HTTP adapter says where it broke
    assert list(split_top_level("a=1), b=2")) == ["a=1)", "b=2"]
    assert str(split_config_text("a=1), b=2")) == "unbalanced ')' at offset 3"
    assert list(split_top_level("a='x, b=2")) == ["a='x, b=2"]
    assert str(split_config_text("a='x, b=2")) == "unterminated quoted string"
    assert str(split_config_text("a=[1, b=2")) == "unclosed bracket, expected ']'"


# --- the jumping scan reads as one character at a time would ------------------------


def _one_char_at_a_time(text: str, sep: str) -> tuple[list[str], str | None]:
    """The splitter as first written: every character looked at in turn (the oracle)."""
    closing = {"(": ")", "[": "]", "{": "}"}
    stack: list[str] = []
    quote: str | None = None
    damage: str | None = None
    pieces: list[str] = []
    start = i = 0
    while i < len(text):
        c = text[i]
        if quote is not None:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in closing:
            stack.append(closing[c])
        elif c == "<" and i + 1 < len(text) and text[i + 1].isalpha():
            stack.append(">")
        elif stack and c == stack[-1]:
            stack.pop()
        elif c in ")]}":
            damage = damage or f"unbalanced {c!r} at offset {i}"
        elif c == sep and not stack:
            pieces.append(text[start:i])
            start = i + 1
        i += 1
    if quote is not None:
        damage = damage or "unterminated quoted string"
    if stack:
        damage = damage or f"unclosed bracket, expected {stack[-1]!r}"
    pieces.append(text[start:])
    return pieces, damage


_ALPHABET = st.sampled_from([*"ab =,:'\"\\()[]{}<>.1", "<Mode.X: 3>", "\\'", "é"])


@settings(max_examples=1500, deadline=None)
@given(st.lists(_ALPHABET, max_size=40).map("".join), st.sampled_from([",", ":", " ", "'"]))
def test_the_splitter_agrees_with_reading_one_character_at_a_time(text: str, sep: str) -> None:
    pieces, damage = _one_char_at_a_time(text, sep)
    assert top_level_pieces(text, sep) == pieces
    strict = strict_top_level_pieces(text, sep)
    if damage is None:
        assert strict == pieces
    else:
        assert isinstance(strict, ValueError)
        assert str(strict) == damage
