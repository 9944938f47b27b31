"""_adapters/outcome.py: the memo of bodies a process serves unchanged, and the digest an
exchange derives when first read."""

from __future__ import annotations

import hashlib
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests._evidence import probe_stub
from vllm_evidence._adapters.failure import BodyParseFailure, fail
from vllm_evidence._adapters.outcome import (
    STATIC_BODIES,
    HttpError,
    Parsed,
    StaticBodyMemo,
    Unparsed,
    exchange_outcome,
)
from vllm_evidence._adapters.server_info import parse_server_info_text
from vllm_evidence._capture.batch import Exchange, ExchangeRole, Transport, _new_exchange
from vllm_evidence.upstream._routes import Route

REAL = Path(__file__).resolve().parents[1] / "fixtures/real/vllm-0.32.0-cpu/tp1-devmode-alias"


class Counting:
    """An adapter that counts its calls: ``b"bad"`` fails, anything else is its length."""

    def __init__(self) -> None:
        self.calls: list[bytes] = []

    def __call__(self, body: bytes) -> int | BodyParseFailure:
        self.calls.append(body)
        if body == b"bad":
            return fail(Route.SERVER_INFO, "not what a server_info body is")
        return len(body)


def _digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def _exchange(body: bytes | None, status: int | None = 200) -> Exchange:
    now = datetime.now(UTC)
    return _new_exchange(
        route=Route.SERVER_INFO,
        role=ExchangeRole.ROUTE,
        transport=Transport.ANSWERED if body is not None else Transport.TIMED_OUT,
        status=status,
        headers=(),
        body=body,
        size_limit=1 << 20,
        started_monotonic_ns=0,
        ended_monotonic_ns=1,
        started_at=now,
        ended_at=now,
        detail="" if body is not None else "no answer",
    )


def test_the_same_bytes_are_parsed_once_and_give_the_same_result() -> None:
    memo, adapter = StaticBodyMemo(8), Counting()
    first = memo.adapted(adapter, b"abc", _digest(b"abc"))
    again = memo.adapted(adapter, b"abc", _digest(b"abc"))
    assert (first, again) == (3, 3)
    assert adapter.calls == [b"abc"]


def test_other_bytes_are_parsed_again() -> None:
    memo, adapter = StaticBodyMemo(8), Counting()
    assert memo.adapted(adapter, b"abc", _digest(b"abc")) == 3
    assert memo.adapted(adapter, b"abcd", _digest(b"abcd")) == 4
    assert adapter.calls == [b"abc", b"abcd"]


def test_one_body_through_two_adapters_is_two_entries() -> None:
    memo, one, other = StaticBodyMemo(8), Counting(), Counting()
    memo.adapted(one, b"abc", _digest(b"abc"))
    memo.adapted(other, b"abc", _digest(b"abc"))
    assert (one.calls, other.calls, len(memo)) == ([b"abc"], [b"abc"], 2)


def test_a_failure_is_remembered_as_the_same_failure() -> None:
    memo, adapter = StaticBodyMemo(8), Counting()
    first = memo.adapted(adapter, b"bad", _digest(b"bad"))
    again = memo.adapted(adapter, b"bad", _digest(b"bad"))
    assert isinstance(first, BodyParseFailure)
    assert again is first
    assert adapter.calls == [b"bad"]


def test_the_memo_is_bounded_and_drops_the_least_recently_used() -> None:
    memo, adapter = StaticBodyMemo(2), Counting()
    bodies = [b"a", b"bb", b"ccc"]
    memo.adapted(adapter, bodies[0], _digest(bodies[0]))
    memo.adapted(adapter, bodies[1], _digest(bodies[1]))
    memo.adapted(adapter, bodies[0], _digest(bodies[0]))  # "a" used again: "bb" is older
    memo.adapted(adapter, bodies[2], _digest(bodies[2]))  # over capacity: "bb" dropped
    assert len(memo) == 2
    memo.adapted(adapter, bodies[0], _digest(bodies[0]))  # kept
    memo.adapted(adapter, bodies[1], _digest(bodies[1]))  # dropped: parsed again
    assert adapter.calls == [b"a", b"bb", b"ccc", b"bb"]


def test_a_memo_needs_room_for_one_entry() -> None:
    with pytest.raises(ValueError, match="at least one entry"):
        StaticBodyMemo(0)


def test_threads_sharing_a_memo_all_get_the_adapters_answer() -> None:
    memo, adapter = StaticBodyMemo(4), Counting()
    bodies = [bytes([65 + n % 6]) * (n % 6 + 1) for n in range(600)]
    results: list[int | BodyParseFailure] = [0] * len(bodies)

    def work(start: int) -> None:
        for n in range(start, len(bodies), 4):
            results[n] = memo.adapted(adapter, bodies[n], _digest(bodies[n]))

    threads = [threading.Thread(target=work, args=(start,)) for start in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [len(body) for body in bodies]
    assert len(memo) <= 4


def test_an_exchange_through_the_memo_has_the_arm_of_one_without_it() -> None:
    body = (REAL / "server_info.body").read_bytes()
    memo = StaticBodyMemo(4)
    plain = exchange_outcome(_exchange(body), parse_server_info_text)
    remembered = [
        exchange_outcome(_exchange(body), parse_server_info_text, memo=memo) for _ in range(3)
    ]
    assert isinstance(plain, Parsed)
    assert all(arm == plain for arm in remembered)
    assert len(memo) == 1


def test_an_unparsed_body_through_the_memo_is_unparsed() -> None:
    memo = StaticBodyMemo(4)
    arms = [exchange_outcome(_exchange(b"<html>"), parse_server_info_text, memo=memo)]
    arms.append(exchange_outcome(_exchange(b"<html>"), parse_server_info_text, memo=memo))
    assert all(isinstance(arm, Unparsed) for arm in arms)
    assert arms[0] == arms[1]


def test_only_a_200_body_is_adapted_or_remembered() -> None:
    memo, adapter = StaticBodyMemo(4), Counting()
    arm = exchange_outcome(_exchange(b"oops", status=500), adapter, memo=memo)
    assert isinstance(arm, HttpError)
    missing = exchange_outcome(_exchange(None, status=None), adapter, memo=memo)
    assert not isinstance(missing, Parsed)
    assert (adapter.calls, len(memo)) == ([], 0)


def test_the_readback_remembers_server_info_but_never_metrics() -> None:
    """A probed batch's two ``/server_info`` reads go through the process memo, its
    ``/metrics`` reads (bytes that change read to read) never do; and a readback of the
    same batch again gives equal arms."""
    from vllm_evidence._adapters.metrics import parse_metrics
    from vllm_evidence._adapters.server_info import parse_server_info_json
    from vllm_evidence._readback.front_door import readback_from_batch

    readback = probe_stub()
    text = readback.batch.exchange(Route.SERVER_INFO)
    json_ex = readback.batch.exchange(Route.SERVER_INFO_JSON)
    assert text is not None
    assert json_ex is not None
    keys = set(STATIC_BODIES._entries)  # the memo's own entries
    assert (parse_server_info_text, text.body_sha256) in keys
    assert (parse_server_info_json, json_ex.body_sha256) in keys
    assert all(adapter is not parse_metrics for adapter, _ in keys)
    again = readback_from_batch(readback.batch)
    assert (again.server_info, again.server_info_json) == (
        readback.server_info,
        readback.server_info_json,
    )
    assert isinstance(again.server_info, Parsed)


def test_an_exchanges_digest_is_its_bodys_sha256_derived_when_read() -> None:
    body = b'{"version":"0.32.0"}'
    exchange = _exchange(body)
    assert exchange.body_sha256 == hashlib.sha256(body).hexdigest()
    assert exchange.body_sha256 is exchange.body_sha256  # computed once, then kept
    assert _exchange(None, status=None).body_sha256 is None
