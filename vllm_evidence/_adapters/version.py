"""``GET /version``: the build the process says it is (self-reported, not proof of code)."""

from __future__ import annotations

from typing import final

import attrs
from packaging.version import InvalidVersion, Version

from vllm_evidence._adapters._json import loads_exact
from vllm_evidence._adapters.failure import BodyParseFailure, fail
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.upstream._routes import Route

__all__ = ["SelfReportedVersion", "parse_version"]


@final
@attrs.frozen(init=False, repr=False)
class SelfReportedVersion(Sealed):
    """What ``/version`` says: good for scoping version-sensitive laws, not for proof."""

    __public_constructor__ = "vllm_evidence.readback_from_batch()"

    raw: str
    """The ``version`` string exactly as served (``"0.25.2.dev0+g752a3a504.d20260714"``)."""
    version: Version
    """The same string as a PEP 440 version, for range checks."""


_mint_version = minter(SelfReportedVersion, SelfReportedVersion.__attrs_init__)


def parse_version(body: bytes) -> SelfReportedVersion | BodyParseFailure:
    """Read ``{"version": "<text>"}``; an unparseable version is a failure, not a guess."""
    decoded = loads_exact(body)
    if isinstance(decoded, ValueError):
        return fail(Route.VERSION, str(decoded))
    if not isinstance(decoded, dict):
        return fail(Route.VERSION, "body is not a JSON object")
    raw = decoded.get("version")
    if type(raw) is not str:
        return fail(Route.VERSION, 'no "version" string in the body')
    try:
        version = Version(raw)
    except (InvalidVersion, ValueError):  # ValueError: a number past int()'s digit limit
        shown = raw if len(raw) <= 80 else raw[:77] + "..."
        return fail(Route.VERSION, f"{shown!r} is not a PEP 440 version")
    return _mint_version(raw=raw, version=version)
