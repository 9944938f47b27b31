"""JSON decoding that keeps numbers as their wire text, for exact measure parsing."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["JsonNumber", "loads_exact"]


class JsonNumber(str):
    """A JSON number, kept as its wire text (``"2048"``, ``"2048.0"``).

    A subclass of ``str`` so that a JSON *string* ``"2048"`` and the JSON *number*
    ``2048`` stay distinguishable: only the latter is a ``JsonNumber``.
    """

    __slots__ = ()


def _reject_constant(name: str) -> Any:
    msg = f"non-standard JSON constant {name}"
    raise ValueError(msg)


#: One decoder for every body: ``json.loads`` with hooks builds a decoder (and its
#: scanner) at each call.
_DECODER = json.JSONDecoder(
    parse_int=JsonNumber, parse_float=JsonNumber, parse_constant=_reject_constant
)


def loads_exact(body: bytes) -> Any | ValueError:
    """Decode ``body`` as UTF-8 JSON with numbers kept as :class:`JsonNumber`.

    Returns the decoded value, or the :class:`ValueError` saying why it is not JSON.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ValueError(f"not UTF-8 ({exc.reason} at byte {exc.start})")
    try:
        if text.startswith("\ufeff"):  # as json.loads refuses it
            msg = "Unexpected UTF-8 BOM (decode using utf-8-sig)"
            raise json.JSONDecodeError(msg, text, 0)
        return _DECODER.decode(text)
    except ValueError as exc:
        return ValueError(f"not JSON ({exc})")
    except RecursionError:
        # The decoder recurses once per nesting level; no vLLM body nests this deep.
        return ValueError("not JSON this package reads (nested too deeply)")
