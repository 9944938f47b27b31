"""Terminal conventions shared by the subcommands.

Colour and tables (rich) only on a TTY without ``NO_COLOR``; plain text when piped;
JSON with ``--json``; errors, and notes beside the output, as one line each on stderr.
Everything written passes through :func:`vllm_evidence._scrub.scrub`: no secret, and no
control character a terminal would act on, reaches stdout or stderr.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from collections.abc import Iterable, Sequence

from vllm_evidence._scrub import scrub

__all__ = ["emit_json", "fail", "json_text", "note", "print_table", "styled"]


def styled() -> bool:
    """Whether stdout is a terminal that wants colour."""
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def json_text(document: object, *, indent: int | None = 2) -> str:
    """One JSON document as text, scrubbed (secrets removed, raw controls escaped)."""
    text = json.dumps(document, indent=indent, sort_keys=False, ensure_ascii=False)
    return scrub(text, form="json")


def emit_json(document: object) -> None:
    """Write one JSON document (and a newline) to stdout."""
    sys.stdout.write(json_text(document))
    sys.stdout.write("\n")


def fail(prog: str, message: str, status: int = 2, *, secrets: Iterable[str] = ()) -> int:
    """Write ``prog: error: message`` as one line on stderr; return ``status``."""
    line = scrub(" ".join(message.split()), secrets=secrets)
    sys.stderr.write(f"{prog}: error: {line}\n")
    return status


def note(prog: str, message: str) -> None:
    """Write ``prog: note: message`` as one line on stderr (beside output, not instead)."""
    line = scrub(" ".join(message.split()))
    sys.stderr.write(f"{prog}: note: {line}\n")


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A table: rich on a styled terminal, aligned plain text otherwise."""
    rows = [[scrub(cell) for cell in row] for row in rows]
    if styled():
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table

        table = Table(title=title, show_lines=False)
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*(escape(cell) for cell in row))
        Console().print(table)
        return
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else _PLAIN_WIDTH
    sys.stdout.write("\n".join(textwrap.wrap(title, width, subsequent_indent="  ")) + "\n")
    widths = [len(c) for c in columns]
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = max(widths[i], len(cell))
    header = "  ".join(c.ljust(w) for c, w in zip(columns[:-1], widths, strict=False))
    sys.stdout.write(f"{header}  {columns[-1]}\n")
    # The last column (a law's statement, a reason) wraps at word boundaries under itself,
    # to the terminal's width, or the report's when piped.
    indent = " " * (len(header) + 2)
    for row in rows:
        cells = "  ".join(c.ljust(w) for c, w in zip(row[:-1], widths, strict=False))
        room = max(width - len(indent), 20)
        last = textwrap.wrap(row[-1], room, break_long_words=False, break_on_hyphens=False)
        sys.stdout.write(f"{cells}  {(chr(10) + indent).join(last or [''])}\n")


#: The width a plain table's last column wraps to when no terminal says otherwise.
_PLAIN_WIDTH = 100
