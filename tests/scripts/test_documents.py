"""The documents a recording writes, against the committed recordings (each
``scenario.json``, each ``NOTES.md`` given its facts, each command in 0.32.0's README), and
the cleanliness check in both directions."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest
from live_vllm.common import REAL, LiveTierError
from live_vllm.documents import (
    model_note,
    neutral_host,
    notes_text,
    readme_text,
    scenario_document,
    unclean,
    verify_clean,
)
from live_vllm.releases import RELEASES, release_for
from live_vllm.runs import Run
from live_vllm.scenarios import (
    LIFECYCLE_SCENARIOS,
    RELEASE_SCENARIOS,
    SCENARIOS,
    SHAPE_SCENARIOS,
    Scenario,
)

KEY = "live-tier-key-00112233445566778899"


def _fixture_run(fixture: Path, tmp_path: Path) -> tuple[Run, Scenario]:
    release = release_for(fixture.parent.name.removeprefix("vllm-").removesuffix("-cpu"))
    table = SCENARIOS + LIFECYCLE_SCENARIOS + SHAPE_SCENARIOS if release.own else RELEASE_SCENARIOS
    scenario = next(s for s in table if s.name == fixture.name)
    run = Run(env_dir=tmp_path / "venv", root=tmp_path / "run", port=41000, release=release)
    return run, scenario


def _fixtures(file: str) -> list[Path]:
    return sorted(p.parent for p in REAL.glob(f"vllm-*-cpu/*/{file}"))


def _id(fixture: Path) -> str:
    return f"{fixture.parent.name}/{fixture.name}"


def test_there_are_committed_recordings_to_compare_with() -> None:
    assert len(_fixtures("scenario.json")) >= 28
    assert len(_fixtures("NOTES.md")) >= 20


@pytest.mark.parametrize("fixture", _fixtures("scenario.json"), ids=_id)
def test_each_committed_scenario_json_is_what_the_recorder_writes(
    fixture: Path, tmp_path: Path
) -> None:
    run, scenario = _fixture_run(fixture, tmp_path)
    committed = json.loads((fixture / "scenario.json").read_text(encoding="utf-8"))
    assert scenario_document(run, scenario) == committed


def _facts(notes: str) -> list[str]:
    after = notes.split("## What happened\n\n", 1)[1]
    if after.startswith("\n## Files\n"):
        return []
    return after.split("\n\n## Files\n", 1)[0].split("\n")


@pytest.mark.parametrize("fixture", _fixtures("NOTES.md"), ids=_id)
def test_each_committed_notes_is_what_the_recorder_writes_given_its_facts(
    fixture: Path, tmp_path: Path
) -> None:
    """Byte for byte."""
    run, scenario = _fixture_run(fixture, tmp_path)
    committed = (fixture / "NOTES.md").read_text(encoding="utf-8")
    assert notes_text(run, scenario, _facts(committed)) == committed


def test_the_notes_change_with_what_happened_and_say_so_for_a_launch(tmp_path: Path) -> None:
    run = Run(env_dir=tmp_path, root=tmp_path / "r", port=1, release=RELEASES["0.26.0"])
    tp1, restart = RELEASE_SCENARIOS[0], RELEASE_SCENARIOS[-1]
    text = notes_text(run, tp1, ["- first", "- second"])
    assert "\n## What happened\n\n- first\n- second\n\n## Files\n" in text
    assert "Run as `vllm-evidence launch --receipt launch-receipt.json" in text
    assert "Run as `vllm-evidence launch" not in notes_text(run, restart, [])


@pytest.mark.parametrize(
    ("version", "heads"), [("0.32.0", "4 heads of 16"), ("0.8.5", "2 heads of 32")]
)
def test_the_model_line_names_the_releases_head_size(version: str, heads: str) -> None:
    line = model_note(RELEASES[version], RELEASE_SCENARIOS[0])
    assert f"2 layers, {heads}, 2 KV heads" in line
    assert "Gemma" not in line


def test_the_hybrid_models_line_names_its_layers() -> None:
    hybrid = next(s for s in SHAPE_SCENARIOS if s.model == "tiny-gemma3")
    line = model_note(RELEASES["0.32.0"], hybrid)
    assert "`sliding_attention`, `sliding_attention`, `full_attention`" in line


def test_each_command_in_0_32_0s_readme_is_the_scenarios_neutral_command(tmp_path: Path) -> None:
    committed = (REAL / "vllm-0.32.0-cpu" / "README.md").read_text(encoding="utf-8")
    blocks = dict(re.findall(r"^### `([\w-]+)/`\n\n.*?\n\n```\n(.*?)\n```", committed, re.M | re.S))
    run = Run(env_dir=tmp_path / "venv", root=tmp_path / "run", port=1)
    every = SCENARIOS + LIFECYCLE_SCENARIOS + SHAPE_SCENARIOS
    assert sorted(blocks) == sorted(s.name for s in every)
    assert {s.name: run.neutral_command(s) for s in every} == blocks
    ours = dict(
        re.findall(r"^### `([\w-]+)/`\n\n.*?\n\n```\n(.*?)\n```", readme_text(run), re.M | re.S)
    )
    assert ours == blocks


# ---------------------------------------------------------------- clean


@pytest.fixture
def run(tmp_path: Path) -> Run:
    return Run(env_dir=tmp_path / "venv", root=tmp_path / "run", port=1, api_key=KEY)


def test_a_recording_of_neutral_text_is_clean(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "with-key").mkdir(parents=True)
    (out / "version.body").write_text('{"version":"0.32.0"}', encoding="utf-8")
    (out / "with-key" / "startup.log").write_text("/models/tiny-llama '***'\n", encoding="utf-8")
    assert unclean(run, out) == []
    verify_clean(run, out)


def test_the_key_or_a_machine_path_in_any_file_is_found(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "with-key").mkdir(parents=True)
    (out / "with-key" / "v1_models.headers").write_bytes(f"x: Bearer {KEY}\r\n".encode())
    (out / "startup.log").write_bytes(f"--model {run.root}/models/tiny-llama\n".encode())
    found = unclean(run, out)
    assert f"with-key/v1_models.headers: {KEY!r}" in found
    assert f"startup.log: {str(run.root)!r}" in found
    with pytest.raises(LiveTierError, match="recorded files are not clean"):
        verify_clean(run, out)


def test_the_host_name_is_looked_for_in_another_releases_recording(tmp_path: Path) -> None:
    host = socket.gethostname()
    out = tmp_path / "out"
    out.mkdir()
    (out / "launch-receipt.json").write_text(f'{{"host": "{host}"}}', encoding="utf-8")
    own = Run(env_dir=tmp_path / "v", root=tmp_path / "r", port=1)
    other = Run(env_dir=tmp_path / "v", root=tmp_path / "r", port=1, release=RELEASES["0.26.0"])
    assert unclean(own, out) == []
    assert "launch-receipt.json: the host name" in unclean(other, out)
    assert "launch-receipt.json: the host name" in unclean(own, out, host=True)


def test_the_host_in_a_product_document_is_the_neutral_one() -> None:
    host = json.dumps(socket.gethostname())
    document = f'{{"host": {host}, "other": {host}}}'.encode()
    assert neutral_host(document) == f'{{"host": "recorder", "other": {host}}}'.encode()
    assert neutral_host(b'{"host": "elsewhere-host-x"}') == b'{"host": "elsewhere-host-x"}'
