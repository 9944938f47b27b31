"""Item 6 of issue 15: a canary key across every output channel finds nothing.

A hostile server on 127.0.0.1 reflects the ``Authorization`` header in a malformed
header line, in a redirect's ``Location`` (with a userinfo password), and in a 200
body's error text.  The probe runs with a canary key, in text and JSON, alone and in a
fleet beside URLs that carry a password; then the saved directory is explained.  The
canary must not appear on stdout, stderr, in any saved file, in any repr, str or
document of the in-process objects.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile._server import (
    Reply,
    hostile_server,
    reflect_in_body,
    reflect_in_location,
    reflect_in_malformed_header,
)

CANARY = "sk-CANARY7f3a9c"
PASSWORD = "S3cretPW"  # noqa: S105  # the canary password, found nowhere
SECRETS = (CANARY, PASSWORD)
MODES: dict[str, Reply] = {
    "malformed-header": reflect_in_malformed_header,
    "location": reflect_in_location,
    "body": reflect_in_body,
}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vllm_evidence", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1", "CANARY_KEY": CANARY},
        timeout=120,
    )


def _files(root: Path) -> Iterator[tuple[Path, bytes]]:
    for path in sorted(root.rglob("*")):
        if path.is_file():
            yield path, path.read_bytes()


def _hits(where: str, text: str | bytes) -> list[str]:
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    return [f"{secret} in {where}" for secret in SECRETS if secret.encode() in data]


@pytest.mark.parametrize("mode", MODES)
def test_the_canary_key_reaches_no_cli_output(mode: str, tmp_path: Path) -> None:
    hits: list[str] = []
    with hostile_server(MODES[mode]) as server:
        key = ("--api-key-env", "CANARY_KEY", "--timeout", "3")
        for form in ((), ("--json",)):
            name = "json" if form else "text"
            single = _cli("probe", server.url, *key, *form, "--save", str(tmp_path / name))
            assert single.returncode == 0, single.stderr
            assert "Traceback" not in single.stderr
            hits += _hits(f"probe {name} stdout", single.stdout)
            hits += _hits(f"probe {name} stderr", single.stderr)
            (tmp_path / f"fleet-{name}").mkdir()
            fleet = _cli(
                "probe",
                server.url,
                f"http://alice:{PASSWORD}@127.0.0.1:1/?x=1",
                f"http://alice:{PASSWORD}@127.0.0.1:99999",
                f"http://alice:{PASSWORD}@127.0.0.1:1",
                *key,
                *form,
                "--save",
                str(tmp_path / f"fleet-{name}"),
            )
            assert "Traceback" not in fleet.stderr
            assert "127.0.0.1:99999" in fleet.stdout, fleet.stderr  # every row, less passwords
            hits += _hits(f"fleet {name} stdout", fleet.stdout)
            hits += _hits(f"fleet {name} stderr", fleet.stderr)
            explained = _cli("explain", str(tmp_path / name), *form)
            assert explained.returncode == 0, explained.stderr
            hits += _hits(f"explain {name} stdout", explained.stdout)
            hits += _hits(f"explain {name} stderr", explained.stderr)
        assert all(r.headers.get("authorization") == f"Bearer {CANARY}" for r in server.requests)
    for path, data in _files(tmp_path):
        hits += _hits(str(path.relative_to(tmp_path)), data)
    assert hits == []


@pytest.mark.parametrize("mode", MODES)
def test_the_canary_key_reaches_no_object_repr_or_document(mode: str, tmp_path: Path) -> None:
    from vllm_evidence import assess, probe_sync
    from vllm_evidence._capture.directory import manifest_document
    from vllm_evidence._output.assessment import assessment_document
    from vllm_evidence._output.report import render_report
    from vllm_evidence._readback import readback_from_batch
    from vllm_evidence._rederive import dumps

    with hostile_server(MODES[mode]) as server:
        batch = probe_sync(server.url, api_key=CANARY, timeout=3)
    assessment = assess(readback_from_batch(batch))
    log = tmp_path / "startup.log"
    log.write_text("")
    seen: list[str | bytes] = [
        repr(batch),
        *(repr(e) for e in batch.all_exchanges()),
        *(str(e.headers) + e.detail for e in batch.all_exchanges()),
        *(e.body or b"" for e in batch.all_exchanges()),
        repr(assessment),
        str(assessment),
        render_report(assessment),
        repr(assessment_document(assessment)),
        repr(manifest_document(batch)),
        dumps(assessment),
    ]
    assert [hit for i, text in enumerate(seen) for hit in _hits(f"object {i}", text)] == []
