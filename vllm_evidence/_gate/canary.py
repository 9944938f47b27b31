"""The ``generation`` claim: did one bounded completion bring a token back this round?

Opt-in (``launch --serve … --canary``).  Each round, after the assessment, the gate sends
one canary (:func:`vllm_evidence._capture.canary.send_canary`) to the first base model
the front door's ``/v1/models`` served *this round* (an adapter's card is never chosen:
a LoRA adapter can fail while its base generates, and the base is what the engine
runs), and decides from the answer alone:

* **established** (``generated``) — HTTP 200, a JSON object whose ``choices`` is a
  non-empty list and whose ``usage.completion_tokens`` is an integer of at least 1
  (vLLM's ``CompletionResponse``: ``vllm/entrypoints/openai/protocol.py``, every release
  read; ``usage`` is always present in a non-streamed answer);
* refused, earliest reason first: ``canary_no_model`` (no base model served this round:
  nothing to name, nothing sent), ``canary_unreachable``, ``canary_timed_out``,
  ``canary_too_large``, ``canary_http_error`` (any other status: an engine that is dead
  answers 500, an overloaded one 503, an embedding-only model 400/404),
  ``canary_unparsed`` (not a JSON object), ``canary_no_token`` (a JSON answer with no
  generated token).

The claim holds for the round it was sent in only: a round that sent none (no base
model) is refused, never carried over from an earlier round.
"""

from __future__ import annotations

import enum
import json
import ssl
from typing import final

import attrs

from vllm_evidence._assessment import Assessment
from vllm_evidence._capture._strict_json import StrictJsonError, check_depth
from vllm_evidence._capture.batch import Transport
from vllm_evidence._capture.canary import MAX_MODEL_CHARS, CanaryExchange, send_canary
from vllm_evidence._seal import Sealed, minter

__all__ = [
    "CanaryReason",
    "CanaryResult",
    "judge_canary",
    "run_canary",
    "served_base_model",
]

#: Who makes these: the gate, which only the command line runs.
_GATE = "the gate (vllm-evidence launch --serve, vllm-evidence watch --listen)"


class CanaryReason(enum.Enum):
    """Why ``generation`` is established or refused this round (earliest first)."""

    GENERATED = "generated"
    NO_MODEL = "canary_no_model"
    UNREACHABLE = "canary_unreachable"
    TIMED_OUT = "canary_timed_out"
    TOO_LARGE = "canary_too_large"
    HTTP_ERROR = "canary_http_error"
    UNPARSED = "canary_unparsed"
    NO_TOKEN = "canary_no_token"  # noqa: S105  # a reason, not a credential


@final
@attrs.frozen(init=False, repr=False)
class CanaryResult(Sealed):
    """What this round's canary establishes (made by :func:`judge_canary` and
    :func:`run_canary` only)."""

    __public_constructor__ = _GATE

    generated: bool
    reason: CanaryReason
    detail: str
    model: str | None
    """The model id the canary named (``None`` when none was sent)."""
    status: int | None
    elapsed_s: float | None

    def _repr_summary(self) -> str:
        return f"{self.reason.value}: {self.detail}"


_mint = minter(CanaryResult, CanaryResult.__attrs_init__)

#: The deepest nesting of an answer read (vLLM's is four deep).
_MAX_DEPTH = 32


def served_base_model(assessment: Assessment) -> str | None:
    """The first base model (no ``parent``) of this round's ``/v1/models``, or ``None``."""
    models = assessment.evidence.models()
    if models is None:
        return None
    for card in models.cards:
        if card.parent is None and 0 < len(card.served_id) <= MAX_MODEL_CHARS:
            return card.served_id
    return None


def _refused(
    reason: CanaryReason, detail: str, exchange: CanaryExchange | None = None
) -> CanaryResult:
    return _mint(
        generated=False,
        reason=reason,
        detail=detail,
        model=None if exchange is None else exchange.model,
        status=None if exchange is None else exchange.status,
        elapsed_s=None if exchange is None else exchange.elapsed_s,
    )


_TRANSPORT_REASONS = {
    Transport.UNREACHABLE: CanaryReason.UNREACHABLE,
    Transport.TIMED_OUT: CanaryReason.TIMED_OUT,
    Transport.TOO_LARGE: CanaryReason.TOO_LARGE,
}


def judge_canary(exchange: CanaryExchange) -> CanaryResult:
    """What one canary exchange establishes (see the module)."""
    where = f"POST /v1/completions for {exchange.model!r}"
    if exchange.transport is not Transport.ANSWERED or exchange.body is None:
        reason = _TRANSPORT_REASONS.get(exchange.transport, CanaryReason.UNREACHABLE)
        return _refused(reason, f"{where}: {exchange.detail or exchange.transport.value}", exchange)
    if exchange.status != 200:
        return _refused(CanaryReason.HTTP_ERROR, f"{where}: HTTP {exchange.status}", exchange)
    try:
        text = exchange.body.decode("utf-8")
        check_depth(text, _MAX_DEPTH)  # bounded before the recursive decoder runs
        answer = json.loads(text, parse_float=str, parse_constant=str)
    except (UnicodeDecodeError, StrictJsonError, ValueError, RecursionError) as exc:
        why = " ".join(str(exc).split())[:120]
        return _refused(CanaryReason.UNPARSED, f"{where}: not JSON ({why})", exchange)
    if not isinstance(answer, dict):
        return _refused(CanaryReason.UNPARSED, f"{where}: not a JSON object", exchange)
    choices = answer.get("choices")
    usage = answer.get("usage")
    tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
    if not isinstance(choices, list) or not choices:
        return _refused(CanaryReason.NO_TOKEN, f"{where}: HTTP 200 with no choices", exchange)
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        return _refused(
            CanaryReason.NO_TOKEN,
            f"{where}: HTTP 200 but usage.completion_tokens is {str(tokens)[:40]}",
            exchange,
        )
    return _mint(
        generated=True,
        reason=CanaryReason.GENERATED,
        detail=f"{where}: {tokens} token(s) in {exchange.elapsed_s:.3f} s",
        model=exchange.model,
        status=exchange.status,
        elapsed_s=exchange.elapsed_s,
    )


async def run_canary(
    url: str,
    assessment: Assessment,
    *,
    api_key: str | None = None,
    timeout_s: float = 5.0,
    verify: bool | ssl.SSLContext = True,
) -> CanaryResult:
    """This round's canary to the front door at ``url``, for the first base model this
    round's ``assessment`` of it read (see the module)."""
    model = served_base_model(assessment)
    if model is None:
        return _refused(
            CanaryReason.NO_MODEL,
            "no base model was served on /v1/models this round: no canary sent",
        )
    exchange = await send_canary(url, model, api_key=api_key, timeout_s=timeout_s, verify=verify)
    return judge_canary(exchange)
