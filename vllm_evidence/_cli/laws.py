"""``vllm-evidence laws``: the law table, whole or for one release."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from vllm_evidence._cli._output import emit_json, fail, print_table

if TYPE_CHECKING:
    from vllm_evidence.upstream import Law, Question, ReadRelease

EPILOG = """\
examples:
  vllm-evidence laws                      every law, with the releases it holds for
  vllm-evidence laws --version 0.32.0     what holds for one self-reported release
  vllm-evidence laws --version 0.7.3 --json
  vllm-evidence laws --markdown > docs/laws.md   the published reading (docs/laws.md)
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
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print one JSON document")
    form.add_argument(
        "--markdown",
        action="store_true",
        help="print the whole table as a Markdown document (every law's rule and sources)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the whole table, or the laws for ``--version``."""
    from vllm_evidence._output.laws import law_json, laws_document
    from vllm_evidence.upstream import VersionNotEstablished, laws_for, parse_release

    if args.markdown:
        if args.release is not None:
            return fail("vllm-evidence laws", "--markdown prints the whole table; drop --version")
        from vllm_evidence.upstream import EXECUTOR_LAW_TABLE, LAW_TABLE, READ_RELEASES

        # The executor-marker laws are published with the others: their rules and
        # citations are as much a user-facing fact.
        sys.stdout.write(render_markdown((*LAW_TABLE, *EXECUTOR_LAW_TABLE), READ_RELEASES))
        return 0
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
            emit_json(laws_document(laws))
        else:
            print_table(f"vLLM {version}", ["question", "answer"], [["(all)", laws.statement]])
        return 0
    if args.json:
        emit_json(laws_document(laws))
        return 0
    answers = [law_json(answer) for _, answer in laws.answers]
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
    from vllm_evidence._output.laws import LawTable, laws_document
    from vllm_evidence.upstream import LAW_TABLE, READ_RELEASES

    if json_out:
        emit_json(laws_document(LawTable(questions=LAW_TABLE, releases=READ_RELEASES)))
        return 0
    rows = []
    for q, laws in LAW_TABLE:
        if not laws:
            rows.append([q.key, "-", "not established for any release"])
        rows.extend([q.key, str(law.span), law.statement] for law in laws)
    releases = ", ".join(str(r.version) for r in READ_RELEASES)
    print_table(f"vLLM laws (read releases: {releases})", ["question", "read for", "law"], rows)
    return 0


#: Fields of :func:`law_json` shown as the law's rule in the Markdown document.
_COMMON_KEYS = frozenset({"question", "established", "statement", "span", "sources"})


def render_markdown(
    table: Sequence[tuple[Question, tuple[Law, ...]]], releases: Sequence[ReadRelease]
) -> str:
    """The law table as a Markdown document: per question, each law's span, statement,
    typed rule and citations (``docs/laws.md`` is this output, kept in sync by a test)."""
    from vllm_evidence._output.laws import law_json

    out = [
        "# The law table",
        "",
        "What vllm_evidence knows about vLLM's behaviour, one section per question, each law",
        "with the releases it was read for, its rule as the code acts on it, and where it was",
        "read. Generated by `vllm-evidence laws --markdown`; a test fails when this file and",
        "the table differ. A release outside every span of a question gets *not established*.",
        "",
        "Read releases:",
        "",
    ]
    for r in releases:
        commit = f", commit `{r.commit}`" if r.commit else ""
        out.append(f"- {r.version} ({r.how.value}{commit})")
    for q, laws in table:
        out += ["", f"## `{q.key}`", "", q.text]
        if not laws:
            out += ["", "Not established for any release."]
        for law in laws:
            doc = law_json(law)
            out += ["", f"### {law.span}", "", law.statement, ""]
            for key, value in doc.items():
                if key in _COMMON_KEYS:
                    continue
                shown = ", ".join(map(str, value)) if isinstance(value, list) else value
                if isinstance(value, bool):
                    shown = "yes" if value else "no"
                out.append(f"- {key}: `{shown}`")
            out.append("- sources:")
            out += [f"  - {source}" for source in law.sources]
    return "\n".join(out) + "\n"
