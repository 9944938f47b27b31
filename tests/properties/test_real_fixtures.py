"""Raw facts of the live-tier captures, checked without the product.

These read the committed captures under ``tests/fixtures/real/vllm-0.32.0-cpu/`` (recorded
by ``scripts/live-vllm record``), so they run in the ordinary suite with no vLLM. When
``VLLM_EVIDENCE_LIVE_CAPTURES`` names another directory (``scripts/live-vllm check`` sets
it to captures it has just recorded), the same facts are checked on those; there
``VLLM_EVIDENCE_LIVE_SECRET`` carries the API key the run used, so its absence is checked
exactly.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

COMMITTED = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "vllm-0.32.0-cpu"
ROOT = Path(os.environ.get("VLLM_EVIDENCE_LIVE_CAPTURES") or COMMITTED)
SCENARIOS = ("tp1-devmode-alias", "tp2-apikey", "tp2-devmode", "restart-mid-batch")
#: After start-up (tests/test_real_lifecycle.py reads them): recorded apart, not by `check`.
LIFECYCLE = (
    "tp2-worker-kill",
    "tp1-engine-kill",
    "tp2-keepalive-engine-death",
    "failed-startup",
    "tp2-gate-worker-kill",
    "tp1-gate-canary",
)
#: Other launch shapes (tests/test_real_shapes.py reads them): recorded apart, not by `check`.
SHAPES = ("dp2-eager", "tp1-hybrid")
KEY_PREFIX = "live-tier-key-"  # every key the recorder makes starts with this
START_TIME = re.compile(rb"^process_start_time_seconds (\S+)$", re.MULTILINE)


def status(path: Path) -> int:
    """The status code from a ``.headers`` file's status line."""
    line = path.read_bytes().split(b"\r\n", 1)[0].decode("latin-1")
    return int(line.split(" ")[1])


def body_json(path: Path) -> Any:
    return json.loads(path.read_bytes())


def start_time(metrics_body: Path) -> float:
    found = START_TIME.findall(metrics_body.read_bytes())
    assert len(found) == 1, f"{metrics_body}: {len(found)} process_start_time_seconds samples"
    return float(found[0])


def all_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*") if p.is_file())


def test_every_scenario_was_recorded() -> None:
    assert ROOT.is_dir(), f"no captures at {ROOT}"
    recorded = sorted(p.name for p in ROOT.iterdir() if p.is_dir())
    if ROOT == COMMITTED:
        assert recorded == sorted(SCENARIOS + LIFECYCLE + SHAPES)
    else:  # a fresh `check` records the four scenarios and the gate's two
        assert recorded == sorted((*SCENARIOS, "tp2-gate-worker-kill", "tp1-gate-canary"))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_version_is_0_32_0_everywhere(scenario: str) -> None:
    bodies = sorted((ROOT / scenario).rglob("version.body"))
    assert bodies
    for body in bodies:
        assert body.read_bytes() == b'{"version":"0.32.0"}'
        assert status(body.with_suffix(".headers")) == 200


# ------------------------------------------------------------------ scenario 1


def test_tp1_devmode_alias_world_size_and_alias() -> None:
    d = ROOT / "tp1-devmode-alias"
    assert status(d / "get_world_size.headers") == 200
    assert body_json(d / "get_world_size.body") == {"world_size": 1}
    models = body_json(d / "v1_models.body")["data"]
    assert [(m["id"], m["root"]) for m in models] == [("tiny-llama:q4-alias", "/models/tiny-llama")]
    assert status(d / "server_info.headers") == 200
    parallel = body_json(d / "server_info__config_format_json.body")["vllm_config"][
        "parallel_config"
    ]
    assert (parallel["tensor_parallel_size"], parallel["world_size"]) == (1, 1)
    log = (d / "startup.log").read_text("utf-8")
    assert "SECURITY WARNING: Development endpoints are enabled!" in log
    assert "Route: /server_info, Methods: GET" in log


# ------------------------------------------------------------------ scenario 2


def test_tp2_apikey_models_without_key_is_401_unauthorized() -> None:
    d = ROOT / "tp2-apikey"
    assert status(d / "v1_models.headers") == 401
    assert body_json(d / "v1_models.body") == {"error": "Unauthorized"}


def test_tp2_apikey_models_with_key_is_200() -> None:
    d = ROOT / "tp2-apikey" / "with-key"
    assert status(d / "v1_models.headers") == 200
    models = body_json(d / "v1_models.body")["data"]
    assert [(m["id"], m["root"]) for m in models] == [("/models/tiny-llama", "/models/tiny-llama")]


def test_tp2_apikey_exempt_routes_answer_without_key() -> None:
    d = ROOT / "tp2-apikey"
    for stem in ("version", "metrics", "health"):
        assert status(d / f"{stem}.headers") == 200, stem


def test_tp2_apikey_no_dev_routes() -> None:
    with_key = ROOT / "tp2-apikey" / "with-key"
    for stem in ("server_info", "server_info__config_format_json", "get_world_size"):
        assert status(with_key / f"{stem}.headers") == 404, stem
        assert body_json(with_key / f"{stem}.body") == {"detail": "Not Found"}
    log = (ROOT / "tp2-apikey" / "startup.log").read_text("utf-8")
    assert "Route: /server_info" not in log
    assert "SECURITY WARNING: Development endpoints" not in log


def test_tp2_apikey_log_masks_the_key() -> None:
    log = (ROOT / "tp2-apikey" / "startup.log").read_text("utf-8")
    assert "'api_key': '***'" in log


# ------------------------------------------------------------------ scenario 3


def test_tp2_devmode_world_size_2() -> None:
    d = ROOT / "tp2-devmode"
    assert status(d / "get_world_size.headers") == 200
    assert body_json(d / "get_world_size.body") == {"world_size": 2}
    parallel = body_json(d / "server_info__config_format_json.body")["vllm_config"][
        "parallel_config"
    ]
    assert (parallel["tensor_parallel_size"], parallel["world_size"]) == (2, 2)
    assert parallel["distributed_executor_backend"] == "mp"


@pytest.mark.parametrize("scenario", ["tp2-apikey", "tp2-devmode"])
def test_tp2_logs_show_both_ranks(scenario: str) -> None:
    log = (ROOT / scenario / "startup.log").read_text("utf-8")
    assert "Worker_TP0" in log
    assert "Worker_TP1" in log
    assert re.search(r"world_size=2 rank=0 local_rank=0 distributed_init_method=\S+", log)
    assert re.search(r"world_size=2 rank=1 local_rank=1 distributed_init_method=\S+", log)
    assert "tensor_parallel_size=2" in log
    assert re.search(r"CPU KV cache size: [\d,]+ tokens, Maximum concurrency for 2,048", log)


# ------------------------------------------------------------------ scenario 4


def test_restart_bracket_reads_disagree() -> None:
    d = ROOT / "restart-mid-batch"
    first = start_time(d / "first" / "metrics.body")
    last = start_time(d / "second" / "metrics.body")
    assert first != last
    assert last > first
    order = [line.split()[0] for line in (d / "sequence.txt").read_text("utf-8").splitlines()]
    assert order[0] == "first/metrics"
    assert order[-1] == "second/metrics"


def test_restart_logs_are_two_processes() -> None:
    d = ROOT / "restart-mid-batch"
    pid = re.compile(r"\(APIServer pid=(\d+)\)")
    first = set(pid.findall((d / "first" / "startup.log").read_text("utf-8")))
    second = set(pid.findall((d / "second" / "startup.log").read_text("utf-8")))
    assert len(first) == 1
    assert len(second) == 1
    assert first != second


# ------------------------------------------------------------------ hygiene


def test_the_api_key_is_in_no_file() -> None:
    needles = [KEY_PREFIX.encode()]
    secret = os.environ.get("VLLM_EVIDENCE_LIVE_SECRET")
    if secret:
        needles.append(secret.encode())
    for path in all_files():
        data = path.read_bytes()
        assert not any(n in data for n in needles), path


def test_no_machine_specific_paths() -> None:
    # The repository and the home of the machine running this, named at run time.
    workspace = re.escape(f"{Path(__file__).resolve().parents[2]}/".encode())
    home = re.escape(f"{Path.home()}/".encode())
    pattern = re.compile(workspace + rb"|(?<![\w.-])/tmp/|(?<![\w.-])" + home + rb"|live-vllm-")
    for path in all_files():
        found = pattern.search(path.read_bytes())
        assert found is None, f"{path}: {found.group(0)!r}"
