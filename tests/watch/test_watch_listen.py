"""``vllm-evidence watch --listen HOST:PORT``: the gate's routes over remote targets.

A watch of two servers — one front door that answers (its served identity established)
and one port where nothing listens — serves, while it runs: ``/ready`` 503 for the
fleet and 200 or 503 per ``?target=``, 404 for a server it does not watch; ``/metrics``
with one ``vllm_evidence_ready`` series per target, the targets file's labels on its
``vllm_evidence_target_info``;
``/assessment?target=`` the last round's document; ``/live`` 200.  It is a real process
and real sockets: the watch runs until interrupted, then exits 130 and frees the port.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from tests._ports import nothing_listening
from tests.watch._kit import KILL, SERVING, get_route, until_status
from vllm_evidence.cli import main
from vllm_evidence.testing._stub import serve_capture


@pytest.fixture
def listening(tmp_path: Path) -> Iterator[tuple[int, str, str, subprocess.Popen[bytes]]]:
    with serve_capture(KILL) as door:
        dead = nothing_listening()
        targets = tmp_path / "fleet.json"
        targets.write_text(
            json.dumps(
                [
                    {"targets": [door.url.removeprefix("http://")], "labels": {"pool": "a"}},
                    {"targets": [dead.removeprefix("http://")], "labels": {"pool": "b"}},
                ]
            ),
            encoding="utf-8",
        )
        argv = [sys.executable, "-m", "vllm_evidence", "watch", "--targets", str(targets)]
        argv += ["--listen", "127.0.0.1:0", "--interval", "200ms", "--json"]
        argv += ["--require", "served_identity", "--deadline", "2s"]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline().decode()
            found = SERVING.search(line)
            assert found, line
            yield int(found.group(2)), door.url, dead, proc
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if proc.stderr is not None:
                proc.stderr.close()


def test_ready_answers_for_the_fleet_and_for_each_target(
    listening: tuple[int, str, str, subprocess.Popen[bytes]],
) -> None:
    port, alive, dead, _ = listening
    assert json.loads(until_status(port, f"/ready?target={quote(alive, safe='')}", 200))["ready"]
    status, body = get_route(port, "/ready")
    fleet = json.loads(body)
    assert status == 503  # one server is not ready: the fleet is not
    assert fleet["required"] == ["served_identity"]
    assert {t["target"]: t["ready"] for t in fleet["targets"]} == {alive: True, dead: False}
    refused = json.loads(until_status(port, f"/ready?target={quote(dead, safe='')}", 503))
    (target,) = refused["targets"]
    assert {r["claim"] for r in target["refusals"]} == {"served_identity"}
    status, body = get_route(port, "/ready?target=" + quote("http://127.0.0.1:1", safe=""))
    assert status == 404
    assert json.loads(body)["error"] == "not a target of this gate"


def test_metrics_carry_each_target_and_its_labels(
    listening: tuple[int, str, str, subprocess.Popen[bytes]],
) -> None:
    port, alive, dead, _ = listening
    until_status(port, f"/ready?target={quote(alive, safe='')}", 200)
    _, text = get_route(port, "/metrics")
    metrics = text.decode()
    ready = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^vllm_evidence_ready\{([^}]*)\} (\S+)$", metrics, re.MULTILINE)
    }
    assert ready == {f'target="{alive}"': "1.0", f'target="{dead}"': "0.0"}
    # the file's labels ride on the target's info series (joined in PromQL by target)
    info = re.findall(r"^vllm_evidence_target_info\{([^}]*)\} 1\.0$", metrics, re.MULTILINE)
    assert any(f'target="{alive}"' in k and 'pool="a"' in k for k in info), info
    assert any(f'target="{dead}"' in k and 'pool="b"' in k for k in info), info


def test_assessment_and_live(listening: tuple[int, str, str, subprocess.Popen[bytes]]) -> None:
    port, alive, _, proc = listening
    until_status(port, f"/ready?target={quote(alive, safe='')}", 200)
    status, body = get_route(port, f"/assessment?target={quote(alive, safe='')}")
    assert status == 200
    document = json.loads(body)
    assert document["schema"].startswith("vllm-evidence.assessment/")
    assert document["decisions"]["served_identity"]["verdict"] == "established"
    status, body = get_route(port, "/assessment")
    assert status == 400  # two targets: say which
    assert json.loads(until_status(port, "/live", 200))["live"] is True
    proc.send_signal(signal.SIGINT)
    assert proc.wait(20) == 130
    with pytest.raises(ConnectionRefusedError):
        get_route(port, "/live")  # the port is released


@pytest.mark.parametrize(
    ("listen", "said"),
    [
        ("nowhere", "--listen 'nowhere': give HOST:PORT"),
        ("127.0.0.1:99999", "--listen '127.0.0.1:99999': the port must be 0..65535"),
    ],
)
def test_a_bad_listen_address_is_one_line(
    listen: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["watch", "http://127.0.0.1:9", "--listen", listen, "--rounds", "1"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1
    assert said in err


def test_a_port_in_use_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        status = main(["watch", "http://127.0.0.1:9", "--listen", f"127.0.0.1:{port}"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1
    assert f"--listen 127.0.0.1:{port}: the address is already in use" in err
