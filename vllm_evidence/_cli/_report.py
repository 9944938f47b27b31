"""Printing assessments: the one-server report, the fleet table, and ``--require``."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from vllm_evidence._cli._output import emit_json, json_text, styled
from vllm_evidence._scrub import scrub

if TYPE_CHECKING:
    from vllm_evidence._assessment import Assessment
    from vllm_evidence._claims import Claim

__all__ = [
    "FLEET_COLUMNS",
    "add_report_arguments",
    "check_requirements",
    "fleet_cells",
    "fleet_json_line",
    "gate_one",
    "print_fleet",
    "print_fleet_table",
    "print_report",
    "refused_claims",
    "report_refused",
    "unanswered",
]

_COLOURS = {"established": "green", "reported": "yellow", "refused": "red"}


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """``--json`` and ``--require``, shared by probe, explain and demo."""
    from vllm_evidence._claims import CLAIMS

    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument(
        "--require",
        nargs="+",
        metavar="CLAIM",
        choices=CLAIMS,
        default=[],
        help=f"exit 3 unless every named claim is established ({', '.join(CLAIMS)})",
    )


def refused_claims(assessment: Assessment, required: Sequence[Claim]) -> list[str]:
    """The required claims that ``assessment`` does not establish."""
    from vllm_evidence._assessment import claim_established

    return [claim for claim in required if not claim_established(assessment, claim)]


def report_refused(refused: Iterable[str], *, why: str | None = None) -> int:
    """3 (and one line on stderr naming them, and ``why`` when given) when any claim was
    refused, else 0."""
    names = sorted(set(refused))
    if names:
        because = "" if why is None else f" ({scrub(why)})"
        sys.stderr.write(
            "vllm-evidence: required claim(s) not established for the serving process: "
            f"{', '.join(names)}{because}\n"
        )
        return 3
    return 0


def unanswered(assessment: Assessment) -> str | None:
    """The reason every serving claim is refused with when the front door gave nothing to
    read (``front_door_unreachable``: no request answered, whether nothing listens, the
    connection was refused, timed out or failed TLS; ``front_door_not_answering``: every
    route an error), or ``None`` when it did.  The assessment stands either way."""
    from vllm_evidence.decisions import ParallelReason

    # Every serving decision passes the same front-door gate first: one of them tells.
    reason = assessment.parallel.reason
    if reason in (ParallelReason.FRONT_DOOR_UNREACHABLE, ParallelReason.FRONT_DOOR_NOT_ANSWERING):
        return str(reason.value)
    return None


def check_requirements(assessments: Sequence[Assessment], required: Sequence[Claim]) -> int:
    """0 when every required claim is established about the serving process of every
    server, else 3 (a claim established only for a log's launch does not count)."""
    return report_refused(claim for a in assessments for claim in refused_claims(a, required))


def gate_one(prog: str, assessment: Assessment, required: Sequence[Claim], server: str) -> int:
    """:func:`check_requirements` for one server, with one line on stderr at most.

    When the front door gave nothing to read (:func:`unanswered`), the line says so: the
    refused claims' line names it, or, with nothing refused, a note beside the report
    (whose decisions refuse every serving claim with the reason).
    """
    from vllm_evidence._cli._output import note

    reason = unanswered(assessment)
    why = None if reason is None else f"{server} gave nothing to read: {reason}"
    refused = refused_claims(assessment, required)
    if why is not None and not refused:
        note(prog, f"{why}; every claim about the serving process is refused")
    return report_refused(refused, why=why)


def print_report(assessment: Assessment, *, json_out: bool, target: str | None = None) -> None:
    """One server: every decision, why, what would move them, the laws, provenance."""
    if json_out:
        from vllm_evidence._output.assessment import assessment_document, server_document

        emit_json(
            assessment_document(assessment)
            if target is None
            else server_document(target, assessment)
        )
        return
    from vllm_evidence._output.report import (
        REPORT_WIDTH,
        render_report,
        report_lines,
        report_rows,
    )

    if not styled():
        # A terminal (NO_COLOR) is wrapped to its width; a pipe to the report's own.
        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else REPORT_WIDTH
        sys.stdout.write(render_report(assessment, target=target, width=width))
        return
    from rich.console import Console
    from rich.markup import escape

    console = Console(highlight=False)
    # Each claim's line starts with its title in a 22-wide column: its verdict's colour.
    colours = {
        f"  {row.title:<22} ": _COLOURS.get(row.verdict, "white") for row in report_rows(assessment)
    }
    for index, line in enumerate(report_lines(assessment, target, console.width)):
        head = line[:25]
        if index == 0 or line == "evidence:":
            console.print(f"[bold]{escape(scrub(line))}[/bold]")
        elif head in colours:
            colour = colours[head]
            words = escape(scrub(line[25:]))
            console.print(f"  [bold]{escape(head[2:])}[/bold][{colour}]{words}[/{colour}]")
        elif line.lstrip().startswith("law "):
            console.print(f"[dim]{escape(scrub(line))}[/dim]")
        else:
            console.print(escape(scrub(line)))


FLEET_COLUMNS = ("server", "version", "served ids", "parallel", "capacity", "join", "/health")


def fleet_json_line(target: str, result: Assessment | str) -> str:
    """One server of a fleet as one JSON line (``target`` first, then the assessment
    document, also for a server that answered nothing; ``error`` only for a target that is
    not a URL): lines of several runs or shards concatenate into one fleet."""
    from vllm_evidence._output.assessment import server_document

    return json_text(server_document(target, result), indent=None) + "\n"


def fleet_cells(target: str, result: Assessment | str) -> list[str]:
    """One server's row of the fleet table (:data:`FLEET_COLUMNS`)."""
    if isinstance(result, str):
        return [target, "-", "-", "-", "-", "-", result]
    from vllm_evidence._output.report import fleet_row

    row = fleet_row(target, result)
    tp = row.tensor_parallel_size
    parallel = f"{row.parallel} (TP={tp})" if tp else row.parallel
    capacity = row.capacity
    if row.capacity_tokens is not None:
        capacity += f" {row.capacity_tokens:,} tok"
    return [
        row.target,
        row.version or "?",
        ", ".join(row.served_ids) or "-",
        parallel,
        capacity,
        row.join,
        row.health_coverage,
    ]


def print_fleet_table(rows: Sequence[Sequence[str]]) -> None:
    """The fleet table of rows made by :func:`fleet_cells`."""
    from vllm_evidence._cli._output import print_table

    print_table(f"{len(rows)} vLLM servers", FLEET_COLUMNS, rows)


def print_fleet(results: Sequence[tuple[str, Assessment | str]], *, json_out: bool) -> None:
    """Several servers: one row each (``--json``: one assessment document per line)."""
    if json_out:
        for target, result in results:
            sys.stdout.write(fleet_json_line(target, result))
        return
    print_fleet_table([fleet_cells(t, r) for t, r in results])
