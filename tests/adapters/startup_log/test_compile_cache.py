"""A worker's torch.compile cache lines (``…/rank_R_D/…``): its own statement of its
engine-local rank R and the DP index D, read only where vLLM's line ends as vLLM builds
it (issue 18)."""

from __future__ import annotations

import time

from tests._evidence import log
from vllm_evidence._adapters.startup_log import CompileCacheForm

_CACHE = "/srv/vllm-cache/torch_compile_cache/torch_aot_compile/5c6d"
_HEAD = "(Worker pid=17889) INFO 12-01 07:12:35 [decorators.py:719] "
_WARN = "(Worker pid=17889) WARNING 12-01 07:12:35 [decorators.py:333] "
_BACKENDS = "(Worker pid=17889) INFO 12-01 07:12:35 [backends.py:1105] "


def _statements(text: str) -> list[tuple[CompileCacheForm, int, int, int, int | None]]:
    (launch,) = log(text).launches
    return [(c.form, c.rank, c.data_parallel_index, c.line, c.pid) for c in launch.compile_cache]


def test_the_three_forms_are_read_with_their_rank_dp_index_and_pid() -> None:
    text = (
        f"{_HEAD}saved AOT compiled function to {_CACHE}/rank_0_1/model\n"
        f"{_WARN}[backbone] Compiling model again due to a load failure from "
        f"{_CACHE}/rank_2_3/model, reason: 'function' object has no attribute 'x'\n"
        f"{_BACKENDS}[backbone] Using cache directory: {_CACHE}/rank_1_0/backbone for "
        "vLLM's torch.compile\n"
        f"{_BACKENDS}Using cache directory: {_CACHE}/rank_4_5/ for vLLM's torch.compile\n"
    )
    assert _statements(text) == [
        (CompileCacheForm.AOT_SAVED, 0, 1, 1, 17889),
        (CompileCacheForm.AOT_LOAD_FAILED, 2, 3, 2, 17889),
        (CompileCacheForm.CACHE_DIRECTORY, 1, 0, 3, 17889),
        (CompileCacheForm.CACHE_DIRECTORY, 4, 5, 4, 17889),
    ]


def test_a_rank_directory_that_is_not_the_workers_own_segment_is_not_read() -> None:
    text = (
        # rank_0_1 higher in the path; the worker's own segment is not rank_R_D
        f"{_HEAD}saved AOT compiled function to /x/rank_0_1/y/model\n"
        # not ending in /model
        f"{_HEAD}saved AOT compiled function to {_CACHE}/rank_0_1/model.tmp\n"
        # not the whole message: trailing text after the cache-directory line's end
        f"{_BACKENDS}Using cache directory: {_CACHE}/rank_0_1/x for vLLM's torch.compile!\n"
        # no reason clause
        f"{_WARN}Compiling model again due to a load failure from {_CACHE}/rank_0_1/model\n"
        # a signed or lettered index
        f"{_HEAD}saved AOT compiled function to {_CACHE}/rank_0_-1/model\n"
        f"{_HEAD}saved AOT compiled function to {_CACHE}/rank_a_1/model\n"
        # another message naming a rank directory
        f"{_HEAD}unable to save AOT compiled function to {_CACHE}/rank_0_1/model: err\n"
    )
    assert _statements(text) == []


def test_a_pasted_head_states_nothing() -> None:
    text = f"`{_HEAD.strip()}` saved AOT compiled function to {_CACHE}/rank_0_1/model\n"
    assert _statements(text) == []


def test_a_hostile_path_is_read_in_linear_time() -> None:
    path = "/rank_1" * 40_000 + "/rank_" + "9" * 40_000
    text = f"{_HEAD}saved AOT compiled function to {path}/model\n"
    started = time.perf_counter()
    assert _statements(text) == []
    assert time.perf_counter() - started < 2.0
