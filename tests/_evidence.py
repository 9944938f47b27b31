"""Hand-written evidence for the decision witnesses, built only through public functions.

Logs are text in vLLM's own shapes, read with ``read_startup_log``; bodies are bytes
given to ``historical_bundle``; live readbacks come from probing the stub front door.
Nothing here computes an expected value: the tests write those by hand.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path

from packaging.version import Version

from tests._paths import REAL
from tests._ports import serve_on_port
from vllm_evidence._adapters.outcome import Parsed
from vllm_evidence._adapters.receipt import (
    RECEIPT_SCHEMA,
    LaunchReceipt,
    ReceiptRecord,
    parse_launch_receipt,
    signed_receipt_document,
)
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._assessment import Assessment, assess
from vllm_evidence._capture.http import probe_sync
from vllm_evidence._capture.signing import SigningKey
from vllm_evidence._readback import (
    CapturedReadback,
    HistoricalBundle,
    historical_bundle,
    readback_from_batch,
)
from vllm_evidence.decisions import FrontDoorJoinDecision
from vllm_evidence.testing._stub import Fault, serve_capture
from vllm_evidence.upstream import ReleaseLaws, Route, laws_for

# Record prefixes as vLLM ≥0.10.2 prints them (process tag, level, time, [file:line]).
API = "(APIServer pid=100) INFO 11-30 04:10:58 [api_utils.py:286] "
ENGINE = "(EngineCore pid=200) INFO 11-30 04:11:05 [core.py:133] "
KV = "(EngineCore pid=200) INFO 11-30 04:11:21 [kv_cache_utils.py:2327] "
KV_DP0 = "(EngineCore_DP0 pid=201) INFO 11-30 04:11:21 [kv_cache_utils.py:2327] "
KV_DP1 = "(EngineCore_DP1 pid=202) INFO 11-30 04:11:21 [kv_cache_utils.py:2327] "

DEV_ROUTES = (Route.SERVER_INFO, Route.SERVER_INFO_JSON, Route.GET_WORLD_SIZE)
NOT_FOUND = b'{"detail":"Not Found"}'


def log(text: str) -> StartupLog:
    """A hand-written log, read as a stream."""
    read = read_startup_log(io.BytesIO(text.encode()))
    assert isinstance(read, StartupLog), read
    return read


def real_log() -> StartupLog:
    """The real vLLM 0.32.0 capture's startup log."""
    read = read_startup_log(REAL / "startup.log")
    assert isinstance(read, StartupLog), read
    return read


def banner(version: str) -> str:
    """The API server's version line."""
    return f"{API}vLLM API server version {version}\n"


def args(text: str) -> str:
    """A ``non-default args: {...}`` line."""
    return f"{API}non-default args: {text}\n"


def engine_init(
    version: str = "0.32.0",
    *,
    tp: int = 2,
    pp: int = 1,
    dp: int | None = 1,
    backend: str | None = None,
    model: str = "/models/m",
) -> str:
    """The engine-init line; ``dp=None`` leaves ``data_parallel_size`` out."""
    fields = [f"model='{model}'", f"tensor_parallel_size={tp}", f"pipeline_parallel_size={pp}"]
    if dp is not None:
        fields.append(f"data_parallel_size={dp}")
    if backend is not None:
        fields.append(f"distributed_executor_backend={backend}")
    return f"{ENGINE}Initializing a V1 LLM engine (v{version}) with config: {', '.join(fields)}\n"


def rank_line(rank: int, world_size: int, *, tag: str | None = None, suffix: str = "") -> str:
    """A worker's ``world_size=W rank=R …`` line."""
    who = tag if tag is not None else f"Worker_TP{rank} pid={300 + rank}"
    return (
        f"({who}) INFO 11-30 04:11:13 [parallel_state.py:1906] world_size={world_size} "
        f"rank={rank} local_rank={rank} distributed_init_method=tcp://127.0.0.1:29500 "
        f"backend=nccl{suffix}\n"
    )


def one_line_capacity(tokens: str, prefix: str = KV, device: str = "CPU") -> str:
    """The ≥0.32 one-line capacity record."""
    return (
        f"{prefix}{device} KV cache size: {tokens} tokens, Maximum concurrency for 2,048 "
        "tokens per request: 2048.00x\n"
    )


def two_line_capacity(tokens: str, prefix: str = KV) -> str:
    """The 0.8.5 .. 0.27 two-line capacity record."""
    return (
        f"{prefix}GPU KV cache size: {tokens} tokens\n"
        f"{prefix}Maximum concurrency for 2,048 tokens per request: 2048.00x\n"
    )


def version_body(version: str) -> dict[Route, bytes]:
    return {Route.VERSION: json.dumps({"version": version}).encode()}


def server_info_json(
    *, tp: int = 1, pp: int = 1, dp: int = 1, backend: str | None = "mp"
) -> dict[Route, bytes]:
    parallel: dict[str, object] = {
        "tensor_parallel_size": tp,
        "pipeline_parallel_size": pp,
        "data_parallel_size": dp,
    }
    if backend is not None:
        parallel["distributed_executor_backend"] = backend
    body = {"vllm_config": {"parallel_config": parallel}}
    return {Route.SERVER_INFO_JSON: json.dumps(body).encode()}


#: ``/health`` answering 200 with its empty body.
HEALTHY = {Route.HEALTH: b""}


def backend_bundle(version: str, backend: str) -> HistoricalBundle:
    """``/version``, a JSON ``/server_info`` naming ``backend`` as the executor, and
    ``/health`` answering 200 (what a serving claim about coverage needs)."""
    return bundle(version_body(version), server_info_json(backend=backend), HEALTHY)


def cache_config_metrics(*series: str) -> dict[Route, bytes]:
    """``/metrics`` with one ``vllm:cache_config_info`` sample per label set given."""
    lines = [
        "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig",
        "# TYPE vllm:cache_config_info gauge",
        *(f"vllm:cache_config_info{{{labels}}} 1.0" for labels in series),
    ]
    return {Route.METRICS: ("\n".join(lines) + "\n").encode()}


def models_body(*cards: tuple[str, str | None]) -> dict[Route, bytes]:
    """``/v1/models`` with one base card per ``(id, root)``."""
    data = [{"id": i, "object": "model", "root": r, "parent": None} for i, r in cards]
    return {Route.MODELS: json.dumps({"object": "list", "data": data}).encode()}


def bundle(
    *parts: Mapping[Route, bytes], statuses: Mapping[Route, int] | None = None
) -> HistoricalBundle:
    merged: dict[Route, bytes] = {}
    for part in parts:
        merged.update(part)
    return historical_bundle(merged, statuses=statuses)


def probe_stub(
    directory: Path = REAL,
    *,
    faults: Mapping[Route, Fault] | None = None,
    api_key: str | None = None,
    restart_after_metrics_reads: int | None = None,
) -> CapturedReadback:
    """Probe the stub front door serving ``directory`` (one bracketed batch)."""
    with serve_capture(
        directory,
        faults=faults,
        api_key=api_key,
        restart_after_metrics_reads=restart_after_metrics_reads,
    ) as door:
        return readback_from_batch(probe_sync(door.url))


def dev_routes_404() -> dict[Route, Fault]:
    """Development mode off: the development routes answer 404."""
    return {route: Fault(status=404, body=NOT_FOUND) for route in DEV_ROUTES}


def front_door_join(readback: CapturedReadback | HistoricalBundle) -> FrontDoorJoinDecision:
    """The front-door join decision for a readback alone (no startup log)."""
    return assess(readback).front_door_join


def release_laws(version: str) -> ReleaseLaws:
    """The law table's answers for a release inside the read span."""
    laws = laws_for(Version(version))
    assert isinstance(laws, ReleaseLaws), version
    return laws


#: The start time :func:`witnessed` serves and writes in the receipt.
WITNESSED_START = "1.7e+09"
_MARKER = re.compile(rb"^process_start_time_seconds[ \t]", re.MULTILINE)


#: The launcher's key in these tests: made for this test session, never written to disk.
#: A receipt :func:`receipt_for` writes is signed with it and read with its public half,
#: as ``launch --receipt-signing-key`` and ``probe --receipt-public-key`` do.
LAUNCHER_KEY = SigningKey.generate()
#: Another launcher's key (a receipt it signs is signed by another key).
OTHER_LAUNCHER_KEY = SigningKey.generate()


def receipt_document_for(
    startup_log: StartupLog,
    *,
    start: str | None = WITNESSED_START,
    pid: int | None = None,
    log_bytes: int | None = None,
    log_sha256: str | None = None,
    signed_by: SigningKey | None = LAUNCHER_KEY,
) -> dict[str, object]:
    """The JSON document of a launch receipt for ``startup_log`` (see :func:`receipt_for`),
    signed by ``signed_by`` (``None``: unsigned)."""
    if pid is None:
        pids = [p for launch in startup_log.launches for p in launch.api_server_pids]
        pid = pids[0] if pids else 1
    record = ReceiptRecord(
        schema=RECEIPT_SCHEMA,
        pid=pid,
        process_start_time_seconds=start,
        start_time_unavailable=None if start is not None else "no /proc here",
        argv=["vllm", "serve", "/models/m"],
        host="test-host",
        log_path=startup_log.source,
        log_bytes=startup_log.size_bytes if log_bytes is None else log_bytes,
        log_sha256=startup_log.sha256 if log_sha256 is None else log_sha256,
    )
    return signed_receipt_document(record, signed_by)


def receipt_for(
    startup_log: StartupLog,
    *,
    start: str | None = WITNESSED_START,
    pid: int | None = None,
    log_bytes: int | None = None,
    log_sha256: str | None = None,
    signed_by: SigningKey | None = LAUNCHER_KEY,
) -> LaunchReceipt:
    """A launch receipt for ``startup_log``, as a launcher holding :data:`LAUNCHER_KEY`
    writes it and a prober holding its public half reads it: by default its own digest,
    the pid of its first launch's APIServer tags (else 1) and :data:`WITNESSED_START`,
    signed by :data:`LAUNCHER_KEY` (``signed_by=None``: unsigned; another key: signed by
    another key) and read under :data:`LAUNCHER_KEY`'s public half."""
    document = receipt_document_for(
        startup_log,
        start=start,
        pid=pid,
        log_bytes=log_bytes,
        log_sha256=log_sha256,
        signed_by=signed_by,
    )
    return parse_launch_receipt(
        json.dumps(document).encode(), verification_key=LAUNCHER_KEY.verification_key
    )


def receipt_file(path: Path, receipt: LaunchReceipt) -> Path:
    """Write ``receipt`` (its bytes) to ``path``."""
    path.write_bytes(receipt.raw)
    return path


def witnessed_door(
    front: HistoricalBundle,
    *,
    start: str = WITNESSED_START,
    faults: Mapping[Route, Fault] | None = None,
    port: int = 0,
) -> CapturedReadback:
    """The bodies (and statuses) of ``front`` served by the stub (on ``port``),
    ``/metrics`` carrying ``process_start_time_seconds`` ``start``, and probed: a live
    front door whose marker a receipt can be compared with."""
    bodies = dict(front.bodies)
    metrics = bodies.get(Route.METRICS, b"")
    if not _MARKER.search(metrics):
        metrics = metrics + f"process_start_time_seconds {start}\n".encode()
    bodies[Route.METRICS] = metrics
    served = dict(faults or {})
    for route, status in front.statuses:
        if route not in served:
            served[route] = Fault(status=status, body=bodies.get(route, b""))
    with tempfile.TemporaryDirectory(prefix="witnessed-") as tmp:
        for route, body in bodies.items():
            (Path(tmp) / f"{route.stem}.body").write_bytes(body)
        development = any(route in bodies for route in DEV_ROUTES)
        with serve_on_port(tmp, faults=served, port=port) as door:
            return readback_from_batch(probe_sync(door.url, development_routes=development))


def log_port(startup_log: StartupLog) -> int:
    """The port the log's last launch gave its API server (``0``: none printed)."""
    launch = startup_log.launches[-1] if startup_log.launches else None
    for args in () if launch is None else launch.non_default_args:
        printed = args.get("port")
        if printed is not None and printed.isdigit():
            return int(printed)
    return 0


def witnessed(
    front: HistoricalBundle,
    startup_log: StartupLog,
    *,
    launch: int | None = None,
    faults: Mapping[Route, Fault] | None = None,
) -> Assessment:
    """``front``'s bodies served live (:func:`witnessed_door`) with ``startup_log`` and a
    receipt whose start time that front door carries: the log joined, when nothing
    contradicts it."""
    door = witnessed_door(front, faults=faults, port=log_port(startup_log))
    metrics = door.metrics.observation if isinstance(door.metrics, Parsed) else None
    marker = None if metrics is None else metrics.process_start_time
    start = WITNESSED_START if marker is None else str(marker.seconds)
    receipt = receipt_for(startup_log, start=start)
    return assess(door, startup_log, launch=launch, receipt=receipt)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def assess_joined(
    front: CapturedReadback | HistoricalBundle | None, startup_log: StartupLog | None = None
) -> Assessment:
    """Bodies with a log: served live and joined by a receipt (:func:`witnessed`), so a
    rule that reads both sources is exercised as it is for a witnessed launch; anything
    else is assessed as given."""
    if isinstance(front, HistoricalBundle) and startup_log is not None:
        return witnessed(front, startup_log)
    return assess(front, startup_log)


def assess_witnessed(directory: Path, startup_log: StartupLog, **receipt: object) -> Assessment:
    """A capture directory served live on the port its log names, probed, and assessed
    with its log and a receipt whose start time is the one the front door serves (any
    field of the receipt may be overridden: ``pid=…``, ``start=…``, ``log_sha256=…``)."""
    with serve_on_port(directory, port=log_port(startup_log)) as door:
        readback = readback_from_batch(probe_sync(door.url))
    metrics = readback.metrics.observation if isinstance(readback.metrics, Parsed) else None
    marker = None if metrics is None else metrics.process_start_time
    fields: dict[str, object] = {"start": None if marker is None else str(marker.seconds)}
    fields.update(receipt)
    return assess(readback, startup_log, receipt=receipt_for(startup_log, **fields))  # type: ignore[arg-type]  # overrides of receipt_for's keywords
