"""The launcher's process tree ends a claim this round (DESIGN principles 14 and 16), in
both directions: a worker the joined log names that is gone from the tree is its rank
lost; the engine core gone is the engine dead; every process there, or no tree given,
ends nothing; a tree that is not the launch's, or a log that does not speak for the
serving process, says nothing.

The launch is hand-written (:mod:`tests.decisions.test_life`): the API server pid 100,
its engine core 200, the workers of ranks 0 and 1 pids 300 and 301; the ``/proc`` each
test reads is hand-made beside it.  Every expected value is written by hand.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from tests._evidence import HEALTHY, bundle, log, receipt_for, version_body, witnessed
from tests.adapters.startup_log.test_life import WORKER_KILLED
from tests.decisions.test_life import HEAD, MODELS
from vllm_evidence import assess
from vllm_evidence._adapters.process_tree import ProcessTree, observe_process_tree
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._assessment import Assessment
from vllm_evidence._capture.proc import read_proc
from vllm_evidence._readback.evidence import Subject
from vllm_evidence.decisions import (
    CapacityEstablished,
    CapacityReason,
    HealthCoverageEstablished,
    HealthReason,
    ParallelEstablished,
    ParallelReason,
    ParallelRefused,
    ServedIdentityEstablished,
)
from vllm_evidence.errors import MisuseError

API, ENGINE, RANK0, RANK1 = 100, 200, 300, 301
PARENTS = {API: 1, ENGINE: API, RANK0: ENGINE, RANK1: ENGINE}


def _proc(
    directory: Path, *, without: tuple[int, ...] = (), ticks: dict[int, int] | None = None
) -> Path:
    """A ``/proc`` of the launch's processes (under pid 1), less ``without``."""
    for pid, ppid in {1: 0, **PARENTS}.items():
        if pid in without:
            continue
        start = (ticks or {}).get(pid, 1000 + pid)
        entry = directory / str(pid)
        entry.mkdir(parents=True, exist_ok=True)
        rest = " ".join(["0"] * 17)
        (entry / "stat").write_text(f"{pid} (python3) S {ppid} {rest} {start} 0 0\n", "ascii")
    return directory


def _tree(directory: Path, root: int = API, earlier: ProcessTree | None = None) -> ProcessTree:
    return observe_process_tree(read_proc(str(directory)), root, earlier=earlier)


def _serving(text: str, tree: ProcessTree | None) -> Assessment:
    """The front door and the log joined by a receipt (pid 100), assessed with ``tree``."""
    joined = witnessed(bundle(version_body("0.32.0"), MODELS, HEALTHY), log(text))
    assert joined.log_join.reason.value == "established", joined.log_join
    return assess(
        joined.evidence.front_door,
        joined.startup_log,
        receipt=joined.evidence.receipt,
        process_tree=tree,
    )


def _launch(text: str, tree: ProcessTree | None) -> Assessment:
    """The log alone, with its receipt (pid 100), assessed with ``tree``."""
    startup_log = log(text)
    return assess(None, startup_log, receipt=receipt_for(startup_log), process_tree=tree)


def _all_established(assessment: Assessment) -> bool:
    return (
        isinstance(assessment.parallel, ParallelEstablished)
        and isinstance(assessment.capacity, CapacityEstablished)
        and isinstance(assessment.health_coverage, HealthCoverageEstablished)
        and isinstance(assessment.served_identity, ServedIdentityEstablished)
    )


def test_every_process_in_the_tree_ends_nothing(tmp_path: Path) -> None:
    tree = _tree(_proc(tmp_path))
    for assessment in (_serving(HEAD, tree), _launch(HEAD, tree)):
        assert _all_established(assessment), assessment


def test_a_worker_gone_from_the_tree_is_its_rank_lost(tmp_path: Path) -> None:
    tree = _tree(_proc(tmp_path, without=(RANK1,)))
    for assessment, subject in (
        (_serving(HEAD, tree), Subject.SERVING),
        (_launch(HEAD, tree), Subject.LAUNCH),
    ):
        parallel = assessment.parallel
        assert isinstance(parallel, ParallelRefused)
        assert parallel.reason is ParallelReason.RANK_LOST
        assert parallel.subject is subject
        assert parallel.detail.startswith(
            "rank 1 of world size 2 (pid 301, log line 5) is gone from the launcher's "
            "process tree: its process exited (read from /proc, before the log or /health "
            "says so)"
        )
        assert parallel.remedy.startswith("restart the server")
        assert assessment.health_coverage.reason is HealthReason.RANK_LOST
        # The engine lives: capacity and served identity hold.
        assert isinstance(assessment.capacity, CapacityEstablished)
        assert isinstance(assessment.served_identity, ServedIdentityEstablished)
    # The front door's /health still answers 200: inside the monitor's window, said so.
    assert _serving(HEAD, tree).parallel.detail.endswith(
        "; /health still answered 200: the answer is inside the monitor's window"
    )


def test_the_engine_core_gone_is_the_engine_dead(tmp_path: Path) -> None:
    tree = _tree(_proc(tmp_path, without=(ENGINE, RANK0, RANK1)))
    assessment = _serving(HEAD, tree)
    assert assessment.parallel.reason is ParallelReason.ENGINE_DEAD
    assert assessment.capacity.reason is CapacityReason.ENGINE_DEAD
    assert assessment.health_coverage.reason is HealthReason.ENGINE_DEAD
    assert assessment.capacity.detail.startswith(
        "the engine core (pid 200, log line 3) is gone from the launcher's process tree"
    )
    assert isinstance(assessment.served_identity, ServedIdentityEstablished)


def test_a_pid_taken_by_another_process_is_the_worker_gone(tmp_path: Path) -> None:
    first = _tree(_proc(tmp_path / "a"))
    again = _tree(_proc(tmp_path / "b", ticks={RANK1: 99}), earlier=first)
    parallel = _serving(HEAD, again).parallel
    assert parallel.reason is ParallelReason.RANK_LOST
    assert "(pid 301, log line 5) is gone from the launcher's process tree: its pid now " in (
        parallel.detail
    )
    # The same tree read with no earlier one has nothing to compare: nothing is lost.
    assert _all_established(_serving(HEAD, _tree(tmp_path / "b")))


def test_no_tree_is_the_assessment_as_before(tmp_path: Path) -> None:
    without = _serving(HEAD, None)
    assert _all_established(without)
    assert without.evidence.process_tree is None
    # And with the worker's death line, the log's own line decides, as it did.
    dead = _serving(HEAD + WORKER_KILLED, None)
    assert dead.parallel.reason is ParallelReason.RANK_LOST
    assert dead.parallel.detail.startswith("rank 1 (VllmWorker-1, pid 301) died at line 8")


def test_the_logs_own_line_is_named_before_the_tree(tmp_path: Path) -> None:
    tree = _tree(_proc(tmp_path, without=(RANK1,)))
    parallel = _serving(HEAD + WORKER_KILLED, tree).parallel
    assert parallel.reason is ParallelReason.RANK_LOST
    assert parallel.detail.startswith("rank 1 (VllmWorker-1, pid 301) died at line 8")
    assert "process tree" not in parallel.detail


def test_an_unread_tree_observes_nothing(tmp_path: Path) -> None:
    assert _all_established(_serving(HEAD, _tree(tmp_path / "absent")))


def test_a_tree_that_is_not_the_launchs_says_nothing(tmp_path: Path) -> None:
    """Its root is not the pid the receipt witnesses: its members are another process's,
    even though none of the launch's pids runs under it."""
    # The engine core's subtree, rank 1's worker not in it: pid 100's would lose a rank.
    tree = _tree(_proc(tmp_path, without=(RANK1,)), root=ENGINE)
    assert _all_established(_serving(HEAD, tree))
    assert _serving(HEAD, _tree(tmp_path)).parallel.reason is ParallelReason.RANK_LOST
    # Without a receipt there is no launched pid to hold the tree to.
    no_receipt = assess(
        None, log(HEAD), process_tree=_tree(_proc(tmp_path / "b", without=(RANK1,)))
    )
    assert isinstance(no_receipt.parallel, ParallelEstablished)


def test_a_log_not_joined_lets_the_tree_say_nothing(tmp_path: Path) -> None:
    """Which pid is which rank comes from the log: a log that does not speak for the
    serving process names no pid of it."""
    startup_log = log(HEAD)
    tree = _tree(_proc(tmp_path, without=(RANK1,)))
    door = bundle(version_body("0.32.0"), MODELS, HEALTHY)
    unjoined = assess(door, startup_log, receipt=receipt_for(startup_log), process_tree=tree)
    assert unjoined.log_join.reason.value != "established"
    assert unjoined.parallel.reason is not ParallelReason.RANK_LOST
    assert unjoined.health_coverage.reason is not HealthReason.RANK_LOST


def test_the_wrong_kind_of_tree_is_a_misuse_naming_the_call() -> None:
    with pytest.raises(MisuseError, match=r"process_tree is dict; give observe_process_tree"):
        assess(None, log(HEAD), process_tree={100: 1})  # type: ignore[arg-type]  # the point


def test_an_assessment_with_a_tree_pickles_and_decides_again(tmp_path: Path) -> None:
    """Pickled as its raw evidence (the tree as its /proc bytes): unpickled, the same
    decisions come out."""
    path = tmp_path / "startup.log"
    path.write_text(HEAD, encoding="utf-8")
    startup_log = read_startup_log(path)
    assert isinstance(startup_log, StartupLog)
    tree = _tree(_proc(tmp_path / "proc", without=(RANK1,)))
    assessment = assess(None, startup_log, receipt=receipt_for(startup_log), process_tree=tree)
    assert assessment.parallel.reason is ParallelReason.RANK_LOST
    again = pickle.loads(pickle.dumps(assessment))  # noqa: S301  # our own pickle
    assert again.parallel.reason is ParallelReason.RANK_LOST
    assert again.parallel.detail == assessment.parallel.detail
    assert again.evidence.process_tree is not None
    assert again.evidence.process_tree.members == tree.members


def test_an_assessment_with_a_tree_is_not_written_as_evidence(tmp_path: Path) -> None:
    """The evidence document carries bytes; the tree was read from /proc and is not in it,
    so writing it would lose what ended a claim: refused in one line.  Without a tree the
    same assessment is written."""
    from vllm_evidence._rederive import dumps
    from vllm_evidence.errors import InputError

    path = tmp_path / "vllm.log"
    path.write_text(HEAD, encoding="utf-8")
    startup_log = read_startup_log(path)
    assert isinstance(startup_log, StartupLog)
    tree = _tree(_proc(tmp_path / "proc", without=(RANK1,)))
    receipt = receipt_for(startup_log)
    with_tree = assess(None, startup_log, receipt=receipt, process_tree=tree)
    with pytest.raises(InputError, match="process tree") as refused:
        dumps(with_tree)
    assert "\n" not in str(refused.value)
    written = dumps(assess(None, startup_log, receipt=receipt))
    assert '"schema": "vllm-evidence.evidence/3"' in written
