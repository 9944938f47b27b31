"""Capture directories: round trip, tamper refusal, bare bodies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._evidence import front_door_join
from tests._paths import REAL
from vllm_evidence._adapters.outcome import NotFound, Parsed
from vllm_evidence._capture.directory import MANIFEST, save
from vllm_evidence._capture.http import probe_sync
from vllm_evidence._output.front_door import front_door_document
from vllm_evidence._readback import CapturedReadback, HistoricalBundle, load, readback_from_batch
from vllm_evidence.decisions import JoinedIncarnation, JoinReason
from vllm_evidence.errors import CaptureIntegrityError, InputError
from vllm_evidence.testing._stub import Fault, serve_capture
from vllm_evidence.upstream._routes import Route


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
    assert manifest["schema"] == "vllm-evidence/capture-manifest/3"
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
    loaded = load(REAL, bodies=True)
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
    loaded = load(tmp_path, bodies=True)
    assert isinstance(loaded, HistoricalBundle)
    assert isinstance(loaded.world_size, NotFound)
    assert isinstance(loaded.version, Parsed)
    assert loaded.version.observation.raw == "0.20.0"


def test_empty_directory_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no manifest\.json"):
        load(tmp_path)
