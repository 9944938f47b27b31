"""The shipped alert rules, with the real Prometheus: ``promtool check rules`` and
``promtool test rules`` pass, and a real Prometheus server on loopback, scraping a real
gate (the launcher over a stub of a recorded vLLM server), evaluates them: the stub loses
a rank and ``VllmEvidenceClaimLost`` fires with its reason; the gate stops and
``VllmEvidenceGateDown`` fires — both read from Prometheus's own HTTP API.

Without ``prometheus``/``promtool`` these tests are skipped, saying so — unless ``CI`` is
set, where a missing binary fails (``.ci/run`` installs the distribution's package).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.gate._launch import free_port, get, launched, wait_for

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = DEPLOY / "vllm-evidence-rules.yml"
RULE_TESTS = DEPLOY / "vllm-evidence-rules.test.yml"


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found is not None:
        return found
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(f"{name} is not installed, and CI is set: .ci/run installs prometheus")
    pytest.skip(f"{name} is not installed (apt-get install prometheus); CI fails here instead")


def test_promtool_checks_the_rules() -> None:
    out = subprocess.run(
        [_binary("promtool"), "check", "rules", str(RULES)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS: 4 rules found" in out.stdout


def test_promtool_tests_the_rules() -> None:
    out = subprocess.run(
        [_binary("promtool"), "test", "rules", RULE_TESTS.name],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=DEPLOY,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_the_rule_tests_are_not_vacuous(tmp_path: Path) -> None:
    """A rule that never fires fails the shipped tests: they expect alerts."""
    broken = RULES.read_text(encoding="utf-8").replace(
        "vllm_evidence_claim_established == 0", "vllm_evidence_claim_established == 2"
    )
    (tmp_path / RULES.name).write_text(broken, encoding="utf-8")
    shutil.copy(RULE_TESTS, tmp_path / RULE_TESTS.name)
    out = subprocess.run(
        [_binary("promtool"), "test", "rules", RULE_TESTS.name],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=tmp_path,
    )
    assert out.returncode != 0
    assert "VllmEvidenceClaimLost" in out.stdout + out.stderr


def fast_rules() -> str:
    """The shipped rules with every ``for`` at 0 s (the test's rendering only)."""
    text = RULES.read_text(encoding="utf-8")
    fast, count = re.subn(r"^(\s+for:) \S+$", r"\1 0s", text, flags=re.MULTILINE)
    assert count == 3  # every alert but RestartSeen, which fires at once
    return fast


class Prometheus:
    """A real Prometheus server on loopback, with a temporary config and store."""

    def __init__(self, url: str) -> None:
        self.url = url

    def api(self, path: str, **query: str) -> object:
        status, body = get(f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(query)}")
        assert status == 200, body
        document = json.loads(body)
        assert document["status"] == "success", document
        return document["data"]

    def value(self, query: str) -> float | None:
        data = self.api("query", query=query)
        assert isinstance(data, dict)
        result = data["result"]
        return float(result[0]["value"][1]) if result else None

    def firing(self, alert: str) -> list[dict[str, str]]:
        data = self.api("alerts")
        assert isinstance(data, dict)
        return [
            a["labels"]
            for a in data["alerts"]
            if a["labels"]["alertname"] == alert and a["state"] == "firing"
        ]


@pytest.fixture
def prometheus_binary() -> str:
    return _binary("prometheus")


@contextmanager
def serve_prometheus(binary: str, tmp: Path, gate: str) -> Iterator[Prometheus]:
    """A real Prometheus scraping ``gate`` every second, with :func:`fast_rules`."""
    (tmp / "rules.yml").write_text(fast_rules(), encoding="utf-8")
    target = gate.removeprefix("http://")
    (tmp / "prometheus.yml").write_text(
        "global:\n"
        "  scrape_interval: 1s\n"
        "  evaluation_interval: 1s\n"
        "rule_files:\n"
        "  - rules.yml\n"
        "scrape_configs:\n"
        "  - job_name: vllm-evidence\n"
        "    static_configs:\n"
        f"      - targets: ['{target}']\n",
        encoding="utf-8",
    )
    port = free_port()
    log = (tmp / "prometheus.log").open("wb")
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={tmp / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=log,
        stderr=log,
        cwd=tmp,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for("Prometheus ready", lambda: get(url + "/-/ready")[0] == 200, 60)
        yield Prometheus(url)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_a_real_prometheus_fires_the_shipped_alerts_on_a_real_gate(
    prometheus_binary: str, tmp_path: Path
) -> None:
    (tmp_path / "gate").mkdir()
    (tmp_path / "prometheus").mkdir()
    with (
        launched(tmp_path / "gate") as launcher,
        serve_prometheus(prometheus_binary, tmp_path / "prometheus", launcher.gate) as prometheus,
    ):
        wait_for(
            "Prometheus sees the gate ready",
            lambda: prometheus.value("vllm_evidence_ready") == 1.0,
            60,
        )
        assert prometheus.value('vllm_evidence_claim_required{claim="parallel"}') == 1.0
        assert prometheus.firing("VllmEvidenceClaimLost") == []

        _, rank1 = launcher.worker_pids()
        os.kill(rank1, signal.SIGKILL)
        wait_for(
            "VllmEvidenceClaimLost firing",
            lambda: any(
                a["claim"] == "parallel" for a in prometheus.firing("VllmEvidenceClaimLost")
            ),
            60,
        )
        lost = {a["claim"]: a for a in prometheus.firing("VllmEvidenceClaimLost")}
        assert lost["parallel"]["reason"] == "rank_lost"
        assert lost["parallel"]["by"] == "assessment"
        assert lost["parallel"]["severity"] == "critical"
        assert lost["parallel"]["target"] == launcher.assessment()["target"]
        assert "capacity" not in lost  # the engine lives: capacity still holds
        assert prometheus.firing("VllmEvidenceGateDown") == []

        # The gate stops (its command ends): its scrape fails, and the gate is down.
        launcher.proc.send_signal(signal.SIGTERM)
        assert launcher.proc.wait(30) == 0
        wait_for(
            "VllmEvidenceGateDown firing",
            lambda: prometheus.firing("VllmEvidenceGateDown") != [],
            60,
        )
        (down,) = prometheus.firing("VllmEvidenceGateDown")
        assert down["instance"] == launcher.gate.removeprefix("http://")
        assert down["job"] == "vllm-evidence"
