"""Printing assessments: the one-server report, the fleet table, and ``--require``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from vllm_evidence._cli._output import emit_json, styled

if TYPE_CHECKING:
    from vllm_evidence.assessment import Assessment

__all__ = [
    "add_report_arguments",
    "check_requirements",
    "print_fleet",
    "print_report",
]

_COLOURS = {"established": "green", "reported": "yellow", "refused": "red"}
_TITLES = {
    "parallel": "parallel realization",
    "capacity": "KV-cache capacity",
    "served_identity": "served identity",
    "health_coverage": "/health coverage",
    "front_door_join": "front-door join",
}


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


def check_requirements(assessments: Sequence[Assessment], required: Sequence[str]) -> int:
    """0 when every required claim is established for every server, else 3."""
    from vllm_evidence.assessment import claim_established

    refused = [claim for a in assessments for claim in required if not claim_established(a, claim)]
    if refused:
        names = ", ".join(sorted(set(refused)))
        sys.stderr.write(f"vllm-evidence: required claim(s) not established: {names}\n")
        return 3
    return 0


def _observation_lines(doc: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    front = doc["front_door"]
    if front is not None:
        source = front["source"]
        if source["kind"] == "captured":
            lines.append(f"front door {source['target']} (batch {source['batch_id'][:12]})")
            for req in source["requests"]:
                digest = (req["sha256"] or "-")[:12]
                lines.append(
                    f"  {req['route']:<33} {req['role']:<13} status {req['status']!s:<5} "
                    f"{req['elapsed_ms']:>5} ms  sha256 {digest}  at {req['started_at']}"
                )
        else:
            lines.append("front door: bodies supplied by a caller (no bracketed batch)")
        for stem, arm in front["routes"].items():
            extra = ", ".join(f"{k}={v}" for k, v in arm.items() if k not in ("outcome", "route"))
            lines.append(f"  {stem:<33} {arm['outcome']}" + (f" ({extra})" if extra else ""))
    log = doc["observations"]["startup_log"]
    if log is not None:
        lines.append(
            f"startup log {log.get('source') or '(stream)'}: {len(log['launches'])} launch(es), "
            f"sha256 {str(log.get('sha256', ''))[:12]}, assessed launch {log['assessed_launch']}"
        )
    return lines


def print_report(assessment: Assessment, *, json_out: bool, target: str | None = None) -> None:
    """One server: the five decisions, why, what would move them, the laws, provenance."""
    from vllm_evidence.assessment import assessment_document

    doc = assessment_document(assessment)
    if target is not None:
        doc = {"target": target, **doc}
    if json_out:
        emit_json(doc)
        return
    title = f"vLLM {doc['version'] or '(version unobserved)'}"
    if target:
        title = f"{target}: {title}"
    rows: list[tuple[str, str, str, str]] = []
    for key, name in _TITLES.items():
        d = doc["decisions"][key]
        why = d["detail"]
        if d["remedy"] and d["remedy"] != "none":
            why += f"\n→ to move it: {d['remedy']}"
        law = d["laws"][0] if d["laws"] else None
        if law is not None:
            span = law.get("span")
            scope = (
                f"{span['first']} .. {span['last']}"
                if isinstance(span, dict)
                else "not established for this release"
            )
            why += f"\nlaw {law['question']} (read for {scope})"
        rows.append((name, d["verdict"], d["reason"], why))
    if styled():
        from rich.console import Console
        from rich.markup import escape

        console = Console(highlight=False)
        console.print(f"[bold]{escape(title)}[/bold]")
        for name, verdict, reason, why in rows:
            colour = _COLOURS.get(verdict, "white")
            console.print(
                f"  [bold]{name:<22}[/bold] [{colour}]{verdict.upper():<12}[/{colour}] {reason}"
            )
            for part in why.split("\n"):
                style = "dim" if part.startswith("law ") else ""
                text = escape(part)
                console.print(
                    f"  {'':<22} [{style}]{text}[/{style}]" if style else f"  {'':<22} {text}"
                )
        console.print("[bold]observations[/bold]")
        for line in _observation_lines(doc):
            console.print(f"  {escape(line)}", overflow="fold")
        return
    out = [title]
    for name, verdict, reason, why in rows:
        out.append(f"  {name:<22} {verdict.upper():<12} {reason}")
        out.extend(f"  {'':<22} {part}" for part in why.split("\n"))
    out.append("observations:")
    out.extend(f"  {line}" for line in _observation_lines(doc))
    sys.stdout.write("\n".join(out) + "\n")


def _fleet_row(target: str, assessment: Assessment | str) -> dict[str, Any]:
    from vllm_evidence.assessment import assessment_document

    if isinstance(assessment, str):
        return {"target": target, "error": assessment}
    doc = assessment_document(assessment)
    decisions = doc["decisions"]
    capacity = decisions["capacity"]
    tokens = sum(e["tokens"] for e in capacity["engines"]) if capacity["engines"] else None
    return {
        "target": target,
        "version": doc["version"],
        "served_ids": decisions["served_identity"]["served_ids"],
        "parallel": decisions["parallel"]["verdict"],
        "parallel_reason": decisions["parallel"]["reason"],
        "tensor_parallel_size": decisions["parallel"]["tensor_parallel_size"],
        "capacity": capacity["verdict"],
        "capacity_tokens": tokens if capacity["verdict"] != "refused" else None,
        "join": decisions["front_door_join"]["verdict"],
        "health_coverage": decisions["health_coverage"]["coverage"]
        or decisions["health_coverage"]["reason"],
    }


def print_fleet(results: Sequence[tuple[str, Assessment | str]], *, json_out: bool) -> None:
    """Several servers: one row each (``--json``: one assessment document per line)."""
    import json

    from vllm_evidence.assessment import assessment_document

    if json_out:
        for target, result in results:
            if isinstance(result, str):
                doc: dict[str, Any] = {"target": target, "error": result}
            else:
                doc = {"target": target, **assessment_document(result)}
            sys.stdout.write(json.dumps(doc, ensure_ascii=False) + "\n")
        return
    rows = [_fleet_row(target, result) for target, result in results]
    columns = ["server", "version", "served ids", "parallel", "capacity", "join", "/health"]

    def cells(row: dict[str, Any]) -> list[str]:
        if "error" in row:
            return [row["target"], "-", "-", "-", "-", "-", row["error"]]
        tp = row["tensor_parallel_size"]
        parallel = f"{row['parallel']} (TP={tp})" if tp else row["parallel"]
        capacity = row["capacity"]
        if row["capacity_tokens"] is not None:
            capacity += f" {row['capacity_tokens']:,} tok"
        return [
            row["target"],
            row["version"] or "?",
            ", ".join(row["served_ids"]) or "-",
            parallel,
            capacity,
            row["join"],
            str(row["health_coverage"]),
        ]

    from vllm_evidence._cli._output import print_table

    print_table(f"{len(rows)} vLLM servers", columns, [cells(r) for r in rows])
