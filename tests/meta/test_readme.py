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
    from vllm_evidence.testing.stub import serve_capture

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    with serve_capture(REAL) as door:
        code = code.replace("http://127.0.0.1:8000", door.url)
        code = code.replace('"vllm.log"', repr(str(REAL / "startup.log")))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {})  # noqa: S102  # our own README
    assert out.getvalue() == "4194304 established\n"
