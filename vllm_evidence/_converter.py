"""The one cattrs converter every JSON document of the package goes through.

Ground floor: it knows only the ground types.  Here are the generic hooks —

* :class:`packaging.version.Version` and :class:`~decimal.Decimal` → ``str`` (exact:
  a decimal is printed as parsed, never through a float);
* every :class:`enum.Enum` → its ``.value``;
* the exact measures of :mod:`vllm_evidence._measure` as the documents print them: the
  integer counts (tokens, blocks, bytes, basis points) as JSON integers, the decimal
  figures (concurrency, GiB) as exact strings;
* :class:`~datetime.datetime` ↔ ISO 8601 text;
* strict structure hooks for ``str``, ``int`` and ``bool`` (cattrs' defaults coerce:
  ``str(5)``, ``int("5")``; a manifest field of the wrong JSON type is an error here);
* a structure hook that refuses every :class:`~vllm_evidence._seal.Sealed` type, and an
  unstructure hook that refuses a sealed type no layer registered a hook for.

Each higher layer registers the hooks of the types it renders, next to the rendering
(``_output/assessment.py`` the decisions, ``_output/startup_log.py`` the log's types,
``_output/laws.py`` the laws, ``_output/audit.py`` the audit, ``_capture/directory.py``
the manifest), so the layering holds: this module imports nothing above the ground.

The converter only *unstructures* sealed values.  Nothing decided is ever read back
from JSON: structuring a sealed type raises :class:`SealedTypeError`, here as in a bare
converter.  The hooks are ordinary typed functions that read fields by name, so the
inert-field census credits their reads like any other rendering's.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Any, Never, get_args, get_origin

import cattrs
from cattrs.errors import IterableValidationError, IterableValidationNote
from packaging.version import Version

from vllm_evidence._measure import BasisPoint, BlockCount, ByteCount, Concurrency, GiB, TokenCount
from vllm_evidence._seal import Sealed, SealedTypeError

__all__ = ["converter", "register_rendering"]

converter = cattrs.Converter()
"""The package's one converter.  Use :func:`vllm_evidence.serialize.document` (or a
``*_document`` function) rather than calling it on a value of a type no layer has
registered; such a sealed value is refused rather than dumped field by field."""


def _is_sealed(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, Sealed)


def _refuse_structure(value: object, cls: type[Any]) -> Never:
    msg = (
        f"{cls.__qualname__} is sealed: it is never structured from JSON; re-derive it "
        f"from its raw evidence with {cls.__public_constructor__}"
    )
    raise SealedTypeError(msg)


def _refuse_unstructure(value: Sealed) -> Never:
    msg = (
        f"{type(value).__qualname__} has no JSON rendering registered on the converter; "
        "render it through the document it belongs to (vllm_evidence.serialize)"
    )
    raise TypeError(msg)


def _strict(kind: type[Any]) -> Any:
    def structure(value: object, _: type[Any]) -> object:
        if type(value) is not kind:
            msg = f"expected {kind.__name__}, got {type(value).__name__}"
            raise ValueError(msg)
        return value

    return structure


def _is_list(cls: Any) -> bool:
    return get_origin(cls) is list and len(get_args(cls)) == 1


def _strict_list(cls: Any, conv: cattrs.Converter) -> Any:
    """``list[T]`` from a JSON array only (cattrs' default takes any iterable: a string,
    an object's keys); each item's error keeps its index."""
    (item,) = get_args(cls)
    hook = conv.get_structure_hook(item)

    def structure(value: object, _: type[Any]) -> list[Any]:
        if type(value) is not list:
            msg = f"expected a JSON array, got {type(value).__name__}"
            raise ValueError(msg)  # cattrs reports ValueError as a field error
        result, errors = [], []
        for index, element in enumerate(value):
            try:
                result.append(hook(element, item))
            except Exception as exc:  # noqa: BLE001  # collected, as cattrs itself does
                exc.add_note(IterableValidationNote(f"@ index {index}", index, item))
                errors.append(exc)
        if errors:
            msg = f"While structuring {cls!r}"
            raise IterableValidationError(msg, errors, cls)
        return result

    return structure


def _structure_datetime(value: object, _: type[Any]) -> datetime:
    if not isinstance(value, str):
        msg = f"expected an ISO 8601 string, got {type(value).__name__}"
        raise ValueError(msg)  # noqa: TRY004  # cattrs reports ValueError as a field error
    return datetime.fromisoformat(value)


def register_rendering(cls: type[Any], hook: Callable[[Any], Any]) -> None:
    """Render values of exactly ``cls`` with ``hook``: how every layer registers the
    JSON rendering of its types.

    ``converter.register_unstructure_hook(cls, hook)`` first resolves an attrs class's
    string annotations (``attrs.resolve_types``: ``typing.get_type_hints`` compiles each
    one), ~8 ms of every start over the package's 60-odd rendered classes, for hooks
    that read fields by name and never look at a type.  A class predicate registers the
    same hook without that.  No rendered class has a subclass (a test holds it), and
    predicates registered later are tried first, so each of these comes before the
    refusal of unregistered sealed types below.
    """
    converter.register_unstructure_hook_func(lambda c: c is cls, hook)
    _rendered.append(cls)


#: Every class given a rendering by :func:`register_rendering`, in registration order.
_rendered: list[type[Any]] = []


converter.register_unstructure_hook(Version, str)
converter.register_unstructure_hook(Decimal, str)
converter.register_unstructure_hook(datetime, datetime.isoformat)
converter.register_unstructure_hook_func(
    lambda cls: isinstance(cls, type) and issubclass(cls, enum.Enum), lambda e: e.value
)
for _count in (TokenCount, BlockCount, ByteCount, BasisPoint):
    register_rendering(_count, lambda m: m.value)
for _figure in (Concurrency, GiB):
    register_rendering(_figure, lambda m: str(m.value))
# A sealed type without a hook of its own: refused, never dumped field by field (a
# generic dump would hide an inert field from the census and leak raw bodies).
converter.register_unstructure_hook_func(_is_sealed, _refuse_unstructure)

converter.register_structure_hook_func(_is_sealed, _refuse_structure)
converter.register_structure_hook(str, _strict(str))
converter.register_structure_hook(int, _strict(int))
converter.register_structure_hook(bool, _strict(bool))
converter.register_structure_hook(datetime, _structure_datetime)
converter.register_structure_hook_factory(_is_list, _strict_list)
