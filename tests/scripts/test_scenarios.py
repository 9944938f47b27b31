"""The scenario tables are well formed: names unique and committed, every lifecycle used
once and only where the runner handles it, the models buildable for the release, and each
scenario's command line what its settings say and valid for ``vllm-evidence launch``;
which scenarios ``record`` and ``check`` take."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pytest
from live_vllm.common import REAL
from live_vllm.models import MODEL_SCRIPTS
from live_vllm.releases import RELEASES, VLLM_VERSION, Release
from live_vllm.runs import Run
from live_vllm.scenarios import (
    LIFECYCLE_SCENARIOS,
    LIFECYCLES,
    OTHER_LOG_SCENARIO,
    RELEASE_SCENARIO_NAMES,
    RELEASE_SCENARIOS,
    SCENARIO_NAMES,
    SCENARIOS,
    SHAPE_SCENARIOS,
    Scenario,
    ScenarioChoiceError,
    check_names,
    known_names,
    record_names,
)
from live_vllm.server import launcher_argv

OWN = RELEASES[VLLM_VERSION]
OTHER = RELEASES["0.26.0"]
TABLES = {
    "SCENARIOS": SCENARIOS,
    "LIFECYCLE_SCENARIOS": LIFECYCLE_SCENARIOS,
    "RELEASE_SCENARIOS": RELEASE_SCENARIOS,
    "SHAPE_SCENARIOS": SHAPE_SCENARIOS,
}
EVERY = [s for table in TABLES.values() for s in table]


def _release_of(scenario: Scenario) -> Release:
    return OTHER if scenario in RELEASE_SCENARIOS else OWN


def _run(release: Release, tmp_path: Path) -> Run:
    return Run(env_dir=tmp_path / "env", root=tmp_path / "root", port=43210, release=release)


def test_the_live_tiers_own_four_are_the_ones_ci_and_the_live_tests_name() -> None:
    assert SCENARIO_NAMES == ("tp1-devmode-alias", "tp2-apikey", "tp2-devmode", "restart-mid-batch")
    assert RELEASE_SCENARIO_NAMES == ("tp1", "tp2", "pp2", "dp2", "restart")


def test_every_name_is_unique_across_all_four_tables() -> None:
    names = [s.name for s in EVERY]
    assert len(names) == len(set(names)) == 17
    assert all(s.summary.strip() for s in EVERY)


@pytest.mark.parametrize("release", [OWN, OTHER], ids=["own", "other"])
def test_the_names_a_release_takes_are_unique(release: Release) -> None:
    known = known_names(release)
    assert len(known) == len(set(known))


def test_each_committed_fixture_of_0_32_0_is_a_scenario_and_each_scenario_committed() -> None:
    committed = {p.name for p in (REAL / "vllm-0.32.0-cpu").iterdir() if p.is_dir()}
    assert committed == set(known_names(OWN))


@pytest.mark.parametrize("version", [v for v in RELEASES if v != VLLM_VERSION])
def test_each_other_release_commits_release_scenarios_and_its_defaults(version: str) -> None:
    release = RELEASES[version]
    committed = {p.name for p in release.fixtures.iterdir() if p.is_dir()}
    assert committed <= set(RELEASE_SCENARIO_NAMES)
    assert set(release.scenarios) <= committed


def test_every_lifecycle_is_used_once_by_a_launched_lifecycle_scenario() -> None:
    assert sorted(s.lifecycle or "" for s in LIFECYCLE_SCENARIOS) == sorted(LIFECYCLES)
    assert all(s.launched and not s.restart for s in LIFECYCLE_SCENARIOS)
    others = [s for s in EVERY if s not in LIFECYCLE_SCENARIOS]
    assert [s.name for s in others if s.lifecycle is not None] == []


def test_only_the_keep_alive_lifecycle_keeps_the_api_server_alive() -> None:
    assert [s.name for s in EVERY if s.keep_alive] == ["tp2-keepalive-engine-death"]
    (keep,) = [s for s in EVERY if s.keep_alive]
    assert keep.lifecycle == "keepalive-engine-death"


def test_a_restart_is_started_directly() -> None:
    restarts = [s for s in EVERY if s.restart]
    assert [s.name for s in restarts] == ["restart-mid-batch", "restart"]
    assert not any(s.launched for s in restarts)


def test_only_shape_scenarios_and_the_canarys_serve_a_model_other_than_the_llama() -> None:
    assert all(s.model in MODEL_SCRIPTS for s in EVERY)
    others = {s.name: s.model for s in EVERY if s.model != "tiny-llama"}
    assert others == {"tp1-hybrid": "tiny-gemma3", "tp1-gate-canary": "tiny-llama-hd32"}
    assert "tp1-hybrid" in {s.name for s in SHAPE_SCENARIOS}


def test_the_other_launchs_log_is_recorded_before_the_launched_scenario_that_reads_it() -> None:
    names = list(SCENARIO_NAMES)
    launched = [names.index(s.name) for s in SCENARIOS if s.launched]
    assert launched
    assert all(names.index(OTHER_LOG_SCENARIO) < i for i in launched)
    assert not next(s for s in SCENARIOS if s.name == OTHER_LOG_SCENARIO).launched


def _vllm_parser() -> argparse.ArgumentParser:
    """The options of ``vllm.entrypoints.openai.api_server`` the scenarios use, as vLLM
    declares them (written out by hand)."""
    parser = argparse.ArgumentParser(exit_on_error=False, add_help=False)
    parser.add_argument("--model", required=True)
    parser.add_argument("--host")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dtype", choices=["auto", "half", "float16", "bfloat16", "float32"])
    parser.add_argument("--max-model-len", type=int)
    parser.add_argument("--served-model-name", nargs="+")
    parser.add_argument("--tensor-parallel-size", type=int, default=1)
    parser.add_argument("--pipeline-parallel-size", type=int, default=1)
    parser.add_argument("--data-parallel-size", type=int, default=1)
    parser.add_argument("--api-key")
    parser.add_argument("--enforce-eager", action="store_true")
    return parser


@pytest.mark.parametrize("scenario", EVERY, ids=lambda s: s.name)
def test_each_command_line_says_what_the_scenario_says(scenario: Scenario, tmp_path: Path) -> None:
    run = _run(_release_of(scenario), tmp_path)
    argv = run.argv(scenario)
    assert argv[:3] == [
        str(tmp_path / "env" / "bin" / "python"),
        "-m",
        "vllm.entrypoints.openai.api_server",
    ]
    args = _vllm_parser().parse_args(argv[3:])
    assert args.model == str(tmp_path / "root" / "models" / scenario.model)
    assert (args.host, args.port, args.max_model_len) == ("127.0.0.1", 43210, 2048)
    assert args.dtype == ("bfloat16" if run.release.own else "float32")
    assert args.served_model_name == (
        [scenario.served_model_name] if scenario.served_model_name else None
    )
    sizes = (args.tensor_parallel_size, args.pipeline_parallel_size, args.data_parallel_size)
    assert sizes == (
        scenario.tensor_parallel_size,
        scenario.pipeline_parallel_size,
        scenario.data_parallel_size,
    )
    assert args.api_key == (run.api_key if scenario.api_key else None)
    assert args.enforce_eager is scenario.enforce_eager


@pytest.mark.parametrize("scenario", [s for s in EVERY if s.launched], ids=lambda s: s.name)
def test_each_launched_command_line_is_valid_for_vllm_evidence_launch(
    scenario: Scenario, tmp_path: Path
) -> None:
    from vllm_evidence.cli import build_parser

    run = _run(_release_of(scenario), tmp_path)
    receipt, log = tmp_path / "logs" / "launch-receipt.json", tmp_path / "logs" / "startup.log"
    key = run.receipt_keys[0]
    argv = launcher_argv(run.argv(scenario), receipt=receipt, log_path=log, signing_key=key)
    assert argv[:3] == [sys.executable, "-m", "vllm_evidence"]
    args = build_parser().parse_args(argv[3:])
    assert (args.receipt, args.log, args.follow_symlinks) == (str(receipt), str(log), False)
    assert args.receipt_signing_key == str(key)
    assert args.command == ["--", *run.argv(scenario)]


def test_a_command_line_the_launcher_cannot_take_is_refused_by_its_parser(tmp_path: Path) -> None:
    """The check above can fail: an option the launcher does not have is refused."""
    from vllm_evidence.cli import build_parser

    argv = launcher_argv(
        ["vllm"], receipt=tmp_path / "r", log_path=tmp_path / "l", signing_key=tmp_path / "k"
    )
    misspelt = ["--receipts" if a == "--receipt" else a for a in argv[3:]]
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(misspelt)
    assert caught.value.code == 2


def test_a_wrong_option_or_value_is_refused_by_the_vllm_parser() -> None:
    with pytest.raises(argparse.ArgumentError):
        _vllm_parser().parse_args(["--model", "m", "--port", "eighty"])
    with pytest.raises(argparse.ArgumentError):
        _vllm_parser().parse_args(["--model", "m", "--port", "1", "--dtype", "float8"])


# ---------------------------------------------------------------- choosing scenarios


def test_record_takes_the_names_asked_for_in_the_order_given() -> None:
    assert record_names(OWN, ["tp2-devmode", "dp2-eager"]) == ["tp2-devmode", "dp2-eager"]
    assert record_names(OTHER, ["restart", "tp1"]) == ["restart", "tp1"]


def test_record_without_names_takes_the_releases_default() -> None:
    assert record_names(OWN, []) == list(SCENARIO_NAMES)
    assert record_names(OTHER, []) == ["tp1", "tp2"]
    assert record_names(RELEASES["0.29.0"], []) == ["tp2", "pp2", "dp2"]


@pytest.mark.parametrize(
    ("release", "names", "unknown"),
    [
        (OWN, ["tp1"], "['tp1']"),
        (OWN, ["tp2-apikey", "nope"], "['nope']"),
        (OTHER, ["tp1-hybrid", "tp1"], "['tp1-hybrid']"),
        (OTHER, ["tp2-apikey"], "['tp2-apikey']"),
    ],
)
def test_record_refuses_a_name_the_release_does_not_record(
    release: Release, names: list[str], unknown: str
) -> None:
    expected = rf"^unknown scenario\(s\) {re.escape(unknown)}; choose from \("
    with pytest.raises(ScenarioChoiceError, match=expected):
        record_names(release, names)


def test_check_of_the_own_release_records_its_four_and_the_gates_and_takes_no_names() -> None:
    assert check_names(OWN, []) == (*SCENARIO_NAMES, "tp2-gate-worker-kill", "tp1-gate-canary")
    with pytest.raises(ScenarioChoiceError, match=r"^check --release 0\.32\.0 runs its own"):
        check_names(OWN, ["tp1-devmode-alias"])


def test_check_of_another_release_takes_its_names_else_its_default() -> None:
    assert check_names(OTHER, ["tp1"]) == ("tp1",)
    assert check_names(OTHER, []) == ("tp1", "tp2")
    with pytest.raises(ScenarioChoiceError, match=r"unknown scenario\(s\) \['tp1-hybrid'\]"):
        check_names(OTHER, ["tp1", "tp1-hybrid"])


def test_the_gate_scenario_runs_the_gate_and_the_launcher_takes_its_command_line(
    tmp_path: Path,
) -> None:
    """``tp2-gate-worker-kill`` is launched under ``--serve`` with the claims it requires,
    and without a signing key (which the launcher refuses beside ``--serve``)."""
    from live_vllm.scenarios import GATE_REQUIRES

    from vllm_evidence.cli import build_parser

    (scenario,) = [s for s in EVERY if s.lifecycle == "gate-worker-kill"]
    run = _run(_release_of(scenario), tmp_path)
    receipt, log = tmp_path / "r.json", tmp_path / "startup.log"
    argv = launcher_argv(
        run.argv(scenario), receipt=receipt, log_path=log, signing_key=tmp_path / "k", gate_port=9
    )
    args = build_parser().parse_args(argv[3:])
    assert args.serve == "127.0.0.1:9"
    assert tuple(args.require) == GATE_REQUIRES
    assert args.canary is False
    assert args.receipt_signing_key is None
    plain = launcher_argv(["vllm"], receipt=receipt, log_path=log, signing_key=tmp_path / "k")
    plain_args = build_parser().parse_args(plain[3:])
    assert plain_args.serve is None
    assert plain_args.canary is False


def test_the_canary_scenario_runs_the_gate_with_its_canary(tmp_path: Path) -> None:
    """``tp1-gate-canary`` is launched under ``--serve --canary``, requiring
    ``generation``, and serves the head-size-32 Llama (16 fails a completion on CPU)."""
    from live_vllm.scenarios import CANARY_REQUIRES

    from vllm_evidence.cli import build_parser

    (scenario,) = [s for s in EVERY if s.lifecycle == "gate-canary"]
    assert scenario.name == "tp1-gate-canary"
    assert scenario.model == "tiny-llama-hd32"
    run = _run(_release_of(scenario), tmp_path)
    receipt, log = tmp_path / "r.json", tmp_path / "startup.log"
    argv = launcher_argv(
        run.argv(scenario),
        receipt=receipt,
        log_path=log,
        signing_key=tmp_path / "k",
        gate_port=9,
        canary=True,
    )
    args = build_parser().parse_args(argv[3:])
    assert args.serve == "127.0.0.1:9"
    assert args.canary is True
    assert tuple(args.require) == CANARY_REQUIRES
    assert "generation" in CANARY_REQUIRES
    assert "/tiny-llama-hd32" in " ".join(args.command)
