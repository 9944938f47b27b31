"""``GET /get_world_size`` (development mode): a product, never a configuration.

``{"world_size": N}`` is TP×PP×PCP (×DP with the default ``include_dp=true``): N=2 is
consistent with TP=2, PP=2 and DP=2 alike.  The type here has no field that could be
read as a tensor-, pipeline- or data-parallel size.
"""

from __future__ import annotations

from typing import final

import attrs

from vllm_evidence._adapters._json import JsonNumber, loads_exact
from vllm_evidence._adapters.failure import BodyParseFailure, fail
from vllm_evidence._bounds import MAX_WORLD_SIZE, wire_int
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.upstream._routes import ParallelEvidenceKind, Route

__all__ = ["WorldSizeProduct", "parse_world_size"]


@final
@attrs.frozen(init=False, repr=False)
class WorldSizeProduct(Sealed):
    """The product of parallel sizes the frontend reports.  It narrows, never decides."""

    __public_constructor__ = "vllm_evidence.readback_from_batch()"

    product: int
    """The reported product (≥1)."""

    @property
    def kind(self) -> ParallelEvidenceKind:
        """Always :attr:`ParallelEvidenceKind.WORLD_SIZE_PRODUCT`, projected from the route."""
        kind = Route.GET_WORLD_SIZE.parallel_evidence_kind
        assert kind is not None  # noqa: S101 - the law table maps this route
        return kind


_mint_world = minter(WorldSizeProduct, WorldSizeProduct.__attrs_init__)


def parse_world_size(body: bytes) -> WorldSizeProduct | BodyParseFailure:
    """Read ``{"world_size": N}``."""
    decoded = loads_exact(body)
    if isinstance(decoded, ValueError):
        return fail(Route.GET_WORLD_SIZE, str(decoded))
    if not isinstance(decoded, dict):
        return fail(Route.GET_WORLD_SIZE, "body is not a JSON object")
    raw = decoded.get("world_size")
    if not isinstance(raw, JsonNumber):
        return fail(Route.GET_WORLD_SIZE, 'no "world_size" number in the body')
    text = str(raw)
    if not text.isascii() or not text.isdigit():
        return fail(Route.GET_WORLD_SIZE, f"world_size {text[:40]!r} is not a positive integer")
    value = wire_int(text)
    if value is None or value > MAX_WORLD_SIZE:
        return fail(
            Route.GET_WORLD_SIZE,
            f"world_size {text[:20]}{'…' if len(text) > 20 else ''} is larger than any "
            f"deployment this package reads (at most {MAX_WORLD_SIZE:,})",
        )
    if value < 1:
        return fail(Route.GET_WORLD_SIZE, f"world_size {text!r} is not a positive integer")
    return _mint_world(product=value)
