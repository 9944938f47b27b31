"""The log join reads where the front door's bytes came from.

A batch this process probed carries an observed ``process_start_time_seconds``; a batch
read back from a saved capture or an evidence document carries an *asserted* one, since
anyone may edit a body and recompute an unsigned seal.  So the same capture, log and
receipt join when probed, are refused ``capture_unverified`` when loaded unsigned (or
signed but read without the key), and join again when the signature verifies under the
caller's key.  An evidence document behaves the same way (``dumps(sign_key=)`` /
``loads(verify_key=)``).
"""

from __future__ import annotations

import pickle
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests._evidence import LAUNCHER_KEY, OTHER_LAUNCHER_KEY, log_port, real_log, receipt_for
from tests._paths import REAL
from tests._ports import serve_on_port
from tests._signing import CAPTURE_KEY
from vllm_evidence._adapters.outcome import Parsed
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._assessment import Assessment, assess
from vllm_evidence._capture.batch import CaptureOrigin
from vllm_evidence._capture.directory import save
from vllm_evidence._capture.http import probe_sync
from vllm_evidence._output.report import render_report
from vllm_evidence._readback import CapturedReadback, load, readback_from_batch
from vllm_evidence._rederive import dumps, loads
from vllm_evidence.decisions import LogJoined, LogJoinReason, LogJoinRefused
from vllm_evidence.errors import EvidenceMismatchError, InputError
from vllm_evidence.testing._strategies import GeneratedServer, launcher_verification_key, servers

KEY = b"orchestrator-key-of-32-bytes-000"  # the shortest a key may be: 32 bytes


def _probed() -> CapturedReadback:
    log = real_log()
    with serve_on_port(REAL, port=log_port(log)) as door:
        return readback_from_batch(probe_sync(door.url))


def _assess(readback: CapturedReadback) -> Assessment:
    log = real_log()
    metrics = readback.metrics.observation if isinstance(readback.metrics, Parsed) else None
    assert metrics is not None
    assert metrics.process_start_time is not None
    receipt = receipt_for(log, start=str(metrics.process_start_time.seconds))
    return assess(readback, log, receipt=receipt)


@pytest.fixture(scope="module")
def probed() -> CapturedReadback:
    return _probed()


def test_a_probed_capture_with_its_log_and_receipt_joins(probed: CapturedReadback) -> None:
    assert probed.batch.origin is CaptureOrigin.PROBED
    assert probed.batch.provenance is None
    assert isinstance(_assess(probed).log_join, LogJoined)


def test_the_same_capture_saved_unsigned_and_loaded_does_not_join(
    probed: CapturedReadback, tmp_path: Path
) -> None:
    save(probed.batch, tmp_path / "c")
    loaded = load(tmp_path / "c")
    assert isinstance(loaded, CapturedReadback)
    assert loaded.batch.origin is CaptureOrigin.LOADED
    assert loaded.batch.provenance is not None
    assert loaded.batch.provenance.directory == str(tmp_path / "c")
    decision = _assess(loaded).log_join
    assert isinstance(decision, LogJoinRefused)
    assert decision.reason is LogJoinReason.CAPTURE_UNVERIFIED
    assert "loaded, not probed" in decision.detail
    assert "--sign-key-env" in decision.remedy


def test_a_signed_capture_read_without_its_key_does_not_join(
    probed: CapturedReadback, tmp_path: Path
) -> None:
    save(probed.batch, tmp_path / "c", sign_key=CAPTURE_KEY)
    loaded = load(tmp_path / "c")
    assert isinstance(loaded, CapturedReadback)
    assert loaded.batch.origin is CaptureOrigin.LOADED
    decision = _assess(loaded).log_join
    assert isinstance(decision, LogJoinRefused)
    assert decision.reason is LogJoinReason.CAPTURE_UNVERIFIED


def test_a_signed_capture_verified_under_the_key_joins(
    probed: CapturedReadback, tmp_path: Path
) -> None:
    save(probed.batch, tmp_path / "c", sign_key=CAPTURE_KEY)
    loaded = load(tmp_path / "c", verify_key=CAPTURE_KEY.verification_key)
    assert isinstance(loaded, CapturedReadback)
    assert loaded.batch.origin is CaptureOrigin.LOADED_SIGNED
    assert isinstance(_assess(loaded).log_join, LogJoined)


def test_the_origin_survives_pickling(probed: CapturedReadback, tmp_path: Path) -> None:
    save(probed.batch, tmp_path / "c")
    loaded = load(tmp_path / "c")
    assert isinstance(loaded, CapturedReadback)
    again = pickle.loads(pickle.dumps(loaded))  # noqa: S301  # bytes this test pickled
    assert again.batch.origin is CaptureOrigin.LOADED
    assert again.batch.provenance == loaded.batch.provenance
    probed_again = pickle.loads(pickle.dumps(probed))  # noqa: S301  # bytes this test pickled
    assert probed_again.batch.origin is CaptureOrigin.PROBED


def test_an_unsigned_document_does_not_carry_the_join(probed: CapturedReadback) -> None:
    joined = _assess(probed)
    assert isinstance(joined.log_join, LogJoined)
    # It comes back, with the join refused (not a raise): the bytes are the same
    # evidence, but a loaded capture is no observation.
    back = loads(dumps(joined))
    assert back.log_join.reason.value == "capture_unverified"
    assert back.parallel.reason.value == "log_not_joined"
    assert back.front_door_join.reason is joined.front_door_join.reason


def test_an_unsigned_document_that_differs_otherwise_is_still_refused(
    probed: CapturedReadback,
) -> None:
    joined = _assess(probed)
    text = dumps(joined)
    # A recorded verdict the bytes do not give is an edit, whatever the signature.
    edited = text.replace(
        '"front_door_join": {"verdict": "established"',
        '"front_door_join": {"verdict": "refused"',
        1,
    )
    if edited == text:  # the document's own spelling of the recorded verdicts
        edited = text.replace('"verdict": "established"', '"verdict": "refused"', 1)
    assert edited != text
    with pytest.raises(EvidenceMismatchError, match=r"does not reproduce the recorded verdicts"):
        loads(edited)


def test_a_signed_document_read_with_its_key_carries_the_join(probed: CapturedReadback) -> None:
    joined = _assess(probed)
    back = loads(
        dumps(joined, sign_key=KEY),
        verify_key=KEY,
        receipt_key=LAUNCHER_KEY.verification_key,
    )
    assert isinstance(back.log_join, LogJoined)
    front = back.evidence.front_door
    assert isinstance(front, CapturedReadback)
    assert front.batch.origin is CaptureOrigin.PROBED


def test_a_signed_document_read_without_the_launchers_key_refuses_the_join(
    probed: CapturedReadback,
) -> None:
    """The document's receipt is read again: without the launcher's public key its
    signature is unverified, and the join is refused (said, not raised)."""
    joined = _assess(probed)
    assert isinstance(joined.log_join, LogJoined)
    back = loads(dumps(joined, sign_key=KEY), verify_key=KEY)
    assert isinstance(back.log_join, LogJoinRefused)
    assert back.log_join.reason is LogJoinReason.WITNESS_UNVERIFIED
    assert back.front_door_join == joined.front_door_join


def test_a_document_whose_receipt_another_launcher_signed_is_refused(
    probed: CapturedReadback,
) -> None:
    text = dumps(_assess(probed), sign_key=KEY)
    with pytest.raises(EvidenceMismatchError, match="signed by another key than receipt_key"):
        loads(text, verify_key=KEY, receipt_key=OTHER_LAUNCHER_KEY.verification_key)


@pytest.mark.parametrize(
    ("sign", "verify", "message"),
    [
        (None, KEY, "the document is unsigned"),
        (b"another-key-of-thirty-two-bytes!", KEY, "signed by key id"),
    ],
)
def test_a_document_without_the_signature_asked_for_is_refused(
    probed: CapturedReadback, sign: bytes | None, verify: bytes, message: str
) -> None:
    text = dumps(_assess(probed), sign_key=sign)
    with pytest.raises(EvidenceMismatchError, match=message):
        loads(text, verify_key=verify)


def test_an_edited_signed_document_does_not_verify(probed: CapturedReadback) -> None:
    text = dumps(_assess(probed), sign_key=KEY)
    edited = text.replace('"launch": 0', '"launch": 0 ', 1).replace(
        '"origin": "probed"', '"origin": "generated"', 1
    )
    assert edited != text
    with pytest.raises(EvidenceMismatchError, match="does not verify"):
        loads(edited, verify_key=KEY)


def test_a_document_without_a_log_join_loads_unsigned(probed: CapturedReadback) -> None:
    """Nothing else rests on the origin: a front-door-only assessment round-trips."""
    alone = assess(probed)
    back = loads(dumps(alone))
    assert back == alone
    front = back.evidence.front_door
    assert isinstance(front, CapturedReadback)
    assert front.batch.origin is CaptureOrigin.LOADED


# ----------------------------------------------------- test evidence stays test evidence


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(servers(backend="mp", release="0.32.0", tensor_parallel_size=2))
def test_generated_evidence_joins_in_process_and_never_leaves_it_as_a_probe(
    server: GeneratedServer,
) -> None:
    """The test kit's batch joins its log in the process that drew it (policies are
    tested on it); saved, it is refused a signature, and unsigned it reads back as
    loaded and joins nothing; an evidence document keeps its origin under a signature."""
    assessment = server.assess()
    assert server.batch.origin is CaptureOrigin.GENERATED
    assert isinstance(assessment.log_join, LogJoined), assessment.log_join
    with tempfile.TemporaryDirectory() as scratch:
        where = Path(scratch)
        with pytest.raises(InputError, match=r"^a generated batch is not signed: .*joins no log"):
            save(server.batch, where / "signed", sign_key=CAPTURE_KEY)
        assert not (where / "signed").exists()
        save(server.batch, where / "unsigned")
        loaded = load(where / "unsigned")
        assert isinstance(loaded, CapturedReadback)
        assert loaded.batch.origin is CaptureOrigin.LOADED
        again = assess(loaded, server.startup_log(), receipt=server.launch_receipt())
        assert isinstance(again.log_join, LogJoinRefused)
        assert again.log_join.reason is LogJoinReason.CAPTURE_UNVERIFIED
        # A document of it, signed: its origin stands (the log read from a file, which
        # a document refers to by path).
        (where / "vllm.log").write_bytes(server.log.text)
        log = read_startup_log(where / "vllm.log")
        assert isinstance(log, StartupLog)
        joined = assess(server.readback(), log, receipt=server.launch_receipt())
        assert isinstance(joined.log_join, LogJoined)
        text = dumps(joined, sign_key=KEY)
        back = loads(text, verify_key=KEY, receipt_key=launcher_verification_key())
        front = back.evidence.front_door
        assert isinstance(front, CapturedReadback)
        assert front.batch.origin is CaptureOrigin.GENERATED
        assert "provenance: generated by vllm_evidence.testing" in render_report(back)


def test_a_capture_loaded_unverified_is_not_signed_again(
    probed: CapturedReadback, tmp_path: Path
) -> None:
    """Re-saving an unverified capture under a key would turn bytes anyone could have
    edited into a signed capture: refused; a verified one is signed again and joins."""
    save(probed.batch, tmp_path / "unsigned")
    loaded = load(tmp_path / "unsigned")
    assert isinstance(loaded, CapturedReadback)
    with pytest.raises(InputError, match=r"^a loaded batch is not signed"):
        save(loaded.batch, tmp_path / "laundered", sign_key=CAPTURE_KEY)
    assert not (tmp_path / "laundered").exists()
    save(probed.batch, tmp_path / "signed", sign_key=CAPTURE_KEY)
    verified = load(tmp_path / "signed", verify_key=CAPTURE_KEY.verification_key)
    assert isinstance(verified, CapturedReadback)
    assert verified.batch.origin is CaptureOrigin.LOADED_SIGNED
    save(verified.batch, tmp_path / "again", sign_key=CAPTURE_KEY)
    twice = load(tmp_path / "again", verify_key=CAPTURE_KEY.verification_key)
    assert isinstance(twice, CapturedReadback)
    assert twice.batch.origin is CaptureOrigin.LOADED_SIGNED
    assert isinstance(_assess(twice).log_join, LogJoined)
