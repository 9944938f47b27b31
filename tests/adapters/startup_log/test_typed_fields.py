"""What the adapter types where it reads it, so that nothing above parses text: a worker
process's tag name (its groups, or its engine-local rank) and the API server's
``--port``.  Each form's expected parts are written out by hand from the names vLLM
gives its workers (``Worker_DP1_PP0_TP1`` from v0.11, ``VllmWorker TP1`` in v0.10.1.1,
``VllmWorker rank=1`` in v0.8.5 and v0.9.2)."""

from __future__ import annotations

import pytest

from tests._evidence import args, banner, log
from vllm_evidence._adapters.startup_log import ProcessTag, WorkerName, WorkerNameForm

_MEM = "INFO 11-30 04:11:20 [gpu_worker.py:1] Available KV cache memory: 1.00 GiB\n"


def _tag(name: str) -> ProcessTag:
    (launch,) = log(banner("0.32.0") + f"({name} pid=7) {_MEM}").launches
    (memory,) = launch.available_memory
    assert memory.process is not None
    assert memory.process.name == name
    return memory.process


def _worker(name: str) -> WorkerName:
    worker = _tag(name).worker
    assert worker is not None, name
    return worker


@pytest.mark.parametrize(
    ("name", "groups"),
    [
        ("Worker", ()),  # one rank in every group: the name prints none
        ("Worker_TP1", (("TP", 1),)),
        ("Worker_DP1_PP0_TP1", (("DP", 1), ("PP", 0), ("TP", 1))),
        ("Worker_PP1_PCP1_TP0_DCP1_EP3", (("PP", 1), ("PCP", 1), ("TP", 0), ("DCP", 1), ("EP", 3))),
        ("VllmWorker_TP0", (("TP", 0),)),
        ("Worker_TP1_TP0", (("TP", 1), ("TP", 0))),  # a repeated group is kept, as printed
        ("Worker_XY2", (("XY", 2),)),  # a group this package does not map is still read
        ("Worker_TP999999", (("TP", 999_999),)),  # six digits: the most read
    ],
)
def test_a_groups_name_is_read_into_its_groups(
    name: str, groups: tuple[tuple[str, int], ...]
) -> None:
    worker = _worker(name)
    assert (worker.form, worker.groups, worker.rank) == (WorkerNameForm.GROUPS, groups, None)


def test_the_older_names_are_read_into_their_rank_or_tp_index() -> None:
    tp = _worker("VllmWorker TP1")
    assert (tp.form, tp.groups, tp.rank) == (WorkerNameForm.TP, (("TP", 1),), None)
    rank = _worker("VllmWorker rank=3")
    assert (rank.form, rank.groups, rank.rank) == (WorkerNameForm.RANK, (), 3)


def test_the_worker_process_name_is_read_as_its_engine_local_rank() -> None:
    # vLLM 0.31.0 and 0.32.0 tag a worker's first lines with its process's name,
    # MultiprocExecutor's f"VllmWorker-{rank}" (dp2-eager/startup.log line 50 says
    # '(VllmWorker-0 pid=19921) WARNING …'): rank 0 of its engine's own world.
    zero = _worker("VllmWorker-0")
    assert (zero.form, zero.groups, zero.rank) == (WorkerNameForm.RANK, (), 0)
    one = _worker("VllmWorker-1")
    assert (one.form, one.groups, one.rank) == (WorkerNameForm.RANK, (), 1)


@pytest.mark.parametrize(
    "name",
    [
        "Worker_TP1000000",  # seven digits: no group has a million ranks
        "Worker_TP",  # a group without its index
        "Worker_tp1",  # lower case is not vLLM's
        "Worker_TP\u0661",  # a non-ASCII digit
        "VllmWorker-1000000000000000000",  # 19 digits
        "VllmWorker--1",
        "VllmWorker-1_TP0",
        "VllmWorker rank=1000000000000000000",  # 19 digits
        "VllmWorker TP",
        "MyWorker_TP0",
    ],
)
def test_a_workers_name_in_no_form_read_is_seen_and_unread(name: str) -> None:
    worker = _worker(name)
    assert (worker.form, worker.groups, worker.rank) == (WorkerNameForm.UNREAD, (), None)


@pytest.mark.parametrize("name", ["EngineCore_DP0", "APIServer", "RayWorkerWrapper", "Ray Worker"])
def test_a_process_that_is_not_a_worker_has_no_worker_name(name: str) -> None:
    assert _tag(name).worker is None


def _port(printed: str) -> int | None:
    (launch,) = log(banner("0.32.0") + args(printed)).launches
    (given,) = launch.non_default_args
    return given.port


def test_the_port_argument_is_read_as_a_number() -> None:
    assert _port("{'model': '/m', 'port': 8081}") == 8081
    assert _port("{'model': '/m', 'port': 0}") == 0


@pytest.mark.parametrize(
    "printed",
    [
        "{'model': '/m'}",  # not given: vLLM's default, which the args line does not print
        "{'model': '/m', 'port': '8081'}",  # quoted: not the integer vLLM prints
        "{'model': '/m', 'port': None}",
        "{'model': '/m', 'port': -1}",
        "{'model': '/m', 'port': 1000000000000000000}",  # 19 digits
        "{'model': '/m', 'port': \u0668\u0660}",  # non-ASCII digits
        "{'model': '/m', 'port': \u00b2}",  # a digit to str.isdigit, not to int
    ],
)
def test_a_port_argument_that_is_not_a_plain_number_is_not_read(printed: str) -> None:
    assert _port(printed) is None
