"""``attrs.evolve(<sealed value>, …)`` under a user's ``mypy --strict``: a type error, no crash.

mypy's attrs plugin types ``evolve`` from the ``__init__`` it finds on the class; an
``init=False`` sealed class inherits ``Sealed.__init__``, whose positional-only
parameter once crashed the plugin with an INTERNAL ERROR (a keyword parameter built
from a nameless argument).  This runs a bare ``mypy --strict`` (no project config, as
a downstream CI would) over a snippet in a subprocess, with its own cache.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SNIPPET = """\
from __future__ import annotations

import attrs

from vllm_evidence._adapters.outcome import Parsed
from vllm_evidence._adapters.version import SelfReportedVersion
from vllm_evidence._assessment import Assessment
from vllm_evidence.decisions import ParallelEstablished
from vllm_evidence._measure import TokenCount


def edit(
    decision: ParallelEstablished,
    assessment: Assessment,
    parsed: Parsed[SelfReportedVersion],
    tokens: TokenCount,
) -> TokenCount:
    attrs.evolve(decision)
    attrs.evolve(decision, detail="edited")
    attrs.evolve(assessment, startup_log=None)
    attrs.evolve(parsed, observation=parsed.observation)
    return attrs.evolve(tokens, value=1)
"""

#: The snippet's lines that must be rejected, and the type each names.
REJECTED = {
    18: "ParallelEstablished",
    19: "ParallelEstablished",
    20: "Assessment",
    21: "Parsed[SelfReportedVersion]",
}


def test_evolve_on_a_sealed_value_is_an_ordinary_type_error(tmp_path: Path) -> None:
    snippet = tmp_path / "user_code.py"
    snippet.write_text(SNIPPET, encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file=",
            "--strict",
            "--show-error-codes",
            "--no-pretty",
            "--cache-dir",
            str(tmp_path / "cache"),
            snippet.name,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert "INTERNAL ERROR" not in output, output
    errors = {
        int(m["line"]): (m["message"], m["code"])
        for m in re.finditer(
            r"^user_code\.py:(?P<line>\d+): error: (?P<message>.*?)  \[(?P<code>[\w-]+)\]$",
            output,
            flags=re.MULTILINE,
        )
    }
    assert set(errors) == set(REJECTED), output
    for line, type_name in REJECTED.items():
        message, code = errors[line]
        assert code == "misc", output
        assert f'Argument 1 to "evolve" has incompatible type "{type_name}"' in message
    assert result.returncode == 1, output
