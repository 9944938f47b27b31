"""The report is written for a person: the answer first, the verdict once per claim,
every line within the width asked for, and no word cut to get there."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._evidence import assess_witnessed, real_log
from tests._paths import REAL
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._assessment import Assessment, assess
from vllm_evidence._output.report import render_report

LIFE = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "real"
    / "vllm-0.32.0-cpu"
    / "tp2-worker-kill"
)


def _log(path: Path) -> StartupLog:
    read = read_startup_log(path)
    assert isinstance(read, StartupLog)
    return read


def _cases() -> list[Assessment]:
    return [
        assess_witnessed(REAL, real_log()),
        assess_witnessed(LIFE, _log(LIFE / "startup.log")),
        assess(None, _log(LIFE / "startup.log")),
    ]


@pytest.mark.parametrize("width", [80, 100])
def test_every_line_fits_and_no_word_is_cut(width: int) -> None:
    for assessment in _cases():
        narrow = render_report(assessment, width=width)
        wide = render_report(assessment, width=10_000)
        for line in narrow.splitlines():
            # A line over the width is one word too long for any line (a URL, a path).
            assert len(line) <= width or len(line.split()) == 1 or line.lstrip() == line, line
        # The same words in the same order: wrapping moved them, it cut none.
        assert narrow.split() == wide.split()


def test_the_answer_comes_first_and_each_verdict_once() -> None:
    report = render_report(assessment := assess_witnessed(LIFE, _log(LIFE / "startup.log")))
    lines = report.splitlines()
    assert lines[0] == f"vLLM {assessment.version}"
    words = " ".join(report.split())
    assert words.startswith(
        f"vLLM {assessment.version} serving claims: 3 of 6 established — parallel refused: "
        "rank 1 (VllmWorker-1, pid 10885) died at line 166 of launch 0 (exit code -9) "
        "subject: serving"
    )
    assert "  parallel layout        refused (rank_lost)" in lines
    assert "  /health covers         refused (rank_lost)" in lines
    assert "  served model           established" in lines
    assert "ESTABLISHED" not in report
    assert "REFUSED" not in report


def test_health_coverage_reads_as_what_health_covers() -> None:
    report = render_report(assess_witnessed(REAL, real_log()))
    assert "  /health covers         worker death: yes, within 9 s" in report.splitlines()
    assert "healthy" not in report.split("evidence:")[0]
