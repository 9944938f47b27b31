"""The one sealing mechanism every evidence, readback and decision type uses.

A sealed type is a ``@final`` ``@attrs.frozen(init=False, repr=False)`` class that subclasses
:class:`Sealed` directly and is defined inside this package.  Its instances come only
from the package's own parsers and decision functions, which mint them through a
private minter made by :func:`minter`.

What the seal closes, and how:

* ``Cls(...)`` from outside: :meth:`Sealed.__init__` takes a ``Never``-typed
  positional parameter, so ``mypy --strict`` rejects every call spelling, and at run
  time it raises :class:`TypeError` naming the public function to use.
* ``attrs.evolve`` and ``copy.replace``: both call ``Cls(**changes)``, which raises.
  ``mypy --strict`` rejects ``attrs.evolve(<sealed value>, …)`` too ("expected an attrs
  class"): its attrs plugin types ``evolve`` from the ``__init__`` it finds, and because
  :meth:`Sealed.__init__` is ``@final`` (a decorated method) the plugin does not take it
  for an attrs initializer.  As a plain method, its nameless positional-only parameter
  crashed the plugin with an INTERNAL ERROR.
* ``copy.copy`` / ``copy.deepcopy``: sealed values are immutable, so a copy *is*
  the original (``__copy__`` returns ``self``); no new instance is made.
* ``pickle``: by re-derivation only.  A class that can be rebuilt from raw evidence
  overrides :meth:`Sealed.__rederive__` to return ``(function, raw evidence)``, where
  ``function`` is a module-level function of this package that re-runs the parsers and
  decisions (``readback_from_batch`` over the raw exchanges, the log reader over the
  log's bytes, ``assess`` over both); that pair is the pickle's reduction, so
  unpickling re-runs the parsers, and a pickle carrying other bytes gets whatever the
  parsers derive from those bytes.  A class with no such path (a decision arm, a law,
  an observation) refuses to pickle and says to send its raw evidence instead.  The
  generic state-restoring path (``__setstate__``, which attrs would generate) is
  closed too.  Pickle data can still name any importable callable: unpickling
  untrusted data is unsafe whatever the seal does.
* a bare ``cattrs.Converter().structure``: it calls the class, which raises.
* subclassing: ``@final`` for the type checker, and :meth:`Sealed.__init_subclass__`
  refuses any class that is not a direct subclass defined inside this package.

Sealed values also read well: :meth:`Sealed.__repr__` is short and informative (the
class, then its fields summarised — raw bytes by size and digest, long collections by
their first items and length, long text cut, nested sealed values to a depth limit),
and a class with better key figures overrides :meth:`Sealed._repr_summary`.  Every
sealed class is declared ``@attrs.frozen(init=False, repr=False)`` so that attrs does
not generate a ``__repr__`` over this one.

* ``Cls.__new__(Cls)`` and ``Cls.__attrs_init__(obj, …)``: :meth:`Sealed.__new__` refuses,
  and :func:`minter` replaces each class's attrs initializer with a refusal once it holds
  it (``mypy --strict`` still types ``Cls.__attrs_init__`` from the attrs plugin; it
  raises at run time).

Python cannot stop ``object.__new__`` plus ``object.__setattr__`` (or the same through
``object.__new__`` and a field's slot descriptor); that is the documented, inherent limit:
the seal is a guard against accidents and wrong provenance, not against an adversary.
"""

from __future__ import annotations

import datetime as dt
import enum
import hashlib
import re
import sys
from collections.abc import Callable, Collection, Mapping
from decimal import Decimal
from typing import (
    Any,
    ClassVar,
    Concatenate,
    Never,
    ParamSpec,
    Self,
    SupportsIndex,
    TypeVar,
    cast,
    final,
)

import attrs
from packaging.version import Version

from vllm_evidence.errors import SealedTypeError

__all__ = ["Reduction", "Sealed", "SealedTypeError", "brief", "minter"]

_PACKAGE = __name__.rpartition(".")[0]

P = ParamSpec("P")
T = TypeVar("T", bound="Sealed")


Reduction = tuple[Callable[..., T], tuple[object, ...]]
"""How a sealed value re-derives: a module-level function of this package and its raw
evidence, the pair :meth:`Sealed.__reduce__` hands to pickle."""


def _is_rederiver(function: object) -> bool:
    """A module-level function of this package (what pickle can name and re-run)."""
    module = getattr(function, "__module__", None)
    name = getattr(function, "__qualname__", "")
    if not isinstance(module, str) or not (module == _PACKAGE or module.startswith(_PACKAGE + ".")):
        return False
    return "." not in name and getattr(sys.modules.get(module), name, None) is function


class Sealed:
    """Mixin for types whose instances only this package may create."""

    __slots__ = ()

    #: The public function(s) that produce instances, named in the error message.
    __public_constructor__: ClassVar[str] = "the vllm_evidence parsers and decisions"
    #: Properties ``repr`` shows after the fields, for a value derived when read (a field
    #: declared ``attrs.field(repr=False)`` is left out of ``repr``).
    __repr_derived__: ClassVar[tuple[str, ...]] = ()

    # ``@final``: no sealed class defines its own ``__init__`` (attrs' is ``__attrs_init__``,
    # reached only through a minter), and it keeps mypy's attrs plugin from reading this
    # signature as the class's fields: see the module docstring on ``attrs.evolve``.
    @final
    def __init__(self, _sealed: Never, /, *_args: Never, **_kwargs: Never) -> None:
        raise SealedTypeError(_no_constructor(type(self)))

    # ``Cls()``, ``Cls(x=…)``, ``Cls.__new__(Cls)``: refused here, before ``__init__``'s
    # signature is bound (a bare ``Cls()`` said "missing 1 required positional argument:
    # '_sealed'" and never reached the seal's words).  The minters use ``object.__new__``.
    def __new__(cls, *_args: object, **_kwargs: object) -> Self:
        raise SealedTypeError(_no_constructor(cls))

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if Sealed not in cls.__bases__:
            msg = f"{cls.__qualname__} cannot subclass a sealed type"
            raise SealedTypeError(msg)
        module = cls.__module__
        if module != _PACKAGE and not module.startswith(_PACKAGE + "."):
            msg = (
                f"{cls.__qualname__} cannot subclass vllm_evidence's Sealed mixin "
                f"from outside the package (module {module!r})"
            )
            raise SealedTypeError(msg)
        # attrs generates a __setstate__ for slotted classes; it would let pickle data set
        # any field on a bare instance.  Remove it: Sealed.__setstate__ refuses.
        if "__setstate__" in vars(cls):
            type.__delattr__(cls, "__setstate__")

    def __repr__(self) -> str:
        return _sealed_repr(self, REPR_DEPTH)

    def _repr_summary(self) -> str | None:
        """What goes between the parentheses of ``repr``, for a class with better key
        figures than its fields; ``None`` (the default) summarises every field."""
        return None

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: object) -> Self:
        return self

    def __replace__(self, **changes: object) -> Self:
        msg = (
            f"{type(self).__qualname__} is sealed and cannot be replaced field by field; "
            f"use {type(self).__public_constructor__}"
        )
        raise SealedTypeError(msg)

    def __rederive__(self) -> Reduction[Self] | None:
        """How this value is rebuilt from its raw evidence, or ``None`` (the default):
        it has no such path and is not pickled.

        An override returns ``(function, args)``: ``function`` is a module-level function
        of this package that re-runs the parsers (and decisions) over ``args``, the raw
        evidence; ``function(*args)`` is what unpickling returns.
        """
        return None

    def __reduce__(self) -> Reduction[Self]:
        reduction = self.__rederive__()
        if reduction is None:
            msg = (
                f"{type(self).__qualname__} is sealed and cannot be pickled: nothing "
                "re-derives it on its own; send its raw evidence instead (a pickled "
                "Assessment, CapturedReadback, HistoricalBundle, CaptureBatch or "
                "StartupLog, a capture saved by vllm_evidence.save(), or the log file) "
                "and derive it again on the other side"
            )
            raise SealedTypeError(msg)
        function, args = reduction
        if not _is_rederiver(function):  # pragma: no cover - a programming error here
            msg = f"{type(self).__qualname__}.__rederive__ must name a module-level function"
            raise SealedTypeError(msg)
        return function, args

    def __reduce_ex__(self, protocol: SupportsIndex) -> Reduction[Self]:
        return self.__reduce__()

    def __setstate__(self, state: object) -> Never:
        msg = (
            f"{type(self).__qualname__} is sealed: its fields cannot be restored from "
            "pickled state, only re-derived from raw evidence"
        )
        raise SealedTypeError(msg)


def minter(cls: type[T], init: Callable[Concatenate[T, P], None]) -> Callable[P, T]:
    """Return the private minting function for sealed ``cls``.

    ``init`` is ``cls.__attrs_init__``, which attrs generates for ``init=False``
    classes and whose signature mypy knows; the returned function has the same
    typed keyword parameters and runs every attrs validator.

    Usage, right after the class::

        _mint_thing = minter(Thing, Thing.__attrs_init__)
    """

    init = _ATTRS_INITS.setdefault(cls, init)  # a second minter of one class: the first's

    def mint(*args: P.args, **kwargs: P.kwargs) -> T:
        obj = object.__new__(cls)
        init(obj, *args, **kwargs)
        return obj

    mint.__qualname__ = f"mint_{cls.__qualname__}"
    # attrs' initializer is the last public way in (``object.__new__(Cls)`` then
    # ``Cls.__attrs_init__(obj, …)`` built a value every check accepted): once the minter
    # holds it, the class's own attribute refuses.
    type.__setattr__(cls, "__attrs_init__", _refuse_attrs_init)
    return mint


#: Each sealed class's attrs initializer, kept by its minter only.
_ATTRS_INITS: dict[type[Sealed], Callable[..., None]] = {}


def _no_constructor(cls: type[Sealed]) -> str:
    return f"{cls.__qualname__} has no public constructor; use {cls.__public_constructor__}"


def _refuse_attrs_init(self: Sealed, *_args: object, **_kwargs: object) -> None:
    raise SealedTypeError(_no_constructor(type(self)))


#: How many levels of nested sealed values ``repr`` opens before it writes ``Cls(…)``.
REPR_DEPTH = 2
#: How many items of a collection ``repr`` shows before ``…(N items)``.
REPR_ITEMS = 3
#: The longest text ``repr`` shows whole.
REPR_TEXT = 60
#: A SHA-256 in hex, shown by its first twelve digits.
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


def _sealed_repr(value: Sealed, depth: int) -> str:
    name = type(value).__qualname__
    summary = value._repr_summary()
    if summary is not None:
        return f"{name}({summary})"
    if depth <= 0:
        return f"{name}(…)"
    parts = []
    # Every sealed class is an attrs class (tests/test_seal.py checks it).
    names = [
        field.name
        for field in attrs.fields(cast("type[attrs.AttrsInstance]", type(value)))
        if field.repr
    ]
    for attribute in (*names, *type(value).__repr_derived__):
        item = getattr(value, attribute)
        if item is not None:
            parts.append(f"{attribute}={brief(item, depth - 1)}")
    return f"{name}({', '.join(parts)})"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


def brief(value: object, depth: int = 0) -> str:
    """A short, bounded text for ``value`` inside a sealed value's ``repr``.

    Bytes by size and digest (never inline), text cut at :data:`REPR_TEXT` characters,
    collections by their first :data:`REPR_ITEMS` items and their length, enums by
    member, versions, decimals and times by their text, a nested sealed value by its own
    ``repr`` opened ``depth`` more levels.
    """
    if isinstance(value, Sealed):
        if type(value).__repr__ is not Sealed.__repr__:
            return repr(value)  # a class's own repr is already short
        return _sealed_repr(value, depth)
    if isinstance(value, bytes | bytearray):
        return f"<{len(value):,} bytes sha256:{_digest(bytes(value))}…>"
    if isinstance(value, str):
        if _HEX_DIGEST.fullmatch(value):
            return f"'{value[:12]}…'"
        if len(value) <= REPR_TEXT:
            return repr(value)
        return f"{value[: REPR_TEXT - 1]!r}…({len(value):,} chars)"
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, Version | Decimal):
        return str(value)
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, bool | int | float) or value is None:
        return repr(value)
    if isinstance(value, Mapping):
        return f"<{type(value).__name__} of {len(value):,}>"
    if isinstance(value, tuple | list | frozenset | set):
        return _brief_collection(value, depth)
    text = repr(value)  # a measure (``TokenCount(value=2048)``) or another small value
    return text if len(text) <= REPR_TEXT else f"<{type(value).__name__}>"


def _brief_collection(value: Collection[object], depth: int) -> str:
    items: list[object] = list(value)
    if isinstance(value, frozenset | set):
        items.sort(key=repr)  # a stable order
    count = len(items)
    if count and depth < 0:
        return f"<{type(value).__name__} of {count:,}>"
    shown = [brief(item, depth - 1) for item in items[:REPR_ITEMS]]
    if count > REPR_ITEMS:
        shown.append(f"…({count:,} items)")
    if isinstance(value, tuple):
        return f"({shown[0]},)" if count == 1 else f"({', '.join(shown)})"
    if isinstance(value, list):
        return f"[{', '.join(shown)}]"
    return f"{{{', '.join(shown)}}}" if shown else f"{type(value).__name__}()"
