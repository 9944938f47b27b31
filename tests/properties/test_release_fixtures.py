"""Every committed real fixture is complete and clean, checked without the product.

A real fixture is ``tests/fixtures/real/vllm-X-cpu/<scenario>/`` as ``scripts/live-vllm
record [--release X]`` writes it: every route's ``<stem>.body`` and ``<stem>.headers``, the
``startup.log`` and ``scenario.json`` (a restart: ``first/``, ``second/`` and
``sequence.txt``), and for the releases other than 0.32.0 also ``NOTES.md`` with the launch
command, the product's saved capture (``capture/``, its manifest's digests and seal
true), its probe documents and, for a launched scenario, the launch receipt.

Clean: no file names this machine (user, host, home, the repository, temporary or
virtual-environment paths) or holds an API key the recorder made.

When ``VLLM_EVIDENCE_LIVE_CAPTURES`` names a ``vllm-X-cpu`` directory (``scripts/live-vllm
check --release X`` sets it to captures it has just recorded), that directory is checked
instead of the committed ones.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
STEMS = (
    "version",
    "v1_models",
    "metrics",
    "server_info",
    "server_info__config_format_json",
    "get_world_size",
    "health",
)
RELEASE_DIR = re.compile(r"^vllm-(\d+\.\d+\.\d+(?:\.\d+)?)-cpu$")
HOST_NEUTRAL = "recorder"

#: What no recorded file may hold: this machine's paths, a temporary directory that was not
#: neutralised to /var/tmp, another user's home or inductor cache, a recorder's API key or
#: its working directory.
#: Where the repository sits on the machine running this and that machine's home: named
#: at run time, so no machine's layout is written into the test.
WORKSPACE = Path(__file__).resolve().parents[2]
HOME = Path.home()
UNCLEAN = re.compile(
    re.escape(f"{WORKSPACE}/".encode())
    + rb"|(?<![\w.-])/tmp/"
    + rb"|(?<![\w.-])"
    + re.escape(str(HOME).encode())
    + rb"(?![\w-])"
    + rb"|/home/(?!vllm(?![\w-]))[\w.-]+"
    + rb"|torchinductor_(?!vllm(?![\w-]))[\w.-]+"
    + rb"|live-tier-key-"
    + rb"|live-vllm-"
)


def _roots() -> list[Path]:
    fresh = os.environ.get("VLLM_EVIDENCE_LIVE_CAPTURES")
    if fresh and RELEASE_DIR.match(Path(fresh).name):
        return [Path(fresh)]
    return sorted(p for p in REAL.iterdir() if RELEASE_DIR.match(p.name))


def _scenarios() -> list[Path]:
    return sorted(d for root in _roots() for d in root.iterdir() if (d / "scenario.json").is_file())


SCENARIOS = _scenarios()


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


# ------------------------------------------------------------------ the rules


def missing_files(scenario: Path) -> list[str]:
    """The files of the fixture format that ``scenario`` lacks."""
    doc = json.loads((scenario / "scenario.json").read_text(encoding="utf-8"))
    need: list[str] = []
    if doc.get("restart"):
        need += ["sequence.txt", "first/metrics.body", "first/metrics.headers"]
        need += ["first/startup.log", "second/startup.log"]
        need += [f"second/{stem}.{ext}" for stem in STEMS for ext in ("body", "headers")]
    elif doc.get("lifecycle") == "failed-startup":
        need += ["startup.log"]  # the server never listened: no route was read
    elif doc.get("lifecycle") == "gate-canary":  # the gate's reads only, its canary's
        need += ["startup.log", "ready-before.json", "ready-after.json", "gate-after.txt"]
        need += ["gate-metrics-before.txt"]
    else:
        need += ["startup.log"]
        need += [f"{stem}.{ext}" for stem in STEMS for ext in ("body", "headers")]
        if doc.get("lifecycle") == "gate-worker-kill":  # the gate's reads, not a probe's
            need += ["ready-before.json", "ready-after.json", "gate-after.txt"]
            need += ["gate-metrics-before.txt", "gate-metrics-after.txt"]
        elif doc.get("lifecycle"):
            need += ["probe-before.json"]
        if doc.get("lifecycle") == "keepalive-engine-death":
            need += [f"after-death/{stem}.{ext}" for stem in STEMS for ext in ("body", "headers")]
            need += ["probe-after-death.json"]
        if "recipe" in doc:
            need += ["capture/manifest.json", "probe.json", "witnessed-probe.json"]
    if "recipe" in doc:
        need += ["NOTES.md"]
    if doc.get("launched"):
        need += ["launch-receipt.json"]
    return [name for name in need if not (scenario / name).is_file()]


def unclean(data: bytes) -> list[str]:
    """What in ``data`` names the recording machine or a secret."""
    return sorted({m.group(0).decode("utf-8", "replace") for m in UNCLEAN.finditer(data)})


def capture_faults(capture: Path) -> list[str]:
    """Where a saved capture's files or seal disagree with its manifest (recomputed here
    with hashlib, not with the product's reader)."""
    doc = json.loads((capture / "manifest.json").read_text(encoding="utf-8"))
    faults: list[str] = []
    for entry in doc["requests"]:
        if entry.get("body_file"):
            body = (capture / entry["body_file"]).read_bytes()
            if hashlib.sha256(body).hexdigest() != entry["sha256"] or len(body) != entry["size"]:
                faults.append(entry["body_file"])
        if entry.get("headers_file"):
            head = (capture / entry["headers_file"]).read_bytes()
            if hashlib.sha256(head).hexdigest() != entry["headers_sha256"]:
                faults.append(entry["headers_file"])
    unsealed = {k: v for k, v in doc.items() if k != "seal"}
    canonical = json.dumps(unsealed, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    if hashlib.sha256(canonical.encode()).hexdigest() != doc["seal"]["canonical_sha256"]:
        faults.append("seal")
    return faults


# ------------------------------------------------------------------ the fixtures


def test_there_are_release_fixtures() -> None:
    assert SCENARIOS, f"no scenario directories under {_roots()}"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=_id)
def test_every_fixture_is_complete(scenario: Path) -> None:
    assert missing_files(scenario) == []


@pytest.mark.parametrize("scenario", SCENARIOS, ids=_id)
def test_every_fixture_is_clean(scenario: Path) -> None:
    found = {
        str(path.relative_to(scenario)): bad
        for path in sorted(scenario.rglob("*"))
        if path.is_file() and (bad := unclean(path.read_bytes()))
    }
    assert found == {}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=_id)
def test_scenario_json_names_its_directory_and_release(scenario: Path) -> None:
    doc = json.loads((scenario / "scenario.json").read_text(encoding="utf-8"))
    match = RELEASE_DIR.match(scenario.parent.name)
    assert match is not None
    assert (doc["scenario"], doc["vllm_version"]) == (scenario.name, match.group(1))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=_id)
def test_version_route_gives_the_directorys_release(scenario: Path) -> None:
    match = RELEASE_DIR.match(scenario.parent.name)
    assert match is not None
    for body in sorted(scenario.rglob("version.body")):
        if body.parent.name == "capture":
            continue
        assert json.loads(body.read_bytes()) == {"version": match.group(1)}
        assert body.with_suffix(".headers").read_bytes().split(b" ")[1] == b"200"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=_id)
def test_every_headers_file_states_its_bodys_length(scenario: Path) -> None:
    # The recorder's raw reads end each line with CRLF; the product's saved capture
    # (capture/) writes its own headers files with LF.
    for head_path in sorted(scenario.rglob("*.headers")):
        head = head_path.read_bytes()
        assert head.startswith(b"HTTP/1."), head_path
        if head_path.parent.name != "capture":
            assert head.endswith(b"\r\n\r\n"), head_path
        length = re.search(rb"(?im)^content-length:\s*(\d+)\r?$", head)
        body = head_path.with_suffix(".body")
        if length is not None and body.exists():
            assert int(length.group(1)) == len(body.read_bytes()), head_path


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if (s / "NOTES.md").exists()], ids=_id)
def test_notes_give_the_exact_launch_command(scenario: Path) -> None:
    doc = json.loads((scenario / "scenario.json").read_text(encoding="utf-8"))
    assert doc["command"] in (scenario / "NOTES.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "scenario", [s for s in SCENARIOS if (s / "capture" / "manifest.json").exists()], ids=_id
)
def test_saved_capture_matches_its_manifest_and_seal(scenario: Path) -> None:
    assert capture_faults(scenario / "capture") == []


@pytest.mark.parametrize(
    "scenario", [s for s in SCENARIOS if (s / "launch-receipt.json").exists()], ids=_id
)
def test_launch_receipt_names_the_neutral_host(scenario: Path) -> None:
    receipt = json.loads((scenario / "launch-receipt.json").read_text(encoding="utf-8"))
    assert receipt["host"] == HOST_NEUTRAL
    assert isinstance(receipt["pid"], int)


# ------------------------------------------------------------------ the rules, both ways


@pytest.mark.parametrize(
    "data",
    [
        f"{WORKSPACE}/x".encode(),
        b"root=/tmp/abc",
        f'"{HOME}/.cache"'.encode(),
        f"HOME={HOME}\n".encode(),
        b"/home/alice/.cache",
        b"torchinductor_alice",
        b"key live-tier-key-0123",
        b"/var/tmp/live-vllm-abc/models",
    ],
)
def test_unclean_finds_a_machine_name(data: bytes) -> None:
    assert unclean(data) != []


@pytest.mark.parametrize(
    "data",
    [
        b"/var/tmp/torchinductor_vllm",
        b"/home/vllm/.cache/vllm",
        b'"root": "/models/tiny-llama"',
        b"/opt/venv/lib/python3.11/site-packages",
        b"rootfs /workers/",
    ],
)
def test_unclean_passes_neutral_names(data: bytes) -> None:
    assert unclean(data) == []


def _write_fixture(directory: Path, doc: dict[str, object], files: list[str]) -> None:
    directory.mkdir(parents=True)
    (directory / "scenario.json").write_text(json.dumps(doc), encoding="utf-8")
    for name in files:
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_bytes(b"x")


def test_missing_files_names_what_a_release_fixture_lacks(tmp_path: Path) -> None:
    everything = [f"{s}.{e}" for s in STEMS for e in ("body", "headers")]
    everything += ["startup.log", "capture/manifest.json", "probe.json"]
    everything += ["witnessed-probe.json", "NOTES.md", "launch-receipt.json"]
    doc: dict[str, object] = {"scenario": "tp1", "recipe": "plain", "launched": True}
    _write_fixture(tmp_path / "full", doc, everything)
    assert missing_files(tmp_path / "full") == []
    _write_fixture(
        tmp_path / "short", doc, [f for f in everything if f not in ("NOTES.md", "health.body")]
    )
    assert missing_files(tmp_path / "short") == ["health.body", "NOTES.md"]


def test_missing_files_asks_a_restart_for_both_processes(tmp_path: Path) -> None:
    doc: dict[str, object] = {"scenario": "restart", "restart": True}
    _write_fixture(tmp_path / "r", doc, ["sequence.txt", "first/metrics.body"])
    missing = missing_files(tmp_path / "r")
    assert "first/metrics.headers" in missing
    assert "second/health.body" in missing
    assert "sequence.txt" not in missing


def test_capture_faults_finds_an_edited_body_and_a_stale_seal(tmp_path: Path) -> None:
    body = b'{"version":"0.0.0"}'
    head = b"HTTP/1.1 200 OK\r\n\r\n"
    doc: dict[str, object] = {
        "requests": [
            {
                "body_file": "version.body",
                "headers_file": "version.headers",
                "sha256": hashlib.sha256(body).hexdigest(),
                "size": len(body),
                "headers_sha256": hashlib.sha256(head).hexdigest(),
            }
        ]
    }
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    doc["seal"] = {"canonical_sha256": hashlib.sha256(canonical.encode()).hexdigest()}
    (tmp_path / "manifest.json").write_text(json.dumps(doc), encoding="utf-8")
    (tmp_path / "version.body").write_bytes(body)
    (tmp_path / "version.headers").write_bytes(head)
    assert capture_faults(tmp_path) == []
    (tmp_path / "version.body").write_bytes(body.replace(b"0.0.0", b"9.9.9"))
    assert capture_faults(tmp_path) == ["version.body"]
    doc["target"] = "edited"
    (tmp_path / "manifest.json").write_text(json.dumps(doc), encoding="utf-8")
    assert capture_faults(tmp_path) == ["version.body", "seal"]
