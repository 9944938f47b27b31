"""Strict, bounded JSON for documents a caller hands in (package-internal).

One reader for the small documents the package reads back from files — a launch
receipt, an evidence document — where the standard library alone would let a few bytes
cost a great deal: nesting is counted by a linear scan *before* the recursive decoder
runs (so 5,000 ``[`` are a refusal, never a :class:`RecursionError`); a key given twice
is refused (the later value would silently win); ``NaN`` and ``Infinity`` are refused;
an integer literal longer than a bound is refused from its text, before ``int()`` sees
it; and a literal with a fraction or an exponent (``1e999999999``) is refused from its
text, never turned into a float or a decimal.  Every refusal is a :class:`StrictJsonError`
whose text is one line; the caller names the document.

Everything here is linear in the text: the scan is one regular expression with no
backtracking over a string it has matched, and the decoder calls each hook with the
literal's text, whose length it has already bounded.
"""

from __future__ import annotations

import json
import re
from typing import Any, NoReturn

from vllm_evidence.errors import InputError

__all__ = ["StrictJsonError", "check_depth", "strict_loads"]


class StrictJsonError(InputError):
    """Text that the strict reader refuses; ``str()`` is one line naming why (the caller
    adds which document)."""


# A string (the unrolled-loop form: linear, no backtracking) or one bracket.
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


def check_depth(text: str, max_depth: int) -> None:
    """Refuse nesting of arrays and objects deeper than ``max_depth``, counted outside
    strings, before any recursive parser runs."""
    depth = 0
    for match in _STRUCTURE.finditer(text):
        bracket = match.group()
        if bracket in ("[", "{"):
            depth += 1
            if depth > max_depth:
                msg = f"nested deeper than {max_depth} levels"
                raise StrictJsonError(msg)
        elif bracket in ("]", "}"):
            depth -= 1


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            msg = f"duplicate key {key[:40]!r}"
            raise StrictJsonError(msg)
        result[key] = value
    return result


def _no_float(text: str) -> NoReturn:
    shown = text if len(text) <= 40 else f"{text[:40]}… ({len(text):,} characters)"
    msg = f"a non-integer number {shown!r}"
    raise StrictJsonError(msg)


def _no_constant(text: str) -> NoReturn:
    msg = f"the non-number {text!r}"
    raise StrictJsonError(msg)


def _decoder(max_int_chars: int) -> json.JSONDecoder:
    def bounded_int(text: str) -> int:
        if len(text) > max_int_chars:
            msg = f"an integer of {len(text):,} characters (at most {max_int_chars} are read)"
            raise StrictJsonError(msg)
        return int(text)

    return json.JSONDecoder(
        object_pairs_hook=_unique,
        parse_int=bounded_int,
        parse_float=_no_float,
        parse_constant=_no_constant,
    )


_DECODERS: dict[int, json.JSONDecoder] = {}


def strict_loads(text: str, *, max_depth: int, max_int_chars: int) -> Any:
    """``text`` decoded as JSON under the rules of the module; :class:`StrictJsonError`
    (one line) for anything else, malformed JSON included."""
    check_depth(text, max_depth)
    decoder = _DECODERS.get(max_int_chars)
    if decoder is None:
        decoder = _DECODERS.setdefault(max_int_chars, _decoder(max_int_chars))
    try:
        return decoder.decode(text)
    except StrictJsonError:
        raise
    except RecursionError:  # not reached past check_depth; never let it escape
        msg = "nested too deeply"
        raise StrictJsonError(msg) from None
    except ValueError as exc:
        msg = f"not JSON ({exc})"
        raise StrictJsonError(msg) from None
