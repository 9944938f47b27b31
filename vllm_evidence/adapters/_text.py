"""One scanner for the repr-like text vLLM prints: config strings, dicts and lists.

``VllmConfig.__str__`` (``/server_info``'s text form and the engine-init log line), the
``non-default args`` dict and served-name lists are all ``key=value`` or ``key: value``
items separated by commas, where a comma inside brackets, quotes or an enum repr such as
``<CompilationMode.VLLM_COMPILE: 3>`` does not separate.  The HTTP adapter reads a whole
body and wants damage reported (strict); the log reader reads lines that may be cut or
wrapped and takes what it can (tolerant).
"""

from __future__ import annotations

import functools
import re

_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = frozenset(_OPEN.values())
#: Inside quotes only the closing quote and a backslash matter.
_IN_QUOTE = {q: re.compile(f"[\\\\{q}]") for q in "'\""}


@functools.lru_cache(maxsize=8)
def _significant(sep: str) -> re.Pattern[str]:
    """The characters the scan acts on outside quotes: quotes, brackets, ``<``/``>`` and
    ``sep``.  Every other character passes unchanged, so the scan jumps over runs of
    them (a config string is mostly such runs)."""
    return re.compile("[" + re.escape("'\"()[]{}<>" + sep) + "]")


def _scan(text: str, sep: str) -> tuple[list[str], str | None]:
    """The pieces of ``text`` between top-level ``sep``, and the first damage seen."""
    stack: list[str] = []
    quote: str | None = None
    damage: str | None = None
    pieces: list[str] = []
    start = 0
    n = len(text)
    significant = _significant(sep).search
    found = significant(text, 0)
    while found is not None:
        i = found.start()
        c = text[i]
        if quote is not None:
            if c == "\\":
                found = _IN_QUOTE[quote].search(text, i + 2)
                continue
            quote = None  # the closing quote
        elif c in "'\"":
            quote = c
            found = _IN_QUOTE[c].search(text, i + 1)
            continue
        elif c in _OPEN:
            stack.append(_OPEN[c])
        elif c == "<" and i + 1 < n and text[i + 1].isalpha():
            stack.append(">")
        elif stack and c == stack[-1]:
            stack.pop()
        elif c in _CLOSE:
            damage = damage or f"unbalanced {c!r} at offset {i}"
        elif c == sep and not stack:
            pieces.append(text[start:i])
            start = i + 1
        found = significant(text, i + 1)
    if quote is not None:
        damage = damage or "unterminated quoted string"
    if stack:
        damage = damage or f"unclosed bracket, expected {stack[-1]!r}"
    pieces.append(text[start:])
    return pieces, damage


def top_level_pieces(text: str, sep: str = ",") -> list[str]:
    """Split ``text`` at ``sep`` outside brackets, quotes and ``<Enum.X: n>`` reprs.

    Tolerant: a closing bracket that closes nothing is skipped, and an unclosed quote or
    bracket runs to the end of the text.  Pieces are returned as they are (not stripped);
    there is always at least one.
    """
    return _scan(text, sep)[0]


def strict_top_level_pieces(text: str, sep: str = ",") -> list[str] | ValueError:
    """:func:`top_level_pieces`, but damage (a closing bracket that closes nothing, an
    unterminated quote, an unclosed bracket) is a :class:`ValueError` saying where."""
    pieces, damage = _scan(text, sep)
    return pieces if damage is None else ValueError(damage)
