"""Attributes of a package imported on first use (PEP 562), for the packages whose
public names would otherwise load what most callers never need."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(
    package: str, homes: Mapping[str, str], public: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__``: each name of ``homes`` is read from
    the module named there when first asked for; ``dir()`` lists ``public``.

    Usage, at the end of the package's ``__init__``::

        __getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
    """

    def getattr_(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            msg = f"module {package!r} has no attribute {name!r}"
            raise AttributeError(msg)
        return getattr(importlib.import_module(home), name)

    def dir_() -> list[str]:
        return sorted(public)

    return getattr_, dir_
