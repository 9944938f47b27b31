"""Golden outputs: every CLI document and report on every fixture, pinned byte for byte.

These pin today's outputs so that moving code between layers cannot change what a user
sees.  They are a regression pin, not a witness: the decision witnesses elsewhere write
their expected values by hand.  The files under ``tests/golden/outputs/`` were recorded
before the layer refactor; a deliberate output change re-records them with
``VLLM_EVIDENCE_RECORD_GOLDEN=1 pytest tests/golden`` and says so in CHANGELOG.

Run-dependent values (ports, batch ids, wall times, elapsed milliseconds, absolute
paths) are replaced by placeholders before comparing.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

from tests._ports import demo_port, holding_port, serve_on_port
from vllm_evidence.cli import main
from vllm_evidence.testing._stub import serve_capture

ROOT = Path(__file__).resolve().parents[2]
OUTPUTS = Path(__file__).parent / "outputs"
REAL = ROOT / "tests" / "fixtures" / "real" / "vllm-0.32.0-cpu"
CAPTURES = ROOT / "tests" / "fixtures" / "captures"
RECORD = os.environ.get("VLLM_EVIDENCE_RECORD_GOLDEN") == "1"

_VOLATILE = (
    (re.compile(r"http://127\.0\.0\.1:[0-9]+"), "http://127.0.0.1:PORT"),
    (re.compile(r'("batch_id": )"[0-9a-f]{32}"'), r'\1"BATCH"'),
    (re.compile(r"\(batch [0-9a-f]{12}([,)])"), r"(batch BATCH\1"),
    (re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+\+00:00"), "WALLTIME"),
    (re.compile(r'("elapsed_ms": )[0-9]+'), r"\g<1>0"),
    (re.compile(r" +[0-9]+ ms  sha256"), " N ms  sha256"),
    (re.compile(r'("(?:started|ended)_monotonic_ns": )[0-9]+'), r"\g<1>0"),
    (re.compile(r"manifest(\s+)sha256(\s+)[0-9a-f]{12}"), r"manifest\1sha256\2SEAL"),
    (re.compile(r'("manifest_sha256": )"[0-9a-f]{64}"'), r'\1"SEAL"'),
    # The report wraps at word boundaries: the id may start the next line.
    (re.compile(r"batch(\s+)[0-9a-f]{12}\b"), r"batch\1BATCH"),
)


def _normalise(text: str) -> str:
    text = text.replace(str(ROOT), "<repo>")
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def _run(argv: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse exits on usage errors
            status = exc.code if isinstance(exc.code, int) else 2
    return _normalise(f"$ exit {status}\n{out.getvalue()}--- stderr\n{err.getvalue()}")


def _compare(name: str, actual: str) -> None:
    path = OUTPUTS / name
    if RECORD:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"no golden output {name}: record it (see the module docstring)"
    expected = path.read_text(encoding="utf-8")
    if name.endswith(".text"):
        # The text report wraps at word boundaries before a machine's paths are
        # normalised (a longer checkout path moves the breaks): the words and their
        # order are the contract here; tests/output/test_report_width.py checks the wrap.
        assert actual.split() == expected.split(), f"output of {name} changed"
        return
    assert actual == expected, f"output of {name} changed"


LOGS = sorted(
    [
        *REAL.glob("*/startup.log"),
        *REAL.glob("*/*/startup.log"),
        *CAPTURES.glob("*/startup.log"),
        *(CAPTURES / "public" / "startup-log").glob("*.txt"),
    ]
)
SERVERS = sorted(p for p in REAL.iterdir() if (p / "version.body").exists())
BARE = [*SERVERS, CAPTURES / "vllm-0.32.0-cpu-tp1-devmode"]


def _slug(path: Path) -> str:
    return "-".join(path.relative_to(ROOT / "tests" / "fixtures").with_suffix("").parts)


@pytest.mark.parametrize("log", LOGS, ids=_slug)
@pytest.mark.parametrize("form", ["json", "text"])
def test_log_command(log: Path, form: str) -> None:
    argv = ["log", str(log), *(["--json"] if form == "json" else [])]
    _compare(f"log/{_slug(log)}.{form}", _run(argv))


@pytest.mark.parametrize("directory", BARE, ids=_slug)
@pytest.mark.parametrize("form", ["json", "text"])
def test_explain_bare_bodies(directory: Path, form: str) -> None:
    argv = ["explain", str(directory), "--bodies", *(["--json"] if form == "json" else [])]
    if (directory / "startup.log").exists():  # named: a bare directory's log is not read
        argv += ["--startup-log", str(directory / "startup.log")]
    _compare(f"explain/{_slug(directory)}.{form}", _run(argv))


@pytest.mark.parametrize("directory", SERVERS, ids=_slug)
@pytest.mark.parametrize("form", ["json", "text"])
@pytest.mark.parametrize("with_log", [True, False], ids=["log", "nolog"])
def test_probe_replayed_server(
    directory: Path, form: str, with_log: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The capture is saved as ``saved`` under the test's own directory, named relative to
    # it: the report wraps the path it prints, so a path whose length varies from run to
    # run (pytest's numbered temporary directories) would wrap differently.
    monkeypatch.chdir(tmp_path)
    key = "sk-golden" if "apikey" in directory.name else None
    serve_from = directory / "with-key" if key else directory
    env_name = "VLLM_EVIDENCE_GOLDEN_KEY"
    # With its log, the replay listens on the port the log names (a real server's own
    # port): what the log join then says is about the missing witness, not the port.
    port = _log_port(directory / "startup.log") if with_log else 0
    with serve_on_port(serve_from, api_key=key, port=port) as door:
        argv = ["probe", door.url, "--save", "saved"]
        if key:
            argv += ["--api-key-env", env_name]
            os.environ[env_name] = key
        if with_log:
            argv += ["--startup-log", str(directory / "startup.log")]
        if form == "json":
            argv.append("--json")
        try:
            probed = _run(argv)
        finally:
            os.environ.pop(env_name, None)
    suffix = f"{'log' if with_log else 'nolog'}.{form}"
    _compare(f"probe/{_slug(directory)}.{suffix}", probed)
    explain = ["explain", "saved", *(["--json"] if form == "json" else [])]
    if with_log:
        explain += ["--startup-log", str(directory / "startup.log")]
    _compare(
        f"explain-saved/{_slug(directory)}.{suffix}",
        _run(explain),
    )


def _log_port(log: Path) -> int:
    found = re.search(rb"'port': ([0-9]+)", log.read_bytes())
    return int(found.group(1)) if found else 0


def test_probe_restart_mid_batch() -> None:
    base = REAL / "restart-mid-batch"
    first = (base / "first" / "metrics.body").read_bytes()
    second = (base / "second" / "metrics.body").read_bytes()
    with serve_capture(base / "second", metrics_sequence=[first, second]) as door:
        for form in ("json", "text"):
            argv = ["probe", door.url, *(["--json"] if form == "json" else [])]
            _compare(f"probe/restart-mid-batch.{form}", _run(argv))


@pytest.mark.parametrize(
    "mixed",
    [("tp2-devmode", "tp2-apikey"), ("tp1-devmode-alias", "tp2-devmode")],
    ids="+".join,
)
def test_explain_with_another_servers_log(mixed: tuple[str, str]) -> None:
    bodies, log = mixed
    for form in ("json", "text"):
        argv = ["explain", str(REAL / bodies), "--bodies"]
        argv += ["--startup-log", str(REAL / log / "startup.log")]
        argv += ["--json"] if form == "json" else []
        _compare(f"explain-mixed/{bodies}+{log}.{form}", _run(argv))


@pytest.mark.parametrize("scenario", ["tp1-devmode", "tp2-apikey", "tp2-devmode"])
@pytest.mark.parametrize("form", ["json", "text"])
@pytest.mark.parametrize("no_log", [False, True], ids=["log", "nolog"])
def test_demo(scenario: str, form: str, no_log: bool) -> None:
    argv = ["demo", "--scenario", scenario, *(["--json"] if form == "json" else [])]
    argv += ["--no-startup-log"] if no_log else []
    # The demo serves on its log's port, and prints a port note when it had to take
    # another: hold that port against another suite's replay of the same log.
    with holding_port(demo_port(scenario)):
        out = _run(argv)
    _compare(f"demo/{scenario}.{'nolog' if no_log else 'log'}.{form}", out)


@pytest.mark.parametrize("form", [[], ["--json"], ["--markdown"]], ids=["text", "json", "md"])
def test_laws(form: list[str]) -> None:
    _compare(f"laws/laws.{form[0][2:] if form else 'text'}", _run(["laws", *form]))


def test_every_golden_file_has_a_test() -> None:
    """A golden file no test writes is a pin that no longer pins anything."""
    names = {p.relative_to(OUTPUTS).as_posix() for p in OUTPUTS.rglob("*") if p.is_file()}
    assert names, "no golden outputs recorded"
    expected = _expected_names()
    assert names == expected, sorted(names ^ expected)


def _expected_names() -> set[str]:
    names: set[str] = set()
    for form in ("json", "text"):
        names |= {f"log/{_slug(log)}.{form}" for log in LOGS}
        names |= {f"explain/{_slug(d)}.{form}" for d in BARE}
        for d in SERVERS:
            for with_log in ("log", "nolog"):
                names.add(f"probe/{_slug(d)}.{with_log}.{form}")
                names.add(f"explain-saved/{_slug(d)}.{with_log}.{form}")
        names.add(f"probe/restart-mid-batch.{form}")
        names |= {
            "explain-mixed/tp2-devmode+tp2-apikey." + form,
            "explain-mixed/tp1-devmode-alias+tp2-devmode." + form,
        }
        for scenario in ("tp1-devmode", "tp2-apikey", "tp2-devmode"):
            names |= {f"demo/{scenario}.log.{form}", f"demo/{scenario}.nolog.{form}"}
    names |= {"laws/laws.text", "laws/laws.json", "laws/laws.markdown"}
    return names
