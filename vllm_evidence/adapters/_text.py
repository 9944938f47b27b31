"""One scanner for the repr-like text vLLM prints: config strings, dicts and lists.

``VllmConfig.__str__`` (``/server_info``'s text form and the engine-init log line), the
``non-default args`` dict and served-name lists are all ``key=value`` or ``key: value``
items separated by commas, where a comma inside brackets, quotes or an enum repr such as
``<CompilationMode.VLLM_COMPILE: 3>`` does not separate.  The HTTP adapter reads a whole
body and wants damage reported (``strict``); the log reader reads lines that may be cut or
wrapped and takes what it can (tolerant).
"""

from __future__ import annotations

from typing import Literal, overload

_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = frozenset(_OPEN.values())


@overload
def top_level_pieces(text: str, sep: str = ..., *, strict: Literal[False] = ...) -> list[str]: ...
@overload
def top_level_pieces(
    text: str, sep: str = ..., *, strict: Literal[True]
) -> list[str] | ValueError: ...
def top_level_pieces(text: str, sep: str = ",", *, strict: bool = False) -> list[str] | ValueError:
    """Split ``text`` at ``sep`` outside brackets, quotes and ``<Enum.X: n>`` reprs.

    Pieces are returned as they are (not stripped); there is always at least one.
    Tolerant (the default): a closing bracket that closes nothing is ignored, and an
    unclosed quote or bracket runs to the end of the text.  ``strict``: each of those is
    a :class:`ValueError` saying where.
    """
    stack: list[str] = []
    quote: str | None = None
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
        elif strict and c in _CLOSE:
            return ValueError(f"unbalanced {c!r} at offset {i}")
        elif c == sep and not stack:
            pieces.append(text[start:i])
            start = i + 1
        i += 1
    if strict and quote is not None:
        return ValueError("unterminated quoted string")
    if strict and stack:
        return ValueError(f"unclosed bracket, expected {stack[-1]!r}")
    pieces.append(text[start:])
    return pieces
