"""``vllm-evidence schema NAME``: print the JSON Schema of one published document."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["register"]

#: The names ``schema`` takes (``vllm_evidence.serialize.SCHEMA_NAMES``, spelled out
#: here so that ``--help`` does not import the converter).
NAMES: dict[str, str] = {
    "assessment": "probe/explain/demo --json (vllm-evidence.assessment/9)",
    "startup-log": "log --json (vllm-evidence.startup-log/6)",
    "laws": "laws --json (vllm-evidence.laws/3)",
    "audit": "audit-upstream --json (vllm-evidence.audit/3)",
    "capture-manifest": "manifest.json of a saved capture (vllm-evidence/capture-manifest/3)",
    "launch-receipt": "what launch --receipt writes (vllm-evidence.launch-receipt/3)",
    "watch-round": "watch --json, one line per round (vllm-evidence.watch-round/2)",
    "watch-transition": "watch --json, one line per change (vllm-evidence.watch-transition/2)",
}


def register(subparsers: Any) -> None:
    """Add the ``schema`` subcommand."""
    names = "\n".join(f"  {name:<18} {what}" for name, what in NAMES.items())
    parser = subparsers.add_parser(
        "schema",
        help="print the JSON Schema of a published document",
        description=(
            "Print the JSON Schema (draft 2020-12) of one document this tool emits, "
            "as shipped in the package (vllm_evidence/schemas/NAME.json)."
        ),
        epilog=(
            f"names:\n{names}\n\n"
            "examples:\n"
            "  vllm-evidence schema assessment > assessment.schema.json\n"
            "  vllm-evidence schema laws | python -m json.tool\n\n"
            "exit status: 0 printed, 2 unknown name."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("name", metavar="NAME", help=f"one of: {', '.join(NAMES)}")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from vllm_evidence._cli._exit import EXIT_OK, EXIT_USAGE
    from vllm_evidence._cli._output import emit_json, fail

    if args.name not in NAMES:
        return fail(
            "vllm-evidence schema",
            f"unknown schema {args.name!r}; choose one of: {', '.join(NAMES)}",
            EXIT_USAGE,
        )
    from vllm_evidence.serialize import schema

    emit_json(schema(args.name))
    sys.stdout.flush()
    return EXIT_OK
