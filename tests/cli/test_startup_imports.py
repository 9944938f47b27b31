"""What the command line imports for a command: reading a saved directory needs no HTTP
client and no event loop, probing needs no httpx, and ``--version`` no package metadata.
Behaviour, not timing: each command runs in a fresh interpreter that reports the modules
it ended with."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests._paths import REAL
from vllm_evidence.testing._stub import serve_capture

#: Runs the CLI, then writes the names of the loaded modules to stderr as its last line.
RUN_AND_LIST = """
import atexit, json, runpy, sys
atexit.register(lambda: sys.stderr.write("\\n" + json.dumps(sorted(sys.modules)) + "\\n"))
sys.argv = ["vllm-evidence", *sys.argv[1:]]
runpy.run_module("vllm_evidence", run_name="__main__")
"""

NETWORK = ("httpx", "httpcore", "anyio", "asyncio", "ssl", "h11")


def _modules(*args: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST, *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode in (0, 2, 3), out.stderr
    return set(json.loads(out.stderr.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("saved") / "capture"
    with serve_capture(REAL) as door:
        modules = _modules("probe", door.url, "--save", str(directory), "--json")
    # The probe itself does load its client (its own connections and reader: no h11,
    # no httpx stack): the listing sees what a command loads.
    assert {"asyncio", "vllm_evidence._capture._http11"} <= modules
    assert not modules & {"httpx", "httpcore", "anyio", "h11"}
    return directory


@pytest.mark.parametrize("extra", [[], ["--json"], ["--require", "parallel"]])
def test_explaining_a_saved_directory_loads_no_http_client_or_event_loop(
    saved: Path, extra: list[str]
) -> None:
    modules = _modules("explain", str(saved), *extra)
    assert "vllm_evidence._readback" in modules  # it did read the capture
    assert not modules & set(NETWORK), sorted(modules & set(NETWORK))


def test_version_loads_no_package_metadata() -> None:
    modules = _modules("--version")
    assert "vllm_evidence.cli" in modules
    assert "importlib.metadata" not in modules


def test_the_written_version_is_the_package_version() -> None:
    import tomllib
    from importlib.metadata import version

    from vllm_evidence.cli import VERSION

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    declared = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"]
    assert VERSION == declared == version("vllm-evidence")


def test_a_command_other_than_demo_loads_no_package_resources() -> None:
    """``demo`` reads its scenarios as package resources; registering it with the parser
    loads nothing for that (importlib.resources brings tempfile, random, bz2, lzma...)."""
    modules = _modules("laws", "--json")
    assert "vllm_evidence._cli.demo" in modules  # registered with the parser
    assert "importlib.resources" not in modules


def test_a_probe_without_a_log_or_a_save_loads_no_log_grammar_or_file_code() -> None:
    """The decisions need the startup log's types, not its reader: a probe with neither
    a log nor ``--save`` loads no log grammar, log file reader or capture-directory
    code; given a log, it does."""
    with serve_capture(REAL) as a, serve_capture(REAL) as b:
        fleet = _modules("probe", a.url, b.url, "--json")
        with_log = _modules("probe", a.url, "--startup-log", str(REAL / "startup.log"))
    unneeded = {
        "vllm_evidence._adapters.startup_log._grammar",
        "vllm_evidence._adapters.startup_log.reader",
        "vllm_evidence._capture.log",
        "vllm_evidence._capture.directory",
        "vllm_evidence._capture.process",
    }
    assert "vllm_evidence._adapters.startup_log" in fleet  # the types
    assert not fleet & unneeded, sorted(fleet & unneeded)
    assert {"vllm_evidence._adapters.startup_log._grammar", "vllm_evidence._capture.log"} <= (
        with_log
    )
