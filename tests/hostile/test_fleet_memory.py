"""Item 7 of "Hostile input, round 3": a fleet's memory is bounded in all, not per server.

Probes that share a :class:`BodyBudget` hold at most its bytes of bodies at once
(requests in flight at their cap, answers read at their size, until the batch is
released), whatever the servers send: a request that does not fit waits, before it is
sent, and is never refused or cut short; its timeout and its batch's deadline do not
count the wait; and waiting never deadlocks.  The figures are small (1 MiB caps) so that
the tests are light; the bound is the same arithmetic at 8 MiB.
"""

from __future__ import annotations

import asyncio
from contextlib import ExitStack

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hostile._server import HostileServer, hostile_server, response
from vllm_evidence._capture.batch import CaptureBatch, Transport
from vllm_evidence._capture.http import (
    BodyBudget,
    ProbeSession,
    ProbeSettings,
    probe,
    worst_case_body_bytes,
)
from vllm_evidence.errors import InputError

MIB = 1024 * 1024
CAP = MIB
#: What every route answers: most of the cap.
BODY = 900 * 1024
#: One probe's worst case: four /metrics reads and six routes, each at the 1 MiB cap.
WORST = 10 * MIB


def big_answers(target: str, headers: dict[str, str]) -> bytes:
    return response(200, b"x" * BODY)


def _answered_whole(batch: CaptureBatch) -> bool:
    return all(
        e.transport is Transport.ANSWERED and e.body is not None and len(e.body) == BODY
        for e in batch.all_exchanges()
    )


def _servers(stack: ExitStack, count: int) -> list[HostileServer]:
    return [stack.enter_context(hostile_server(big_answers)) for _ in range(count)]


def test_one_probes_worst_case_is_its_requests_times_the_cap() -> None:
    assert worst_case_body_bytes(max_body_bytes=CAP) == WORST
    assert worst_case_body_bytes(max_body_bytes=CAP, development_routes=False) == 7 * MIB
    # A key shorter than "***" can grow a body that reflects it: three times the cap.
    assert worst_case_body_bytes(max_body_bytes=CAP, api_key="k") == 3 * WORST
    assert worst_case_body_bytes(max_body_bytes=CAP, api_key="sk-long-key") == WORST


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "512"])
def test_a_budget_is_a_positive_number_of_bytes(bad: object) -> None:
    with pytest.raises(InputError, match="positive number of bytes"):
        BodyBudget(bad)  # type: ignore[arg-type]


def test_probes_sharing_a_budget_never_hold_more_and_none_is_refused() -> None:
    limit = 25 * MIB  # two and a half probes' worst case, for six servers at once
    budget = BodyBudget(limit)

    async def run(urls: list[str]) -> list[CaptureBatch]:
        settings = ProbeSettings(max_body_bytes=CAP, timeout=20)
        async with ProbeSession(settings, body_budget=budget) as session:

            async def one(url: str) -> CaptureBatch:
                batch = await session.probe(url)
                await asyncio.sleep(0.05)  # an assessment, holding the bytes meanwhile
                budget.release(batch)
                return batch

            return await asyncio.gather(*(one(url) for url in urls))

    with ExitStack() as stack:
        servers = _servers(stack, 6)
        batches = asyncio.run(run([s.url for s in servers]))
    assert budget.high_water <= limit
    assert budget.high_water > WORST  # more than one probe read at once
    assert budget.waits > 0  # the bound was reached: requests waited
    assert all(_answered_whole(b) for b in batches)  # and none was refused or cut
    assert budget.held == 0  # every batch given back


def test_a_budget_of_one_probes_worst_case_reads_one_probe_at_a_time_without_deadlock() -> None:
    budget = BodyBudget(WORST)

    async def run(urls: list[str]) -> list[CaptureBatch]:
        settings = ProbeSettings(max_body_bytes=CAP)
        async with ProbeSession(settings, body_budget=budget) as session:

            async def one(url: str) -> CaptureBatch:
                batch = await session.probe(url)
                budget.release(batch)
                return batch

            return await asyncio.wait_for(asyncio.gather(*(one(u) for u in urls)), 120)

    with ExitStack() as stack:
        servers = _servers(stack, 4)
        batches = asyncio.run(run([s.url for s in servers]))
    assert all(_answered_whole(b) for b in batches)
    assert budget.high_water <= WORST
    assert budget.held == 0


def test_a_request_waits_for_room_and_its_timeouts_do_not_count_the_wait() -> None:
    budget = BodyBudget(WORST)

    async def run(first_url: str, second_url: str) -> tuple[CaptureBatch, CaptureBatch, float]:
        # Two runs' probes (each a session of its own) sharing one budget.
        kept = await probe(first_url, max_body_bytes=CAP, body_budget=budget)
        assert budget.held == 10 * BODY  # kept until released
        started = asyncio.get_running_loop().time()
        # 0.5 s a request and 1 s for the batch: the wait below is longer than both.
        second = asyncio.ensure_future(
            probe(
                second_url,
                max_body_bytes=CAP,
                timeout=0.5,
                deadline=1.0,
                body_budget=budget,
            )
        )
        await asyncio.sleep(2.0)
        assert not second.done()  # waiting for room, not refused
        waited = budget.waits
        budget.release(kept)
        batch = await second
        budget.release(batch)
        assert waited > 0
        return kept, batch, asyncio.get_running_loop().time() - started

    with ExitStack() as stack:
        first, second = _servers(stack, 2)
        kept, batch, elapsed = asyncio.run(run(first.url, second.url))
    assert elapsed > 2.0
    assert _answered_whole(kept)
    assert _answered_whole(batch)  # nothing timed out: the wait was not its time
    assert budget.held == 0


def test_a_cancelled_probe_gives_back_what_it_held() -> None:
    budget = BodyBudget(WORST)

    async def run(first_url: str, second_url: str) -> None:
        async with ProbeSession(ProbeSettings(max_body_bytes=CAP), body_budget=budget) as session:
            kept = await session.probe(first_url)
            second = asyncio.ensure_future(session.probe(second_url))
            await asyncio.sleep(1.0)  # it has read what fits and waits for the rest
            assert budget.held > 10 * BODY
            second.cancel()
            with pytest.raises(asyncio.CancelledError):
                await second
            assert budget.held == 10 * BODY  # only the first batch's bodies
            budget.release(kept)
            budget.release(kept)  # twice: nothing more
            assert budget.held == 0

    with ExitStack() as stack:
        first, second = _servers(stack, 2)
        asyncio.run(run(first.url, second.url))


def test_a_budget_smaller_than_one_probes_worst_case_is_refused_before_any_request() -> None:
    with hostile_server(big_answers) as server:
        with pytest.raises(InputError, match="smaller than one probe's worst case"):
            asyncio.run(probe(server.url, max_body_bytes=CAP, body_budget=BodyBudget(WORST - 1)))
        assert server.requests == []
        # The other direction: exactly the worst case reads the whole batch.
        budget = BodyBudget(WORST)
        batch = asyncio.run(probe(server.url, max_body_bytes=CAP, body_budget=budget))
    assert _answered_whole(batch)
    assert budget.held == 10 * BODY
    budget.release(batch)
    assert budget.held == 0


# -- the waiting rule itself, without sockets ------------------------------------------


class _Batch:
    """What :meth:`BodyBudget.release` reads of a batch: its id."""

    def __init__(self, batch_id: str) -> None:
        self.batch_id = batch_id


@settings(max_examples=60, deadline=None)
@given(
    probes=st.integers(1, 12),
    room=st.integers(0, 30),  # requests' worth of room beyond one probe's worst case
    kept=st.lists(st.integers(0, 8), min_size=10, max_size=10),  # eighths of the cap
    hold=st.lists(st.integers(0, 3), min_size=12, max_size=12),  # loop turns held
)
def test_any_mix_of_probes_finishes_within_the_budget(
    probes: int, room: int, kept: list[int], hold: list[int]
) -> None:
    cap = 8
    limit = 10 * cap + room * cap
    budget = BodyBudget(limit)
    seen: list[int] = []

    async def request(claim: object) -> None:
        await budget._reserve(claim, cap)  # type: ignore[arg-type]
        seen.append(budget.held)
        await asyncio.sleep(0)
        budget._settle(claim, cap, kept[len(seen) % 10])  # type: ignore[arg-type]

    async def one(index: int) -> None:
        claim = budget._open(10, cap)
        for _ in range(2):  # the opening reads, one after the other
            await request(claim)
        await asyncio.gather(*(request(claim) for _ in range(6)))  # the routes at once
        for _ in range(2):
            await request(claim)
        batch = _Batch(str(index))
        budget._finish(claim, batch)  # type: ignore[arg-type]
        for _ in range(hold[index]):  # assessed for a while, holding its bytes
            await asyncio.sleep(0)
        budget.release(batch)  # type: ignore[arg-type]

    async def run() -> None:
        await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(probes))), 30)

    asyncio.run(run())  # a deadlock would time out here
    assert max(seen) <= limit
    assert budget.high_water <= limit
    assert budget.held == 0
