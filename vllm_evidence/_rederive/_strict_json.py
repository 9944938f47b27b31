"""Reading an evidence document defensively: bounded, strict JSON and typed fields.

The text is bounded in size, then read by the package's one strict JSON reader
(:func:`vllm_evidence._capture._strict_json.strict_loads`: nesting bounded before the
recursive parser runs; floats, non-numbers, huge integers and duplicate keys refused);
every field is read with its type (and, for counts, its lower bound) checked.  Any breach is an
:class:`~vllm_evidence.errors.InputError` naming where in the document it is.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from datetime import datetime
from typing import Any, NoReturn, TypeVar

from vllm_evidence._capture._strict_json import StrictJsonError, strict_loads
from vllm_evidence._rederive._write import SCHEMA
from vllm_evidence.errors import InputError
from vllm_evidence.upstream._routes import Route

__all__ = ["MAX_DEPTH", "MAX_DOCUMENT_CHARS"]

#: The longest document :func:`~vllm_evidence._rederive.loads` reads by default (an
#: embedded log is base64).
MAX_DOCUMENT_CHARS = 512 * 1024 * 1024
#: The deepest nesting of arrays and objects :func:`~vllm_evidence._rederive.loads`
#: accepts (the schema needs 5).
MAX_DEPTH = 16
#: The longest integer literal accepted (nanosecond timestamps need 19 digits).
_MAX_INT_CHARS = 24

T = TypeVar("T")


def _malformed(where: str, what: str) -> NoReturn:
    msg = f"evidence document: {where}: {what}"
    raise InputError(msg)


def _parse(text: str | bytes, max_chars: int) -> dict[str, Any]:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            _malformed("document", "not UTF-8")
    if not isinstance(text, str):  # callers outside mypy can pass anything
        _malformed("document", f"not text but {type(text).__name__}")
    if len(text) > max_chars:
        _malformed("document", f"{len(text)} characters, over the limit of {max_chars}")
    try:
        value = strict_loads(text, max_depth=MAX_DEPTH, max_int_chars=_MAX_INT_CHARS)
    except StrictJsonError as exc:
        _malformed("document", str(exc))
    if not isinstance(value, dict):
        _malformed("document", "not a JSON object")
    if value.get("schema") != SCHEMA:
        _malformed("schema", f"not {SCHEMA}")
    return value


def _field(obj: dict[str, Any], key: str, kind: type[T], where: str) -> T:
    if key not in obj:
        _malformed(where, f"missing {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        _malformed(where, f"{key!r} must be {kind.__name__}, got {type(value).__name__}")
    return value


def _count(obj: dict[str, Any], key: str, where: str, *, low: int = 0) -> int:
    value = _field(obj, key, int, where)
    if value < low:
        _malformed(where, f"{key!r} must be at least {low}, got {value}")
    return value


def _optional_count(obj: dict[str, Any], key: str, where: str, *, low: int = 0) -> int | None:
    if key in obj and obj[key] is None:
        return None
    return _count(obj, key, where, low=low)


def _optional(obj: dict[str, Any], key: str, kind: type[T], where: str) -> T | None:
    if key in obj and obj[key] is None:
        return None
    return _field(obj, key, kind, where)


def _object(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        _malformed(where, "not an object")
    return value


def _keys(obj: dict[str, Any], keys: frozenset[str], where: str) -> None:
    if set(obj) != keys:
        extra, missing = sorted(set(obj) - keys), sorted(keys - set(obj))
        _malformed(where, f"unexpected keys {extra}, missing keys {missing}")


def _bytes(text: str, where: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        _malformed(where, "not base64")


def _route(stem: str, where: str) -> Route:
    route = Route.from_stem(stem)
    if route is None or not route.probe_readable:
        _malformed(where, f"unknown route {stem!r}")
    return route


def _enum(kind: Callable[[str], T], text: str, where: str) -> T:
    try:
        return kind(text)
    except ValueError:
        _malformed(where, f"unknown value {text!r}")


def _timestamp(text: str, where: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        _malformed(where, f"not an ISO 8601 timestamp: {text[:40]!r}")
