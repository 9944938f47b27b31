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
  ``mypy --strict`` rejects ``attrs.evolve(<sealed value>, …)`` too ("expected an attrs
  class"): its attrs plugin types ``evolve`` from the ``__init__`` it finds, and because
  :meth:`Sealed.__init__` is ``@final`` (a decorated method) the plugin does not take it
  for an attrs initializer.  As a plain method, its nameless positional-only parameter
  crashed the plugin with an INTERNAL ERROR.
* ``copy.copy`` / ``copy.deepcopy``: sealed values are immutable, so a copy *is*
  the original (``__copy__`` returns ``self``); no new instance is made.
* ``pickle``: ``__reduce_ex__`` raises; a sealed value crosses a process boundary
  only as its raw evidence (a capture directory saved by :func:`vllm_evidence.save`,
  a startup-log file), which the receiving process reads again.
* a bare ``cattrs.Converter().structure``: it calls the class, which raises.
* subclassing: ``@final`` for the type checker, and :meth:`Sealed.__init_subclass__`
  refuses any class that is not a direct subclass defined inside this package.

Python cannot stop ``object.__new__`` plus ``object.__setattr__``; the seal is a
guard against accidents and wrong provenance, not against an adversary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Concatenate, Never, ParamSpec, Self, TypeVar, final

from vllm_evidence.errors import SealedTypeError

__all__ = ["Sealed", "SealedTypeError", "minter"]

_PACKAGE = __name__.rpartition(".")[0]

P = ParamSpec("P")
T = TypeVar("T", bound="Sealed")


class Sealed:
    """Mixin for types whose instances only this package may create."""

    __slots__ = ()

    #: The public function(s) that produce instances, named in the error message.
    __public_constructor__: ClassVar[str] = "the vllm_evidence parsers and decisions"

    # ``@final``: no sealed class defines its own ``__init__`` (attrs' is ``__attrs_init__``,
    # reached only through a minter), and it keeps mypy's attrs plugin from reading this
    # signature as the class's fields: see the module docstring on ``attrs.evolve``.
    @final
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

    def __reduce_ex__(self, protocol: object) -> Never:
        msg = (
            f"{type(self).__qualname__} is sealed and cannot be pickled; "
            "send its raw evidence instead (vllm_evidence.save() a capture, or the log "
            "file) and read it again on the other side"
        )
        raise SealedTypeError(msg)

    def __reduce__(self) -> Never:
        msg = f"{type(self).__qualname__} is sealed and cannot be pickled"
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
