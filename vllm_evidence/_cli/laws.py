"""``vllm-evidence laws``: the law table, whole or for one release."""

from __future__ import annotations

import argparse
from typing import Any

from vllm_evidence._cli._output import emit_json, fail, print_table

SCHEMA = "vllm-evidence.laws/1"

EPILOG = """\
examples:
  vllm-evidence laws                      every law, with the releases it holds for
  vllm-evidence laws --version 0.32.0     what holds for one self-reported release
  vllm-evidence laws --version 0.7.3 --json
"""


def register(subparsers: Any) -> None:
    """Add the ``laws`` subcommand."""
    parser = subparsers.add_parser(
        "laws",
        help="print the version-scoped law table",
        description=(
            "Print what this project knows about vLLM's behaviour (routes and their "
            "gates, parallel evidence, capacity sources, /health coverage, the "
            "incarnation marker), each law with the releases it was read for."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", dest="release", metavar="V", help="a vLLM release")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the whole table, or the laws for ``--version``."""
    from vllm_evidence.upstream import KNOWN_SPAN, VersionNotEstablished, laws_for, parse_release
    from vllm_evidence.upstream.laws import law_json

    if args.release is None:
        return _whole_table(json_out=args.json)
    version = parse_release(args.release)
    if version is None:
        return fail(
            "vllm-evidence laws", f"--version must be a PEP 440 version, got {args.release!r}"
        )
    laws = laws_for(version)
    if isinstance(laws, VersionNotEstablished):
        if args.json:
            emit_json(
                {
                    "schema": SCHEMA,
                    "version": str(version),
                    "established": False,
                    "statement": laws.statement,
                    "known_span": {"first": str(KNOWN_SPAN.first), "last": str(KNOWN_SPAN.last)},
                    "answers": [],
                }
            )
        else:
            print_table(f"vLLM {version}", ["question", "answer"], [["(all)", laws.statement]])
        return 0
    answers = [law_json(answer) for _, answer in laws.answers]
    if args.json:
        emit_json(
            {
                "schema": SCHEMA,
                "version": str(laws.version),
                "established": True,
                "known_span": {"first": str(KNOWN_SPAN.first), "last": str(KNOWN_SPAN.last)},
                "answers": answers,
            }
        )
        return 0
    rows = []
    for doc in answers:
        scope = _scope(doc)
        rows.append([str(doc["question"]), scope, str(doc["statement"])])
    held = sum(1 for doc in answers if doc["established"])
    print_table(
        f"vLLM {version}: {held} of {len(answers)} questions answered by a law",
        ["question", "read for", "answer"],
        rows,
    )
    return 0


def _scope(doc: dict[str, object]) -> str:
    span = doc.get("span")
    if isinstance(span, dict):
        first, last = span["first"], span["last"]
        return str(first) if first == last else f"{first} .. {last}"
    return "not established"


def _whole_table(*, json_out: bool) -> int:
    from vllm_evidence.upstream import LAW_TABLE, READ_RELEASES
    from vllm_evidence.upstream.laws import law_json

    if json_out:
        emit_json(
            {
                "schema": SCHEMA,
                "version": None,
                "read_releases": [
                    {"version": str(r.version), "commit": r.commit, "how": r.how.value}
                    for r in READ_RELEASES
                ],
                "questions": [
                    {"key": q.key, "text": q.text, "laws": [law_json(law) for law in laws]}
                    for q, laws in LAW_TABLE
                ],
            }
        )
        return 0
    rows = []
    for q, laws in LAW_TABLE:
        if not laws:
            rows.append([q.key, "-", "not established for any release"])
        rows.extend([q.key, str(law.span), law.statement] for law in laws)
    releases = ", ".join(str(r.version) for r in READ_RELEASES)
    print_table(f"vLLM laws (read releases: {releases})", ["question", "read for", "law"], rows)
    return 0
