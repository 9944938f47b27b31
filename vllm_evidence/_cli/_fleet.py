"""``vllm-evidence probe`` over many servers: the fleet, streamed as each one finishes,
and what the single-server path shares with it (saving a capture, TLS verification).

A server that answered nothing, or only errors, is assessed like any other (its line is
a full assessment document, every serving claim refused with the front-door reason);
only a target that is not a URL this command reads, or whose log or receipt cannot be
read, is an ``error`` line.

**A log and a receipt per target.**  A targets file line may name, after its URL, the
server's startup log (``log=PATH``) and its launch receipt (``receipt=PATH``), relative
to the file's directory (:class:`FleetTarget`).  Each is read with the bounded readers
(:func:`~vllm_evidence._adapters.receipt.read_launch_receipt`, its signature checked
under ``--receipt-public-key``; then the log to the receipt's length) and assessed with
that target alone, in the same worker that parses its bodies.

**No target slows another.**  The event loop only reads: every server's requests run
there, each under its own timeout, and their bodies are kept as bytes.  A batch whose
bodies hold more than :data:`INLINE_BODY_BYTES` is then saved, parsed and assessed in a
worker process (:class:`_Assessor`), never on the loop, so that no request's timeout
counts another server's parsing: a thread would not do, since the parsers hold the GIL
for seconds at a time (one ``json`` decode of a body of 8 MiB of numbers: 2.3 s without a
switch).  The workers are forks of the command made before its event loop and threads
start (:func:`fork_workers`; a fresh interpreter where that cannot be), and a server's
bodies go to one down a pipe, as they are (beside the job's pickle, not copied into it):
what the loop still does with a large body is write it.  A batch of at most
:data:`INLINE_BODY_BYTES` parses in milliseconds even at its worst, and is assessed on
the loop: a server that answers nothing costs no process.

**Memory is bounded in all, not per server.**  Every probe of the run shares one
:class:`~vllm_evidence._capture.http.BodyBudget` (``--memory-budget``): the body bytes
being read and those waiting to be assessed stay within it, whatever the servers send; a
request that would pass it waits before it is sent (its timeout and its batch's deadline
do not count the wait), and is never refused.  A batch's bytes are given back once it
is assessed.  Parsing holds what it builds in the workers: at most one large batch at a
time (:data:`WORKERS`).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple

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
    import asyncio

    from vllm_evidence._adapters.startup_log import StartupLog
    from vllm_evidence._assessment import Assessment
    from vllm_evidence._capture.batch import CaptureBatch
    from vllm_evidence._capture.http import BodyBudget, ProbeSession
    from vllm_evidence._capture.signing import SigningKey, VerificationKey
    from vllm_evidence._claims import Claim

PROG = "vllm-evidence probe"

#: Where the launcher's public key is read from when --receipt-public-key is not given.
RECEIPT_PUBLIC_KEY_ENV: Final = "VLLM_EVIDENCE_RECEIPT_PUBLIC_KEY"


class FleetTarget(NamedTuple):
    """One server a probe reads: its URL as given, and the paths of its startup log and
    launch receipt (a targets file's ``log=PATH receipt=PATH``), if any."""

    url: str
    startup_log: str | None = None
    receipt: str | None = None


def _fleet_targets(targets: Sequence[str | FleetTarget]) -> list[FleetTarget]:
    return [t if isinstance(t, FleetTarget) else FleetTarget(t) for t in targets]


def add_receipt_key_argument(parser: Any) -> None:
    """``--receipt-public-key FILE``: what checks a receipt's signature."""
    parser.add_argument(
        "--receipt-public-key",
        metavar="FILE",
        help="the launcher's Ed25519 public key (PEM) that a --receipt must be signed by "
        f"(default: the PEM text in ${RECEIPT_PUBLIC_KEY_ENV}, if set); an unsigned "
        "receipt, or one it does not verify, joins no log",
    )


def receipt_public_key(path: str | None, *, receipts: bool) -> VerificationKey | None:
    """The key a receipt's signature is checked with: the file given, else the
    environment's PEM text, else none (then a signed receipt is unchecked and joins no
    log).  ``receipts``: whether any receipt is given (a key for none is bad usage)."""
    import os

    from vllm_evidence._capture.signing import (
        environment_verification_key,
        read_verification_key,
    )
    from vllm_evidence.errors import InputError

    if path is not None:
        if not receipts:
            msg = "--receipt-public-key checks a receipt's signature: give --receipt FILE"
            raise InputError(msg)
        return read_verification_key(path, what="--receipt-public-key")
    if not receipts or not os.environ.get(RECEIPT_PUBLIC_KEY_ENV):
        return None
    return environment_verification_key("--receipt-public-key", RECEIPT_PUBLIC_KEY_ENV)


def read_log(path: str, first_bytes: int | None = None) -> StartupLog:
    """The startup log at ``path`` (to ``first_bytes``); an :class:`InputError` (one
    line) when it cannot be read."""
    from vllm_evidence._adapters.startup_log import LogReadFailure, read_startup_log
    from vllm_evidence.errors import InputError

    log = read_startup_log(path, first_bytes=first_bytes)
    if isinstance(log, LogReadFailure):
        raise InputError(log.describe())
    return log


def _verify(args: argparse.Namespace) -> bool | str:
    return args.ca_cert if args.ca_cert else not args.insecure


def _save(
    batch: CaptureBatch,
    directory: Path,
    startup_log: str | None,
    sign_key: SigningKey | None,
) -> str | None:
    """Save one capture (with its startup log); the failure as a line, or ``None``.  The
    capture is kept either way: a failed save is reported beside the report, never
    instead of it."""
    return _save_to(batch, directory, startup_log, sign_key)


def _save_to(
    batch: CaptureBatch, directory: Path, startup_log: str | None, sign_key: SigningKey | None
) -> str | None:
    from vllm_evidence._capture.directory import save
    from vllm_evidence.errors import InputError

    try:
        save(batch, directory, startup_log=startup_log, sign_key=sign_key)
    except (InputError, OSError) as exc:
        return f"--save {directory}: {exc}"
    return None


def _slug(target: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "_" for c in target.split("://", 1)[-1])


def _cleaned_or_raw(url: str) -> str:
    """The URL without credentials, for naming its folder (a bad URL is never saved)."""
    from vllm_evidence._capture.http import clean_target
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


#: A batch whose bodies hold at most this many bytes is assessed on the event loop: the
#: parsers are linear, and the costliest bytes known (a JSON array of numbers) parse at
#: ~0.25 us a byte, so at most a few milliseconds.  One that holds more goes to a worker.
INLINE_BODY_BYTES: Final = 16 * 1024
#: A batch holding more than this is *large*: at most one is parsed at a time, so that a
#: server whose bodies are costly to parse never holds up the other servers' results.
LARGE_BODY_BYTES: Final = 1024 * 1024
#: Worker processes that save, parse and assess batches: two, of which a large batch
#: takes one at most.
WORKERS: Final = 2


class _Job(NamedTuple):
    """What a worker needs for one server: its batch and how to report it."""

    batch: CaptureBatch
    target: str
    folder: str | None  # where --save writes it
    startup_log: str | None
    sign_key: SigningKey | None
    json_out: bool
    require: tuple[Claim, ...]
    receipt: str | None = None
    receipt_key: VerificationKey | None = None


class _Outcome(NamedTuple):
    """One server done: its JSON line or table cells, and what the summary counts."""

    rendered: str | list[str]
    unanswered: bool
    refused: tuple[str, ...]
    save_failure: str | None
    failed: bool = False
    """Not assessed: its log or receipt could not be read (an error line)."""


def _body_bytes(batch: CaptureBatch) -> int:
    return sum(len(e.body) for e in batch.all_exchanges() if e.body is not None)


def _outcome(
    target: str, result: Assessment | str, *, json_out: bool, require: tuple[Claim, ...] = ()
) -> _Outcome:
    """A server's JSON line or table cells, and what the summary counts of it."""
    rendered = fleet_json_line(target, result) if json_out else fleet_cells(target, result)
    if isinstance(result, str):
        return _Outcome(rendered, unanswered=False, refused=(), save_failure=None)
    return _Outcome(
        rendered,
        unanswered=unanswered(result) is not None,
        refused=tuple(refused_claims(result, require)),
        save_failure=None,
    )


def assess_job(job: _Job) -> _Outcome:
    """Save (with ``--save``), parse, assess and render one server: in a worker process
    for a large batch, on the event loop for a small one (the same function either way,
    so a fleet's result is the one probing the server alone gives)."""
    from vllm_evidence._adapters.receipt import read_launch_receipt
    from vllm_evidence._assessment import assess
    from vllm_evidence._readback import readback_from_batch
    from vllm_evidence._scrub import scrub
    from vllm_evidence.errors import InputError

    try:
        # The receipt first, then the log up to its length (the log grows after it).
        receipt = (
            None
            if job.receipt is None
            else read_launch_receipt(job.receipt, verification_key=job.receipt_key)
        )
        log = (
            None
            if job.startup_log is None
            else read_log(job.startup_log, None if receipt is None else receipt.log_bytes)
        )
    except InputError as exc:
        error = _outcome(job.target, scrub(str(exc)), json_out=job.json_out)
        return error._replace(failed=True)
    failure = None
    if job.folder is not None:
        failure = _save_to(job.batch, Path(job.folder), job.startup_log, job.sign_key)
    assessment = assess(readback_from_batch(job.batch), log, receipt=receipt)
    outcome = _outcome(job.target, assessment, json_out=job.json_out, require=job.require)
    return outcome._replace(save_failure=failure)


#: What a worker process runs: :func:`serve_worker`, its package found where this one
#: was (``-P``: nothing from the working directory).
_WORKER_MAIN: Final = "from vllm_evidence._cli._fleet import serve_worker; serve_worker()"
#: How much of a job is written to a worker's pipe before waiting for it to drain.
_PIPE_CHUNK: Final = 1024 * 1024
_LENGTH: Final = 8
#: A body this large goes to a worker beside the pickle of its job, straight from the
#: bytes the probe kept: not copied into the pickle (nor that copy held by this process).
_OUT_OF_BAND: Final = 64 * 1024


def _dumps(value: object) -> tuple[bytes, list[memoryview]]:
    """``value`` pickled, the large bodies of its exchanges left out of the pickle as
    protocol 5 buffers: an exchange is pickled by its own reduction (re-derivation from
    its raw fields, the body among them), only its body travels beside it; the worker
    gets the bytes it read as that body."""
    import io
    import pickle

    from vllm_evidence._capture.batch import Exchange

    def beside(field: object) -> object:
        if type(field) is bytes and len(field) >= _OUT_OF_BAND:
            return pickle.PickleBuffer(field)
        return field

    class Pickler(pickle.Pickler):
        def reducer_override(self, obj: object) -> Any:
            if type(obj) is Exchange:
                function, fields = obj.__reduce__()
                return function, tuple(beside(field) for field in fields)
            return NotImplemented

    buffers: list[pickle.PickleBuffer] = []
    stream = io.BytesIO()
    Pickler(stream, protocol=5, buffer_callback=buffers.append).dump(value)
    return stream.getvalue(), [buffer.raw() for buffer in buffers]


def serve_worker(source: Any = None, sink: Any = None) -> None:
    """A worker process's loop: jobs, each answered with its outcome (or the exception it
    raised), as length-prefixed pickles read from ``source`` and written to ``sink``
    (stdin and stdout: a started interpreter, whose first message is the run's API key),
    until ``source`` ends.  Nothing else is written to ``sink``."""
    import pickle

    if source is None or sink is None:
        source, sink = sys.stdin.buffer, sys.stdout.buffer
        sys.stdout = sys.stderr  # a stray print() must not corrupt the answers
        # Imported while the command is still reading its first servers.
        import vllm_evidence._assessment
        import vllm_evidence._capture.directory
        import vllm_evidence._output.assessment
        import vllm_evidence._output.report
        import vllm_evidence._readback  # noqa: F401

        key = _read_message(source)
        if key is _END:
            return
        _worker_start(key if isinstance(key, str) else None)
    while (job := _read_message(source)) is not _END:
        try:
            answer: tuple[bool, object] = (True, assess_job(job))  # type: ignore[arg-type]  # the command sends _Job values
        except Exception as exc:  # noqa: BLE001  # every failure goes back to the command
            answer = (False, exc)
        try:
            data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001  # an exception that does not pickle
            data = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
        sink.write(len(data).to_bytes(_LENGTH, "big"))
        sink.write(data)
        sink.flush()


_END: Final = object()


def _read_message(source: Any) -> object:
    """One message of :meth:`_Worker._send`: the pickle's length and its buffers' count,
    the pickle, then each buffer's length and bytes."""
    import pickle

    head = source.read(2 * _LENGTH)
    if len(head) < 2 * _LENGTH:
        return _END
    data = source.read(int.from_bytes(head[:_LENGTH], "big"))
    buffers = []
    for _ in range(int.from_bytes(head[_LENGTH:], "big")):
        size = int.from_bytes(source.read(_LENGTH), "big")
        buffers.append(source.read(size))
    return pickle.loads(data, buffers=buffers)  # noqa: S301  # from the command that started this process


def _worker_start(key: str | None) -> None:
    """A worker process begins: it scrubs the run's API key from what it renders, as the
    command does, and collects garbage as seldom as the command does."""
    from vllm_evidence._scrub import remember

    remember(key)
    _collect_less()


class _WorkerGoneError(Exception):
    """A worker process could not be started, or ended while it held a job."""


class _Forked(NamedTuple):
    """A worker forked before the run's event loop: its pid and the command's ends of its
    two pipes (jobs in, outcomes out)."""

    pid: int
    jobs: int
    outcomes: int


def fork_workers(key: str | None, count: int = WORKERS) -> list[_Forked]:
    """Worker processes forked from this one, before its event loop and its threads
    start: a copy of a process that has imported everything a job needs costs a few
    milliseconds, where a fresh interpreter costs a quarter of a second of imports.

    Only on Linux and only while this process has one thread (a fork copies the thread
    that calls it, and no lock another thread may hold): otherwise none, and a worker is
    started as a fresh interpreter when a job needs one."""
    import os
    import threading

    if sys.platform != "linux" or threading.active_count() != 1:
        return []
    forked = []
    for _ in range(count):
        jobs_in, jobs = os.pipe()
        outcomes, outcomes_out = os.pipe()
        _widen(jobs)
        try:
            pid = os.fork()
        except OSError:
            for fd in (jobs_in, jobs, outcomes, outcomes_out):
                os.close(fd)
            break
        if pid == 0:  # pragma: no cover - the child; it ends in os._exit
            _forked_worker(key, jobs_in, outcomes_out)
        os.close(jobs_in)
        os.close(outcomes_out)
        forked.append(_Forked(pid, jobs, outcomes))
    return forked


def _widen(fd: int) -> None:
    """Let a pipe of jobs hold a whole healthy server's batch at once (Linux: 1 MiB,
    where the default 64 KiB made the loop write each batch in five turns)."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_CHUNK)
    except (ImportError, AttributeError, OSError):
        pass


def _forked_worker(key: str | None, source: int, sink: int) -> None:  # pragma: no cover
    """The forked child: it keeps only its two pipes (no socket, no other worker's
    pipe), writes nothing to the command's stdout or stderr, and serves jobs until its
    pipe ends; then it exits without running the command's exit handlers or flushing
    its buffers (the command does both)."""
    import os
    import signal

    status = 0
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        keep = {0, 1, 2, source, sink}
        # Listed whole before any is closed (the listing holds a descriptor of its own).
        for name in [entry.name for entry in Path("/proc/self/fd").iterdir()]:
            if name.isdigit() and int(name) not in keep:
                with contextlib.suppress(OSError):
                    os.close(int(name))
        # ^C reaches the whole process group: the worker ends, as its command does.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _worker_start(key)
        serve_worker(os.fdopen(source, "rb"), os.fdopen(sink, "wb"))
    except BaseException:  # noqa: BLE001  # a worker ends quietly; its command notes it
        status = 1
    finally:
        os._exit(status)


class _Worker:
    """One worker process: a job in on one pipe, its outcome out on the other."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        process: asyncio.subprocess.Process | None = None,
        pid: int | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._process = process
        self._pid = pid

    @classmethod
    async def attach(cls, forked: _Forked) -> _Worker:
        """A forked worker, its pipes now watched by the running event loop."""
        import asyncio
        import os

        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        try:
            await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(forked.outcomes, "rb", 0)
            )
            transport, protocol = await loop.connect_write_pipe(
                lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()),
                os.fdopen(forked.jobs, "wb", 0),
            )
        except (OSError, NotImplementedError, ValueError) as exc:
            msg = f"a worker process could not be reached ({type(exc).__name__})"
            raise _WorkerGoneError(msg) from None
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        return cls(reader, writer, pid=forked.pid)

    @classmethod
    async def start(cls, key: str | None) -> _Worker:
        """A worker started as a fresh interpreter."""
        import asyncio
        import os

        # The package from where this process has it (this module is _cli/_fleet.py in
        # it), whatever the working directory.
        home = str(Path(__file__).resolve().parents[2])
        environment = dict(os.environ)
        environment["PYTHONPATH"] = os.pathsep.join(
            p for p in (home, os.environ.get("PYTHONPATH")) if p
        )
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-P",
                "-c",
                _WORKER_MAIN,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                env=environment,
            )
        except (OSError, NotImplementedError, RuntimeError, TypeError, ValueError) as exc:
            msg = f"no worker process could be started ({type(exc).__name__})"
            raise _WorkerGoneError(msg) from None
        assert process.stdout is not None  # noqa: S101 - started with pipes
        assert process.stdin is not None  # noqa: S101
        pipe = process.stdin.get_extra_info("pipe")
        if pipe is not None:
            _widen(pipe.fileno())
        worker = cls(process.stdout, process.stdin, process=process)
        await worker._send(key)  # the first message: what the worker scrubs
        return worker

    async def _send(self, value: object) -> None:
        data, buffers = _dumps(value)
        pipe = self._writer
        try:
            pipe.write(len(data).to_bytes(_LENGTH, "big") + len(buffers).to_bytes(_LENGTH, "big"))
            pipe.write(data)
            for buffer in buffers:
                pipe.write(len(buffer).to_bytes(_LENGTH, "big"))
                # In pieces, each drained before the next: the pipe's buffer stays small.
                for start in range(0, len(buffer), _PIPE_CHUNK):
                    pipe.write(buffer[start : start + _PIPE_CHUNK])
                    await pipe.drain()
            await pipe.drain()
        except (OSError, RuntimeError) as exc:
            msg = f"a worker process ended ({type(exc).__name__})"
            raise _WorkerGoneError(msg) from None

    async def run(self, job: _Job) -> _Outcome:
        import asyncio
        import pickle

        await self._send(job)
        try:
            head = await self._reader.readexactly(_LENGTH)
            data = await self._reader.readexactly(int.from_bytes(head, "big"))
        except (asyncio.IncompleteReadError, OSError) as exc:
            msg = f"a worker process ended ({type(exc).__name__})"
            raise _WorkerGoneError(msg) from None
        ok, value = pickle.loads(data)  # noqa: S301  # from this command's own worker
        if not ok:
            raise value
        outcome: _Outcome = value
        return outcome

    async def stop(self) -> None:
        """End an idle worker: its pipe of jobs ends, and so does it."""
        import asyncio

        self._writer.close()
        if self._process is not None:
            await self._process.wait()
            return
        for _ in range(500):  # it exits at once; 5 s before it is made to
            if self._reaped():
                return
            await asyncio.sleep(0.01)
        await self.kill()

    async def kill(self) -> None:
        """End the worker now (it ended, or holds a job not waited for)."""
        import os
        import signal

        self._writer.close()
        if self._process is not None:
            if self._process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    self._process.kill()
            await self._process.wait()
            return
        if self._pid is not None and not self._reaped():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._pid, 0)
            self._pid = None

    def _reaped(self) -> bool:
        import os

        if self._pid is None:
            return True
        try:
            pid, _ = os.waitpid(self._pid, os.WNOHANG)
        except ChildProcessError:
            pid = self._pid
        if pid:
            self._pid = None
        return self._pid is None


class _Assessor:
    """Where batches are parsed and assessed: in worker processes, off the event loop.

    At most :data:`WORKERS` jobs run at once, each in a worker of its own, first come
    first served, and of them at most one large batch (:data:`LARGE_BODY_BYTES`): the
    others take every worker a large batch does not, so that a server whose bodies are
    costly to parse never holds up the other servers' results for long.  A worker is one
    forked before the loop started (:func:`fork_workers`), or else a fresh interpreter
    (``python -P -c``) started with the first job that finds none idle; it serves job
    after job.  Where no worker can be started, or one ends while it holds a job, that
    job is assessed on the loop instead (correct, only not isolated), with one note on
    stderr; a later job starts a new worker.
    """

    def __init__(self, key: str | None, forked: list[_Forked] | None = None) -> None:
        import asyncio

        self._key = key
        #: Workers forked before the loop started, not yet used.
        self._forked = list(forked or ())
        self._slots = asyncio.Semaphore(WORKERS)
        self._large = asyncio.Lock()
        self._idle: list[_Worker] = []
        self._all: set[_Worker] = set()
        self._unavailable = False
        self._noted = False
        self.started = 0
        """How many worker processes were started."""

    async def assess(self, job: _Job) -> _Outcome:
        size = _body_bytes(job.batch)
        if size <= INLINE_BODY_BYTES or self._unavailable:
            return assess_job(job)
        if size <= LARGE_BODY_BYTES:
            async with self._slots:
                return await self._in_worker(job)
        async with self._large, self._slots:  # the lock first: it waits holding no slot
            return await self._in_worker(job)

    async def _in_worker(self, job: _Job) -> _Outcome:
        try:
            worker = self._idle.pop() if self._idle else await self._start()
        except _WorkerGoneError as exc:
            self._unavailable = True
            self._note(str(exc))
            return assess_job(job)
        try:
            outcome = await worker.run(job)
        except _WorkerGoneError as exc:
            self._all.discard(worker)
            await worker.kill()
            self._note(str(exc))
            return assess_job(job)
        except Exception:
            self._idle.append(worker)  # the job raised; its answer was read whole
            raise
        except BaseException:
            # Interrupted holding a job: its answer would come to the next one.
            self._all.discard(worker)
            await worker.kill()
            raise
        self._idle.append(worker)
        return outcome

    async def _start(self) -> _Worker:
        if self._forked:
            worker = await _Worker.attach(self._forked.pop())
        else:
            worker = await _Worker.start(self._key)
        self.started += 1
        self._all.add(worker)
        return worker

    def _note(self, why: str) -> None:
        if not self._noted:
            self._noted = True
            note(PROG, f"{why}: its server was assessed on the event loop")

    async def close(self, *, finished: bool) -> None:
        """End the workers: when the run ``finished``, each is idle and ends with its
        stdin; when it was interrupted, a job still running (a costly parse) is not
        waited for."""
        import os

        workers, self._all, self._idle = self._all, set(), []
        for worker in workers:
            if finished:
                await worker.stop()
            else:
                await worker.kill()
        unused, self._forked = self._forked, []
        for forked in unused:  # idle, waiting for a first job: its pipe ends, so does it
            os.close(forked.jobs)
            os.close(forked.outcomes)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(forked.pid, 0)


class _Fleet:
    """Probe many servers through one client, handling each result as it completes.

    At most ``--concurrency`` servers are read at once, every read within the run's body
    budget; as soon as a server has been read, its batch is handed to the assessor (and
    the next server's reads begin), then saved, assessed and reduced to its JSON line
    (printed at once) or its table row (kept; printed in input order at the end), and
    its bytes given back to the budget.
    """

    def __init__(
        self,
        targets: Sequence[str | FleetTarget],
        args: argparse.Namespace,
        key: str | None,
        sign_key: SigningKey | None,
        budget: BodyBudget,
        forked: list[_Forked] | None = None,
        receipt_key: VerificationKey | None = None,
    ) -> None:
        self.targets = _fleet_targets(targets)
        self.urls = [target.url for target in self.targets]
        self.args = args
        self.key = key
        self.sign_key = sign_key
        self.receipt_key = receipt_key
        self.budget = budget
        self.folders = _folders([_cleaned_or_raw(url) for url in self.urls])
        self.save_failures: list[str] = []
        self.rows: list[tuple[int, list[str]]] = []
        self.refused: set[str] = set()
        self.assessed = 0
        self.unanswered = 0
        self.unreadable = 0
        self.refused_servers = 0
        #: Made when the run starts (its locks belong to the run's event loop).
        self.assessor: _Assessor | None = None
        self._forked = forked
        self._live: Any = None
        self._console: Any = None

    async def run(self) -> None:
        import asyncio

        from vllm_evidence._capture.http import ProbeSession, ProbeSettings

        args = self.args
        pending = iter(enumerate(self.urls))
        finished = False
        self.assessor = _Assessor(self.key, self._forked)
        # Read servers ahead of their assessment by no more than this many batches: a
        # fleet holds about what it did when each was assessed as it was read.
        self._unassessed = asyncio.Semaphore(max(1, args.concurrency))
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
            settings = ProbeSettings(
                timeout=args.timeout,
                deadline=max(args.timeout * 3, 30.0),
                development_routes=not args.no_development_routes,
                verify=_verify(args),
                concurrency=args.concurrency,
            )
            async with (
                ProbeSession(settings, body_budget=self.budget) as session,
                asyncio.TaskGroup() as group,
            ):

                async def worker() -> None:
                    for index, url in pending:
                        await self._one(index, url, session, group)

                for _ in range(min(args.concurrency, len(self.urls))):
                    group.create_task(worker())
            finished = True
        finally:
            if self.assessor is not None:
                await self.assessor.close(finished=finished)
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

    async def _one(
        self, index: int, url: str, session: ProbeSession, group: asyncio.TaskGroup
    ) -> None:
        from vllm_evidence._capture.http import clean_target
        from vllm_evidence._scrub import scrub
        from vllm_evidence.errors import InputError

        args = self.args
        try:
            target = clean_target(url)
        except InputError as exc:
            # The row's label is what the person typed, less any password in it.
            error = self._scrub(str(exc))
            self._done(index, _outcome(scrub(url), error, json_out=args.json), assessed=False)
            return
        batch = await session.probe(url, api_key=self.key)
        # A server that answered nothing (or only errors) is saved and assessed like any
        # other: its line is the assessment that refuses every serving claim, and why.
        # Its reads are done: the next server's begin while this one is assessed.
        given = self.targets[index]
        job = _Job(
            batch,
            target,
            str(Path(args.save) / self.folders[index]) if args.save else None,
            given.startup_log,
            self.sign_key,
            bool(args.json),
            tuple(args.require),
            given.receipt,
            self.receipt_key,
        )
        await self._unassessed.acquire()
        group.create_task(self._assess(index, job))

    async def _assess(self, index: int, job: _Job) -> None:
        try:
            assert self.assessor is not None  # noqa: S101 - made by run()
            outcome = await self.assessor.assess(job)
        finally:
            self.budget.release(job.batch)
            self._unassessed.release()
        self._done(index, outcome, assessed=not outcome.failed)

    def _scrub(self, text: str) -> str:
        return text.replace(self.key, "***") if self.key else text

    def _done(self, index: int, outcome: _Outcome, *, assessed: bool) -> None:
        if outcome.save_failure is not None:
            # A failed save is reported beside the results, never instead of them.
            self.save_failures.append(self._scrub(outcome.save_failure))
        if assessed:
            self.assessed += 1
            self.unanswered += outcome.unanswered
            self.refused.update(outcome.refused)
            self.refused_servers += bool(outcome.refused)
        else:
            self.unreadable += 1
        if isinstance(outcome.rendered, str):
            sys.stdout.write(outcome.rendered)
            sys.stdout.flush()
        else:
            self.rows.append((index, outcome.rendered))


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
    from vllm_evidence._capture.http import CONNECTIONS_PER_PROBE

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


#: ``--memory-budget``'s unit.
MIB: Final = 1024 * 1024


def _budget(args: argparse.Namespace, key: str | None) -> BodyBudget | int:
    """The run's body budget (``--memory-budget``), or the exit status of its refusal:
    a budget smaller than what one server may send could never let its probe finish."""
    from vllm_evidence._capture.http import (
        DEFAULT_BODY_BUDGET_BYTES,
        BodyBudget,
        worst_case_body_bytes,
    )

    mib = getattr(args, "memory_budget", None)
    limit = DEFAULT_BODY_BUDGET_BYTES if mib is None else mib * MIB
    worst = worst_case_body_bytes(development_routes=not args.no_development_routes, api_key=key)
    if limit < worst:
        least = -(-worst // MIB)
        return fail(
            PROG,
            f"--memory-budget {mib}: one server's answers may hold {least} MiB of bodies "
            f"(every route at its cap); give at least {least}",
        )
    return BodyBudget(limit)


def run_fleet(
    targets: Sequence[str | FleetTarget],
    args: argparse.Namespace,
    key: str | None,
    sign_key: SigningKey | None,
    receipt_key: VerificationKey | None = None,
) -> int:
    """Probe and assess every target (a URL, or one with its own log and receipt)."""
    urls = [target.url for target in _fleet_targets(targets)]
    import asyncio

    # What every result needs, imported before any socket is open: an import mid-run
    # needs a free file too.
    import vllm_evidence._assessment
    import vllm_evidence._output.assessment
    import vllm_evidence._readback

    if not args.json:
        import vllm_evidence._output.report  # noqa: F401  # the table's rows
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
    budget = _budget(args, key)
    if isinstance(budget, int):
        return budget
    if args.save:
        try:
            Path(args.save).mkdir(exist_ok=True)
        except OSError as exc:
            return fail(PROG, f"--save {args.save}: {exc.strerror}")
    # Before the event loop and any thread: the workers are forks of this process now.
    fleet = _Fleet(targets, args, key, sign_key, budget, fork_workers(key), receipt_key)
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
        # A target that is not a URL, or whose log or receipt could not be read,
        # establishes nothing a --require'd claim could rest on.
        sys.stderr.write(
            "vllm-evidence: some targets are not URLs this command reads, or their log or "
            "receipt could not be read\n"
        )
        return 3
    return status
