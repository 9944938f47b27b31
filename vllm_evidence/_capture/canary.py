"""The gate's generation canary: one bounded completion, sent only when asked for.

:func:`send_canary` POSTs one completion to ``/v1/completions`` — a fixed prompt
(:data:`CANARY_PROMPT`), ``max_tokens`` 1, temperature 0 — naming a model the front door
serves, and returns what came back as a sealed :class:`CanaryExchange`: its status and
body (at most :data:`MAX_CANARY_BODY_BYTES`), or why there is none.  What the answer
establishes is the gate's to decide (:mod:`vllm_evidence._gate.canary`).

It is never part of a probe: the probe's closed route set stays GET-only
(:mod:`vllm_evidence.upstream._routes`), and only ``launch --serve … --canary`` sends
this, at most once a round.  The request goes on a connection opened for it and closed
after, is never sent twice (a completion is not an idempotent read), carries the API key
only as a bearer token to the target's own host, is marked by
:data:`CANARY_HEADER`, and a body that reflects the key has
it replaced by ``***``.  On the server it costs one request of a prompt of a few tokens
and one generated token: a scheduler slot and one decode step.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from typing import Final, final

import attrs

from vllm_evidence._capture._target import clean_target
from vllm_evidence._capture._wire import ProbeClient, ProtocolError, server_address
from vllm_evidence._capture.batch import Transport
from vllm_evidence._capture.http import _BASE_PATH_RE, _TOKEN_RE, _base_path, _check_seconds
from vllm_evidence._scrub import remember, scrub_body
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.errors import InputError

__all__ = [
    "CANARY_HEADER",
    "CANARY_PATH",
    "CANARY_PROMPT",
    "MAX_CANARY_BODY_BYTES",
    "MAX_MODEL_CHARS",
    "CanaryExchange",
    "send_canary",
]

#: Who makes these: the gate, which only the command line runs.
_GATE = "the gate (vllm-evidence launch --serve, vllm-evidence watch --listen)"

#: vLLM's OpenAI-compatible completions route (``vllm/entrypoints/openai/api_server.py``,
#: every release read: ``@router.post("/v1/completions")``).
CANARY_PATH: Final = "/v1/completions"
#: The canary's fixed prompt (a few tokens in any tokenizer).
CANARY_PROMPT: Final = "vllm-evidence canary"
#: The most bytes of an answer kept: one token's completion is a few hundred.
MAX_CANARY_BODY_BYTES: Final = 64 * 1024
#: The longest model id the canary names (an id comes from the server: bounded).
MAX_MODEL_CHARS: Final = 1024
#: The header that marks the canary's request as the gate's (a proxy's or a server's
#: logs can tell it from traffic; a test's request guard tells it from a probe's).
CANARY_HEADER: Final = ("X-Vllm-Evidence-Canary", "1")


@final
@attrs.frozen(init=False, repr=False)
class CanaryExchange(Sealed):
    """One canary request and what came back (made by :func:`send_canary` only)."""

    __public_constructor__ = _GATE

    model: str
    transport: Transport
    """``answered``, ``timed_out``, ``unreachable`` or ``too_large``."""
    status: int | None
    body: bytes | None
    """The answer's body (an answer within :data:`MAX_CANARY_BODY_BYTES`), else ``None``."""
    detail: str
    elapsed_s: float

    def _repr_summary(self) -> str:
        got = self.transport.value if self.status is None else f"HTTP {self.status}"
        return f"{self.model!r}: {got} in {self.elapsed_s:.3f}s"


_mint = minter(CanaryExchange, CanaryExchange.__attrs_init__)


def canary_body(model: str) -> bytes:
    """The request's JSON body for ``model``."""
    request = {"model": model, "prompt": CANARY_PROMPT, "max_tokens": 1, "temperature": 0}
    return json.dumps(request, ensure_ascii=True, separators=(",", ":")).encode("ascii")


async def send_canary(
    url: str,
    model: str,
    *,
    api_key: str | None = None,
    timeout_s: float = 5.0,
    verify: bool | ssl.SSLContext = True,
) -> CanaryExchange:
    """Send the canary to the front door at ``url`` for ``model`` (see the module) and
    return the exchange, whatever happened, within ``timeout_s``.

    :class:`InputError` for a URL that is not a front door's, an empty or overlong model
    id, an API key that is not a bearer token, or a timeout that is not a positive
    finite number of seconds."""
    target = clean_target(url)
    if not isinstance(model, str) or not model or len(model) > MAX_MODEL_CHARS:  # type: ignore[redundant-expr]  # callers outside mypy
        msg = f"the canary needs a model id of 1 to {MAX_MODEL_CHARS} characters"
        raise InputError(msg)
    if api_key is not None and not _TOKEN_RE.fullmatch(api_key):
        msg = "the API key must be printable ASCII with no spaces"
        raise InputError(msg)
    _check_seconds(timeout_s, "the canary's timeout")
    path = _base_path(target)
    if not _BASE_PATH_RE.fullmatch(path):
        msg = "the canary's request line would not be the completions route"
        raise InputError(msg)
    headers = [
        ("Accept", "application/json"),
        ("Accept-Encoding", "identity"),
        ("User-Agent", "vllm-evidence"),
        CANARY_HEADER,
    ]
    secrets: tuple[str, ...] = ()
    if api_key is not None:
        headers.append(("Authorization", f"Bearer {api_key}"))
        remember(api_key)
        secrets = (api_key,)
    started = time.monotonic()
    status: int | None = None
    body: bytes | None = None
    detail = ""
    async with ProbeClient(verify=verify, connections_per_server=1) as client:
        try:
            async with asyncio.timeout(float(timeout_s)):
                reply = await client.post_once(
                    server_address(target),
                    path + CANARY_PATH,
                    headers,
                    canary_body(model),
                    max_body_bytes=MAX_CANARY_BODY_BYTES,
                )
        except TimeoutError:
            transport = Transport.TIMED_OUT
            detail = f"no complete answer within {float(timeout_s):.3g}s"
        except (OSError, EOFError, ProtocolError, ssl.SSLError) as exc:
            transport = Transport.UNREACHABLE
            detail = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        else:
            status = reply.status
            if reply.too_large:
                transport = Transport.TOO_LARGE
                detail = f"body larger than {MAX_CANARY_BODY_BYTES} bytes"
            else:
                transport = Transport.ANSWERED
                body = scrub_body(reply.body or b"", secrets=secrets)
    return _mint(
        model=model,
        transport=transport,
        status=status,
        body=body,
        detail=detail,
        elapsed_s=time.monotonic() - started,
    )
