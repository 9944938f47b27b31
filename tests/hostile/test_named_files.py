"""Every file a caller names is read with bounds (issue "Hostile input, round 3", item 5).

A launch receipt, a CA file, an API-key file, a targets file and a startup log copied
into a saved capture are each opened without blocking and checked with ``fstat`` before
a byte is read: a FIFO, a device or a directory is refused at once (one line, exit 2),
never waited on; a size past the cap is refused from the size.  A regular file — or a
symbolic link to one — is read as before.  Through the command line each case runs in a
child process with a timeout, so a regression fails instead of hanging the suite.

The receipt reproducers of the issue run through the command line as well, in a child
limited to 2 GB of address space whose peak RSS is reported: a start time of
``1e999999999`` (before: 3.8 GB, then ``MemoryError``) and ``1e99999999`` (before: a
200 MB line printed) are one line on stderr, and 5,000 ``[`` is no ``RecursionError``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._evidence import log_port, real_log
from tests._paths import REAL
from tests._ports import serve_on_port
from tests.adapters.test_receipt_files import without_blocking
from vllm_evidence._capture._files import NamedFileError, read_named_file
from vllm_evidence._capture.directory import save
from vllm_evidence._capture.http import ProbeSession, ProbeSettings, probe_sync
from vllm_evidence.errors import InputError

#: Peak RSS allowed for one command reading a hostile receipt (the package's own
#: import and a probe need well under 100 MB).
MAX_RSS_MB = 200
#: The address space the child may take: past it an allocation fails (so the old
#: reader's 3.8 GB attempt failed fast instead of filling the machine).
_ADDRESS_SPACE = 2 * 1024**3

_CHILD = f"""
import resource
import sys
resource.setrlimit(resource.RLIMIT_AS, ({_ADDRESS_SPACE}, {_ADDRESS_SPACE}))
from vllm_evidence.cli import main
status = main(sys.argv[1:])
sys.stdout.flush()
with open("/proc/self/status") as status_file:
    line = next(x for x in status_file if x.startswith("VmHWM:"))
sys.stderr.write(f"\\nPEAK_RSS_KB {{line.split()[1]}}\\n")
sys.exit(status)
"""

IRREGULAR = "not a regular file (a FIFO, a socket or a device): refused, not waited on"


def _cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str, int]:
    """Exit status, stdout, stderr (without the report line) and peak RSS in KB."""
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
        timeout=120,
    )
    stderr, found, peak = out.stderr.rpartition("PEAK_RSS_KB ")
    if not found:  # the child died before reporting (a traceback): its stderr is whole
        return out.returncode, out.stdout, out.stderr, 0
    return out.returncode, out.stdout, stderr.rstrip("\n"), int(peak)


def _one_line(status: int, stdout: str, stderr: str, prog: str = "probe") -> str:
    assert status == 2, (status, stdout[:300], stderr[:300])
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr[:2000]
    assert lines[0].startswith(f"vllm-evidence {prog}: error: "), lines[0]
    assert len(lines[0]) < 500, lines[0][:500]
    return lines[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "named.fifo"
    os.mkfifo(path)
    return path


# --- the reader itself, both ways --------------------------------------------------------


def test_read_named_file_reads_a_regular_file_and_a_link_to_one(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    link = tmp_path / "l"
    link.symlink_to(path)
    assert read_named_file(path, 3, what="x") == b"abc"
    assert read_named_file(str(link), 3, what="x") == b"abc"


def test_read_named_file_refuses_past_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abcd")
    with pytest.raises(NamedFileError) as raised:
        read_named_file(path, 3, what="the file")
    assert str(raised.value) == f"the file {path}: 4 bytes, larger than the 3 bytes allowed"
    assert raised.value.problem == "4 bytes, larger than the 3 bytes allowed"


def test_read_named_file_refuses_a_fifo_without_blocking(fifo: Path) -> None:
    outcome = without_blocking(lambda: read_named_file(fifo, 10, what="x"), fifo)
    assert isinstance(outcome, NamedFileError), outcome
    assert outcome.problem == IRREGULAR


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="Linux's /proc")
def test_a_proc_file_that_reports_size_0_is_still_capped() -> None:
    # /proc files are regular with st_size 0: the cap holds while reading.
    with pytest.raises(NamedFileError, match="more than the 10 bytes allowed"):
        read_named_file("/proc/self/status", 10, what="x")


# --- through the command line --------------------------------------------------------------


def test_a_fifo_receipt_is_refused_at_once_by_probe(fifo: Path) -> None:
    log = str(REAL / "startup.log")
    result = _cli("probe", "http://127.0.0.1:1", "--startup-log", log, "--receipt", str(fifo))
    assert _one_line(*result[:3]).endswith(f"launch receipt {fifo}: {IRREGULAR}")


def test_a_fifo_receipt_is_refused_at_once_by_explain(fifo: Path) -> None:
    log = str(REAL / "startup.log")
    result = _cli("explain", str(REAL), "--bodies", "--startup-log", log, "--receipt", str(fifo))
    assert _one_line(*result[:3], prog="explain").endswith(f"launch receipt {fifo}: {IRREGULAR}")


def test_a_fifo_ca_cert_is_refused_at_once(fifo: Path) -> None:
    result = _cli("probe", "https://127.0.0.1:1", "--ca-cert", str(fifo))
    assert _one_line(*result[:3]).endswith(f"CA file {fifo}: {IRREGULAR}")


def test_a_device_ca_cert_is_refused() -> None:
    result = _cli("probe", "https://127.0.0.1:1", "--ca-cert", "/dev/zero")
    assert IRREGULAR in _one_line(*result[:3])


def test_a_fifo_api_key_file_is_refused_at_once(fifo: Path) -> None:
    result = _cli("probe", "http://127.0.0.1:1", "--api-key-file", str(fifo))
    line = _one_line(*result[:3])
    assert line.endswith(f"--api-key-file: cannot read {fifo}: {IRREGULAR}")


def test_a_fifo_targets_file_is_refused_at_once(fifo: Path) -> None:
    line = _one_line(*_cli("probe", "--targets", str(fifo))[:3])
    assert line.endswith(f"--targets: cannot read {fifo}: {IRREGULAR} (- reads standard input)")


def test_a_directory_as_targets_is_refused(tmp_path: Path) -> None:
    line = _one_line(*_cli("probe", "--targets", str(tmp_path))[:3])
    assert "is a directory, not a file" in line


# --- the CA file: both ways ---------------------------------------------------------------


def _run_client(verify: str) -> None:
    ProbeSession(ProbeSettings(verify=verify))  # the CA file is read here


def test_a_ca_bundle_with_non_ascii_comments_loads(tmp_path: Path) -> None:
    import certifi

    bundle = Path(certifi.where()).read_bytes()
    first = bundle[bundle.index(b"-----BEGIN CERTIFICATE-----") :]
    first = first[: first.index(b"-----END CERTIFICATE-----") + 25]
    path = tmp_path / "ca.pem"
    path.write_bytes("# Főtanúsítvány — a comment in UTF-8\n".encode() + first + b"\n")
    _run_client(str(path))  # no error: the certificate is read past the comment


def test_an_empty_ca_file_is_refused_not_replaced_by_the_system_store(tmp_path: Path) -> None:
    path = tmp_path / "ca.pem"
    path.write_bytes(b"")
    with pytest.raises(InputError, match="the file is empty"):
        _run_client(str(path))


def test_a_ca_directory_is_still_a_ca_path(tmp_path: Path) -> None:
    _run_client(str(tmp_path))  # capath: OpenSSL looks certificates up by hash


# --- a startup log copied into a saved capture -------------------------------------------


def test_save_refuses_a_fifo_startup_log_without_blocking(tmp_path: Path, fifo: Path) -> None:
    batch = probe_sync("http://127.0.0.1:1")
    target = tmp_path / "capture"
    outcome = without_blocking(lambda: save(batch, target, startup_log=fifo), fifo)
    assert isinstance(outcome, InputError), outcome
    assert str(outcome) == f"startup log {fifo}: {IRREGULAR}"
    assert not target.exists()


def test_save_refuses_a_device_startup_log(tmp_path: Path) -> None:
    batch = probe_sync("http://127.0.0.1:1")
    with pytest.raises(InputError, match="not a regular file"):
        save(batch, tmp_path / "capture", startup_log="/dev/zero")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# --- the receipt reproducers, end to end ------------------------------------------------


def _receipt(tmp_path: Path, start: str) -> Path:
    log = real_log()
    pids = [p for launch in log.launches for p in launch.api_server_pids]
    document = {
        "schema": "vllm-evidence.launch-receipt/1",
        "pid": pids[0] if pids else 1,
        "process_start_time_seconds": start,
        "start_time_unavailable": None,
        "argv": ["vllm", "serve"],
        "host": "h",
        "log_path": log.source,
        "log_bytes": log.size_bytes,
        "log_sha256": log.sha256,
    }
    path = tmp_path / "receipt.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM is Linux's")
@pytest.mark.parametrize("start", ["1e999999999", "1e99999999"])
def test_a_giant_start_time_is_one_line_in_bounded_memory(tmp_path: Path, start: str) -> None:
    # A live front door with a marker, so that the old reader reached the start-time
    # comparison and wrote the receipt's start time out in full.
    receipt = _receipt(tmp_path, start)
    log = str(REAL / "startup.log")
    with serve_on_port(REAL, port=log_port(real_log())) as door:
        status, stdout, stderr, peak_kb = _cli(
            "probe", door.url, "--startup-log", log, "--receipt", str(receipt)
        )
    line = _one_line(status, stdout, stderr)
    assert f"process_start_time_seconds '{start}'" in line
    assert 0 < peak_kb / 1024 < MAX_RSS_MB, f"peak RSS {peak_kb / 1024:.0f} MB"


def test_5000_brackets_as_a_receipt_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "receipt.json"
    path.write_bytes(b"[" * 5000)
    log = str(REAL / "startup.log")
    result = _cli("probe", "http://127.0.0.1:1", "--startup-log", log, "--receipt", str(path))
    assert "nested deeper than 2 levels" in _one_line(*result[:3])


def test_a_receipt_with_a_duplicate_key_is_one_line(tmp_path: Path) -> None:
    path = _receipt(tmp_path, "1.7e+09")
    text = path.read_text(encoding="utf-8").replace('"host": "h"', '"host": "h", "host": "i"')
    path.write_text(text, encoding="utf-8")
    log = str(REAL / "startup.log")
    result = _cli("probe", "http://127.0.0.1:1", "--startup-log", log, "--receipt", str(path))
    assert "duplicate key 'host'" in _one_line(*result[:3])
