"""``docs/laws.md``, the published reading of the law table, matches the table.

Every law's statement, rule and citations are user-facing facts: a change to one of them
must show up as a reviewed change of the document.  The table is rebuilt here by calling
its builders (as in ``tests/upstream/test_table.py``), the executor-marker laws' among
them, so a builder changed after import is seen.
Regenerate the document with ``vllm-evidence laws --markdown > docs/laws.md``.
"""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

from tests.upstream.test_table import _fresh_table
from vllm_evidence._cli.laws import render_markdown
from vllm_evidence.upstream import EXECUTOR_LAW_TABLE, LAW_TABLE, READ_RELEASES
from vllm_evidence.upstream import _table as table_module

DOC = Path(__file__).resolve().parents[2] / "docs" / "laws.md"


def _diff(expected: str, actual: str) -> str:
    return "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            "docs/laws.md",
            "the law table",
            n=1,
        )
    )


def test_the_published_law_table_is_the_table() -> None:
    published = DOC.read_text(encoding="utf-8")
    rendered = render_markdown([*_fresh_table(), *table_module._executor()], READ_RELEASES)
    assert rendered == published, (
        "docs/laws.md differs from the law table; review the change and regenerate with "
        "`vllm-evidence laws --markdown > docs/laws.md`:\n" + _diff(published, rendered)
    )


def test_the_document_names_every_question_and_citation() -> None:
    # Independent of the renderer's layout: every key and every source appears verbatim.
    published = DOC.read_text(encoding="utf-8")
    for q, laws in (*LAW_TABLE, *EXECUTOR_LAW_TABLE):
        assert f"## `{q.key}`" in published
        for law in laws:
            for source in law.sources:
                assert f"  - {source}\n" in published, source


def test_the_renderer_shows_a_question_without_laws() -> None:
    (q, _), *_ = LAW_TABLE
    text = render_markdown([(q, ())], READ_RELEASES[:1])
    assert text.endswith(f"## `{q.key}`\n\n{q.text}\n\nNot established for any release.\n")
    assert f"- {READ_RELEASES[0].version} (" in text


def test_cli_markdown_prints_the_document() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "vllm_evidence", "laws", "--markdown"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == DOC.read_text(encoding="utf-8")


def test_cli_markdown_refuses_a_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "vllm_evidence", "laws", "--markdown", "--version", "0.32.0"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "--markdown prints the whole table" in done.stderr
    assert "Traceback" not in done.stderr
