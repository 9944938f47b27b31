"""_capture/batch.py: what an exchange keeps of the headers a server sent."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_scrub import _PIECES
from vllm_evidence._capture.batch import (
    RECORDED_HEADERS,
    ExchangeRole,
    Transport,
    _new_exchange,
)
from vllm_evidence._scrub import scrub
from vllm_evidence.upstream._routes import Route

_NAMES = st.sampled_from([*sorted(RECORDED_HEADERS), "x-other", "Set-Cookie", "LOCATION"])
#: Header values: the scrubber's credential pieces, secrets and plain text, no line break
#: (no header value can hold one).
_VALUES = st.lists(
    st.one_of(
        st.sampled_from([p for p in _PIECES if "\n" not in p]),
        st.sampled_from(["s3cr3t-key-123", "k3y"]),
        st.text(st.characters(exclude_characters="\r\n"), max_size=6),
    ),
    max_size=8,
).map("".join)


def _exchange(headers: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    now = datetime.now(UTC)
    exchange = _new_exchange(
        route=Route.VERSION,
        role=ExchangeRole.ROUTE,
        transport=Transport.ANSWERED,
        status=200,
        headers=headers,
        body=b"{}",
        size_limit=1024,
        started_monotonic_ns=0,
        ended_monotonic_ns=1,
        started_at=now,
        ended_at=now,
        detail="",
    )
    return exchange.headers


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(_NAMES, _VALUES), max_size=6))
def test_recorded_headers_are_those_named_each_value_scrubbed(
    headers: list[tuple[str, str]],
) -> None:
    """The values are scrubbed as one text first; each value kept is what scrubbing it
    alone gives (secrets passed per probe are remembered process-wide here)."""
    from vllm_evidence._scrub import forget_all, remember

    remember("s3cr3t-key-123")
    remember("k3y")
    try:
        expected = tuple(
            (name.lower(), scrub(value, form="secrets"))
            for name, value in headers
            if name.lower() in RECORDED_HEADERS
        )
        assert _exchange(tuple(headers)) == expected
    finally:
        forget_all()


def test_a_credential_in_one_header_is_scrubbed_and_the_others_kept() -> None:
    kept = _exchange(
        (
            ("Location", "https://alice:pw@host/x?token=abc"),
            ("Server", "uvicorn"),
            ("Set-Cookie", "id=1"),  # not recorded
            ("WWW-Authenticate", "Bearer realm=x"),
        )
    )
    assert kept == (
        ("location", "https://***@host/x?token=***"),
        ("server", "uvicorn"),
        ("www-authenticate", "Bearer ***"),  # a bearer token's shape
    )
