"""The README's commands are the ones CI runs."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_readme_opens_with_the_two_newcomer_commands() -> None:
    demo, tests = _readme_commands()
    assert demo.endswith("vllm-evidence demo")
    assert "pytest" in tests
    assert "'.[test]'" in tests


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    _, tests = _readme_commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert tests in ci


def test_the_readme_library_example_runs() -> None:
    """The README's Python example, pointed at the stub front door and the real log."""
    import contextlib
    import io

    from tests._paths import REAL
    from vllm_evidence.testing._stub import serve_capture

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    with serve_capture(REAL) as door:
        code = code.replace("http://127.0.0.1:8000", door.url)
        code = code.replace('"vllm.log"', repr(str(REAL / "startup.log")))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {})  # noqa: S102  # our own README
    assert out.getvalue() == "4194304 established\n"


def test_ci_checks_on_the_demo_match_what_the_demo_prints() -> None:
    """`.ci/run` greps the wheel's demo output; a report wording change must move them both.

    Session 11 renamed the report's claim titles and left `.ci/run` grepping the old
    wording: the suite passed and CI failed.  Each pattern here is read from `.ci/run` and
    applied, as grep would, to the demo's real output.
    """
    import re
    import subprocess
    import sys

    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    checks = re.findall(r"""grep -(E?)q '([^']+)' <<<"\$demo_out\"""", ci)
    assert len(checks) >= 2, "the wheel step no longer checks the demo's output"
    demo = subprocess.run(
        [sys.executable, "-m", "vllm_evidence", "demo"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"},
    )
    assert demo.returncode == 0, demo.stderr
    lines = demo.stdout.splitlines()
    for extended, pattern in checks:
        # Both patterns are anchored lines; basic and extended syntax agree on them
        # but for '+', which only -E makes a repetition.
        regex = pattern if extended else pattern.replace("+", r"\+")
        assert any(re.search(regex, line) for line in lines), (pattern, demo.stdout[:2000])


def test_the_ci_demo_check_refuses_a_report_without_the_claim() -> None:
    """The other direction: the check's pattern does not match a refused layout."""
    import re

    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    (pattern,) = re.findall(r"""grep -Eq '([^']*parallel layout[^']*)'""", ci)
    assert re.search(pattern, "  parallel layout        established")
    assert not re.search(pattern, "  parallel layout        refused (ranks_unattributed)")
    assert not re.search(pattern, "  parallel realization   ESTABLISHED")
