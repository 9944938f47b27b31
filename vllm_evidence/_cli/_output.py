"""Terminal conventions shared by the subcommands.

Colour and tables (rich) only on a TTY without ``NO_COLOR``; plain text when piped;
JSON with ``--json``; errors as one line on stderr.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

__all__ = ["emit_json", "fail", "print_table", "styled"]


def styled() -> bool:
    """Whether stdout is a terminal that wants colour."""
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def emit_json(document: object) -> None:
    """Write one JSON document (and a newline) to stdout."""
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=False, ensure_ascii=False))
    sys.stdout.write("\n")


def fail(prog: str, message: str, status: int = 2) -> int:
    """Write ``prog: error: message`` as one line on stderr; return ``status``."""
    line = " ".join(message.split())
    sys.stderr.write(f"{prog}: error: {line}\n")
    return status


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A table: rich on a styled terminal, aligned plain text otherwise."""
    if styled():
        from rich.console import Console
        from rich.table import Table

        table = Table(title=title, show_lines=False)
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*row)
        Console().print(table)
        return
    sys.stdout.write(f"{title}\n")
    widths = [len(c) for c in columns]
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths[i], len(cell))
    header = "  ".join(c.ljust(w) for c, w in zip(columns[:-1], widths, strict=False))
    sys.stdout.write(f"{header}  {columns[-1]}\n")
    for row in rows:
        cells = "  ".join(c.ljust(w) for c, w in zip(row[:-1], widths, strict=False))
        sys.stdout.write(f"{cells}  {row[-1]}\n")
