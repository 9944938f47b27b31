"""``GET /server_info`` (development mode): the frontend's resolved configuration.

Two forms: the text form (``{"vllm_config": "<VllmConfig.__str__>"}``, a repr-like
``key=value, …`` string with nested brackets and quotes) and the JSON form
(``?config_format=json``, ``vllm_config`` as a nested object, ≥0.11).  Both are the
*frontend process's* configuration: resolved intent, not a census of workers.
"""

from __future__ import annotations

import enum
from typing import Any, final

import attrs

from vllm_evidence._adapters._json import JsonNumber, loads_exact
from vllm_evidence._adapters._text import strict_top_level_pieces
from vllm_evidence._adapters.failure import BodyParseFailure, fail
from vllm_evidence._bounds import MAX_WORLD_SIZE, wire_int
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.upstream._routes import Route

__all__ = [
    "ParallelConfiguration",
    "ServerInfo",
    "ServerInfoForm",
    "parse_server_info_json",
    "parse_server_info_text",
    "split_config_text",
]


class ServerInfoForm(enum.Enum):
    """Which form of ``/server_info`` an observation was read from."""

    TEXT = "text"
    JSON = "json"


@final
@attrs.frozen(init=False, repr=False)
class ParallelConfiguration(Sealed):
    """Resolved parallel sizes.  ``None`` means the form did not carry the field.

    An absent ``data_parallel_size`` (text form before 0.10.2) is unobserved, never 1.
    """

    __public_constructor__ = "vllm_evidence.readback_from_batch()"

    tensor_parallel_size: int | None
    pipeline_parallel_size: int | None
    data_parallel_size: int | None
    prefill_context_parallel_size: int | None
    """JSON form only."""
    decode_context_parallel_size: int | None
    world_size: int | None
    """JSON form only: ``parallel_config.world_size`` (PP×TP×PCP, without DP)."""
    distributed_executor_backend: str | None
    """JSON form only: ``"mp"``, ``"ray"``, ``"uni"``, ``"external_launcher"``, …"""


_mint_parallel = minter(ParallelConfiguration, ParallelConfiguration.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class ServerInfo(Sealed):
    """One parsed ``/server_info`` answer."""

    __public_constructor__ = "vllm_evidence.readback_from_batch()"

    form: ServerInfoForm
    parallel: ParallelConfiguration
    model: str | None
    """``model``: the configured model path or id (intent, not bytes)."""
    served_model_name: str | None
    """``served_model_name``: the first served name, as the config prints it."""
    instance_id: str | None
    """``vllm_config.instance_id`` (JSON form, ≥0.11), else ``None``."""


_mint_info = minter(ServerInfo, ServerInfo.__attrs_init__)

_PARALLEL_TEXT_KEYS = (
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "decode_context_parallel_size",
)


def split_config_text(text: str) -> dict[str, str] | ValueError:
    """Split a ``key=value, key=value`` string at top-level commas.

    Commas and ``=`` inside ``()``, ``[]``, ``{}``, a quoted string or an enum repr
    (``<Mode.X: 3>``) do not split.
    Returns the top-level keys mapped to their raw value text, or the
    :class:`ValueError` saying why the text is not such a list.  A repeated key is
    an error (the text would name two values for one setting).
    """
    result: dict[str, str] = {}
    items = strict_top_level_pieces(text)
    if isinstance(items, ValueError):
        return items
    for item in items:
        key, sep, value = item.strip().partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            return ValueError(f"item {item.strip()[:40]!r} is not key=value")
        if key in result:
            return ValueError(f"key {key!r} appears twice")
        result[key] = value.strip()
    return result


def _size_text(key: str, raw: str) -> int | ValueError:
    if not raw.isascii() or not raw.isdigit():
        return ValueError(f"{key}={raw[:40]!r} is not a positive integer")
    value = wire_int(raw)
    if value is None or value > MAX_WORLD_SIZE:
        return ValueError(
            f"{key}={raw[:20]}{'…' if len(raw) > 20 else ''} is larger than any deployment "
            f"this package reads (at most {MAX_WORLD_SIZE:,})"
        )
    if value < 1:
        return ValueError(f"{key}={raw!r} is not a positive integer")
    return value


def _unquote(raw: str) -> str:
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in ("'", '"'):
        return raw[1:-1]
    return raw


def parse_server_info_text(body: bytes) -> ServerInfo | BodyParseFailure:
    """Read the text form: ``{"vllm_config": "model='…', …, tensor_parallel_size=T, …"}``."""
    decoded = loads_exact(body)
    if isinstance(decoded, ValueError):
        return fail(Route.SERVER_INFO, str(decoded))
    if not isinstance(decoded, dict):
        return fail(Route.SERVER_INFO, "body is not a JSON object")
    config = decoded.get("vllm_config")
    if type(config) is not str:
        return fail(Route.SERVER_INFO, 'no "vllm_config" string (is this the JSON form?)')
    items = split_config_text(config)
    if isinstance(items, ValueError):
        return fail(Route.SERVER_INFO, f"vllm_config text: {items}")
    sizes: dict[str, int | None] = {}
    for key in _PARALLEL_TEXT_KEYS:
        raw = items.get(key)
        if raw is None:
            sizes[key] = None
            continue
        size = _size_text(key, raw)
        if isinstance(size, ValueError):
            return fail(Route.SERVER_INFO, str(size))
        sizes[key] = size
    if sizes["tensor_parallel_size"] is None:
        return fail(Route.SERVER_INFO, "vllm_config text has no tensor_parallel_size")
    model = items.get("model")
    served = items.get("served_model_name")
    return _mint_info(
        form=ServerInfoForm.TEXT,
        parallel=_mint_parallel(
            tensor_parallel_size=sizes["tensor_parallel_size"],
            pipeline_parallel_size=sizes["pipeline_parallel_size"],
            data_parallel_size=sizes["data_parallel_size"],
            prefill_context_parallel_size=None,
            decode_context_parallel_size=sizes["decode_context_parallel_size"],
            world_size=None,
            distributed_executor_backend=None,
        ),
        model=None if model is None else _unquote(model),
        served_model_name=None if served is None else _unquote(served),
        instance_id=None,
    )


def _json_size(section: dict[str, Any], key: str) -> int | ValueError | None:
    raw = section.get(key)
    if raw is None:
        return None
    if not isinstance(raw, JsonNumber):
        return ValueError(f"parallel_config.{key} is not a number")
    return _size_text(f"parallel_config.{key}", str(raw))


def _json_text(section: dict[str, Any], key: str, where: str) -> str | ValueError | None:
    raw = section.get(key)
    if raw is None:
        return None
    if type(raw) is not str:
        return ValueError(f"{where}.{key} is not a string")
    return raw


def parse_server_info_json(body: bytes) -> ServerInfo | BodyParseFailure:
    """Read the JSON form: ``vllm_config.parallel_config``, ``model_config``, ``instance_id``."""
    route = Route.SERVER_INFO_JSON
    decoded = loads_exact(body)
    if isinstance(decoded, ValueError):
        return fail(route, str(decoded))
    if not isinstance(decoded, dict):
        return fail(route, "body is not a JSON object")
    config = decoded.get("vllm_config")
    if not isinstance(config, dict):
        return fail(route, '"vllm_config" is not an object (is this the text form?)')
    parallel = config.get("parallel_config")
    if not isinstance(parallel, dict):
        return fail(route, "vllm_config.parallel_config is not an object")
    sizes: dict[str, int | None] = {}
    for key in (
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "data_parallel_size",
        "prefill_context_parallel_size",
        "decode_context_parallel_size",
        "world_size",
    ):
        size = _json_size(parallel, key)
        if isinstance(size, ValueError):
            return fail(route, str(size))
        sizes[key] = size
    if sizes["tensor_parallel_size"] is None:
        return fail(route, "parallel_config has no tensor_parallel_size")
    backend = _json_text(parallel, "distributed_executor_backend", "parallel_config")
    if isinstance(backend, ValueError):
        return fail(route, str(backend))
    model_config = config.get("model_config")
    model: str | None = None
    served: str | None = None
    if isinstance(model_config, dict):
        model_text = _json_text(model_config, "model", "model_config")
        served_text = _json_text(model_config, "served_model_name", "model_config")
        if isinstance(model_text, ValueError) or isinstance(served_text, ValueError):
            return fail(route, "model_config.model or served_model_name is not a string")
        model, served = model_text, served_text
    instance = config.get("instance_id")
    if instance is not None and type(instance) is not str:
        return fail(route, "vllm_config.instance_id is not a string")
    return _mint_info(
        form=ServerInfoForm.JSON,
        parallel=_mint_parallel(
            tensor_parallel_size=sizes["tensor_parallel_size"],
            pipeline_parallel_size=sizes["pipeline_parallel_size"],
            data_parallel_size=sizes["data_parallel_size"],
            prefill_context_parallel_size=sizes["prefill_context_parallel_size"],
            decode_context_parallel_size=sizes["decode_context_parallel_size"],
            world_size=sizes["world_size"],
            distributed_executor_backend=backend,
        ),
        model=model,
        served_model_name=served,
        instance_id=instance,
    )
