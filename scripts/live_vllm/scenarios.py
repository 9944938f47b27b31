"""The scenario tables: what each recorded server is launched as and what happens to it.

- ``SCENARIOS``: the live tier's own four (0.32.0), recorded by ``check``;
- ``LIFECYCLE_SCENARIOS``: 0.32.0 after start-up (a process killed by pid);
- ``RELEASE_SCENARIOS``: the generic scenarios of every other release;
- ``SHAPE_SCENARIOS``: launch shapes of 0.32.0 recorded as another release's are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from live_vllm.releases import VLLM_VERSION, Release

__all__ = [
    "CANARY_REQUIRES",
    "CHECK_SCENARIO_NAMES",
    "GATE_INTERVAL",
    "GATE_REQUIRES",
    "LIFECYCLES",
    "LIFECYCLE_SCENARIOS",
    "LIFECYCLE_SCENARIO_NAMES",
    "OTHER_LOG_SCENARIO",
    "RELEASE_SCENARIOS",
    "RELEASE_SCENARIO_NAMES",
    "SCENARIOS",
    "SCENARIO_NAMES",
    "SHAPE_SCENARIOS",
    "SHAPE_SCENARIO_NAMES",
    "Lifecycle",
    "Scenario",
    "ScenarioChoiceError",
    "check_names",
    "known_names",
    "record_names",
]

Lifecycle = Literal[
    "worker-kill",
    "engine-kill",
    "keepalive-engine-death",
    "failed-startup",
    "gate-worker-kill",
    "gate-canary",
]
#: Every lifecycle a scenario may have.
LIFECYCLES: tuple[Lifecycle, ...] = get_args(Lifecycle)


@dataclass(frozen=True)
class Scenario:
    """One recorded server: its launch settings and what is done to it."""

    name: str
    summary: str
    tensor_parallel_size: int = 1
    dev_mode: bool = False
    served_model_name: str | None = None
    api_key: bool = False
    restart: bool = False
    launched: bool = False
    """Started through ``vllm-evidence launch`` (the launch witness), then probed with
    its log and receipt, and with another scenario's log."""
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    lifecycle: Lifecycle | None = None
    """What happens after start-up (``LIFECYCLE_SCENARIOS``): ``worker-kill``,
    ``engine-kill``, ``keepalive-engine-death``, ``failed-startup``,
    ``gate-worker-kill`` (started under the gate, ``launch --serve``) or ``gate-canary``
    (under the gate with ``--canary``)."""
    keep_alive: bool = False
    """``VLLM_KEEP_ALIVE_ON_ENGINE_DEATH=1``: the API server outlives its engine."""
    enforce_eager: bool = False
    """``--enforce-eager``: no torch.compile, so no compile-cache lines in the log."""
    model: str = "tiny-llama"
    """The model served (``MODEL_SCRIPTS``): the tiny Llama, or ``tiny-gemma3`` (hybrid
    attention: sliding-window and full-attention layers)."""

    @property
    def parallel(self) -> bool:
        """More than one process: TP, PP or DP above 1."""
        return (
            max(self.tensor_parallel_size, self.pipeline_parallel_size, self.data_parallel_size) > 1
        )


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="tp1-devmode-alias",
        summary=(
            "TP=1, development mode on, served under the alias `tiny-llama:q4-alias`, "
            "which cannot be derived from the model path `/models/tiny-llama`."
        ),
        dev_mode=True,
        served_model_name="tiny-llama:q4-alias",
    ),
    Scenario(
        name="tp2-apikey",
        summary=(
            "TP=2 (two CPU worker processes, `mp` executor), `--api-key <random secret>`, "
            "development mode off. The top-level files are the reads made WITHOUT the key; "
            "`with-key/` holds the same routes read with `Authorization: Bearer <key>`. "
            "The key is in no file (the log prints it as `'***'`; files are scrubbed "
            "anyway and checked)."
        ),
        tensor_parallel_size=2,
        api_key=True,
    ),
    Scenario(
        name="tp2-devmode",
        summary=(
            "TP=2 (two CPU worker processes, `mp` executor), development mode on. Started "
            "through `vllm-evidence launch --receipt … --log …` (the launch witness); while "
            "it served, `vllm-evidence probe --startup-log … --receipt …` was run with its own "
            "log (`witnessed-probe.json`) and with the `tp2-apikey` log "
            "(`witnessed-probe-other-log.json`, same receipt; "
            "`witnessed-probe-other-log-no-receipt.json`, none). `launch-receipt.json` is the "
            "receipt (neutralised: its digest is of the log as written, before neutralising)."
        ),
        tensor_parallel_size=2,
        dev_mode=True,
        launched=True,
    ),
    Scenario(
        name="restart-mid-batch",
        summary=(
            "A restart in the middle of a probe batch, TP=1, development mode on, alias "
            "`tiny-llama:q4-alias`. `first/` holds the opening `/metrics` read of the batch "
            "and the whole log of the first process; the server was then stopped and "
            "relaunched with the same command line on the same port; `second/` holds the "
            "remaining reads (in route order) from the second process, ending with the "
            "closing `/metrics` read (`second/metrics.*`), and the second process's log. "
            "The two `process_start_time_seconds` values differ. `sequence.txt` lists "
            "the reads in the order they were made."
        ),
        dev_mode=True,
        served_model_name="tiny-llama:q4-alias",
        restart=True,
    ),
)
SCENARIO_NAMES = tuple(s.name for s in SCENARIOS)

_LIFE_COMMON = (
    "Development mode on, started through `vllm-evidence launch --receipt … --log …`; "
    "the top-level route files and `probe-before.json` were read while it served. "
)

#: What happens after start-up (``record --scenario NAME`` on 0.32.0; not part of
#: ``check``): a process is killed by pid, never by a completion (the tiny Llama's first
#: completion kills the engine on CPU: its head size is 16; ``tp1-gate-canary``, which
#: generates, serves ``tiny-llama-hd32``).  ``health-after.txt`` is the ``/health`` status
#: every 0.2 s after the kill, until the port refuses connections.
LIFECYCLE_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="tp2-worker-kill",
        summary=(
            "TP=2; once ready, `kill -9` of the rank-1 worker process (its pid from its own "
            "`world_size=2 rank=1` line). " + _LIFE_COMMON
        ),
        tensor_parallel_size=2,
        dev_mode=True,
        launched=True,
        lifecycle="worker-kill",
    ),
    Scenario(
        name="tp1-engine-kill",
        summary="TP=1; once ready, `kill -9` of the EngineCore process. " + _LIFE_COMMON,
        dev_mode=True,
        launched=True,
        lifecycle="engine-kill",
    ),
    Scenario(
        name="tp2-keepalive-engine-death",
        summary=(
            "TP=2 with `VLLM_KEEP_ALIVE_ON_ENGINE_DEATH=1`; once ready, `kill -9` of the rank-1 "
            "worker; once `/health` answered 503, every route was read again into "
            "`after-death/` and probed (`probe-after-death.json`): the API server stays up "
            "and describes a dead engine. " + _LIFE_COMMON
        ),
        tensor_parallel_size=2,
        dev_mode=True,
        launched=True,
        lifecycle="keepalive-engine-death",
        keep_alive=True,
    ),
    Scenario(
        name="failed-startup",
        summary=(
            "TP=2; during start-up, as soon as the rank-1 worker printed its "
            "`world_size=2 rank=1` line, `kill -9` of that worker: the engine never starts "
            "and the server never listens. Only the log and the receipt are kept. "
            "Started through `vllm-evidence launch --receipt … --log …`."
        ),
        tensor_parallel_size=2,
        dev_mode=True,
        launched=True,
        lifecycle="failed-startup",
    ),
    Scenario(
        name="tp2-gate-worker-kill",
        summary=(
            "TP=2 started under the gate (`vllm-evidence launch --serve … --require parallel "
            "capacity health_coverage --interval 1s`); once the gate's `/ready` answered 200, "
            "`kill -9` of the rank-1 worker, then the gate's `/ready` and vLLM's `/health` "
            "read every 0.2 s (`gate-after.txt`), and the gate's `/ready` body after the kill "
            "kept (`ready-after.json`), with the gate's `/metrics` before and after. "
            "Development mode on; the top-level route files were read while it served."
        ),
        tensor_parallel_size=2,
        dev_mode=True,
        launched=True,
        lifecycle="gate-worker-kill",
    ),
    Scenario(
        name="tp1-gate-canary",
        summary=(
            "TP=1 started under the gate with its generation canary (`vllm-evidence launch "
            "--serve … --canary --require capacity health_coverage generation --interval "
            "1s`): once the gate's `/ready` answered 200 (a token back from that round's "
            "one-token completion), its body (`ready-before.json`) and `/metrics` "
            "(`gate-metrics-before.txt`) were kept; then `kill -9` of the EngineCore, the "
            "gate's `/ready` and vLLM's `/health` every 0.2 s (`gate-after.txt`) and the "
            "first `/ready` body that is not 200 (`ready-after.json`). It serves "
            "`/models/tiny-llama-hd32`, the tiny Llama with a head size of 32: with 16, "
            "0.32.0's CPU attention takes the model at start-up and fails its first "
            "completion (`Unsupported CPU attention configuration: head_dim=16`), which "
            "kills the engine. Development mode on."
        ),
        dev_mode=True,
        launched=True,
        lifecycle="gate-canary",
        model="tiny-llama-hd32",
    ),
)
LIFECYCLE_SCENARIO_NAMES = tuple(s.name for s in LIFECYCLE_SCENARIOS)

#: What ``check`` records on 0.32.0: its four scenarios, then the gate on a worker kill and
#: the gate's canary.
CHECK_SCENARIO_NAMES = (*SCENARIO_NAMES, "tp2-gate-worker-kill", "tp1-gate-canary")

#: The claims the gate's ``/ready`` requires in ``tp2-gate-worker-kill``.
GATE_REQUIRES = ("parallel", "capacity", "health_coverage")
#: The claims the gate's ``/ready`` requires in ``tp1-gate-canary`` (with ``--canary``).
CANARY_REQUIRES = ("capacity", "health_coverage", "generation")
#: The gate's round interval there.
GATE_INTERVAL = "1s"

_RELEASE_COMMON = (
    "Development mode on (`VLLM_SERVER_DEV_MODE=1`), served as `tiny-llama`, float32, "
    "started through `vllm-evidence launch --receipt … --log …` (`launch-receipt.json`)."
)

#: The scenarios recorded for the other releases (``record --release X``): each a
#: ``tests/fixtures/real/vllm-X-cpu/<name>/`` directory.
RELEASE_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="tp1",
        summary="One process, TP=1. " + _RELEASE_COMMON,
        dev_mode=True,
        served_model_name="tiny-llama",
        launched=True,
    ),
    Scenario(
        name="tp2",
        summary="TP=2 (two CPU worker processes). " + _RELEASE_COMMON,
        tensor_parallel_size=2,
        dev_mode=True,
        served_model_name="tiny-llama",
        launched=True,
    ),
    Scenario(
        name="pp2",
        summary="PP=2 (two pipeline stages, two CPU worker processes). " + _RELEASE_COMMON,
        pipeline_parallel_size=2,
        dev_mode=True,
        served_model_name="tiny-llama",
        launched=True,
    ),
    Scenario(
        name="dp2",
        summary=(
            "DP=2 (`--data-parallel-size 2`: two engine processes behind one API server). "
            + _RELEASE_COMMON
        ),
        data_parallel_size=2,
        dev_mode=True,
        served_model_name="tiny-llama",
        launched=True,
    ),
    Scenario(
        name="restart",
        summary=(
            "TP=1 restarted in the middle of a probe batch (as `restart-mid-batch` of 0.32.0): "
            "`first/` the opening `/metrics` read and the first process's log, `second/` the "
            "remaining reads and the second process's log; `sequence.txt` the order. "
            "Development mode on, served as `tiny-llama`, float32, started directly."
        ),
        dev_mode=True,
        served_model_name="tiny-llama",
        restart=True,
    ),
)
RELEASE_SCENARIO_NAMES = tuple(s.name for s in RELEASE_SCENARIOS)

_SHAPE_COMMON = (
    "Development mode on (`VLLM_SERVER_DEV_MODE=1`), served as `tiny-llama`, started "
    "through `vllm-evidence launch --receipt … --log …` (`launch-receipt.json`); recorded "
    "as another release's scenarios are (`capture/`, `probe.json`, `witnessed-probe.json`, "
    "`NOTES.md`)."
)

#: Launch shapes of 0.32.0 beyond its four scenarios (``record NAME`` on 0.32.0; not part
#: of ``check``): each a ``tests/fixtures/real/vllm-0.32.0-cpu/<name>/`` directory recorded
#: as the other releases' scenarios are (``run_release_scenario``).
SHAPE_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="dp2-eager",
        summary=(
            "DP=2 (`--data-parallel-size 2`: two engine processes behind one API server) with "
            "`--enforce-eager`: no torch.compile, so the log has no compile-cache lines to tie "
            "a worker to its DP engine. " + _SHAPE_COMMON
        ),
        data_parallel_size=2,
        dev_mode=True,
        served_model_name="tiny-llama",
        launched=True,
        enforce_eager=True,
    ),
    Scenario(
        name="tp1-hybrid",
        summary=(
            "TP=1 serving `/models/tiny-gemma3`, a tiny random-weight Gemma-3-style text model "
            "(`Gemma3ForCausalLM`: 3 layers, two of sliding-window attention (window 256) and "
            "one of full attention, hidden 64, 2 heads of 32, 2 KV heads, intermediate 128, "
            "bfloat16, seed 0, the tiny Llama's tokenizer): a hybrid KV cache of three groups. "
            + _SHAPE_COMMON.replace("served as `tiny-llama`", "served as `tiny-gemma3`")
        ),
        dev_mode=True,
        served_model_name="tiny-gemma3",
        launched=True,
        model="tiny-gemma3",
    ),
)
SHAPE_SCENARIO_NAMES = tuple(s.name for s in SHAPE_SCENARIOS)

#: The scenario whose log is handed to the launched scenario's probe as another launch's
#: (recorded before it: ``SCENARIOS`` order).
OTHER_LOG_SCENARIO = "tp2-apikey"


class ScenarioChoiceError(ValueError):
    """Scenarios asked for that the release does not record (a usage error)."""


def known_names(release: Release) -> tuple[str, ...]:
    """The scenarios ``record`` takes for ``release``: 0.32.0's own, lifecycle and shape
    scenarios, or another release's generic ones."""
    if release.own:
        return SCENARIO_NAMES + LIFECYCLE_SCENARIO_NAMES + SHAPE_SCENARIO_NAMES
    return RELEASE_SCENARIO_NAMES


def record_names(release: Release, requested: Sequence[str]) -> list[str]:
    """What ``record`` records: the scenarios asked for, else the release's default list
    (0.32.0: ``SCENARIOS``; another: its ``Release.scenarios``)."""
    known = known_names(release)
    default = SCENARIO_NAMES if release.own else release.scenarios
    names = list(requested) or list(default)
    unknown = sorted(set(names) - set(known))
    if unknown:
        msg = f"unknown scenario(s) {unknown}; choose from {known}"
        raise ScenarioChoiceError(msg)
    return names


def check_names(release: Release, requested: Sequence[str]) -> tuple[str, ...]:
    """What ``check`` records: 0.32.0's four scenarios and the gate's worker kill (none
    may be named), or another release's scenarios asked for, else its
    ``Release.scenarios``."""
    if release.own:
        if requested:
            msg = f"check --release {VLLM_VERSION} runs its own scenarios"
            raise ScenarioChoiceError(msg)
        return CHECK_SCENARIO_NAMES
    unknown = sorted(set(requested) - set(RELEASE_SCENARIO_NAMES))
    if unknown:
        msg = f"unknown scenario(s) {unknown}; choose from {RELEASE_SCENARIO_NAMES}"
        raise ScenarioChoiceError(msg)
    return tuple(requested) or release.scenarios
