"""The executor backend, resolved from the markers the adapters read (the release's
executor laws applied here, not in the adapters).  Expected backends are written out by
hand from the law table's entries: a ``(VllmWorker …)`` tag is ``mp`` through 0.17.0,
``mp`` or Ray's V2 executor from 0.20.0, and not read between; ``DP group leader:`` is
``mp`` only; ``(RayWorkerWrapper …)`` is ``ray`` only."""

from __future__ import annotations

from packaging.version import Version

from tests._evidence import banner, log
from vllm_evidence._adapters.startup_log import ExecutorMarker, ExecutorObservation, Launch
from vllm_evidence._readback.executor import compatible_backends, resolve_executor
from vllm_evidence.upstream import ExecutorBackend

MP, RAY = ExecutorBackend.MP, ExecutorBackend.RAY
_RANK = (
    "INFO 11-30 04:11:13 [parallel_state.py:1] world_size=2 rank=1 local_rank=1 "
    "distributed_init_method=tcp://h:1 backend=nccl\n"
)
_VLLM_WORKER = f"(VllmWorker TP1 pid=14) {_RANK}"
_RAY_WORKER = f"(RayWorkerWrapper pid=15) {_RANK}"
_LEADER = "INFO 11-30 04:11:00 [multiproc_executor.py:1] DP group leader: node_rank=0\n"
_ENGINE = (
    "INFO 11-30 04:11:05 [core.py:133] Initializing a V1 LLM engine (v{v}) with config: "
    "model='/m', tensor_parallel_size=2, pipeline_parallel_size=1, "
    "distributed_executor_backend={b}, data_parallel_size=1\n"
)


def _launch(version: str, *lines: str) -> Launch:
    (launch,) = log(banner(version) + "".join(lines)).launches
    return launch


def _marker(launch: Launch, marker: ExecutorMarker) -> ExecutorObservation:
    return next(o for o in launch.executor_observations if o.marker is marker)


def test_a_marker_that_names_no_backend_is_what_its_releases_law_allows() -> None:
    tag = _marker(_launch("0.32.0", _VLLM_WORKER), ExecutorMarker.VLLM_WORKER_TAG)
    assert compatible_backends(tag, Version("0.10.1.1")) == {MP}
    assert compatible_backends(tag, Version("0.32.0")) == {MP, RAY}


def test_where_no_law_holds_a_marker_allows_every_backend_some_law_allows() -> None:
    tag = _marker(_launch("0.32.0", _VLLM_WORKER), ExecutorMarker.VLLM_WORKER_TAG)
    # 0.18.0 sits between the read releases 0.17.0 and 0.20.0; no version, no law.
    assert compatible_backends(tag, Version("0.18.0")) == {MP, RAY}
    assert compatible_backends(tag, None) == {MP, RAY}


def test_a_marker_that_names_its_backend_allows_that_one_whatever_the_release() -> None:
    launch = _launch("0.32.0", _ENGINE.format(v="0.32.0", b="ray"))
    field = _marker(launch, ExecutorMarker.CONFIG_FIELD)
    assert compatible_backends(field, Version("0.32.0")) == {RAY}
    assert compatible_backends(field, None) == {RAY}


def test_the_markers_that_agree_on_one_backend_decide_it_and_are_its_evidence() -> None:
    launch = _launch("0.32.0", _LEADER, _VLLM_WORKER)
    resolved = resolve_executor(launch)
    assert resolved.backend is MP
    # The leader line is a multiproc_executor.py record too: mp or Ray V2, so mp's.
    assert [o.marker for o in resolved.evidence] == [
        ExecutorMarker.MULTIPROC_EXECUTOR_FILE,
        ExecutorMarker.MP_LEADER_LINE,
        ExecutorMarker.VLLM_WORKER_TAG,
    ]


def test_markers_that_leave_no_backend_or_several_decide_none() -> None:
    several = resolve_executor(_launch("0.32.0", _VLLM_WORKER))
    assert (several.backend, several.evidence) == (None, ())
    none_left = resolve_executor(_launch("0.32.0", _LEADER, _RAY_WORKER))
    assert (none_left.backend, none_left.evidence) == (None, ())
    assert resolve_executor(_launch("0.32.0")).backend is None  # no marker at all


def test_the_printed_resolved_value_decides_alone() -> None:
    """The engine-init field is the resolved value: a Ray worker tag beside ``mp`` does
    not unsettle it, and is no evidence for it."""
    launch = _launch("0.32.0", _ENGINE.format(v="0.32.0", b="mp"), _RAY_WORKER)
    resolved = resolve_executor(launch)
    assert resolved.backend is MP
    assert [o.marker for o in resolved.evidence] == [ExecutorMarker.CONFIG_FIELD]
