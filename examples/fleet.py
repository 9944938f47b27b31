"""Reading a fleet from the library: one probe session, many servers at once.

    python examples/fleet.py http://10.0.0.7:8000 http://10.0.0.8:8000 ...
    python examples/fleet.py --targets fleet.txt --receipt-public-key receipt-public.pem

A target may come with its startup log and its launch receipt (a
:class:`~vllm_evidence.watch._targets.Target`, as a targets file's
``URL log=PATH receipt=PATH`` line gives it): the receipt is read with
:func:`~vllm_evidence._adapters.receipt.read_launch_receipt` and checked under the
launcher's public key, then the log to the receipt's length, both with the package's
bounded readers, and the server is assessed with its own log and receipt.  A receipt
joins its log to the server only when its signature verifies and the server's
``/metrics`` carries its start time.

What ``vllm-evidence probe --targets`` does, in the form orchestration code holds: one
:class:`~vllm_evidence._capture.http.ProbeSession` for the whole run (one TLS context,
each server's connections kept for its own probe and closed after it; the session's
connections are its own, and it takes only settings), ``at_once`` servers read at a
time, each assessed as its probe ends.  A server that does not answer is an
assessment too: its decisions refuse and name what was missing; only a string that is
not a URL this package reads is an :class:`~vllm_evidence.InputError` instead.

Memory is bounded in all: every probe shares one
:class:`~vllm_evidence._capture.http.BodyBudget`, so the bodies held at once (being read,
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

from vllm_evidence import (
    DEFAULT_BODY_BUDGET_BYTES,
    Assessment,
    BodyBudget,
    LaunchReceipt,
    ProbeSession,
    ProbeSettings,
    StartupLog,
    VerificationKey,
    assess,
    read_launch_receipt,
    read_startup_log,
    read_verification_key,
    readback_from_batch,
)
from vllm_evidence.errors import InputError
from vllm_evidence.watch import Target, read_targets

__all__ = ["read_fleet"]


def _witness(
    target: str | Target, receipt_key: VerificationKey | None
) -> tuple[StartupLog | None, LaunchReceipt | None]:
    """The target's log and receipt, read: the receipt first (its signature checked
    under ``receipt_key``), then the log to the receipt's length (the log grows after the
    receipt is written).  An :class:`InputError` when either cannot be read."""
    if isinstance(target, str) or target.startup_log is None:
        return None, None
    receipt = (
        None
        if target.receipt is None
        else read_launch_receipt(target.receipt, verification_key=receipt_key)
    )
    log = read_startup_log(
        target.startup_log, first_bytes=None if receipt is None else receipt.log_bytes
    )
    if not isinstance(log, StartupLog):
        raise InputError(log.describe())
    return log, receipt


async def read_fleet(
    targets: Sequence[str | Target],
    *,
    at_once: int = 64,
    api_key: str | None = None,
    body_budget: BodyBudget | None = None,
    receipt_key: VerificationKey | None = None,
) -> dict[str, Assessment | InputError]:
    """Probe and assess every server of ``targets`` (a URL, or a
    :class:`~vllm_evidence.watch._targets.Target` with its log and receipt), ``at_once``
    of them at a time, their bodies within ``body_budget`` (1 GiB if none is given);
    receipts are checked under ``receipt_key``, the launcher's public key.  The results
    are keyed by URL as given (a ``Target``'s cleaned URL)."""
    results: dict[str, Assessment | InputError] = {}
    pending = iter(targets)
    budget = BodyBudget(DEFAULT_BODY_BUDGET_BYTES) if body_budget is None else body_budget
    settings = ProbeSettings(concurrency=at_once)
    async with ProbeSession(settings, body_budget=budget) as session:

        async def worker() -> None:
            for target in pending:  # one shared iterator: each target is taken once
                url = target if isinstance(target, str) else target.url
                try:
                    batch = await session.probe(url, api_key=api_key)
                except InputError as exc:
                    results[url] = exc
                    continue
                try:
                    log, receipt = _witness(target, receipt_key)
                    results[url] = assess(readback_from_batch(batch), log, receipt=receipt)
                except InputError as exc:  # its log or receipt could not be read
                    results[url] = exc
                finally:
                    budget.release(batch)  # its bodies are no longer needed

        async with asyncio.TaskGroup() as group:
            for _ in range(min(at_once, len(targets))):
                group.create_task(worker())
    return results


def _line(url: str, result: Assessment | InputError) -> str:
    if isinstance(result, InputError):
        return f"{url}: {result}"
    return (
        f"{url}: vLLM {result.version or '?'}, parallel {result.parallel.reason.value}, "
        f"capacity {result.capacity.reason.value}{_log_join(result)}"
    )


def _log_join(result: Assessment) -> str:
    if result.evidence.launch is None:
        return ""
    return f", log {result.log_join.reason.value}"


def main(argv: Sequence[str]) -> None:
    """One line a server, in the order given (the dict holds them as they finished):
    the URLs given, then those of ``--targets FILE`` (with their logs and receipts),
    receipts checked under ``--receipt-public-key FILE``."""
    given = list(argv)
    targets: list[str | Target] = []
    key = None
    while given:
        word = given.pop(0)
        if word in ("--targets", "--receipt-public-key") and given:
            value = given.pop(0)
            if word == "--targets":
                targets.extend(read_targets(value))
            else:
                key = read_verification_key(value)
        else:
            targets.append(word)
    results = asyncio.run(read_fleet(targets, receipt_key=key))
    for url in dict.fromkeys(t if isinstance(t, str) else t.url for t in targets):
        print(_line(url, results[url]))


if __name__ == "__main__":
    main(sys.argv[1:])
