"""The published JSON Schemas: every document the suite produces validates against its
schema, a document missing a key does not, and each schema file is pinned with its
version (a change without a version bump fails).

The pins live in ``tests/golden/schemas.json``.  After a deliberate schema change, bump
the version (the ``schema`` const and ``x-vllm-evidence-schema``), note it in CHANGELOG,
and re-record with ``VLLM_EVIDENCE_RECORD_GOLDEN=1 pytest tests/test_schemas.py``;
recording refuses a changed schema whose version did not change.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from packaging.version import Version

from tests.golden.test_golden_outputs import BARE, LOGS, OUTPUTS, SERVERS
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._audit import Installed, RouteTable, audit
from vllm_evidence._capture.directory import MANIFEST, manifest_document
from vllm_evidence._output.assessment import assessment_document, server_document
from vllm_evidence._output.audit import audit_document
from vllm_evidence._output.startup_log import startup_log_document
from vllm_evidence._readback import historical_bundle, load
from vllm_evidence.cli import main
from vllm_evidence.serialize import SCHEMA_NAMES, schema
from vllm_evidence.testing._strategies import (
    CaptureDirectory,
    assessments,
    capture_directories,
    read_startup_logs,
)
from vllm_evidence.upstream import READ_RELEASES, laws_for

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "vllm_evidence" / "schemas"
PINS = Path(__file__).resolve().parents[1] / "golden" / "schemas.json"
RECORD = os.environ.get("VLLM_EVIDENCE_RECORD_GOLDEN") == "1"


def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(schema(name))


def _assert_valid(name: str, document: object) -> None:
    error = best_match(_validator(name).iter_errors(document))
    assert error is None, f"{list(error.absolute_path)}: {error.message[:500]}"


def _run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main(argv)
    return status, out.getvalue()


# --- the schema files -----------------------------------------------------------------


def test_the_schema_names_are_exactly_the_shipped_files() -> None:
    assert sorted(p.stem for p in SCHEMAS.glob("*.json")) == sorted(SCHEMA_NAMES)


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_each_schema_is_a_valid_draft_2020_12_schema(name: str) -> None:
    document = schema(name)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(document)


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_the_version_names_the_documents_schema_field(name: str) -> None:
    """``x-vllm-evidence-schema`` is the ``schema`` value every document of it carries."""
    document = schema(name)
    version = document["x-vllm-evidence-schema"]
    assert version in json.dumps(document["$defs"]) or version in json.dumps(document)
    assert document["$id"].endswith(":" + version.rpartition("/")[2])


def _pins() -> dict[str, dict[str, str]]:
    pins: dict[str, dict[str, str]] = json.loads(PINS.read_text(encoding="utf-8"))
    return pins


def _current(name: str) -> dict[str, str]:
    raw = (SCHEMAS / f"{name}.json").read_bytes()
    return {
        "version": json.loads(raw)["x-vllm-evidence-schema"],
        "sha256": hashlib.sha256(raw).hexdigest(),
    }


def test_each_schema_is_pinned_with_its_version() -> None:
    """A schema whose bytes change must change its version too (and be re-pinned)."""
    pins = _pins() if PINS.exists() else {}
    current = {name: _current(name) for name in SCHEMA_NAMES}
    for name, now in current.items():
        pinned = pins.get(name)
        if pinned is not None and pinned["sha256"] != now["sha256"]:
            assert pinned["version"] != now["version"], (
                f"schemas/{name}.json changed but its version is still {now['version']}: "
                "bump it (the schema const and x-vllm-evidence-schema) and note it in CHANGELOG"
            )
    if RECORD:
        PINS.write_text(json.dumps(current, indent=2) + "\n", encoding="utf-8")
        pins = current
    assert pins == current, "schema pins differ: re-record (see the module docstring)"


def test_a_changed_schema_without_a_version_bump_is_refused(tmp_path: Path) -> None:
    """The pin is not vacuous: one edited description, same version, differs."""
    name = "laws"
    edited = json.loads((SCHEMAS / f"{name}.json").read_text(encoding="utf-8"))
    edited["description"] += " (edited)"
    raw = (json.dumps(edited, indent=2, ensure_ascii=False) + "\n").encode()
    assert hashlib.sha256(raw).hexdigest() != _pins()[name]["sha256"]
    assert edited["x-vllm-evidence-schema"] == _pins()[name]["version"]


def test_an_unknown_name_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        schema("manifest")


# --- the command ----------------------------------------------------------------------


def test_schema_command_pipes_into_json_tool() -> None:
    cli = subprocess.run(
        [sys.executable, "-m", "vllm_evidence", "schema", "assessment"],
        capture_output=True,
        check=True,
    )
    tool = subprocess.run(
        [sys.executable, "-m", "json.tool"], input=cli.stdout, capture_output=True, check=True
    )
    assert json.loads(tool.stdout) == schema("assessment")


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_schema_command_prints_the_shipped_file(name: str) -> None:
    status, out = _run(["schema", name])
    assert status == 0
    assert json.loads(out) == json.loads((SCHEMAS / f"{name}.json").read_text(encoding="utf-8"))


def test_schema_command_refuses_an_unknown_name_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["schema", "nope"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert "unknown schema 'nope'" in captured.err
    assert "assessment" in captured.err


def test_schema_help_lists_every_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["schema", "--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in SCHEMA_NAMES)


# --- every golden output --------------------------------------------------------------


def _golden_documents() -> Iterator[tuple[str, str, Any]]:
    for path in sorted(OUTPUTS.rglob("*.json")):
        kind = path.parent.name
        name = {"log": "startup-log", "laws": "laws"}.get(kind, "assessment")
        text = path.read_text(encoding="utf-8").split("\n", 1)[1].rsplit("--- stderr", 1)[0]
        yield path.relative_to(OUTPUTS).as_posix(), name, json.loads(text)


GOLDEN = list(_golden_documents())


def test_there_are_golden_documents_of_every_cli_kind() -> None:
    assert {name for _, name, _ in GOLDEN} == {"assessment", "startup-log", "laws"}


@pytest.mark.parametrize(("path", "name", "document"), GOLDEN, ids=[g[0] for g in GOLDEN])
def test_every_golden_json_output_validates(path: str, name: str, document: Any) -> None:
    _assert_valid(name, document)


# --- every fixture through the commands -----------------------------------------------


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_log_json_of_every_fixture_validates(log: Path) -> None:
    status, out = _run(["log", str(log), "--json"])
    assert status == 0
    _assert_valid("startup-log", json.loads(out))


@pytest.mark.parametrize("directory", BARE, ids=lambda p: p.name)
def test_explain_json_of_every_fixture_validates(directory: Path) -> None:
    status, out = _run(["explain", str(directory), "--bodies", "--json"])
    assert status == 0
    _assert_valid("assessment", json.loads(out))
    if (directory / "startup.log").exists():
        argv = [
            "explain",
            str(directory),
            "--bodies",
            "--json",
            "--startup-log",
            str(directory / "startup.log"),
        ]
        _assert_valid("assessment", json.loads(_run(argv)[1]))


def test_a_probe_of_several_servers_validates_line_by_line() -> None:
    bundle = load(SERVERS[0], bodies=True)
    from vllm_evidence._assessment import assess

    _assert_valid("assessment", server_document("http://a:8000", assess(bundle)))
    _assert_valid("assessment", server_document("http://b:8000", "connection refused"))


@pytest.mark.parametrize(
    "release",
    [
        None,
        *(str(r.version) for r in READ_RELEASES),
        "0.1.0",  # before every read release
        "99.0",  # after
        "0.10.1.1",  # between read releases: some questions not established
    ],
)
def test_laws_json_validates(release: str | None) -> None:
    argv = ["laws", "--json", *(["--version", release] if release else [])]
    status, out = _run(argv)
    assert status == 0
    _assert_valid("laws", json.loads(out))


def _installed(version: str) -> Installed:
    from tests.audit.test_audit import ALWAYS, DEV_ONLY, ONE_LINE_SOURCE, _labels_law

    return Installed(
        version=version,
        cache_config_labels=_labels_law().labels,
        capacity_source=ONE_LINE_SOURCE,
        executor_backends=("ray", "mp", "uni", "external_launcher"),
        dev_routes=RouteTable(frozenset(ALWAYS | DEV_ONLY), "test"),
        plain_routes=RouteTable(frozenset(ALWAYS), "test"),
    )


@pytest.mark.parametrize("version", ["0.32.0", "0.10.1.1", "99.0"])
def test_audit_document_validates(version: str) -> None:
    findings = audit(laws_for(Version(version)), _installed(version))
    _assert_valid("audit", json.loads(json.dumps(audit_document(version, findings))))


def _saved_manifest(directory: Path, tmp_path: Path) -> Any:
    from vllm_evidence._capture.directory import save
    from vllm_evidence._capture.http import probe_sync
    from vllm_evidence.testing._stub import serve_capture

    served = directory / "with-key" if (directory / "with-key").is_dir() else directory
    with serve_capture(served) as door:
        batch = probe_sync(door.url)
    saved = save(batch, tmp_path / "saved")
    return json.loads((saved / MANIFEST).read_text(encoding="utf-8"))


@pytest.mark.parametrize("directory", SERVERS, ids=lambda p: p.name)
def test_a_saved_manifest_validates(directory: Path, tmp_path: Path) -> None:
    _assert_valid("capture-manifest", _saved_manifest(directory, tmp_path))


# --- generated captures ---------------------------------------------------------------

_SLOW = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SLOW
@given(capture_directories())
def test_generated_captures_validate(capture: CaptureDirectory) -> None:
    from vllm_evidence._assessment import assess

    bundle = historical_bundle(capture.bodies, statuses=capture.statuses)
    log = None
    if capture.startup_log is not None:
        read = read_startup_log(io.BytesIO(capture.startup_log))
        log = read if isinstance(read, StartupLog) else None
    document = assessment_document(assess(bundle, log))
    _assert_valid("assessment", json.loads(json.dumps(document)))
    if log is not None:
        _assert_valid("startup-log", json.loads(json.dumps(startup_log_document(log))))


@_SLOW
@given(assessments())
def test_generated_assessments_validate(assessment: Any) -> None:
    _assert_valid("assessment", json.loads(json.dumps(assessment_document(assessment))))


@_SLOW
@given(read_startup_logs())
def test_generated_startup_logs_validate(log: Any) -> None:
    _assert_valid("startup-log", json.loads(json.dumps(startup_log_document(log))))


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(capture_directories(startup_log=False))
def test_generated_probes_and_manifests_validate(capture: CaptureDirectory) -> None:
    from vllm_evidence._assessment import assess
    from vllm_evidence._capture.http import probe_sync
    from vllm_evidence._readback import readback_from_batch
    from vllm_evidence.testing._stub import serve_capture

    with (
        tempfile.TemporaryDirectory(prefix="vllm-evidence-schema-") as tmp,
        serve_capture(capture.write(tmp)) as door,
    ):
        batch = probe_sync(door.url, timeout=5.0, deadline=10.0)
    _assert_valid("capture-manifest", json.loads(json.dumps(manifest_document(batch))))
    document = assessment_document(assess(readback_from_batch(batch)))
    _assert_valid("assessment", json.loads(json.dumps(document)))


# --- the schemas are not vacuous ------------------------------------------------------


def _delete(document: Any, path: tuple[str | int, ...]) -> Any:
    edited = copy.deepcopy(document)
    parent = edited
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    return edited


def _golden(path: str) -> Any:
    return next(document for p, _, document in GOLDEN if p == path)


_ASSESSMENT = "explain/real-vllm-0.32.0-cpu-tp2-devmode.json"
_PROBE = "probe/real-vllm-0.32.0-cpu-tp2-devmode.log.json"


@pytest.mark.parametrize(
    ("name", "source", "path"),
    [
        ("assessment", _ASSESSMENT, ("schema",)),
        ("assessment", _ASSESSMENT, ("decisions", "parallel", "verdict")),
        ("assessment", _ASSESSMENT, ("decisions", "capacity", "laws", 0, "statement")),
        ("assessment", _ASSESSMENT, ("observations", "startup_log")),
        ("assessment", _PROBE, ("front_door", "routes", "metrics", "outcome")),
        ("assessment", _PROBE, ("front_door", "source", "requests", 0, "sha256")),
        ("assessment", _PROBE, ("observations", "startup_log", "launches", 0, "ranks")),
        ("startup-log", "log/real-vllm-0.32.0-cpu-tp2-devmode-startup.json", ("sha256",)),
        (
            "startup-log",
            "log/real-vllm-0.32.0-cpu-tp2-devmode-startup.json",
            ("launches", 0, "capacity", 0, "tokens"),
        ),
        ("laws", "laws/laws.json", ("read_releases",)),
        ("laws", "laws/laws.json", ("questions", 0, "laws", 0, "gate")),
    ],
)
def test_a_document_missing_a_required_key_fails(
    name: str, source: str, path: tuple[str | int, ...]
) -> None:
    document = _golden(source)
    _assert_valid(name, document)
    assert not _validator(name).is_valid(_delete(document, path))


def test_a_law_of_one_kind_with_another_kinds_key_fails() -> None:
    """The law union is tagged: a route law carrying a capacity law's key matches no
    variant."""
    document = copy.deepcopy(_golden("laws/laws.json"))
    route_law = document["questions"][0]["laws"][0]
    assert route_law["question"].startswith("route.")
    route_law["authority"] = "authoritative"
    assert not _validator("laws").is_valid(document)


def test_a_decision_with_a_verdict_outside_its_union_fails() -> None:
    document = copy.deepcopy(_golden(_ASSESSMENT))
    document["decisions"]["parallel"]["verdict"] = "reported"  # only capacity reports
    assert not _validator("assessment").is_valid(document)


def test_a_manifest_missing_a_required_key_fails(tmp_path: Path) -> None:
    manifest = _saved_manifest(SERVERS[0], tmp_path)
    _assert_valid("capture-manifest", manifest)
    assert not _validator("capture-manifest").is_valid(_delete(manifest, ("requests", 0, "size")))
