"""The one failure type every front-door adapter returns for a body it cannot read."""

from __future__ import annotations

from typing import final

import attrs

from vllm_evidence._seal import Sealed, minter
from vllm_evidence.upstream._routes import Route

__all__ = ["BodyParseFailure"]


@final
@attrs.frozen(init=False, repr=False)
class BodyParseFailure(Sealed):
    """A body that answered but did not parse as what its route yields.

    It is the "answered but unparsed" arm's content: never an observation, and
    never a default standing in for one.
    """

    __public_constructor__ = "vllm_evidence.readback_from_batch()"

    route: Route
    """The route whose adapter read the body."""
    reason: str
    """What was wrong, one line for a person."""

    def describe(self) -> str:
        """One line: which route's body, and why it did not parse."""
        return f"{self.route.target}: body did not parse: {self.reason}"


_mint_failure = minter(BodyParseFailure, BodyParseFailure.__attrs_init__)


def fail(route: Route, reason: str) -> BodyParseFailure:
    """Mint a failure (package-internal)."""
    return _mint_failure(route=route, reason=reason)
