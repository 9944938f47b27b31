"""``vllm-evidence probe`` over many servers: the fleet, streamed as each one finishes,
and what the single-server path shares with it (saving a capture, TLS verification).

A server that answered nothing, or only errors, is assessed like any other (its line is
a full assessment document, every serving claim refused with the front-door reason);
only a target that is not a URL this command reads is an ``error`` line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vllm_evidence._cli._output import fail, note, styled
from vllm_evidence._cli._report import (
    fleet_cells,
    fleet_json_line,
    print_fleet_table,
    refused_claims,
    report_refused,
    unanswered,
)

if TYPE_CHECKING:
    from vllm_evidence.assessment import Assessment
    from vllm_evidence.capture.batch import CaptureBatch

PROG = "vllm-evidence probe"


def _verify(args: argparse.Namespace) -> bool | str:
    return args.ca_cert if args.ca_cert else not args.insecure


def _save(
    batch: CaptureBatch, directory: Path, args: argparse.Namespace, sign_key: bytes | None
) -> str | None:
    """Save one capture; the failure as a line, or ``None``.  The capture is kept either
    way: a failed save is reported beside the report, never instead of it."""
    from vllm_evidence.capture.directory import save
    from vllm_evidence.errors import InputError

    try:
        save(batch, directory, startup_log=args.startup_log, sign_key=sign_key)
    except (InputError, OSError) as exc:
        return f"--save {directory}: {exc}"
    return None


def _slug(target: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "_" for c in target.split("://", 1)[-1])


def _cleaned_or_raw(url: str) -> str:
    """The URL without credentials, for naming its folder (a bad URL is never saved)."""
    from vllm_evidence.capture.http import clean_target
    from vllm_evidence.errors import InputError

    try:
        return clean_target(url)
    except InputError:
        return url


def _folders(targets: list[str]) -> list[str]:
    """One distinct folder name per server (``host_8000``, then ``host_8000-2``, …)."""
    taken: set[str] = set()
    names = []
    for target in targets:
        base = _slug(target) or "server"
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name)
        names.append(name)
    return names


class _Fleet:
    """Probe many servers through one client, handling each result as it completes.

    At most ``--concurrency`` batches are alive at once: each is saved, assessed and
    reduced to its JSON line (printed at once) or its table row (kept; printed in input
    order at the end) as soon as its server has been read.
    """

    def __init__(
        self, urls: list[str], args: argparse.Namespace, key: str | None, sign_key: bytes | None
    ) -> None:
        self.urls = urls
        self.args = args
        self.key = key
        self.sign_key = sign_key
        self.folders = _folders([_cleaned_or_raw(url) for url in urls])
        self.save_failures: list[str] = []
        self.rows: list[tuple[int, list[str]]] = []
        self.refused: set[str] = set()
        self.assessed = 0
        self.unanswered = 0
        self.unreadable = 0
        self.refused_servers = 0
        self._live: Any = None
        self._console: Any = None

    async def run(self) -> None:
        import asyncio

        from vllm_evidence.capture.http import new_client

        args = self.args
        pending = iter(enumerate(self.urls))
        if styled():
            from rich.console import Console
            from rich.live import Live

            # On a terminal the table fills in as servers finish, under a line of counts;
            # the live view is then replaced by the whole table in input order.
            self._console = Console()
            self._live = Live(
                console=self._console,
                get_renderable=self._frame,
                refresh_per_second=8,
                transient=True,
            )
            self._live.start()
        try:
            async with new_client(verify=_verify(args)) as client:

                async def worker() -> None:
                    for index, url in pending:
                        await self._one(index, url, client)

                async with asyncio.TaskGroup() as group:
                    for _ in range(min(args.concurrency, len(self.urls))):
                        group.create_task(worker())
        finally:
            if self._live is not None:
                self._live.stop()

    def progress_line(self) -> str:
        """Servers done, of all; how many were assessed (and of them, how many front doors
        gave nothing to read), were not URLs, refused a claim."""
        done = self.assessed + self.unreadable
        unanswered = f" ({self.unanswered} not answering)" if self.unanswered else ""
        refused = (
            f", {self.refused_servers} refused a --require'd claim" if self.args.require else ""
        )
        return (
            f"{done}/{len(self.urls)} servers done: {self.assessed} assessed{unanswered}, "
            f"{self.unreadable} failed{refused}"
        )

    def _frame(self) -> Any:
        """The live view: the rows finished so far (as many as the terminal shows, the
        latest last) and the progress line."""
        from rich.console import Group
        from rich.markup import escape
        from rich.table import Table
        from rich.text import Text

        from vllm_evidence._cli._report import FLEET_COLUMNS
        from vllm_evidence._scrub import scrub

        line = Text(self.progress_line(), style="bold")
        if self.args.json:
            return line
        room = max(1, self._console.height - 6)
        table = Table(show_lines=False)
        for column in FLEET_COLUMNS:
            table.add_column(column, overflow="fold")
        for _, cells in self.rows[-room:]:
            table.add_row(*(escape(scrub(cell)) for cell in cells))
        return Group(table, line)

    async def _one(self, index: int, url: str, client: Any) -> None:
        from vllm_evidence._scrub import scrub
        from vllm_evidence.capture.http import clean_target, probe
        from vllm_evidence.errors import InputError

        args = self.args
        try:
            target = clean_target(url)
        except InputError as exc:
            # The row's label is what the person typed, less any password in it.
            self._done(index, scrub(url), str(exc))
            return
        batch = await probe(
            url,
            api_key=self.key,
            timeout=args.timeout,
            deadline=max(args.timeout * 3, 30.0),
            development_routes=not args.no_development_routes,
            client=client,
        )
        # A server that answered nothing (or only errors) is saved and assessed like any
        # other: its line is the assessment that refuses every serving claim, and why.
        if args.save:
            # A failed save is reported beside the results, never instead of them.
            failure = _save(batch, Path(args.save) / self.folders[index], args, self.sign_key)
            if failure is not None:
                self.save_failures.append(self._scrub(failure))
        from vllm_evidence.assessment import assess
        from vllm_evidence.readback import readback_from_batch

        self._done(index, target, assess(readback_from_batch(batch), None))

    def _scrub(self, text: str) -> str:
        return text.replace(self.key, "***") if self.key else text

    def _done(self, index: int, target: str, result: Assessment | str) -> None:
        if isinstance(result, str):
            result = self._scrub(result)
            self.unreadable += 1
        else:
            self.assessed += 1
            self.unanswered += unanswered(result) is not None
            refused = refused_claims(result, self.args.require)
            self.refused.update(refused)
            self.refused_servers += bool(refused)
        if self.args.json:
            sys.stdout.write(fleet_json_line(target, result))
            sys.stdout.flush()
        else:
            self.rows.append((index, fleet_cells(target, result)))


#: Files kept free for everything but the probes' sockets: stdio, the saved capture's
#: files, a module imported late.
_RESERVED_FILES = 64


def concurrency_within_file_limit(concurrency: int) -> int:
    """The ``--concurrency`` this process's open-file limit allows.

    Each server read at once holds up to :data:`CONNECTIONS_PER_PROBE` sockets: past the
    limit (1,024 on many systems) a socket cannot be opened, and a server would be
    reported unreachable for a want of files here.  The soft limit is raised toward the
    hard one when short; what still does not fit lowers the concurrency.
    """
    from vllm_evidence.capture.http import CONNECTIONS_PER_PROBE

    try:
        import resource
    except ImportError:  # pragma: no cover - Windows: no per-process descriptor limit
        return concurrency
    needed = concurrency * CONNECTIONS_PER_PROBE + _RESERVED_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return concurrency
    wanted = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    if wanted > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError):
            pass
        else:
            soft = wanted
    room = (soft - _RESERVED_FILES) // CONNECTIONS_PER_PROBE
    return max(1, min(concurrency, room))


def _collect_less() -> None:
    """Tune the cyclic garbage collector for a fleet (this command's process only).

    A fleet allocates and frees hundreds of thousands of containers (each server's JSON
    bodies decode to thousands of dicts and lists), and the default thresholds (700, 10,
    10) ran ~220 young-generation collections over 1,000 servers, each walking every
    batch still in flight: ~95 ms of ~3.3 s.  Ten thousand net allocations a collection
    leave ~15 ms; what the imports built is frozen out of every later full collection.
    Nothing here holds on to garbage cycles: memory stays bounded by ``--concurrency``.
    """
    import gc

    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


def run_fleet(
    urls: list[str], args: argparse.Namespace, key: str | None, sign_key: bytes | None
) -> int:
    import asyncio

    # What every result needs, imported before any socket is open: an import mid-run
    # needs a free file too.
    import vllm_evidence.assessment
    import vllm_evidence.output.assessment
    import vllm_evidence.readback

    if not args.json:
        import vllm_evidence.output.report  # noqa: F401  # the table's rows
    _collect_less()

    wanted = min(args.concurrency, len(urls))
    allowed = concurrency_within_file_limit(wanted)
    if allowed < wanted:
        sys.stderr.write(
            f"{PROG}: note: --concurrency {args.concurrency} lowered to {allowed}: this "
            "process may not open more files (ulimit -n); raise that limit to read more "
            "servers at once\n"
        )
        args.concurrency = allowed
    if args.save:
        try:
            Path(args.save).mkdir(exist_ok=True)
        except OSError as exc:
            return fail(PROG, f"--save {args.save}: {exc.strerror}")
    fleet = _Fleet(urls, args, key, sign_key)
    asyncio.run(fleet.run())
    if not args.json:
        print_fleet_table([cells for _, cells in sorted(fleet.rows, key=lambda r: r[0])])
    why = (
        f"{fleet.unanswered} of {len(urls)} servers gave nothing to read: "
        "front_door_unreachable or front_door_not_answering"
        if fleet.unanswered
        else None
    )
    if why is not None and (fleet.save_failures or not fleet.refused):
        note(PROG, f"{why}; every claim about their serving processes is refused")
    for failure in fleet.save_failures:
        fail(PROG, failure)
    if fleet.save_failures:
        return 2
    status = report_refused(fleet.refused, why=why)
    if args.require and fleet.unreadable:
        # A target that is not a URL establishes nothing a --require'd claim could rest on.
        sys.stderr.write("vllm-evidence: some targets are not URLs this command reads\n")
        return 3
    return status
