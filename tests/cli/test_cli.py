"""The command line end to end: real argv, real exit codes, real output, as a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests._evidence import LAUNCHER_KEY, log_port, real_log, receipt_file, receipt_for
from tests._paths import REAL
from tests._ports import nothing_listening, serve_on_port
from vllm_evidence.testing._stub import Fault, serve_capture
from vllm_evidence.upstream._routes import Route

SECRET = "sk-test-4d1c0ffee-do-not-print"  # noqa: S105  # a test key, asserted absent


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("VLLM_EVIDENCE_TEST")}
    base["NO_COLOR"] = "1"
    base.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "vllm_evidence", *args],
        capture_output=True,
        text=True,
        check=False,
        env=base,
        timeout=120,
    )


def _one_line_error(out: subprocess.CompletedProcess[str], status: int = 2) -> str:
    assert out.returncode == status, (out.returncode, out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "Traceback" not in out.stderr
    return lines[0]


# --- demo ---------------------------------------------------------------------------


def test_demo_json_reports_the_real_capture() -> None:
    out = _run("demo", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["schema"] == "vllm-evidence.assessment/9"
    assert doc["version"] == "0.32.0"
    assert doc["versions"] == {"front_door": "0.32.0", "startup_log": "0.32.0"}
    d = doc["decisions"]
    assert (d["parallel"]["verdict"], d["parallel"]["reason"]) == ("established", "established")
    assert d["parallel"]["tensor_parallel_size"] == 1
    assert d["parallel"]["expected_ranks"] == [0]
    assert d["parallel"]["present_ranks"] == [0]
    assert d["capacity"]["verdict"] == "established"
    assert d["capacity"]["source"] == "label_kv_cache_size_tokens"
    engine = d["capacity"]["engines"][0]
    assert (engine["engine"], engine["tokens"]) == ("0", 4194304)
    assert (engine["max_concurrency"], engine["max_model_len"]) == ("2048.0", 2048)
    assert d["capacity"]["corroborated_by"][0]["tokens"] == 4194304
    assert d["capacity"]["corroborated_by"][0]["max_concurrency"] == "2048.00"
    assert (d["served_identity"]["verdict"], d["served_identity"]["reason"]) == (
        "refused",
        "served_id_not_derivable",
    )
    assert d["served_identity"]["served_ids"] == ["tiny-llama:q4-alias"]
    assert d["served_identity"]["configured_path"] == "/models/tiny-llama"
    assert "contradict" not in d["served_identity"]["detail"]
    assert (d["health_coverage"]["backend"], d["health_coverage"]["coverage"]) == (
        "mp",
        "worker_death_reaches",
    )
    assert d["front_door_join"]["verdict"] == "established"
    assert doc["observations"]["models"][0]["id"] == "tiny-llama:q4-alias"


def test_demo_joins_its_log_even_when_the_logs_port_is_taken() -> None:
    """The demo replays on the port its log names; when something else holds that port
    it replays on a free one, as behind a port forward, and the receipt still joins."""
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            holder.bind(("127.0.0.1", 8765))
        except OSError:
            pass  # already taken by something else: the case under test all the same
        else:
            holder.listen()
        out = _run("demo", "--json")
    assert out.returncode == 0, out.stderr
    join = json.loads(out.stdout)["decisions"]["log_join"]
    assert (join["verdict"], join["reason"]) == ("established", "established")
    assert "port 8765" in join["detail"]
    assert "(a forward or a proxy)" in join["detail"]


def test_demo_text_is_plain_when_piped() -> None:
    out = _run("demo")
    assert out.returncode == 0
    assert "\x1b[" not in out.stdout
    assert "  parallel layout        established\n" in out.stdout
    assert "  served model           refused (served_id_not_derivable)\n" in out.stdout
    assert "to move it:" in out.stdout
    assert "law capacity.label_kv_cache_size_tokens (read for 0.24.0 .. 0.33.0)" in out.stdout


def test_demo_without_the_log_stops_parallel_at_stage_two() -> None:
    out = _run("demo", "--json", "--no-startup-log")
    doc = json.loads(out.stdout)
    assert doc["decisions"]["parallel"]["reason"] == "population_unobserved"
    assert doc["decisions"]["parallel"]["expected_ranks"] == [0]


@pytest.mark.parametrize(
    ("claims", "status"),
    [
        (["parallel", "capacity"], 0),
        (["parallel", "served_identity"], 3),
        (["front_door_join", "health_coverage"], 0),
    ],
)
def test_require_gates_on_claims(claims: list[str], status: int) -> None:
    out = _run("demo", "--require", *claims)
    assert out.returncode == status
    if status == 3:
        assert _one_line_error(out, 3).endswith("for the serving process: served_identity")


# --- probe ---------------------------------------------------------------------------


def test_probe_with_startup_log_and_receipt_matches_the_demo(tmp_path: Path) -> None:
    log = real_log()
    receipt = receipt_file(tmp_path / "receipt.json", receipt_for(log, start="1.79601185221e+09"))
    public = tmp_path / "launcher-public.pem"
    public.write_bytes(LAUNCHER_KEY.verification_key.pem())
    with serve_on_port(REAL, port=log_port(log)) as door:
        out = _run(
            "probe", door.url, "--startup-log", str(REAL / "startup.log"),
            "--receipt", str(receipt), "--receipt-public-key", str(public), "--json",
        )  # fmt: skip
        unkeyed = _run(
            "probe", door.url, "--startup-log", str(REAL / "startup.log"),
            "--receipt", str(receipt), "--json",
        )  # fmt: skip
        alone = _run("probe", door.url, "--startup-log", str(REAL / "startup.log"), "--json")
    assert json.loads(unkeyed.stdout)["decisions"]["log_join"]["reason"] == "witness_unverified"
    doc = json.loads(out.stdout)
    assert doc["target"] == door.url
    assert doc["decisions"]["log_join"]["reason"] == "established"
    assert doc["decisions"]["parallel"]["reason"] == "established"
    assert doc["decisions"]["parallel"]["subject"] == "serving"
    assert doc["decisions"]["parallel"]["ranks"][0]["pid"] == 23986
    unjoined = json.loads(alone.stdout)["decisions"]
    assert unjoined["log_join"]["reason"] == "no_witness"
    assert unjoined["parallel"]["reason"] == "log_not_joined"


def test_probe_receipt_needs_a_log(tmp_path: Path) -> None:
    out = _run("probe", "http://127.0.0.1:9", "--receipt", str(tmp_path / "r.json"))
    assert "--receipt goes with --startup-log" in _one_line_error(out, 2)


def test_probe_a_malformed_receipt_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "r.json"
    bad.write_text('{"schema": "vllm-evidence.launch-receipt/1", "pid": "x"}')
    out = _run(
        "probe", "http://127.0.0.1:9", "--startup-log", str(REAL / "startup.log"),
        "--receipt", str(bad),
    )  # fmt: skip
    assert "launch receipt" in _one_line_error(out, 2)


def test_probe_with_development_routes_404_stops_at_stage_one() -> None:
    faults = {r: Fault(status=404) for r in (Route.SERVER_INFO, Route.SERVER_INFO_JSON)}
    faults[Route.GET_WORLD_SIZE] = Fault(status=404)
    with serve_capture(REAL, faults=faults) as door:
        out = _run("probe", door.url, "--json")
    doc = json.loads(out.stdout)
    assert out.returncode == 0
    assert doc["decisions"]["parallel"]["reason"] == "configuration_unobserved"
    assert doc["front_door"]["routes"]["server_info"]["outcome"] == "not_found"


def test_probe_no_development_routes_requests_none() -> None:
    with serve_capture(REAL) as door:
        out = _run("probe", door.url, "--no-development-routes", "--json")
        paths = {r.path for r in door.requests}
    assert out.returncode == 0
    assert paths == {"/metrics", "/version", "/v1/models", "/health"}


def test_fleet_table_and_json_lines() -> None:
    with serve_capture(REAL) as a, serve_capture(REAL, api_key=SECRET) as b:
        table = _run("probe", a.url, b.url)
        lines = _run("probe", a.url, b.url, "--json")
    assert table.returncode == 0
    assert "2 vLLM servers" in table.stdout
    assert table.stdout.count("0.32.0") >= 2
    # one line per server, in the order they finished; each names its target
    docs = {d["target"]: d for d in map(json.loads, lines.stdout.splitlines())}
    assert sorted(docs) == sorted([a.url, b.url])
    assert docs[a.url]["decisions"]["served_identity"]["served_ids"] == ["tiny-llama:q4-alias"]
    assert docs[b.url]["decisions"]["served_identity"]["reason"] == "models_unobserved"


def test_fleet_json_streams_as_servers_finish_and_the_table_keeps_input_order() -> None:
    slow = {route: Fault(delay_s=1.0) for route in (Route.VERSION, Route.HEALTH)}
    with serve_capture(REAL, faults=slow) as a, serve_capture(REAL) as b:
        lines = _run("probe", a.url, b.url, "--json")
        table = _run("probe", a.url, b.url)
    assert [json.loads(line)["target"] for line in lines.stdout.splitlines()] == [b.url, a.url]
    rows = [line.split()[0] for line in table.stdout.splitlines()[2:]]
    assert rows == [a.url, b.url]


def test_fleet_targets_from_a_file_and_from_stdin(tmp_path: Path) -> None:
    with serve_capture(REAL) as a, serve_capture(REAL) as b:
        listing = tmp_path / "fleet.txt"
        listing.write_text(f"# the fleet\n{a.url}\n\n  {b.url}  \n", encoding="utf-8")
        from_file = _run("probe", "--targets", str(listing), "--json")
        from_stdin = subprocess.run(
            [sys.executable, "-m", "vllm_evidence", "probe", a.url, "--targets", "-", "--json"],
            input=f"{b.url}\n",
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
    for out in (from_file, from_stdin):
        assert out.returncode == 0, out.stderr
        assert sorted(json.loads(line)["target"] for line in out.stdout.splitlines()) == sorted(
            [a.url, b.url]
        )
    missing = _one_line_error(_run("probe", "--targets", str(tmp_path / "nope.txt")))
    assert "--targets: cannot read" in missing
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n", encoding="utf-8")
    assert "URL" in _one_line_error(_run("probe", "--targets", str(empty)))


def test_fleet_never_shows_the_api_key() -> None:
    dead = nothing_listening()
    with serve_capture(REAL, api_key=SECRET) as a, serve_capture(REAL) as b:
        outs = [
            _run(
                "probe",
                a.url,
                b.url,
                dead,
                "--api-key-env",
                "VLLM_EVIDENCE_TEST_KEY",
                *form,
                env={"VLLM_EVIDENCE_TEST_KEY": SECRET},
            )
            for form in ([], ["--json"])
        ]
        keyed = [dict(r.headers).get("authorization") for r in a.requests + b.requests]
    assert set(keyed) == {f"Bearer {SECRET}"}
    for out in outs:
        assert out.returncode == 0
        assert SECRET not in out.stdout + out.stderr
    docs = {d["target"]: d for d in map(json.loads, outs[1].stdout.splitlines())}
    assert docs[a.url]["front_door"]["routes"]["v1_models"]["outcome"] == "parsed"
    assert docs[dead]["decisions"]["parallel"]["reason"] == "front_door_unreachable"


def test_fleet_marks_an_unreachable_server() -> None:
    dead = nothing_listening()
    with serve_capture(REAL) as door:
        out = _run("probe", door.url, dead, "--timeout", "2")
    assert out.returncode == 0
    (row,) = [line for line in out.stdout.splitlines() if line.startswith(dead)]
    assert row.split()[1:] == ["?", "-", "refused", "refused", "refused", "front_door_unreachable"]
    assert "1 of 2 servers gave nothing to read" in out.stderr


def _probe_within_files(limit: int, *args: str) -> subprocess.CompletedProcess[str]:
    """``probe`` in a process whose open-file limit (soft and hard) is ``limit``."""
    code = (
        "import resource, runpy, sys\n"
        f"resource.setrlimit(resource.RLIMIT_NOFILE, ({limit}, {limit}))\n"
        "sys.argv = ['vllm-evidence', *sys.argv[1:]]\n"
        "runpy.run_module('vllm_evidence', run_name='__main__')\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, "probe", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )


@pytest.mark.skipif(sys.platform == "win32", reason="no per-process open-file limit")
def test_a_fleet_past_the_open_file_limit_is_read_at_a_concurrency_that_fits() -> None:
    """Six sockets a server: 40 servers at once need 240 files, past a limit of 128.
    Every server is still read (none reported unreachable for a want of files here),
    and stderr says the concurrency was lowered and why."""
    with ExitStack() as stack:
        doors = [stack.enter_context(serve_capture(REAL)) for _ in range(40)]
        out = _probe_within_files(128, *(d.url for d in doors), "--json", "--concurrency", "40")
    assert out.returncode == 0, out.stderr
    docs = [json.loads(line) for line in out.stdout.splitlines()]
    assert sorted(d["target"] for d in docs) == sorted(d.url for d in doors)
    assert not [d for d in docs if "error" in d]
    (note,) = out.stderr.splitlines()
    assert "--concurrency 40 lowered to 10" in note  # (128 - 64 reserved) // 6
    assert "ulimit -n" in note


@pytest.mark.skipif(sys.platform == "win32", reason="no per-process open-file limit")
def test_a_fleet_reads_64_servers_at_once_by_default() -> None:
    """Without ``--concurrency`` a fleet is read 64 servers at once (a fleet is CPU-bound
    from about that many on, not bound by the servers' latency): 70 servers under a file
    limit of 128 show the default in the note that lowers it."""
    with ExitStack() as stack:
        doors = [stack.enter_context(serve_capture(REAL)) for _ in range(70)]
        out = _probe_within_files(128, *(d.url for d in doors), "--json")
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.splitlines()) == 70
    (note,) = out.stderr.splitlines()
    assert "--concurrency 64 lowered to 10" in note


@pytest.mark.skipif(sys.platform == "win32", reason="no per-process open-file limit")
def test_a_fleet_within_the_open_file_limit_keeps_its_concurrency() -> None:
    with serve_capture(REAL) as a, serve_capture(REAL) as b:
        out = _probe_within_files(128, a.url, b.url, "--json", "--concurrency", "10")
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    assert len(out.stdout.splitlines()) == 2


@pytest.mark.skipif(sys.platform == "win32", reason="no per-process open-file limit")
def test_a_short_soft_file_limit_is_raised_toward_the_hard_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import resource

    from vllm_evidence._cli._fleet import concurrency_within_file_limit

    limits = [(256, 4096)]
    monkeypatch.setattr(resource, "getrlimit", lambda _: limits[-1])
    monkeypatch.setattr(resource, "setrlimit", lambda _, pair: limits.append(pair))
    assert concurrency_within_file_limit(100) == 100
    assert limits[-1] == (100 * 6 + 64, 4096)  # raised as far as needed, no further
    limits[:] = [(256, 300)]
    assert concurrency_within_file_limit(100) == (300 - 64) // 6  # the hard limit binds
    assert limits[-1] == (300, 300)
    limits[:] = [(resource.RLIM_INFINITY, resource.RLIM_INFINITY)]
    assert concurrency_within_file_limit(10_000) == 10_000


def test_save_then_explain_round_trip(tmp_path: Path) -> None:
    saved = tmp_path / "capture"
    with serve_capture(REAL) as door:
        first = _run("probe", door.url, "--save", str(saved), "--json")
    second = _run("explain", str(saved), "--json")
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    assert a["decisions"] == b["decisions"]
    assert a["observations"] == b["observations"]


# --- the API key -----------------------------------------------------------------------


def test_a_short_api_key_is_noted_and_does_not_mangle_the_report() -> None:
    """A one-character key is guessable; scrubbing every ``a`` of the report would make
    it unreadable, so it goes only where it stands alone, and stderr says so."""
    with serve_capture(REAL, api_key="a") as door:
        out = _run(
            "probe",
            door.url,
            "--api-key-env",
            "VLLM_EVIDENCE_TEST_KEY",
            env={"VLLM_EVIDENCE_TEST_KEY": "a"},
        )
        long_key = _run(
            "probe",
            door.url,
            "--api-key-env",
            "VLLM_EVIDENCE_TEST_KEY",
            env={"VLLM_EVIDENCE_TEST_KEY": SECRET},
        )
    assert out.returncode == 0
    assert "fewer than 8 characters" in out.stderr
    assert "fewer than" not in long_key.stderr
    assert "parallel" in out.stdout
    assert "evidence:" in out.stdout


def test_api_key_from_env_is_used_and_never_shown(tmp_path: Path) -> None:
    saved = tmp_path / "capture"
    with serve_capture(REAL, api_key=SECRET) as door:
        out = _run(
            "probe",
            door.url,
            "--api-key-env",
            "VLLM_EVIDENCE_TEST_KEY",
            "--save",
            str(saved),
            "--json",
            env={"VLLM_EVIDENCE_TEST_KEY": SECRET},
        )
        text = _run(
            "probe",
            door.url,
            "--api-key-env",
            "VLLM_EVIDENCE_TEST_KEY",
            env={"VLLM_EVIDENCE_TEST_KEY": SECRET},
        )
    doc = json.loads(out.stdout)
    assert doc["front_door"]["routes"]["v1_models"]["outcome"] == "parsed"
    for blob in (out.stdout, out.stderr, text.stdout, text.stderr):
        assert SECRET not in blob
    for path in saved.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_api_key_from_file(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(SECRET + "\n", encoding="utf-8")
    with serve_capture(REAL, api_key=SECRET) as door:
        out = _run("probe", door.url, "--api-key-file", str(key_file), "--json")
    assert json.loads(out.stdout)["front_door"]["routes"]["v1_models"]["outcome"] == "parsed"
    assert SECRET not in out.stdout + out.stderr


def test_without_the_key_models_are_unauthorized_not_made_up() -> None:
    with serve_capture(REAL, api_key=SECRET) as door:
        out = _run("probe", door.url, "--json")
    doc = json.loads(out.stdout)
    assert doc["front_door"]["routes"]["v1_models"]["outcome"] == "unauthorized"
    assert doc["observations"]["models"] is None
    assert doc["decisions"]["served_identity"]["reason"] == "models_unobserved"
    assert "API key" in doc["decisions"]["served_identity"]["remedy"]


# --- bad input: one line, exit 2, no traceback ---------------------------------------


def test_unreachable_url_is_a_report_not_an_error() -> None:
    """Nothing listening is a state of the server, not bad input: the report, exit 0
    (tests/cli/test_unanswered_front_door.py holds the rest)."""
    dead = nothing_listening()
    out = _run("probe", dead, "--timeout", "2")
    assert out.returncode == 0, out.stderr
    assert "  parallel layout        refused (front_door_unreachable)\n" in out.stdout
    line = _one_line_error(out, 0)
    assert line.startswith(f"vllm-evidence probe: note: {dead} gave nothing to read")


@pytest.mark.parametrize("url", ["not a url", "ftp://example.invalid/", "http://", "://x"])
def test_malformed_url(url: str) -> None:
    line = _one_line_error(_run("probe", url))
    assert line.startswith("vllm-evidence probe: error:")


def test_missing_startup_log(tmp_path: Path) -> None:
    line = _one_line_error(
        _run("probe", "http://127.0.0.1:1", "--startup-log", str(tmp_path / "x"))
    )
    assert "cannot read startup log" in line


def test_missing_api_key_variable_names_the_variable_only() -> None:
    line = _one_line_error(
        _run("probe", "http://127.0.0.1:1", "--api-key-env", "VLLM_EVIDENCE_TEST_UNSET")
    )
    assert "VLLM_EVIDENCE_TEST_UNSET is not set" in line


def test_unreadable_api_key_file(tmp_path: Path) -> None:
    line = _one_line_error(
        _run("probe", "http://127.0.0.1:1", "--api-key-file", str(tmp_path / "none"))
    )
    assert "--api-key-file: cannot read" in line


def test_explain_missing_directory(tmp_path: Path) -> None:
    line = _one_line_error(_run("explain", str(tmp_path / "nope")))
    assert line.startswith("vllm-evidence explain: error:")


def test_explain_a_file_not_a_directory(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("x", encoding="utf-8")
    _one_line_error(_run("explain", str(path)))


def test_explain_tampered_capture(tmp_path: Path) -> None:
    saved = tmp_path / "capture"
    with serve_capture(REAL) as door:
        assert _run("probe", door.url, "--save", str(saved)).returncode == 0
    body = saved / "version.body"
    data = bytearray(body.read_bytes())
    data[2] ^= 0x01
    body.write_bytes(bytes(data))
    line = _one_line_error(_run("explain", str(saved)))
    assert "version" in line


def test_explain_bad_launch_index() -> None:
    log = str(REAL / "startup.log")
    line = _one_line_error(
        _run("explain", str(REAL), "--bodies", "--startup-log", log, "--launch", "7")
    )
    assert "launch must be 0..0, got 7" in line


@pytest.mark.parametrize(
    "argv",
    [
        ["--bogus"],
        ["probe"],
        ["probe", "http://127.0.0.1:1", "--require", "everything"],
        ["probe", "http://127.0.0.1:1", "--timeout", "zero"],
        ["probe", "http://127.0.0.1:1", "--timeout", "0"],
        ["demo", "--scenario", "nope"],
        ["explain"],
        ["nonsense-command"],
    ],
)
def test_bad_usage(argv: list[str]) -> None:
    _one_line_error(_run(*argv))


def test_no_command_is_one_line_and_exits_2() -> None:
    line = _one_line_error(_run())
    assert "a command is required" in line
    assert "probe" in line


def test_log_into_explain_with_a_copied_bare_directory(tmp_path: Path) -> None:
    """A bare directory's startup.log beside the bodies is used only when named: an
    unlisted log would flip parallel to established (issue 15, item 7)."""
    bare = tmp_path / "bare"
    shutil.copytree(REAL, bare)
    doc = json.loads(_run("explain", str(bare), "--bodies", "--json").stdout)
    assert doc["decisions"]["parallel"]["reason"] == "population_unobserved"
    named = ["--startup-log", str(bare / "startup.log")]
    doc = json.loads(_run("explain", str(bare), "--bodies", "--json", *named).stdout)
    # bodies a caller saved carry no observed marker: the log stays its launch's
    assert doc["decisions"]["log_join"]["reason"] == "marker_unobserved"
    assert doc["decisions"]["parallel"]["reason"] == "log_not_joined"
    assert doc["observations"]["startup_log"]["assessed_launch"] == 0


@pytest.mark.parametrize("command", ["probe", "explain", "demo", "log", "laws", "watch"])
def test_every_command_has_help_with_an_example(command: str) -> None:
    out = _run(command, "--help")
    assert out.returncode == 0
    assert "example" in out.stdout


def test_version() -> None:
    out = _run("--version")
    assert out.returncode == 0
    assert out.stdout.startswith("vllm-evidence ")


@pytest.mark.parametrize(
    ("scenario", "tp", "models_outcome"),
    [("tp2-devmode", 2, "parsed"), ("tp2-apikey", 2, "unauthorized")],
)
def test_demo_tp2_scenarios(scenario: str, tp: int, models_outcome: str) -> None:
    doc = json.loads(_run("demo", "--scenario", scenario, "--json").stdout)
    parallel = doc["decisions"]["parallel"]
    assert (parallel["verdict"], parallel["tensor_parallel_size"]) == ("established", tp)
    assert parallel["present_ranks"] == [0, 1]
    assert doc["front_door"]["routes"]["v1_models"]["outcome"] == models_outcome
    assert doc["decisions"]["capacity"]["engines"][0]["tokens"] == 8388608


def test_probe_launch_index_out_of_range_is_one_line() -> None:
    with serve_capture(REAL) as door:
        out = _run("probe", door.url, "--startup-log", str(REAL / "startup.log"), "--launch", "3")
    assert "launch must be 0..0, got 3" in _one_line_error(out)
