"""Misuse gets the right words, and the last attrs-generated way into a sealed value is
closed (issue "No side door": ``__new__`` + ``__attrs_init__`` forged an assessment that
``claim_established`` accepted and the document wrote as established)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from tests._evidence import bundle, real_log, version_body
from tests._ports import nothing_listening
from vllm_evidence import assess
from vllm_evidence._assessment import Assessment
from vllm_evidence._capture.http import probe_sync
from vllm_evidence._readback import readback_from_batch
from vllm_evidence.decisions import ParallelEstablished, ParallelRefused
from vllm_evidence.errors import MisuseError, SealedTypeError


@pytest.mark.parametrize("cls", [ParallelRefused, ParallelEstablished, Assessment])
def test_direct_construction_says_the_seals_words(cls: Any) -> None:
    attempts: list[Callable[[], object]] = [
        cls,
        lambda: cls(subject=None),
        lambda: cls.__new__(cls),
    ]
    for attempt in attempts:
        with pytest.raises(SealedTypeError, match=r"has no public constructor; use "):
            attempt()


def test_attrs_init_on_a_bare_instance_is_refused() -> None:
    bare = object.__new__(ParallelRefused)
    with pytest.raises(SealedTypeError, match=r"ParallelRefused has no public constructor"):
        ParallelRefused.__attrs_init__(bare)  # type: ignore[call-arg]
    forged = object.__new__(Assessment)
    with pytest.raises(SealedTypeError, match=r"Assessment has no public constructor"):
        Assessment.__attrs_init__(forged)  # type: ignore[call-arg]


def test_the_package_still_mints_its_own_values() -> None:
    # The minters hold the initializer: the package builds every arm as before.
    door = bundle(version_body("0.32.0"))
    assessment = assess(door, real_log())
    assert isinstance(assessment.parallel, ParallelRefused)
    assert isinstance(assess(None, real_log()).parallel, ParallelEstablished)


def test_a_batch_handed_to_assess_names_readback_from_batch() -> None:
    batch = probe_sync(nothing_listening())
    with pytest.raises(MisuseError, match=r"read it first with readback_from_batch\(batch\)"):
        assess(batch)  # type: ignore[arg-type]
    # The right call works.
    assert assess(readback_from_batch(batch)).parallel.reason.value == "front_door_unreachable"


def test_a_log_in_the_front_doors_place_and_other_kinds_are_named() -> None:
    log = real_log()
    with pytest.raises(MisuseError, match=r"a StartupLog is the second argument"):
        assess(log)  # type: ignore[arg-type]
    with pytest.raises(MisuseError, match=r"startup_log is str; give read_startup_log"):
        assess(None, "vllm.log")  # type: ignore[arg-type]
    with pytest.raises(MisuseError, match=r"receipt is dict; give read_launch_receipt"):
        assess(None, log, receipt={})  # type: ignore[arg-type]
    assert issubclass(MisuseError, TypeError)


@pytest.mark.parametrize("fleet", [False, True])
def test_a_closed_stdout_ends_quietly(fleet: bool) -> None:
    # `| head -1`: the reader goes away after the first line.  A fleet writes each
    # server's line from its own task (a BrokenPipeError inside an ExceptionGroup).
    argv = ["probe", *(nothing_listening() for _ in range(20))] if fleet else ["laws"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "vllm_evidence", *argv, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0
    assert "Traceback" not in err
    assert "Exception ignored" not in err
    assert "BrokenPipeError" not in err
