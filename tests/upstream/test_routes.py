"""The closed route set: the development-mode routes and the file stems a capture uses."""

from __future__ import annotations

from vllm_evidence.upstream import (
    Route,
)


def test_development_routes_are_the_four_dev_mode_routes() -> None:
    dev = {route.value for route in Route if route.development_only}
    assert dev == {
        "server_info",
        "server_info__config_format_json",
        "get_world_size",
        "collective_rpc",
    }


def test_a_file_stem_names_a_route_or_nothing() -> None:
    assert Route.from_stem("v1_models") is Route.MODELS
    assert Route.from_stem("server_info__config_format_json") is Route.SERVER_INFO_JSON
    assert Route.from_stem("v1/models") is None
    assert Route.from_stem("") is None
