"""Capture directories: round trip, tamper refusal, bare bodies, and `explain`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests._evidence import front_door_join
from tests._paths import REAL
from tests.test_adapters import REAL_CACHE_CONFIG_LABELS
from vllm_evidence.adapters.outcome import NotFound, Parsed
from vllm_evidence.capture.directory import MANIFEST, save
from vllm_evidence.capture.http import probe_sync
from vllm_evidence.cli import main
from vllm_evidence.decisions import JoinedIncarnation, JoinReason
from vllm_evidence.errors import CaptureIntegrityError, InputError
from vllm_evidence.output.front_door import front_door_document
from vllm_evidence.readback import CapturedReadback, HistoricalBundle, load, readback_from_batch
from vllm_evidence.testing.stub import Fault, serve_capture
from vllm_evidence.upstream.routes import Route


def _observations(readback: CapturedReadback | HistoricalBundle) -> dict[str, object]:
    doc = front_door_document(readback, front_door_join(readback))
    return {"routes": doc["routes"], "observations": doc["observations"], "join": doc["join"]}


def test_probe_save_load_round_trip(tmp_path: Path) -> None:
    faults = {Route.GET_WORLD_SIZE: Fault(status=404, body=b'{"detail":"Not Found"}')}
    with serve_capture(REAL, faults=faults) as door:
        batch = probe_sync(door.url)
    original = readback_from_batch(batch)
    saved = save(batch, tmp_path / "capture")
    loaded = load(saved)
    assert isinstance(loaded, CapturedReadback)
    assert loaded == original
    assert _observations(loaded) == _observations(original)
    assert isinstance(loaded.world_size, NotFound)
    assert isinstance(front_door_join(loaded), JoinedIncarnation)
    manifest = json.loads((saved / MANIFEST).read_text())
    assert manifest["schema"] == "vllm-evidence/capture-manifest/1"
    assert manifest["batch_id"] == batch.batch_id
    assert manifest["target"] == door.url
    assert (saved / "metrics.body").read_bytes() == (REAL / "metrics.body").read_bytes()
    assert (saved / "version.headers").read_text().startswith("HTTP/1.1 200 OK\n")
    assert [p.name for p in tmp_path.iterdir()] == ["capture"]  # no staging left behind


def test_flipped_byte_refuses_to_load(tmp_path: Path) -> None:
    with serve_capture(REAL) as door:
        saved = save(probe_sync(door.url), tmp_path / "capture")
    body = bytearray((saved / "v1_models.body").read_bytes())
    body[10] ^= 0x01
    (saved / "v1_models.body").write_bytes(bytes(body))
    with pytest.raises(CaptureIntegrityError, match=r"v1_models\.body: SHA-256"):
        load(saved)


def test_save_refuses_an_existing_directory(tmp_path: Path) -> None:
    with serve_capture(REAL) as door:
        batch = probe_sync(door.url, development_routes=False)
    (tmp_path / "exists").mkdir()
    with pytest.raises(InputError, match="already exists"):
        save(batch, tmp_path / "exists")


def test_bare_directory_is_a_historical_bundle() -> None:
    loaded = load(REAL)
    assert isinstance(loaded, HistoricalBundle)
    assert front_door_join(loaded).reason is JoinReason.CALLER_ASSEMBLED
    assert isinstance(loaded.version, Parsed)
    assert isinstance(loaded.health, Parsed)
    assert loaded.health.observation.status == 200
    assert isinstance(loaded.server_info_json, Parsed)


def test_bare_directory_keeps_a_saved_404(tmp_path: Path) -> None:
    (tmp_path / "get_world_size.body").write_bytes(b'{"detail":"Not Found"}')
    (tmp_path / "get_world_size.headers").write_text("HTTP/1.1 404 Not Found\n")
    (tmp_path / "version.body").write_bytes(b'{"version":"0.20.0"}')
    loaded = load(tmp_path)
    assert isinstance(loaded, HistoricalBundle)
    assert isinstance(loaded.world_size, NotFound)
    assert isinstance(loaded.version, Parsed)
    assert loaded.version.observation.raw == "0.20.0"


def test_empty_directory_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no manifest\.json"):
        load(tmp_path)


def test_explain_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(REAL), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "vllm-evidence.assessment/1"
    assert doc["observations"]["version"] == "0.32.0"
    assert doc["observations"]["metrics"]["cache_config_info"] == [
        {"labels": REAL_CACHE_CONFIG_LABELS, "value": "1.0"}
    ]
    assert doc["observations"]["models"] == [
        {
            "id": "tiny-llama:q4-alias",
            "owned_by": "vllm",
            "root": "/models/tiny-llama",
            "parent": None,
            "max_model_len": 2048,
        }
    ]
    assert doc["observations"]["server_info"]["parallel"]["tensor_parallel_size"] == 1
    assert doc["observations"]["server_info"]["parallel"]["distributed_executor_backend"] == "mp"
    assert doc["front_door"]["join"] == {
        "established": False,
        "reason": "caller_assembled",
        "detail": "bodies supplied by a caller were not read in one bracketed batch",
    }


def test_explain_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(REAL)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("vLLM 0.32.0\n")
    assert "engine 0: 4,194,304 tokens" in out
    assert "front-door join        REFUSED      caller_assembled" in out


def test_explain_refuses_tampered_capture_with_exit_2(tmp_path: Path) -> None:
    with serve_capture(REAL) as door:
        saved = save(probe_sync(door.url), tmp_path / "capture")
    (saved / "metrics.body").write_bytes(b"process_start_time_seconds 1\n")
    result = subprocess.run(
        [sys.executable, "-m", "vllm_evidence", "explain", str(saved), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "SHA-256" in result.stderr
    assert "Traceback" not in result.stderr


def test_explain_missing_directory_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explain", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "not a directory" in err
