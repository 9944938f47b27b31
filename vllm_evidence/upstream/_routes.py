"""The closed set of vLLM front-door routes this project knows, and what each may yield.

The probe can only be asked for members of :class:`Route` whose ``method`` is GET
and which are :attr:`Route.probe_readable`; ``/collective_rpc`` is a member so that the
law table can name it (and say it is never called), not so that anything can call it.

The parallel evidence kind of a route is a *projection* of the route
(:attr:`Route.parallel_evidence_kind`), never a value a caller pairs with one
(DESIGN principle 4).
"""

from __future__ import annotations

import enum

__all__ = ["PROBE_ROUTES", "ParallelEvidenceKind", "Route"]


class ParallelEvidenceKind(enum.Enum):
    """What a parallel-evidence route can tell about the parallel layout."""

    RESOLVED_CONFIGURATION = "resolved_configuration"
    """``/server_info``: the frontend's resolved ``VllmConfig`` (TP, PP, DP sizes)."""
    WORLD_SIZE_PRODUCT = "world_size_product"
    """``/get_world_size``: a product (TP×PP×PCP[×DP]) that narrows but never decides."""
    WORKER_FAN_OUT = "worker_fan_out"
    """``/collective_rpc``: runs a method on every worker. Never called by this project."""


class Route(enum.Enum):
    """A vLLM front-door route, by the file stem a capture directory names it with."""

    VERSION = "version"
    MODELS = "v1_models"
    METRICS = "metrics"
    HEALTH = "health"
    SERVER_INFO = "server_info"
    SERVER_INFO_JSON = "server_info__config_format_json"
    GET_WORLD_SIZE = "get_world_size"
    COLLECTIVE_RPC = "collective_rpc"

    @property
    def stem(self) -> str:
        """The file stem in a capture directory (``v1_models`` for ``/v1/models``)."""
        return self.value

    @property
    def path(self) -> str:
        """The URL path, without query."""
        return _PATHS[self][0]

    @property
    def query(self) -> str | None:
        """The fixed query string (``config_format=json``), or ``None``."""
        return _PATHS[self][1]

    @property
    def target(self) -> str:
        """Path plus query, as sent on the request line."""
        query = self.query
        return self.path if query is None else f"{self.path}?{query}"

    @property
    def method(self) -> str:
        """The only HTTP method this project associates with the route."""
        return "POST" if self is Route.COLLECTIVE_RPC else "GET"

    @property
    def development_only(self) -> bool:
        """Whether vLLM registers it only with ``VLLM_SERVER_DEV_MODE=1`` (where it exists)."""
        return self in _DEVELOPMENT_ROUTES

    @property
    def probe_readable(self) -> bool:
        """Whether the read-only probe may send a GET to it."""
        return self is not Route.COLLECTIVE_RPC

    @property
    def parallel_evidence_kind(self) -> ParallelEvidenceKind | None:
        """The parallel evidence this route can yield, projected from the route."""
        return _PARALLEL_KINDS.get(self)

    @classmethod
    def from_stem(cls, stem: str) -> Route | None:
        """The route a capture-directory file stem names, or ``None``."""
        try:
            return cls(stem)
        except ValueError:
            return None


_PATHS: dict[Route, tuple[str, str | None]] = {
    Route.VERSION: ("/version", None),
    Route.MODELS: ("/v1/models", None),
    Route.METRICS: ("/metrics", None),
    Route.HEALTH: ("/health", None),
    Route.SERVER_INFO: ("/server_info", None),
    Route.SERVER_INFO_JSON: ("/server_info", "config_format=json"),
    Route.GET_WORLD_SIZE: ("/get_world_size", None),
    Route.COLLECTIVE_RPC: ("/collective_rpc", None),
}

_DEVELOPMENT_ROUTES = frozenset(
    {Route.SERVER_INFO, Route.SERVER_INFO_JSON, Route.GET_WORLD_SIZE, Route.COLLECTIVE_RPC}
)

_PARALLEL_KINDS: dict[Route, ParallelEvidenceKind] = {
    Route.SERVER_INFO: ParallelEvidenceKind.RESOLVED_CONFIGURATION,
    Route.SERVER_INFO_JSON: ParallelEvidenceKind.RESOLVED_CONFIGURATION,
    Route.GET_WORLD_SIZE: ParallelEvidenceKind.WORLD_SIZE_PRODUCT,
    Route.COLLECTIVE_RPC: ParallelEvidenceKind.WORKER_FAN_OUT,
}

#: The routes the probe reads, in the order it reads them (``/metrics`` also brackets).
PROBE_ROUTES: tuple[Route, ...] = tuple(r for r in Route if r.probe_readable)
