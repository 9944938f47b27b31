"""The scenario runs, each into the run's own directory and moved into place only once
complete and clean, and ``record``, which runs a list of them."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from live_vllm.common import HOST_NEUTRAL, RELEASE_READY_TIMEOUT_S, log
from live_vllm.documents import verify_clean, write_notes, write_readme, write_scenario_json
from live_vllm.environments import ensure_env
from live_vllm.lifecycle import run_lifecycle
from live_vllm.models import build_model
from live_vllm.product import check_tee, probe_witnessed, product_capture
from live_vllm.reads import ROUTES, record_route, save_log
from live_vllm.releases import RELEASES, VLLM_VERSION, Release
from live_vllm.runs import Run
from live_vllm.scenarios import (
    LIFECYCLE_SCENARIOS,
    RELEASE_SCENARIOS,
    SCENARIO_NAMES,
    SCENARIOS,
    SHAPE_SCENARIOS,
    Scenario,
)
from live_vllm.server import Server, free_port

__all__ = ["base_prefix", "record", "run_release_scenario", "run_restart", "run_scenario"]


def run_scenario(run: Run, scenario: Scenario, out_root: Path) -> float:
    """Run one scenario and write its capture to ``out_root/<name>``; return seconds."""
    t0 = time.monotonic()
    # Record into the run's own directory; replace the destination only on success, so a
    # failed or interrupted run never leaves a half-written capture in the fixtures.
    out = run.root / "out" / scenario.name
    out.mkdir(parents=True)
    logs = run.root / "logs" / scenario.name
    log(f"scenario {scenario.name}")
    if scenario.restart:
        run_restart(run, scenario, out, logs)
    elif scenario.lifecycle is not None:
        run_lifecycle(run, scenario, out, logs)
    else:
        server = Server(run, scenario, logs / "startup.log")
        try:
            server.start()
            log(f"  ready after {server.wait_ready():.1f} s")
            for stem, path in ROUTES:
                record_route(run, out, stem, path)
            if scenario.api_key:
                for stem, path in ROUTES:
                    record_route(run, out / "with-key", stem, path, token=run.api_key)
            if scenario.launched:
                probe_witnessed(run, server, out)
        finally:
            server.stop()
        save_log(run, server.log_path, out / "startup.log", scenario)
        if scenario.launched:
            check_tee(server)
            receipt = server.receipt_path.read_bytes()
            (out / "launch-receipt.json").write_bytes(run.neutralise(receipt))
    write_scenario_json(run, scenario, out)
    verify_clean(run, out)
    dest = out_root / scenario.name
    shutil.rmtree(dest, ignore_errors=True)
    shutil.move(out, dest)
    elapsed = time.monotonic() - t0
    log(f"  {scenario.name}: {elapsed:.1f} s")
    return elapsed


def run_release_scenario(run: Run, scenario: Scenario, out_root: Path) -> float:
    """Record one scenario of another release into ``out_root/<name>``; return seconds.

    Besides the route reads and the log: the product's own saved capture of the running
    server (``capture/``, from ``vllm-evidence probe URL --save``), its probe document with
    the log and receipt (``witnessed-probe.json``), the launch receipt, and ``NOTES.md``.
    """
    t0 = time.monotonic()
    out = run.root / "out" / scenario.name
    out.mkdir(parents=True)
    logs = run.root / "logs" / scenario.name
    log(f"scenario {scenario.name} (vLLM {run.release.version})")
    facts: list[str] = []
    if scenario.restart:
        run_restart(run, scenario, out, logs)
    elif scenario.lifecycle is not None:
        run_lifecycle(run, scenario, out, logs)
    else:
        server = Server(run, scenario, logs / "startup.log")
        try:
            server.start()
            waited = server.wait_ready(timeout=RELEASE_READY_TIMEOUT_S)
            log(f"  ready after {waited:.1f} s")
            facts.append(f"- `/health` answered 200 {waited:.0f} s after the launch.")
            for stem, path in ROUTES:
                status, _ = record_route(run, out, stem, path)
                facts.append(f"- `GET {path}` -> {status} (`{stem}.body`)")
            facts += product_capture(run, server, out)
        finally:
            server.stop()
        save_log(run, server.log_path, out / "startup.log", scenario)
        if scenario.launched:
            check_tee(server)
            receipt = json.loads(server.receipt_path.read_text(encoding="utf-8"))
            receipt["host"] = HOST_NEUTRAL
            text = json.dumps(receipt, indent=2) + "\n"
            (out / "launch-receipt.json").write_bytes(run.neutralise(text.encode()))
    write_scenario_json(run, scenario, out)
    write_notes(run, scenario, out, facts)
    verify_clean(run, out, host=True)
    dest = out_root / scenario.name
    shutil.rmtree(dest, ignore_errors=True)
    shutil.move(out, dest)
    elapsed = time.monotonic() - t0
    log(f"  {scenario.name}: {elapsed:.1f} s")
    return elapsed


def run_restart(run: Run, scenario: Scenario, out: Path, logs: Path) -> None:
    """A restart in the middle of a probe batch: the opening ``/metrics`` read from the
    first process into ``first/``, then the same command line relaunched on the same port
    and the remaining reads (closing ``/metrics`` last) into ``second/``; the order in
    ``sequence.txt``."""
    sequence: list[str] = []
    first = Server(run, scenario, logs / "first.log")
    try:
        first.start()
        log(f"  first process ready after {first.wait_ready():.1f} s")
        _, name = record_route(run, out / "first", "metrics", "/metrics")
        sequence.append(f"{name}  GET /metrics  (bracket start)")
    finally:
        first.stop()
    save_log(run, first.log_path, out / "first" / "startup.log", scenario)
    log("  first process stopped; relaunching")
    second = Server(run, scenario, logs / "second.log")
    try:
        second.start()
        log(f"  second process ready after {second.wait_ready():.1f} s")
        for stem, path in ROUTES:
            if stem == "metrics":
                continue
            _, name = record_route(run, out / "second", stem, path)
            sequence.append(f"{name}  GET {path}")
        _, name = record_route(run, out / "second", "metrics", "/metrics")
        sequence.append(f"{name}  GET /metrics  (bracket end)")
    finally:
        second.stop()
    save_log(run, second.log_path, out / "second" / "startup.log", scenario)
    (out / "sequence.txt").write_text("\n".join(sequence) + "\n", encoding="utf-8")


def record(
    names: Sequence[str],
    out_root: Path,
    env_dir: Path | None = None,
    release: Release | None = None,
) -> tuple[Run, dict[str, float]]:
    """Record the scenarios ``names`` of ``release`` (default 0.32.0) into ``out_root``:
    make or reuse its environment, build the models, run each scenario in table order,
    write 0.32.0's README when one of its own four was recorded, check everything is
    clean. Every server is stopped and the run's root removed whatever happens. Returns
    the run and the seconds each step took."""
    release = release or RELEASES[VLLM_VERSION]
    env_dir = ensure_env(env_dir, release)
    timings: dict[str, float] = {}
    root = Path(tempfile.mkdtemp(prefix="live-vllm-"))
    try:
        run = Run(env_dir=env_dir, root=root, port=free_port(), release=release)
        run.home.mkdir()
        run.tmp.mkdir()
        run.base_prefix = base_prefix(env_dir)
        t0 = time.monotonic()
        build_model(run.model, env_dir, release)
        timings["build-model"] = time.monotonic() - t0
        wanted = (*SHAPE_SCENARIOS, *LIFECYCLE_SCENARIOS) if run.own_release else ()
        for model in sorted({s.model for s in wanted if s.name in names} - {"tiny-llama"}):
            t0 = time.monotonic()
            build_model(run.model_dir(model), env_dir, release, model)
            timings[f"build-{model}"] = time.monotonic() - t0
        out_root.mkdir(parents=True, exist_ok=True)
        if run.own_release:
            for scenario in SCENARIOS:
                if scenario.name in names:
                    timings[scenario.name] = run_scenario(run, scenario, out_root)
            for scenario in LIFECYCLE_SCENARIOS:
                if scenario.name in names:
                    timings[scenario.name] = run_scenario(run, scenario, out_root)
            for scenario in SHAPE_SCENARIOS:
                if scenario.name in names:
                    timings[scenario.name] = run_release_scenario(run, scenario, out_root)
            if any(name in SCENARIO_NAMES for name in names):
                write_readme(run, out_root)
        else:
            for scenario in RELEASE_SCENARIOS:
                if scenario.name in names:
                    timings[scenario.name] = run_release_scenario(run, scenario, out_root)
        verify_clean(run, out_root)
        return run, timings
    finally:
        Server.stop_all()
        shutil.rmtree(root, ignore_errors=True)


def base_prefix(env_dir: Path) -> str:
    """The environment's base interpreter prefix (``sys.base_prefix`` there)."""
    proc = subprocess.run(
        [str(env_dir / "bin" / "python"), "-c", "import sys; print(sys.base_prefix)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return proc.stdout.strip()
