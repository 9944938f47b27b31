"""Hostile and odd input: a typed outcome or one line and exit 2, never a traceback,
never a secret in the output.  (Found by an adversarial review; each case pinned.)"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests._cli import run_cli
from tests._paths import REAL
from tests._reseal import reseal
from vllm_evidence._adapters.failure import BodyParseFailure
from vllm_evidence._adapters.metrics import MetricsObservation, parse_metrics
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._adapters.version import parse_version
from vllm_evidence._measure import MeasureParseFailure, ParseFailureReason, TokenCount
from vllm_evidence._readback import load
from vllm_evidence.errors import InputError
from vllm_evidence.testing._stub import serve_capture

HUGE = "9" * 5000


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env=env, timeout=60)


def _one_line(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    return lines[0]


def test_a_key_with_a_newline_is_refused_without_echoing_it() -> None:
    key = "abc\nSECRETKEY2 xyz"
    with serve_capture(REAL) as door:
        out = _run("probe", door.url, "--api-key-env", "K", env={"K": key})
    line = _one_line(out)
    assert "printable ASCII" in line
    assert "SECRETKEY2" not in out.stdout + out.stderr


def test_a_non_ascii_key_is_refused_without_echoing_it() -> None:
    with serve_capture(REAL) as door:
        out = _run("probe", door.url, "--api-key-env", "K", env={"K": "ключSECRET"})
    _one_line(out)
    assert "SECRET" not in out.stdout + out.stderr


def test_a_key_file_with_two_lines_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text("first-key\nsecond-key\n", encoding="utf-8")
    line = _one_line(_run("probe", "http://127.0.0.1:1", "--api-key-file", str(path)))
    assert "one key on one line" in line
    assert "first-key" not in line


def test_a_port_out_of_range_is_one_line() -> None:
    assert "port must be 1..65535" in _one_line(_run("probe", "http://127.0.0.1:99999"))


def test_a_version_past_the_digit_limit_is_unparsed_not_a_crash() -> None:
    parsed = parse_version(json.dumps({"version": "0." + HUGE}).encode())
    assert isinstance(parsed, BodyParseFailure)
    assert len(parsed.reason) < 200


def test_laws_with_a_huge_version_is_one_line() -> None:
    _one_line(_run("laws", "--version", "0." + HUGE))


def test_a_count_past_the_digit_limit_is_out_of_range() -> None:
    parsed = TokenCount.parse(HUGE)
    assert isinstance(parsed, MeasureParseFailure)
    assert parsed.reason is ParseFailureReason.OUT_OF_RANGE


def test_log_lines_with_huge_numbers_are_skipped() -> None:
    text = (
        "(APIServer pid=1) INFO 01-02 03:04:05 [api_server.py:1] "
        f"vLLM API server version 0.{HUGE}\n"
        f"(Worker pid=2) INFO 01-02 03:04:05 [parallel_state.py:1] world_size={HUGE} rank=0 "
        "local_rank=0 distributed_init_method=env:// backend=nccl\n"
        "(EngineCore pid=3) INFO 01-02 03:04:05 [kv_cache_utils.py:1] GPU KV cache size: "
        "1,000 tokens\n"
    )
    read = read_startup_log(io.BytesIO(text.encode()))
    assert isinstance(read, StartupLog)
    (launch,) = read.launches
    assert launch.ranks == ()
    assert [c.tokens.value if c.tokens else None for c in launch.capacity] == [1000]


def test_wrap_width_with_a_non_ascii_digit_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "x.log"
    path.write_text("x\n", encoding="utf-8")
    _one_line(_run("log", str(path), "--wrap-width", "²"))


def test_an_html_200_on_metrics_is_unparsed() -> None:
    parsed = parse_metrics(b"<html><body>hello</body></html>\n")
    assert isinstance(parsed, BodyParseFailure)
    assert "not Prometheus text exposition" in parsed.reason
    assert isinstance(parse_metrics(b"# HELP x y\n# TYPE x gauge\nx 1\n"), MetricsObservation)


def test_a_headers_file_with_a_non_ascii_status_is_refused(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "version.body").write_bytes(b'{"version":"0.32.0"}')
    (bare / "version.headers").write_text("HTTP/1.1 ²00 OK\n", encoding="utf-8")
    with pytest.raises(InputError, match="not an HTTP status line"):
        load(bare, bodies=True)


def _saved(tmp_path: Path) -> Path:
    saved = tmp_path / "capture"
    with serve_capture(REAL) as door:
        assert _run("probe", door.url, "--save", str(saved)).returncode == 0
    return saved


def test_credentials_in_a_manifest_target_are_never_printed(tmp_path: Path) -> None:
    saved = _saved(tmp_path)

    def edit(manifest: dict[str, Any]) -> None:
        manifest["target"] = manifest["target"].replace("http://", "http://u:pwSECRET@")

    reseal(saved, edit)
    for argv in (["explain", str(saved)], ["explain", str(saved), "--json"]):
        # a probe never writes user information: a target with some is refused, unquoted
        line = _one_line(_run(*argv))
        assert "carries user information" in line
        assert "pwSECRET" not in line


def test_a_route_read_outside_the_bracket_is_refused(tmp_path: Path) -> None:
    saved = _saved(tmp_path)

    def edit(manifest: dict[str, Any]) -> None:
        close = next(r for r in manifest["requests"] if r["role"] == "bracket_close")
        for request in manifest["requests"]:
            if request["role"] == "route":
                request["started_monotonic_ns"] = close["ended_monotonic_ns"] + 10**12
                request["ended_monotonic_ns"] = request["started_monotonic_ns"] + 1

    reseal(saved, edit)
    line = _one_line(_run("explain", str(saved)))
    assert "between the two bracketing /metrics reads" in line


def test_copying_a_saved_capture_keeps_it_loadable(tmp_path: Path) -> None:
    """The bracket check does not reject an honest capture."""
    saved = _saved(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(saved, copy)
    assert load(copy).version is not None
