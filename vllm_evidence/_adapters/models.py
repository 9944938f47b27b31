"""``GET /v1/models``: one card per served name (and per LoRA adapter)."""

from __future__ import annotations

from typing import final

import attrs

from vllm_evidence._adapters._json import JsonNumber, loads_exact
from vllm_evidence._adapters.failure import BodyParseFailure, fail
from vllm_evidence._measure import MeasureParseFailure, TokenCount
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.upstream._routes import Route

__all__ = ["ModelCard", "ServedModels", "parse_models"]


@final
@attrs.frozen(init=False, repr=False)
class ModelCard(Sealed):
    """One entry of ``/v1/models``.

    ``root`` is the configured path as given to vLLM: intent, not the bytes served.
    """

    __public_constructor__ = "vllm_evidence.readback_from_batch()"

    served_id: str
    """``id``: a served model name (each ``--served-model-name`` is its own card)."""
    owned_by: str | None
    """``owned_by`` (``"vllm"``), or ``None`` when the card has none."""
    root: str | None
    """``root``: the model string as configured (a path or repository id)."""
    parent: str | None
    """``parent``: the base model's served name for a LoRA adapter, else ``None``."""
    max_model_len: TokenCount | None
    """``max_model_len``; ``None`` when the card carries none (LoRA cards)."""


_mint_card = minter(ModelCard, ModelCard.__attrs_init__)


@final
@attrs.frozen(init=False, repr=False)
class ServedModels(Sealed):
    """The cards of one ``/v1/models`` answer, in served order."""

    __public_constructor__ = "vllm_evidence.readback_from_batch()"

    cards: tuple[ModelCard, ...]


_mint_models = minter(ServedModels, ServedModels.__attrs_init__)


def parse_models(body: bytes) -> ServedModels | BodyParseFailure:
    """Read ``{"object": "list", "data": [card, …]}``; every card must be well formed."""
    decoded = loads_exact(body)
    if isinstance(decoded, ValueError):
        return fail(Route.MODELS, str(decoded))
    if not isinstance(decoded, dict) or not isinstance(decoded.get("data"), list):
        return fail(Route.MODELS, 'body is not an object with a "data" list')
    cards: list[ModelCard] = []
    for index, card in enumerate(decoded["data"]):
        if not isinstance(card, dict):
            return fail(Route.MODELS, f"data[{index}] is not an object")
        served_id = card.get("id")
        if type(served_id) is not str or served_id == "":
            return fail(Route.MODELS, f"data[{index}] has no id string")
        texts: dict[str, str | None] = {}
        for key in ("owned_by", "root", "parent"):
            value = card.get(key)
            if value is not None and type(value) is not str:
                return fail(Route.MODELS, f"data[{index}].{key} is not a string or null")
            texts[key] = value
        raw_len = card.get("max_model_len")
        max_model_len: TokenCount | None = None
        if raw_len is not None:
            if not isinstance(raw_len, JsonNumber):
                return fail(Route.MODELS, f"data[{index}].max_model_len is not a number")
            parsed = TokenCount.parse(str(raw_len))
            if isinstance(parsed, MeasureParseFailure):
                return fail(Route.MODELS, f"data[{index}].max_model_len: {parsed.describe()}")
            max_model_len = parsed
        cards.append(
            _mint_card(
                served_id=served_id,
                owned_by=texts["owned_by"],
                root=texts["root"],
                parent=texts["parent"],
                max_model_len=max_model_len,
            )
        )
    return _mint_models(cards=tuple(cards))
