"""``probe --targets``: a log and a receipt per target (issue 31, the fleet bullet).

A targets file line names a server's URL, then optionally ``log=PATH`` and
``receipt=PATH`` (relative to the file); each target is read and assessed with its own
log and receipt, the receipt checked under ``--receipt-public-key`` (or the PEM text in
``VLLM_EVIDENCE_RECEIPT_PUBLIC_KEY``).  A target whose log or receipt cannot be read is an
error line of its own; a line that misuses the fields refuses the file in one line.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from tests._cli import run_cli
from tests._evidence import LAUNCHER_KEY, receipt_document_for
from tests._paths import REAL
from tests._ports import serve_on_port
from tests._signing import pem_text
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._capture.directory import read_capture
from vllm_evidence.testing import serve_capture

#: The recorded server's start time (its /metrics) and the port its log names.
START = "1.79601185221e+09"
LOG_PORT = 8765
ENV = "VLLM_EVIDENCE_RECEIPT_PUBLIC_KEY"


def _log() -> StartupLog:
    read = read_startup_log(REAL / "startup.log")
    assert isinstance(read, StartupLog), read
    return read


def _files(tmp_path: Path) -> Path:
    """``logs/`` beside the targets file: the log, a signed and an unsigned receipt,
    and the launcher's public key."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "vllm.log").write_bytes((REAL / "startup.log").read_bytes())
    for name, key in (("signed.json", LAUNCHER_KEY), ("unsigned.json", None)):
        document = receipt_document_for(_log(), start=START, signed_by=key)
        (logs / name).write_text(json.dumps(document), encoding="utf-8")
    (tmp_path / "public.pem").write_bytes(LAUNCHER_KEY.verification_key.pem())
    return logs


def _lines(stdout: str) -> dict[str, dict[str, Any]]:
    documents = [json.loads(line) for line in stdout.splitlines()]
    return {document["target"]: document for document in documents}


def _log_join(document: dict[str, Any]) -> str:
    reason: str = document["decisions"]["log_join"]["reason"]
    return reason


def test_each_target_is_assessed_with_its_own_log_and_receipt(tmp_path: Path) -> None:
    _files(tmp_path)
    with ExitStack() as stack:
        on_port = stack.enter_context(serve_on_port(REAL, port=LOG_PORT))
        other, plain, broken = (stack.enter_context(serve_capture(REAL)) for _ in range(3))
        listing = tmp_path / "fleet.txt"
        listing.write_text(
            "# the fleet: each server's own log and receipt\n"
            f"{on_port.url} log=logs/vllm.log receipt=logs/unsigned.json\n"
            f"{other.url}   log=logs/vllm.log   receipt=logs/signed.json\n"
            f"{plain.url}\n"
            f"{broken.url} log=logs/vllm.log receipt=logs/none.json\n"
            "not a url\n",
            encoding="utf-8",
        )
        out = run_cli(
            "probe",
            "--targets",
            str(listing),
            "--json",
            "--receipt-public-key",
            str(tmp_path / "public.pem"),
            "--save",
            str(tmp_path / "saved"),
        )
    assert out.returncode == 0, out.stderr
    documents = _lines(out.stdout)
    assert _log_join(documents[on_port.url]) == "witness_unsigned"
    joined = documents[other.url]["decisions"]["log_join"]
    assert joined["verdict"] == "established", joined
    assert f"signed by key id {LAUNCHER_KEY.key_id} (verified)" in joined["detail"]
    assert _log_join(documents[plain.url]) == "no_log"
    assert set(documents[broken.url]) == {"target", "error"}
    assert "none.json" in documents[broken.url]["error"]
    assert set(documents["not a url"]) == {"target", "error"}
    # --save keeps each server's own log beside its capture, and no other's.
    saved = {path.name: read_capture(path) for path in (tmp_path / "saved").iterdir()}
    with_logs = [name for name, read in saved.items() if read.provenance.startup_log]
    assert len(with_logs) == 2, sorted(saved)
    for document in (documents[on_port.url], documents[other.url]):
        assert document["observations"]["startup_log"] is not None
    assert documents[plain.url]["observations"]["startup_log"] is None


def test_the_public_key_can_come_from_the_environment(tmp_path: Path) -> None:
    _files(tmp_path)
    with serve_capture(REAL) as one, serve_capture(REAL) as two:
        listing = tmp_path / "fleet.txt"
        listing.write_text(
            f"{one.url} log=logs/vllm.log receipt=logs/signed.json\n{two.url}\n",
            encoding="utf-8",
        )
        keyed = run_cli(
            "probe",
            "--targets",
            str(listing),
            "--json",
            env={ENV: pem_text(LAUNCHER_KEY, public=True)},
        )
        unkeyed = run_cli("probe", "--targets", str(listing), "--json", env={ENV: ""})
    assert keyed.returncode == 0, keyed.stderr
    assert _lines(keyed.stdout)[one.url]["decisions"]["log_join"]["verdict"] == "established"
    # Without the key, the signed receipt is unchecked (behind the port its log names).
    refused = _lines(unkeyed.stdout)[one.url]["decisions"]["log_join"]
    assert refused["reason"] == "port_contradicted", refused
    for out in (keyed, unkeyed):
        assert pem_text(LAUNCHER_KEY, public=True).splitlines()[1] not in out.stdout + out.stderr


def test_a_single_target_from_a_file_takes_its_log_and_receipt(tmp_path: Path) -> None:
    _files(tmp_path)
    with serve_on_port(REAL, port=LOG_PORT) as door:
        listing = tmp_path / "one.txt"
        listing.write_text(
            f"{door.url} log=logs/vllm.log receipt=logs/signed.json\n", encoding="utf-8"
        )
        out = run_cli(
            "probe",
            "--targets",
            str(listing),
            "--json",
            "--receipt-public-key",
            str(tmp_path / "public.pem"),
        )
        twice = run_cli(
            "probe", "--targets", str(listing), "--startup-log", str(REAL / "startup.log")
        )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["decisions"]["log_join"]["verdict"] == "established"
    assert twice.returncode == 2
    assert "--startup-log and the targets file's log= both name the server's log" in (twice.stderr)


def test_a_line_that_misuses_the_fields_refuses_the_file_in_one_line(tmp_path: Path) -> None:
    for line, needle in (
        (
            "http://a:1 receipt=r.json",
            "line 1: receipt= goes with log= (a receipt witnesses a log)",
        ),
        ("http://a:1 log=a log=b", "line 1: after the URL, log=PATH and receipt=PATH, each once"),
        ("http://a:1 log=", "line 1: after the URL, log=PATH and receipt=PATH, each once"),
    ):
        listing = tmp_path / "bad.txt"
        listing.write_text(f"{line}\n", encoding="utf-8")
        out = run_cli("probe", "--targets", str(listing))
        assert out.returncode == 2, line
        (error,) = out.stderr.splitlines()
        assert needle in error, error
        assert out.stdout == ""


def test_a_public_key_without_any_receipt_is_bad_usage(tmp_path: Path) -> None:
    (tmp_path / "public.pem").write_bytes(LAUNCHER_KEY.verification_key.pem())
    out = run_cli(
        "probe", "http://127.0.0.1:1", "--receipt-public-key", str(tmp_path / "public.pem")
    )
    assert out.returncode == 2
    assert "--receipt-public-key checks a receipt's signature: give --receipt FILE" in out.stderr
    private = tmp_path / "private.pem"
    private.write_bytes(LAUNCHER_KEY.private_pem())
    listing = tmp_path / "t.txt"
    listing.write_text(
        f"http://127.0.0.1:1 log={REAL / 'startup.log'} receipt={tmp_path / 'r.json'}\n",
        encoding="utf-8",
    )
    out = run_cli("probe", "--targets", str(listing), "--receipt-public-key", str(private))
    assert out.returncode == 2
    assert "a private key: a verifier is given the public half only" in out.stderr
    assert LAUNCHER_KEY.private_pem().decode().splitlines()[1] not in out.stderr
