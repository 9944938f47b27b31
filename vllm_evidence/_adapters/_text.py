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
#: A quoted string's body after its opening quote: a backslash takes the next character
#: whatever it is.
_QUOTED_BODY = {q: f"[^\\\\{q}]*+(?:\\\\.[^\\\\{q}]*+)*+" for q in "'\""}


@functools.lru_cache(maxsize=8)
def _passing(sep: str) -> re.Pattern[str]:
    """What the scan passes over without acting: runs of characters other than quotes,
    brackets, ``<``, ``>`` and ``sep``, and whole quoted strings.  It stops at the next
    character the scan acts on (or at a quote that never closes).  Inside brackets
    ``sep`` does not split and is passed over too (``_passing("")``).  Possessive, and
    each alternative begins with its own characters: linear on any text."""
    plain = "[^" + re.escape("'\"()[]{}<>" + sep) + "]++"
    quoted = "|".join(f"{q}{body}{q}" for q, body in _QUOTED_BODY.items())
    return re.compile(f"(?:{plain}|{quoted})*+", re.DOTALL)


def _scan(text: str, sep: str) -> tuple[list[str], str | None]:
    """The pieces of ``text`` between top-level ``sep``, and the first damage seen.

    One step per bracket, enum repr and top-level ``sep``: a config string is mostly
    plain runs and quoted strings, each passed over by one match."""
    stack: list[str] = []
    damage: str | None = None
    pieces: list[str] = []
    start = 0
    n = len(text)
    outside = _passing(sep).match
    inside = _passing("").match
    # The passing patterns match the empty string: a match is never None.
    found = outside(text, 0)
    at = found.end() if found else 0
    while at < n:
        c = text[at]
        after = at + 1
        if c in "'\"":
            # A quote passed over only when it closes: this one never does.
            damage = damage or "unterminated quoted string"
            break
        if c in _OPEN:
            stack.append(_OPEN[c])
        elif c == "<" and after < n and text[after].isalpha():
            stack.append(">")
        elif stack and c == stack[-1]:
            stack.pop()
        elif c in _CLOSE:
            damage = damage or f"unbalanced {c!r} at offset {at}"
        elif c == sep and not stack:
            pieces.append(text[start:at])
            start = after
        found = (inside if stack else outside)(text, after)
        at = found.end() if found else after
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
