"""The README's commands are the ones CI runs."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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
