"""One scanner for the repr-like text vLLM prints: config strings, dicts and lists.

``VllmConfig.__str__`` (``/server_info``'s text form and the engine-init log line), the
``non-default args`` dict and served-name lists are all ``key=value`` or ``key: value``
items separated by commas, where a comma inside brackets, quotes or an enum repr such as
``<CompilationMode.VLLM_COMPILE: 3>`` does not separate.  The HTTP adapter reads a whole
body and wants damage reported (strict); the log reader reads lines that may be cut or
wrapped and takes what it can (tolerant).
"""

from __future__ import annotations

_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = frozenset(_OPEN.values())


def _scan(text: str, sep: str) -> tuple[list[str], str | None]:
    """The pieces of ``text`` between top-level ``sep``, and the first damage seen."""
    stack: list[str] = []
    quote: str | None = None
    damage: str | None = None
    pieces: list[str] = []
    start = 0
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if quote is not None:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
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
        i += 1
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
