"""The one sealing mechanism every evidence, readback and decision type uses.

A sealed type is a ``@final`` ``@attrs.frozen(init=False)`` class that subclasses
:class:`Sealed` directly and is defined inside this package.  Its instances come only
from the package's own parsers and decision functions, which mint them through a
private minter made by :func:`minter`.

What the seal closes, and how:

* ``Cls(...)`` from outside: :meth:`Sealed.__init__` takes a ``Never``-typed
  positional parameter, so ``mypy --strict`` rejects every call spelling, and at run
  time it raises :class:`TypeError` naming the public function to use.
* ``attrs.evolve`` and ``copy.replace``: both call ``Cls(**changes)``, which raises.
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

Python cannot stop ``object.__new__`` plus ``object.__setattr__``; the seal is a
guard against accidents and wrong provenance, not against an adversary.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, ClassVar, Concatenate, Never, ParamSpec, Self, SupportsIndex, TypeVar

__all__ = ["Reduction", "Sealed", "SealedTypeError", "minter"]

_PACKAGE = __name__.rpartition(".")[0]

P = ParamSpec("P")
T = TypeVar("T", bound="Sealed")


class SealedTypeError(TypeError):
    """A sealed type was constructed, copied into a new value, pickled or subclassed."""


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

    def __init__(self, _sealed: Never, /, *_args: Never, **_kwargs: Never) -> None:
        msg = (
            f"{type(self).__qualname__} has no public constructor; "
            f"use {type(self).__public_constructor__}"
        )
        raise SealedTypeError(msg)

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

    def mint(*args: P.args, **kwargs: P.kwargs) -> T:
        obj = object.__new__(cls)
        init(obj, *args, **kwargs)
        return obj

    mint.__qualname__ = f"mint_{cls.__qualname__}"
    return mint
