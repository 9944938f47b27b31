"""Re-derivation is the only way back: ``rederive.dumps``/``loads`` and pickling.

Every value that comes back — from a document or from another process — is derived
again from raw bytes; a stored decision is only ever a check.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import multiprocessing
import pickle
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vllm_evidence
from vllm_evidence import (
    Assessment,
    StartupLog,
    assess,
    load,
    probe_sync,
    read_startup_log,
    readback_from_batch,
)
from vllm_evidence._readback import CapturedReadback, HistoricalBundle
from vllm_evidence._rederive import MAX_DEPTH, SCHEMA, dumps, loads
from vllm_evidence.errors import (
    CaptureIntegrityError,
    EvidenceError,
    EvidenceMismatchError,
    InputError,
)
from vllm_evidence.testing._strategies import (
    assessments,
    capture_directories,
    historical_bundles,
    startup_logs,
)
from vllm_evidence.testing._stub import serve_capture

DEMO = Path(vllm_evidence.__file__).parent / "demo_data" / "vllm-0.32.0-cpu-tp2-devmode"
SECRET = "sk-rederive-test-0123456789abcdef"  # noqa: S105  # a test key, asserted absent


def _read_log(path: Path) -> StartupLog:
    log = read_startup_log(path)
    assert isinstance(log, StartupLog), log
    return log


@pytest.fixture(scope="module")
def readback() -> CapturedReadback:
    """One real probe of the stub front door serving the demo capture."""
    with serve_capture(DEMO) as door:
        return readback_from_batch(probe_sync(door.url))


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    """A copy of the demo startup log that a test may change."""
    path = tmp_path / "startup.log"
    shutil.copyfile(DEMO / "startup.log", path)
    return path


@pytest.fixture
def captured(readback: CapturedReadback, log_path: Path) -> Assessment:
    return assess(readback, _read_log(log_path))


def _unpickle(data: bytes) -> Any:
    return pickle.loads(data)  # noqa: S301  # bytes this test pickled itself


def _document(text: str) -> dict[str, Any]:
    value = json.loads(text)
    assert isinstance(value, dict)
    return value


def _flip(data: bytes, index: int) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1 :]


# --------------------------------------------------------------------------------------
# Round trips


def test_a_captured_assessment_round_trips_with_the_log_by_reference(
    captured: Assessment,
) -> None:
    text = dumps(captured)
    document = _document(text)
    assert document["schema"] == SCHEMA
    assert document["front_door"]["kind"] == "captured"
    assert len(document["front_door"]["exchanges"]) == len(
        captured.evidence.front_door.batch.all_exchanges()  # type: ignore[union-attr]
    )
    assert document["startup_log"]["embedded"] is None
    assert document["launch"] == 0
    back = loads(text)
    assert back == captured
    assert back is not captured


def test_a_captured_assessment_round_trips_with_the_log_embedded(
    captured: Assessment, log_path: Path
) -> None:
    text = dumps(captured, embed_log=True)
    embedded = _document(text)["startup_log"]["embedded"]
    assert base64.b64decode(embedded) == log_path.read_bytes()
    log_path.unlink()  # an embedded log needs no file
    assert loads(text) == captured


def test_every_exchange_field_is_in_the_document(captured: Assessment) -> None:
    front_door = captured.evidence.front_door
    assert isinstance(front_door, CapturedReadback)
    document = _document(dumps(captured))["front_door"]
    assert document["batch_id"] == front_door.batch.batch_id
    assert document["target"] == front_door.batch.target
    for entry, exchange in zip(
        document["exchanges"], front_door.batch.all_exchanges(), strict=True
    ):
        assert entry["route"] == exchange.route.stem
        assert entry["role"] == exchange.role.value
        assert entry["status"] == exchange.status
        assert entry["body_sha256"] == exchange.body_sha256
        assert entry["started_monotonic_ns"] == exchange.started_monotonic_ns
        assert entry["ended_at"] == exchange.ended_at.isoformat()
        assert [tuple(pair) for pair in entry["headers"]] == list(exchange.headers)
        if exchange.body is not None:
            assert base64.b64decode(entry["body"]) == exchange.body


def test_a_historical_assessment_round_trips(log_path: Path) -> None:
    bundle = load(DEMO, bodies=True)
    assert isinstance(bundle, HistoricalBundle)
    assessment = assess(bundle, _read_log(log_path))
    text = dumps(assessment)
    assert _document(text)["front_door"]["kind"] == "historical"
    assert loads(text) == assessment


def test_log_only_front_door_only_and_empty_assessments_round_trip(
    readback: CapturedReadback, log_path: Path
) -> None:
    for assessment in (assess(None, _read_log(log_path)), assess(readback), assess()):
        assert loads(dumps(assessment)) == assessment
        assert loads(dumps(assessment, embed_log=True)) == assessment


def test_the_assessed_launch_is_kept(tmp_path: Path) -> None:
    text = (DEMO / "startup.log").read_bytes()
    path = tmp_path / "two.log"
    path.write_bytes(text + text)  # a restart appended to the same file
    log = _read_log(path)
    assert len(log.launches) == 2
    first = assess(None, log, launch=0)
    back = loads(dumps(first))
    assert back == first
    assert back.evidence.launch is not None
    assert back.evidence.launch.index == 0


def test_a_log_appended_to_since_still_loads_as_it_was(
    captured: Assessment, log_path: Path
) -> None:
    text = dumps(captured)
    with log_path.open("ab") as stream:
        stream.write(b"(APIServer pid=1) INFO later: a line printed after the read\n")
    assert loads(text) == captured


def test_bytes_are_accepted(captured: Assessment) -> None:
    assert loads(dumps(captured).encode()) == captured


# --------------------------------------------------------------------------------------
# Refusals: the bytes must reproduce what was recorded


def test_only_the_current_schema_is_read(captured: Assessment) -> None:
    """A ``/2`` document (no ``origin``, never released) is refused in one line, as is a
    ``/3`` one without its origin; the document as written reads."""
    document = _document(dumps(captured))
    assert document["schema"] == SCHEMA == "vllm-evidence.evidence/3"
    assert isinstance(loads(json.dumps(document)), Assessment)
    old = dict(document, schema="vllm-evidence.evidence/2")
    with pytest.raises(
        InputError, match=r"^evidence document: schema: not vllm-evidence\.evidence/3$"
    ):
        loads(json.dumps(old))
    del document["front_door"]["origin"]
    with pytest.raises(
        InputError, match=r"^evidence document: front_door: .*missing keys \['origin'\]$"
    ):
        loads(json.dumps(document))


def test_an_unsigned_documents_origin_must_still_be_one(captured: Assessment) -> None:
    document = _document(dumps(captured))
    document["front_door"]["origin"] = "forged"
    with pytest.raises(
        InputError, match=r"^evidence document: front_door\.origin: unknown origin 'forged'$"
    ):
        loads(json.dumps(document))


def test_one_byte_of_an_embedded_body_changed_is_refused(captured: Assessment) -> None:
    document = _document(dumps(captured))
    entry = next(e for e in document["front_door"]["exchanges"] if e["route"] == "version")
    entry["body"] = base64.b64encode(_flip(base64.b64decode(entry["body"]), 3)).decode()
    with pytest.raises(EvidenceMismatchError, match="SHA-256"):
        loads(json.dumps(document))


def test_one_byte_of_a_bundle_body_changed_is_refused() -> None:
    assessment = assess(load(DEMO, bodies=True))
    document = _document(dumps(assessment))
    entry = document["front_door"]["bodies"][0]
    entry["body"] = base64.b64encode(_flip(base64.b64decode(entry["body"]), 0)).decode()
    with pytest.raises(EvidenceMismatchError, match="SHA-256"):
        loads(json.dumps(document))


def test_one_byte_of_the_embedded_log_changed_is_refused(captured: Assessment) -> None:
    document = _document(dumps(captured, embed_log=True))
    log = document["startup_log"]
    log["embedded"] = base64.b64encode(_flip(base64.b64decode(log["embedded"]), 100)).decode()
    with pytest.raises(EvidenceMismatchError, match="the log changed"):
        loads(json.dumps(document))


def test_a_changed_log_file_is_refused(captured: Assessment, log_path: Path) -> None:
    text = dumps(captured)
    log_path.write_bytes(_flip(log_path.read_bytes(), 10))
    with pytest.raises(EvidenceMismatchError, match="the log changed"):
        loads(text)
    log_path.write_bytes(log_path.read_bytes()[:-5])  # shorter than when it was read
    with pytest.raises(EvidenceMismatchError):
        loads(text)


def test_a_missing_log_file_is_an_input_error(captured: Assessment, log_path: Path) -> None:
    text = dumps(captured)
    log_path.unlink()
    with pytest.raises(InputError, match="no such file") as excinfo:
        loads(text)
    assert not isinstance(excinfo.value, EvidenceMismatchError)


def test_a_log_that_changed_before_embedding_is_refused_when_dumping(
    captured: Assessment, log_path: Path
) -> None:
    log_path.write_bytes(_flip(log_path.read_bytes(), 10))
    with pytest.raises(EvidenceMismatchError):
        dumps(captured, embed_log=True)


def test_an_edited_verdict_is_refused(captured: Assessment) -> None:
    document = _document(dumps(captured))
    for claim in ("front_door_join", "parallel"):
        edited = json.loads(json.dumps(document))
        stored = edited["verdicts"][claim]
        stored["verdict"] = "refused" if stored["verdict"] == "established" else "established"
        with pytest.raises(EvidenceMismatchError, match=f"{claim}: re-derived"):
            loads(json.dumps(edited))
        edited = json.loads(json.dumps(document))
        edited["verdicts"][claim]["reason"] = "something_else"
        with pytest.raises(EvidenceMismatchError, match="recorded verdicts"):
            loads(json.dumps(edited))


def test_a_body_and_its_digest_edited_together_give_what_the_parsers_derive(
    captured: Assessment,
) -> None:
    """Consistent edits are just other evidence: the verdicts are re-derived and must
    still match the recorded ones."""
    document = _document(dumps(captured))
    entry = next(e for e in document["front_door"]["exchanges"] if e["route"] == "version")
    body = b'{"version":"0.1.0"}'
    entry["body"] = base64.b64encode(body).decode()
    entry["body_sha256"] = hashlib.sha256(body).hexdigest()
    try:
        back = loads(json.dumps(document))
    except EvidenceMismatchError:
        return  # the new bytes decide otherwise: refused
    assert back.evidence.reported_front_door_version() is not None
    assert str(back.evidence.reported_front_door_version()) == "0.1.0"


def test_mismatch_errors_are_capture_integrity_and_value_errors() -> None:
    assert issubclass(EvidenceMismatchError, CaptureIntegrityError)
    assert issubclass(EvidenceMismatchError, ValueError)
    assert issubclass(EvidenceMismatchError, EvidenceError)


def test_a_stream_read_log_cannot_be_dumped(readback: CapturedReadback) -> None:
    log = read_startup_log(__import__("io").BytesIO((DEMO / "startup.log").read_bytes()))
    assert isinstance(log, StartupLog)
    for embed in (False, True):
        with pytest.raises(InputError, match="read from a stream"):
            dumps(assess(readback, log), embed_log=embed)


# --------------------------------------------------------------------------------------
# Hostile documents: always the typed error, never another traceback


def _malformed(captured_text: str) -> Iterator[str | bytes]:
    yield "[" * 100_000
    yield '{"a":' * 100_000
    yield "{" + '"schema":' + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "}"
    yield "9" * 100_000
    yield '{"schema": "%s", "launch": %s}' % (SCHEMA, "9" * 5000)  # noqa: UP031
    yield '{"schema": "%s", "launch": 1e400}' % SCHEMA  # noqa: UP031
    yield '{"schema": "%s", "launch": NaN}' % SCHEMA  # noqa: UP031
    yield ""
    yield "null"
    yield "[]"
    yield '"text"'
    yield "1"
    yield "{}"
    yield '{"schema": 1}'
    yield '{"schema": "vllm-evidence.evidence/1", "schema": "vllm-evidence.evidence/1"}'
    yield b"\xff\xfe"
    yield captured_text[: len(captured_text) // 2]
    document = _document(captured_text)
    for key in ("front_door", "startup_log", "launch", "verdicts"):
        wrongs: tuple[object, ...] = ([], "x", 1.5, -1, True, {"kind": "other"}, [[[]]])
        for wrong in wrongs:
            yield json.dumps({**document, key: wrong})
    for key in ("route", "role", "transport", "status", "size_limit", "started_at", "body"):
        for wrong in ([], {}, "x", -1, True, 2.5):
            edited = json.loads(captured_text)
            edited["front_door"]["exchanges"][0][key] = wrong
            yield json.dumps(edited)
    for key in ("sha256", "size_bytes", "wrap_width", "embedded"):
        for wrong in ([], "!!notbase64", True, -5):
            edited = json.loads(captured_text)
            edited["startup_log"][key] = wrong
            yield json.dumps(edited)
    edited = json.loads(captured_text)
    edited["front_door"]["exchanges"].append(edited["front_door"]["exchanges"][1])
    yield json.dumps(edited)
    edited = json.loads(captured_text)
    edited["front_door"]["exchanges"].pop(0)  # no opening bracket
    yield json.dumps(edited)
    edited = json.loads(captured_text)
    edited["front_door"]["exchanges"][0]["started_monotonic_ns"] = 10**20
    yield json.dumps(edited)  # ends before it started
    edited = json.loads(captured_text)
    edited["launch"] = 7
    yield json.dumps(edited)
    edited = json.loads(captured_text)
    edited["extra"] = 1
    yield json.dumps(edited)


def test_malformed_documents_give_the_typed_error(captured: Assessment) -> None:
    text = dumps(captured, embed_log=True)
    count = 0
    for malformed in _malformed(text):
        count += 1
        with pytest.raises(EvidenceError):
            loads(malformed)
    assert count > 100


def test_an_over_long_document_is_refused_before_parsing(captured: Assessment) -> None:
    text = dumps(captured)
    with pytest.raises(InputError, match="over the limit"):
        loads(text, max_chars=1000)


def test_non_text_is_refused() -> None:
    bad: Any = 42
    with pytest.raises(InputError, match="not text"):
        loads(bad)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_edit_of_a_document_loads_or_gives_the_typed_error(data: st.DataObject) -> None:
    text = dumps(assess(load(DEMO, bodies=True)))
    position = data.draw(st.integers(0, len(text) - 1))
    replacement = data.draw(st.sampled_from(['"', "[", "{", "}", "]", "0", ",", "x", ""]))
    edited = text[:position] + replacement + text[position + 1 :]
    with contextlib.suppress(EvidenceError):
        loads(edited)


# --------------------------------------------------------------------------------------
# No secret is ever written


def test_no_api_key_or_credential_is_written(tmp_path: Path) -> None:
    with serve_capture(DEMO, api_key=SECRET) as door:
        # (a URL with user information is refused before anything is sent: test_target.py)
        batch = probe_sync(door.url, api_key=SECRET)
    log = _read_log(shutil.copyfile(DEMO / "startup.log", tmp_path / "startup.log"))
    assessment = assess(readback_from_batch(batch), log)
    encoded = base64.b64encode(SECRET.encode()).decode()
    for text in (dumps(assessment), dumps(assessment, embed_log=True)):
        assert SECRET not in text
        assert encoded[:16] not in text
        for entry in _document(text)["front_door"]["exchanges"]:
            if entry["body"] is not None:
                assert SECRET.encode() not in base64.b64decode(entry["body"])
    assert SECRET.encode() not in pickle.dumps(assessment)
    assert loads(dumps(assessment)) == assessment


# --------------------------------------------------------------------------------------
# Across processes


def test_a_process_pool_worker_returns_an_equal_assessment(
    readback: CapturedReadback, log_path: Path
) -> None:
    """A fresh interpreter (spawn) imports the package, re-derives what it is sent, and
    what it returns is re-derived again here."""
    log = _read_log(log_path)
    expected = assess(readback, log)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        from_worker = pool.submit(assess, readback, log).result(timeout=120)
        log_from_worker = pool.submit(read_startup_log, str(log_path)).result(timeout=60)
        bundle_from_worker = pool.submit(load, str(DEMO), bodies=True).result(timeout=60)
        batch_back = pool.submit(readback_from_batch, readback.batch).result(timeout=60)
    assert isinstance(from_worker, Assessment)
    assert from_worker == expected
    assert log_from_worker == log
    assert bundle_from_worker == load(DEMO, bodies=True)
    assert batch_back == readback


# --------------------------------------------------------------------------------------
# Properties


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("logs")


def _file_log(directory: Path) -> Callable[[bytes], StartupLog]:
    def read(text: bytes) -> StartupLog:
        path = directory / f"{hashlib.sha256(text).hexdigest()}.log"
        path.write_bytes(text)
        return _read_log(path)

    return read


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_loads_of_dumps_is_the_assessment(log_dir: Path, data: st.DataObject) -> None:
    logs = st.none() | startup_logs().map(_file_log(log_dir))
    assessment = data.draw(
        assessments(front_doors=st.none() | historical_bundles(), startup_logs=logs)
    )
    embed = data.draw(st.booleans())
    assert loads(dumps(assessment, embed_log=embed)) == assessment
    assert _unpickle(pickle.dumps(assessment)) == assessment


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_captured_assessment_round_trips_for_any_capture(
    log_dir: Path, data: st.DataObject
) -> None:
    from vllm_evidence.testing._strategies import captured_readbacks

    directories = capture_directories(startup_log=False)
    door = data.draw(captured_readbacks(directories=directories))
    log = data.draw(st.none() | startup_logs().map(_file_log(log_dir)))
    assessment = assess(door, log)
    assert loads(dumps(assessment)) == assessment
    assert _unpickle(pickle.dumps(assessment)) == assessment
