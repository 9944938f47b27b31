"""A read startup log as the ``vllm-evidence.startup-log/6`` JSON document and as text.

The document is the package converter's rendering of a
:class:`~vllm_evidence._adapters.startup_log.StartupLog`; the hooks of the log's types
(the log, its launches, process tags) are registered here.  What is derived from a
launch rather than printed by it (the executor backend, the resolved sizes and global
ranks) is read from :mod:`vllm_evidence._readback`, once per launch, by the text and the
JSON alike.
"""

from __future__ import annotations

from typing import Any

from vllm_evidence._adapters.startup_log import Launch, LifeEvent, ProcessTag, StartupLog
from vllm_evidence._converter import converter, register_rendering
from vllm_evidence._readback.executor import resolve_executor
from vllm_evidence._readback.parallel import engine_local_rank, launch_parallel

__all__ = ["SCHEMA", "render_startup_log", "startup_log_document"]

SCHEMA = "vllm-evidence.startup-log/6"


def _process_json(process: ProcessTag) -> dict[str, object]:
    """A process tag as a JSON object."""
    return {"name": process.name, "pid": process.pid, "ip": process.ip, "tag": process.text}


def _launch_document(launch: Launch) -> dict[str, object]:
    version = launch.version
    config = launch.engine_config
    executor = resolve_executor(launch)
    backend = executor.backend
    names = launch.served_model_names
    return {
        "index": launch.index,
        "first_line": launch.first_line,
        "last_line": launch.last_line,
        "version": version.text if version else None,
        "versions": [
            {
                "text": v.text,
                "source": v.source.value,
                "line": v.line,
                "process": converter.unstructure(v.process),
            }
            for v in launch.versions
        ],
        "served_model_names": list(names) if names is not None else None,
        "parallel": None
        if config is None
        else {
            "tensor_parallel_size": config.tensor_parallel_size,
            "pipeline_parallel_size": config.pipeline_parallel_size,
            "data_parallel_size": config.data_parallel_size,
            "decode_context_parallel_size": config.decode_context_parallel_size,
            "prefill_context_parallel_size": config.prefill_context_parallel_size,
            "line": config.line,
        },
        "engine_config": None
        if config is None
        else {
            "engine": config.engine,
            "version": config.version_text,
            "max_seq_len": config.max_seq_len.value if config.max_seq_len else None,
            "kv_cache_dtype": config.kv_cache_dtype,
            "enable_prefix_caching": config.enable_prefix_caching,
            "served_model_name": config.served_model_name,
            "distributed_executor_backend": config.distributed_executor_backend,
            "line": config.line,
            "entries": dict(config.entries),
        },
        "engine_config_lines": [c.line for c in launch.engine_configs],
        "non_default_args": [
            {
                "line": a.line,
                "served_model_names": list(a.served_model_names)
                if a.served_model_names is not None
                else None,
                "tensor_parallel_size": a.tensor_parallel_size,
                "pipeline_parallel_size": a.pipeline_parallel_size,
                "data_parallel_size": a.data_parallel_size,
                "args": dict(a.args),
            }
            for a in launch.non_default_args
        ],
        "ranks": [
            {
                "rank": r.rank,
                "world_size": r.world_size,
                "pid": r.pid,
                "line": r.line,
                "form": r.form.value,
                "local_rank": r.local_rank,
                "backend": r.backend,
                "group_ranks": dict(r.group_ranks),
                "repeated": r.repeated,
                "process": converter.unstructure(r.process),
            }
            for r in launch.ranks
        ],
        "pasted_ranks": [
            {"rank": r.rank, "world_size": r.world_size, "line": r.line, "form": r.form.value}
            for r in launch.pasted_ranks
        ],
        "compile_cache": [
            {
                "form": c.form.value,
                "rank": c.rank,
                "data_parallel_index": c.data_parallel_index,
                "line": c.line,
                "process": converter.unstructure(c.process),
            }
            for c in launch.compile_cache
        ],
        "executor_backend": backend.value if backend else None,
        "executor_evidence": [
            {"marker": o.marker.value, "line": o.line} for o in executor.evidence
        ],
        "executor_markers": [
            {
                "marker": o.marker.value,
                "named": o.named.value if o.named else None,
                "line": o.line,
                "process": converter.unstructure(o.process),
            }
            for o in launch.executor_observations
        ],
        "routes": [
            {"path": r.path, "methods": list(r.methods), "line": r.line} for r in launch.routes
        ],
        "development_mode": launch.development_mode,
        "dev_mode_warning_lines": list(launch.dev_mode_warning_lines),
        "head": launch.head,
        "transformed_head_lines": list(launch.transformed_head_lines),
        "capacity": [
            {
                "line": c.line,
                "concurrency_line": c.concurrency_line,
                "format": c.format.value,
                "process": c.process.name if c.process else None,
                "process_tag": converter.unstructure(c.process),
                "device": c.device,
                "tokens": c.tokens.value if c.tokens else None,
                "max_model_len": c.max_model_len.value if c.max_model_len else None,
                "max_concurrency": str(c.max_concurrency.value) if c.max_concurrency else None,
            }
            for c in launch.capacity
        ],
        "blocks": [
            {
                "line": b.line,
                "device": b.device,
                "gpu_blocks": b.device_blocks.value,
                "cpu_blocks": b.cpu_blocks.value if b.cpu_blocks else None,
                "process": converter.unstructure(b.process),
            }
            for b in launch.blocks
        ],
        "available_kv_cache_memory_gib": [m.text for m in launch.available_memory],
        "available_kv_cache_memory": [
            {
                "gib": m.text,
                "line": m.line,
                "repeated": m.repeated,
                "process": converter.unstructure(m.process),
            }
            for m in launch.available_memory
        ],
        "api_server_pids": list(launch.api_server_pids),
        "life": _life_json(launch),
        "resolved_parallel": _resolution_json(launch),
    }


def _event_json(event: LifeEvent) -> dict[str, object]:
    return {
        "kind": event.kind.value,
        "line": event.line,
        "worker": event.worker,
        "worker_rank": event.worker_rank,
        "worker_pid": event.worker_pid,
        "exit_code": event.exit_code,
        "process": converter.unstructure(event.process),
    }


def life_state(launch: Launch) -> str:
    """Where the launch's life stood at its last line: ``never_started``,
    ``engine_dead``, ``rank_lost``, ``ended``, ``serving`` or ``not_observed``."""
    if launch.init_failure is not None:
        return "never_started"
    if launch.engine_death is not None:
        return "engine_dead"
    if launch.worker_deaths:
        return "rank_lost"
    if launch.ended is not None:
        return "ended"
    return "serving" if launch.serving is not None else "not_observed"


def _line(event: LifeEvent | None) -> int | None:
    return None if event is None else event.line


def _life_json(launch: Launch) -> dict[str, object]:
    return {
        "state": life_state(launch),
        "serving_line": _line(launch.serving),
        "worker_deaths": [_event_json(e) for e in launch.worker_deaths],
        "engine_dead_line": _line(launch.engine_death),
        "init_failed_line": _line(launch.init_failure),
        "ended_line": _line(launch.ended),
        "events": [_event_json(e) for e in launch.life],
    }


def _life_lines(launch: Launch) -> list[str]:
    """The launch's life, for a person: where it served from and what ended it."""
    state = life_state(launch)
    parts = []
    if launch.serving is not None:
        parts.append(f"serving from line {launch.serving.line}")
    for death in launch.worker_deaths:
        said = [
            *([] if death.worker_rank is None else [f"engine-local rank {death.worker_rank}"]),
            *([] if death.worker_pid is None else [f"pid {death.worker_pid}"]),
            *([] if death.exit_code is None else [f"exit code {death.exit_code}"]),
        ]
        who = death.worker or "a worker"
        if said:
            who += " (" + ", ".join(said) + ")"
        parts.append(f"{who} died at line {death.line}")
    if launch.engine_death is not None:
        parts.append(f"engine dead at line {launch.engine_death.line}")
    if launch.init_failure is not None:
        parts.append(f"engine initialization failed at line {launch.init_failure.line}")
    if launch.ended is not None:
        parts.append(f"shutdown from line {launch.ended.line}")
    shown = "; ".join(parts) if parts else "no lifecycle line"
    return [f"  life:               {state.replace('_', ' ')}: {shown}"]


def startup_log_document(log: StartupLog) -> dict[str, Any]:
    """The ``vllm-evidence.startup-log/6`` JSON document of a read log."""
    document: dict[str, Any] = converter.unstructure(log)
    return document


def _log_json(log: StartupLog) -> dict[str, object]:
    return {
        "schema": SCHEMA,
        "source": log.source,
        "sha256": log.sha256,
        "size_bytes": log.size_bytes,
        "line_count": log.line_count,
        "wrap_width": log.wrap_width,
        "launches": [converter.unstructure(launch) for launch in log.launches],
    }


register_rendering(ProcessTag, _process_json)
register_rendering(Launch, _launch_document)
register_rendering(StartupLog, _log_json)


def _resolution_json(launch: Launch) -> dict[str, object]:
    res = launch_parallel(launch)
    sizes = res.configuration
    return {
        "tensor_parallel_size": None if sizes is None else sizes.tensor_parallel_size,
        "pipeline_parallel_size": None if sizes is None else sizes.pipeline_parallel_size,
        "data_parallel_size": None if sizes is None else sizes.data_parallel_size,
        "prefill_context_parallel_size": (
            None if sizes is None else sizes.prefill_context_parallel_size
        ),
        "note": res.note,
        "global_ranks": [
            {
                "rank": g.rank,
                "line": g.line,
                "pid": g.pid,
                "attribution": g.attribution.value,
                "engine_line": g.engine_line,
                "tree_line": g.tree_line,
                "how": g.how,
            }
            for g in res.ranks
        ],
        "unmapped_rank_lines": list(res.unmapped_lines),
        "unmapped_worker_tags": [
            {
                "tag": tag.text,
                "pid": tag.pid,
                "line": line,
                "groups": dict(tag.worker.groups) if tag.worker is not None else {},
                "engine_local_rank": engine_local_rank(tag),
            }
            for tag, line in res.unmapped_tags
        ],
        "unmapped_why": list(res.unmapped_why),
    }


def _resolved_lines(launch: Launch) -> list[str]:
    """The launch's resolved sizes and global ranks, where they differ from the
    engine-init line (independent DP engines each print DP=1)."""
    res = launch_parallel(launch)
    config = launch.engine_config
    sizes = res.configuration
    ranks = (
        ", ".join(str(g.rank) + ("" if g.how is None else f" ({g.how})") for g in res.ranks)
        if res.ranks
        else "none"
    )
    ranks += "".join(f"; {why}" for why in res.unmapped_why)
    if sizes is None:
        # What the workers' tags and rank lines name, even with no sizes to map them by.
        named = ["  global ranks:       " + ranks] if res.ranks or res.unmapped_why else []
        head = [f"  resolved sizes:     not established: {res.note}"] if config is not None else []
        return head + named
    if config is None or res.note is None:
        return []
    tp, pp, dp = sizes.tensor_parallel_size, sizes.pipeline_parallel_size, sizes.data_parallel_size
    return [
        f"  resolved sizes:     TP={tp} PP={pp} DP={dp} ({res.note})",
        "  global ranks:       " + ranks,
    ]


def render_startup_log(log: StartupLog) -> str:
    """A readable summary, one block per launch."""
    out = [
        f"startup log {log.source or '<stream>'}: {log.line_count} lines, "
        f"sha256 {log.sha256[:16]}…, {len(log.launches)} launch(es)"
        + (f", hard wraps at {log.wrap_width} rejoined" if log.wrap_width else "")
    ]
    for launch in log.launches:
        version = launch.version
        config = launch.engine_config
        executor = resolve_executor(launch)
        backend = executor.backend
        names = launch.served_model_names
        out.append(f"\nlaunch {launch.index} (lines {launch.first_line}-{launch.last_line})")
        if launch.transformed_head_lines:
            shown = ", ".join(str(n) for n in launch.transformed_head_lines[:8])
            more = " …" if len(launch.transformed_head_lines) > 8 else ""
            out.append(
                f"  head:               transformed (a pasted log) at line(s) {shown}{more}: "
                "no process tag of those lines is trusted"
            )
        out.append(f"  version:            {version.text if version else 'not established'}")
        out.append(f"  served names:       {', '.join(names) if names else 'not printed'}")
        if config is None:
            out.append("  parallel:           no engine-init line")
        else:
            out.append(
                "  parallel:           "
                f"TP={config.tensor_parallel_size} PP={config.pipeline_parallel_size} "
                f"DP={config.data_parallel_size} (line {config.line})"
            )
        ranks = sorted({(r.rank, r.world_size) for r in launch.ranks})
        out.append(
            "  ranks seen:         "
            + (", ".join(f"{r}/{w}" for r, w in ranks) if ranks else "none")
        )
        if launch.pasted_ranks:
            named = sorted({(r.rank, r.world_size) for r in launch.pasted_ranks})
            out.append(
                "  ranks named:        "
                + ", ".join(f"{r}/{w}" for r, w in named)
                + " (under a pasted head: named, not evidence of a process)"
            )
        out.extend(_resolved_lines(launch))
        out.extend(_life_lines(launch))
        evidence = ", ".join(f"{o.marker.value}@{o.line}" for o in executor.evidence)
        out.append(
            "  executor backend:   "
            + (f"{backend.value} ({evidence})" if backend else "not established")
        )
        dev = launch.development_mode
        out.append(
            f"  routes:             {len(launch.routes)}; development mode "
            + ("on" if dev else "not observed")
        )
        out.extend(
            f"  capacity line {c.line}: {c.format.value} {c.device or '?'} "
            f"tokens={c.tokens.value if c.tokens else None} "
            f"max_model_len={c.max_model_len.value if c.max_model_len else None} "
            f"concurrency={c.max_concurrency.value if c.max_concurrency else None} "
            f"[{c.process.text if c.process else '-'}]"
            for c in launch.capacity
        )
        out.extend(
            f"  blocks line {b.line}: {b.device} {b.device_blocks.value}"
            + (f", cpu {b.cpu_blocks.value}" if b.cpu_blocks else "")
            for b in launch.blocks
        )
        out.extend(
            f"  available KV memory line {m.line}: {m.text} GiB" for m in launch.available_memory
        )
    return "\n".join(out) + "\n"
