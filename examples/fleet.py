"""Reading a fleet from the library: one client, many servers at once.

    python examples/fleet.py http://10.0.0.7:8000 http://10.0.0.8:8000 ...

What ``vllm-evidence probe --targets`` does, in the form orchestration code holds: one
:func:`~vllm_evidence.capture.http.new_client` for the whole run (one TLS context, each
server's connections kept for its own probe and closed after it), ``at_once`` servers
read at a time, each assessed as its probe ends.  A server that does not answer is an
assessment too: its decisions refuse and name what was missing; only a string that is
not a URL this package reads is an :class:`~vllm_evidence.InputError` instead.

Memory is bounded in all: every probe shares one
:class:`~vllm_evidence.capture.http.BodyBudget`, so the bodies held at once (being read,
or waiting to be assessed) stay within it however the servers size their answers; a
request that would pass it waits, and each batch's bytes are given back once assessed.
Here :func:`~vllm_evidence.assess` runs on the event loop, so a server whose bodies are
costly to parse holds up the other servers' reads meanwhile (their timeouts count it);
the command assesses in worker processes instead (``vllm_evidence._cli._fleet``).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence

from vllm_evidence import Assessment, InputError, assess, probe, readback_from_batch
from vllm_evidence.capture.http import DEFAULT_BODY_BUDGET_BYTES, BodyBudget, new_client

__all__ = ["read_fleet"]


async def read_fleet(
    urls: Sequence[str],
    *,
    at_once: int = 64,
    api_key: str | None = None,
    body_budget: BodyBudget | None = None,
) -> dict[str, Assessment | InputError]:
    """Probe and assess every server of ``urls``, ``at_once`` of them at a time, their
    bodies within ``body_budget`` (1 GiB if none is given)."""
    results: dict[str, Assessment | InputError] = {}
    pending = iter(urls)
    budget = BodyBudget(DEFAULT_BODY_BUDGET_BYTES) if body_budget is None else body_budget
    async with new_client() as client:

        async def worker() -> None:
            for url in pending:  # one shared iterator: each URL is taken once
                try:
                    batch = await probe(url, api_key=api_key, client=client, body_budget=budget)
                except InputError as exc:
                    results[url] = exc
                    continue
                try:
                    results[url] = assess(readback_from_batch(batch), None)
                finally:
                    budget.release(batch)  # its bodies are no longer needed

        async with asyncio.TaskGroup() as group:
            for _ in range(min(at_once, len(urls))):
                group.create_task(worker())
    return results


def _line(url: str, result: Assessment | InputError) -> str:
    if isinstance(result, InputError):
        return f"{url}: {result}"
    return (
        f"{url}: vLLM {result.version or '?'}, parallel {result.parallel.reason.value}, "
        f"capacity {result.capacity.reason.value}"
    )


def main(urls: Sequence[str]) -> None:
    """One line a server, in the order given (the dict holds them as they finished)."""
    results = asyncio.run(read_fleet(urls))
    for url in dict.fromkeys(urls):
        print(_line(url, results[url]))


if __name__ == "__main__":
    main(sys.argv[1:])
