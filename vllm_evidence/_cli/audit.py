"""``vllm-evidence audit-upstream``: check the law table against the installed vLLM."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from vllm_evidence._cli._output import emit_json, fail, print_table

PROG = "vllm-evidence audit-upstream"

EPILOG = """\
Run inside the vLLM environment. Each law the table gives for the installed release is
held, differs (expected vs found) or not checkable (and why). Routes are checked
against the route tables of a development-mode launch and a plain launch: the logs
given, else the router set built in this process (no server is started).

A release outside every read release has no laws: every question is not checkable
and the exit status is 0.

exit status: 0 nothing differs; 1 a law the table claims for this release (or the
executor-backend vocabulary) differs; 2 bad usage, or vllm is not importable.

examples:
  vllm-evidence audit-upstream
  vllm-evidence audit-upstream --dev-log dev/startup.log --plain-log plain/startup.log
  vllm-evidence audit-upstream --json
"""


def register(subparsers: Any) -> None:
    """Add the ``audit-upstream`` subcommand."""
    parser = subparsers.add_parser(
        "audit-upstream",
        help="check the law table against the installed vLLM",
        description=(
            "Compare the law table's laws for the installed vLLM release with vLLM "
            "itself: the cache_config_info label set, the capacity log format, the "
            "routes with and without development mode, and the executor backends."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--dev-log",
        type=Path,
        metavar="FILE",
        help="startup log of a launch with VLLM_SERVER_DEV_MODE=1 (its route table)",
    )
    parser.add_argument(
        "--plain-log",
        type=Path,
        metavar="FILE",
        help="startup log of a launch without development mode (its route table)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Probe the installed vLLM, audit its release's laws, print the findings."""
    from vllm_evidence._audit import RouteTable, Verdict, audit, exit_status, route_table_from_log
    from vllm_evidence._audit.installed import probe_installed_vllm
    from vllm_evidence._output.audit import audit_document
    from vllm_evidence.upstream import VersionNotEstablished, laws_for, parse_release

    tables: dict[str, RouteTable | None] = {"dev": None, "plain": None}
    for mode, path in (("dev", args.dev_log), ("plain", args.plain_log)):
        if path is None:
            continue
        table = route_table_from_log(path, development_mode=mode == "dev")
        if isinstance(table, str):
            return fail(PROG, f"--{mode}-log: {table}")
        tables[mode] = table
    try:
        installed = probe_installed_vllm(tables["dev"], tables["plain"])
    except Exception as exc:  # noqa: BLE001  # any import failure is the same usage error
        return fail(PROG, f"vllm is not importable here: {type(exc).__name__}: {exc}")
    version = parse_release(installed.version)
    if version is None:
        return fail(PROG, f"vllm reports a version that is not PEP 440: {installed.version!r}")
    laws = laws_for(version)
    findings = audit(laws, installed)
    if args.json:
        emit_json(audit_document(str(version), findings))
        return exit_status(findings)
    counts = {v: sum(1 for f in findings if f.verdict is v) for v in Verdict}
    scope = laws.statement if isinstance(laws, VersionNotEstablished) else "laws for this release"
    title = (
        f"vLLM {version} ({scope}): {counts[Verdict.HELD]} held, "
        f"{counts[Verdict.DIFFERS]} differ, {counts[Verdict.NOT_CHECKABLE]} not checkable"
    )
    rows = [[f.key, f.verdict.value.replace("_", " "), f.detail] for f in findings]
    print_table(title, ["question", "verdict", "detail"], rows)
    return exit_status(findings)
