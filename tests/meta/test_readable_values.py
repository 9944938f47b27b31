"""Readable values: a sealed value's ``repr`` is short, ``str(assessment)`` is one line, and
the CLI prints the report."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from hypothesis import given, settings

from tests._paths import CAPTURES, REAL
from vllm_evidence import assess, load, probe_sync, read_startup_log, readback_from_batch
from vllm_evidence._adapters.startup_log import StartupLog
from vllm_evidence._assessment import Assessment, summary_line
from vllm_evidence._output.front_door import route_outcomes
from vllm_evidence._output.report import render_report
from vllm_evidence._readback import CapturedReadback
from vllm_evidence._scrub import scrub
from vllm_evidence._seal import Sealed, brief
from vllm_evidence.cli import main
from vllm_evidence.decisions import ParallelEstablished
from vllm_evidence.testing import assessments
from vllm_evidence.testing._stub import serve_capture

SERVERS = Path(__file__).parents[1] / "fixtures" / "real" / "vllm-0.32.0-cpu"
KEY = "sk-readable-values-SECRET"


def _sealed_classes() -> list[type[Sealed]]:
    from tests.meta.test_seal import SEALED

    return list(SEALED)


@pytest.mark.parametrize("cls", _sealed_classes(), ids=lambda c: c.__qualname__)
def test_attrs_does_not_generate_a_repr_over_the_seals(cls: type[Sealed]) -> None:
    """Declared ``repr=False``: the seal's ``__repr__`` is the class's, not attrs'."""
    assert cls.__repr__ is Sealed.__repr__


def _log(directory: Path) -> StartupLog:
    read = read_startup_log(directory / "startup.log")
    assert isinstance(read, StartupLog)
    return read


def _real_assessments() -> list[tuple[str, Assessment]]:
    """Every real capture, probed through the stub (raw bodies kept) with its log."""
    found = []
    for directory in sorted(p for p in SERVERS.iterdir() if (p / "startup.log").exists()):
        key = KEY if "apikey" in directory.name else None
        serve_from = directory / "with-key" if key else directory
        with serve_capture(serve_from, api_key=key) as door:
            batch = probe_sync(door.url, api_key=key)
        found.append((directory.name, assess(readback_from_batch(batch), _log(directory))))
    found.append(("devmode-bare", assess(load(REAL, bodies=True), _log(REAL))))
    return found


REAL_ASSESSMENTS = _real_assessments()


@pytest.mark.parametrize(
    ("name", "assessment"), REAL_ASSESSMENTS, ids=[n for n, _ in REAL_ASSESSMENTS]
)
def test_repr_of_a_real_assessment_is_short_and_holds_no_body(
    name: str, assessment: Assessment
) -> None:
    text = repr(assessment)
    assert len(text) < 2000, text
    assert text.startswith("Assessment(evidence=Evidence(")
    for fragment in ("# HELP", "# TYPE", "vllm:", '"object"', KEY, "\\n"):
        assert fragment not in text, fragment
    assert "parallel=Parallel" in text
    assert "front_door_join=" in text


def test_repr_names_the_key_figures() -> None:
    assessment = dict(REAL_ASSESSMENTS)["tp2-devmode"]
    # The log is not joined to the probed stub (no receipt): the layout is its launch's.
    parallel = assess(None, _log(SERVERS / "tp2-devmode")).parallel
    assert isinstance(parallel, ParallelEstablished)
    assert repr(parallel) == "ParallelEstablished(TP=2 PP=1 DP=1, ranks 0-1)"
    front = assessment.evidence.front_door
    assert isinstance(front, CapturedReadback)
    batch = front.batch
    assert re.fullmatch(
        r"CaptureBatch\(batch=[0-9a-f]{12}, target='http://127\.0\.0\.1:[0-9]+', "
        rf"{len(batch.all_exchanges())} exchanges, probed\)",
        repr(batch),
    ), repr(batch)
    opening = batch.bracket_open
    assert opening.body is not None
    assert repr(opening) == (
        f"Exchange(GET /metrics (bracket_open) 200, {len(opening.body):,} bytes "
        f"sha256:{opening.body_sha256 and opening.body_sha256[:12]}…)"
    )
    assert repr(assessment.capacity).startswith("CapacityEstablished(engine 0: ")
    assert repr(assessment.front_door_join).startswith("JoinedIncarnation(process_start_time")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b"\x00" * 57_312, f"<57,312 bytes sha256:{'0' * 0}"),
        ("x" * 200, "'" + "x" * 59 + "'…(200 chars)"),
        ("a" * 64, "'aaaaaaaaaaaa…'"),
        (tuple(range(10)), "(0, 1, 2, …(10 items))"),
        ((7,), "(7,)"),
        ((), "()"),
        (frozenset({"b", "a"}), "{'a', 'b'}"),
        (None, "None"),
    ],
)
def test_brief_summarises_raw_values(value: object, expected: str) -> None:
    assert brief(value).startswith(expected)


def test_brief_gives_bytes_by_size_and_digest_never_inline() -> None:
    text = brief(b"secret body " * 1000)
    assert re.fullmatch(r"<12,000 bytes sha256:[0-9a-f]{12}…>", text)


def test_nested_values_are_cut_at_the_depth_limit() -> None:
    front = dict(REAL_ASSESSMENTS)["devmode-bare"].evidence.front_door
    assert front is not None
    text = repr(front.metrics)
    assert text.startswith("Parsed(route=Route.METRICS, observation=MetricsObservation(")
    assert "CacheConfigSeries(…)" in text  # two levels down: named, not opened
    assert "…(" in text  # the metric families: the first few and a count


def _explain_stdout(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(argv) == 0
    return out.getvalue()


@pytest.mark.parametrize(
    "directory",
    [
        REAL,
        CAPTURES / "vllm-0.32.0-cpu-tp1-devmode",
        # every recorded server whose route bodies were kept (the canary's keeps the gate's)
        *sorted(p for p in SERVERS.glob("tp*") if (p / "version.body").is_file()),
    ],
    ids=lambda p: p.name,
)
def test_explain_prints_the_report_and_str_is_one_line(directory: Path) -> None:
    """``explain`` (no terminal) prints exactly :func:`render_report`, then the capture's
    provenance line; ``str(assessment)`` is the short form: one line, the answer."""
    log = directory / "startup.log"
    argv = ["explain", str(directory), "--bodies", "--startup-log", str(log)]
    assessment = assess(load(directory, bodies=True), _log(directory))
    report, provenance = _explain_stdout(argv).rsplit("\nprovenance: ", 1)
    assert report + "\n" == render_report(assessment)
    assert provenance.endswith(
        "bare bodies read with --bodies (no manifest: nothing shows these "
        "bytes were one batch, or unedited)\n"
    )
    assert render_report(assessment).startswith("vLLM ")
    text = str(assessment)
    assert "\n" not in text
    assert text == (
        f"Assessment(bodies supplied by a caller, vLLM {assessment.version}, "
        f"{summary_line(assessment)})"
    )
    assert summary_line(assessment) in " ".join(report.split())  # the report wraps it


def test_str_of_a_probed_assessment_names_its_target() -> None:
    with serve_capture(REAL) as door:
        batch = probe_sync(door.url)
    assessment = assess(readback_from_batch(batch))
    report = render_report(assessment, target=door.url)
    assert report == f"{door.url}: {render_report(assessment)}"
    assert str(assessment).startswith(f"Assessment({door.url}, vLLM 0.32.0, serving claims: ")
    alone = assess(None, _log(REAL))
    assert str(alone).startswith(f"Assessment(startup log {REAL / 'startup.log'} launch 0, ")
    assert ", launch claims: " in str(alone)


@settings(max_examples=40, deadline=None)
@given(assessments())
def test_generated_assessments_read_well(assessment: Assessment) -> None:
    assert len(repr(assessment)) < 4000
    text = str(assessment)
    assert text.startswith("Assessment(")
    assert "\n" not in text
    assert len(text) < 1000, text


@settings(max_examples=40, deadline=None)
@given(assessments())
def test_the_report_names_each_route_arm_as_the_json_does(assessment: Assessment) -> None:
    """The text report's route lines name the arm and fields the JSON route section
    names (both read :func:`~vllm_evidence._output.front_door.arm_fields`; this holds the
    report's wording of them to the document's)."""
    readback = assessment.evidence.front_door
    if readback is None:
        return
    report = render_report(assessment, width=10_000)
    for stem, arm in route_outcomes(readback).items():
        fields = {k: v for k, v in arm.items() if k not in ("route", "outcome")}
        extra = ", ".join(f"{k}={v}" for k, v in fields.items())
        line = f"  {stem:<33} {arm['outcome']}" + (f" ({extra})" if extra else "")
        assert scrub(line) + "\n" in report, line
