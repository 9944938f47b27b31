"""One run's environments and neutralisation: the server sees only the variables it is
given, and nothing machine-specific or secret survives into what is recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
from live_vllm.common import REPO
from live_vllm.releases import RELEASES
from live_vllm.runs import Run
from live_vllm.scenarios import LIFECYCLE_SCENARIOS, RELEASE_SCENARIOS, SCENARIOS, Scenario

KEY = "live-tier-key-0123456789abcdef"


def _scenario(name: str) -> Scenario:
    return next(s for s in SCENARIOS + LIFECYCLE_SCENARIOS + RELEASE_SCENARIOS if s.name == name)


@pytest.fixture
def run(tmp_path: Path) -> Run:
    return Run(env_dir=tmp_path / "venv", root=tmp_path / "run", port=40123, api_key=KEY)


def test_a_runs_paths_are_under_its_root(run: Run, tmp_path: Path) -> None:
    assert run.model == tmp_path / "run" / "models" / "tiny-llama"
    assert run.model_dir("tiny-gemma3") == tmp_path / "run" / "models" / "tiny-gemma3"
    assert (run.home, run.tmp) == (tmp_path / "run" / "home", tmp_path / "run" / "tmp")


def test_each_run_has_a_fresh_key_with_the_prefix_the_tests_look_for(tmp_path: Path) -> None:
    a = Run(env_dir=tmp_path, root=tmp_path, port=1)
    b = Run(env_dir=tmp_path, root=tmp_path, port=1)
    assert a.api_key.startswith("live-tier-key-")
    assert a.api_key != b.api_key
    assert len(a.api_key) == len("live-tier-key-") + 32


def test_the_scenarios_variables_follow_its_settings(run: Run) -> None:
    assert run.scenario_env(_scenario("tp2-apikey")) == {
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    }
    assert run.scenario_env(_scenario("tp1-devmode-alias")) == {
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_SERVER_DEV_MODE": "1",
    }
    assert (
        run.scenario_env(_scenario("tp2-keepalive-engine-death"))["VLLM_KEEP_ALIVE_ON_ENGINE_DEATH"]
        == "1"
    )
    assert "LD_PRELOAD" not in run.scenario_env(_scenario("tp2-apikey"))


def test_only_a_shim_release_preloads_the_shim(tmp_path: Path) -> None:
    shim = Run(env_dir=tmp_path / "v", root=tmp_path, port=1, release=RELEASES["0.9.2"])
    stub = Run(env_dir=tmp_path / "v", root=tmp_path, port=1, release=RELEASES["0.11.0"])
    tp1 = _scenario("tp1")
    expected = str(tmp_path / "v" / "lib" / "vllm-evidence-shim" / "libstdc++-shim.so")
    assert shim.scenario_env(tp1)["LD_PRELOAD"] == expected
    assert "LD_PRELOAD" not in stub.scenario_env(tp1)


def test_nothing_of_the_callers_environment_reaches_the_server(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_canary")
    monkeypatch.setenv("VLLM_EVIDENCE_LIVE_CANARY", "1")
    env = run.server_env(_scenario("tp2-apikey"))
    assert "hf_canary" not in env.values()
    assert "VLLM_EVIDENCE_LIVE_CANARY" not in env
    assert (env["HOME"], env["TMPDIR"]) == (str(run.home), str(run.tmp))
    assert env["HF_HUB_OFFLINE"] == env["TRANSFORMERS_OFFLINE"] == env["VLLM_NO_USAGE_STATS"] == "1"
    assert env["PATH"].split(":")[0] == str(run.env_dir / "bin")


def test_the_neutral_command_hides_the_port_the_key_and_every_path(run: Run) -> None:
    command = run.neutral_command(_scenario("tp2-apikey"))
    assert command == (
        "VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_OMP_THREADS_BIND=nobind "
        "/opt/venv/bin/python -m vllm.entrypoints.openai.api_server "
        "--model /models/tiny-llama --host 127.0.0.1 --port <port> --dtype bfloat16 "
        "--max-model-len 2048 --tensor-parallel-size 2 --api-key <random secret>"
    )
    assert KEY not in command
    assert "40123" not in command


def test_the_other_releases_serve_float32(tmp_path: Path) -> None:
    other = Run(env_dir=tmp_path, root=tmp_path / "r", port=1, release=RELEASES["0.26.0"])
    assert "--dtype float32" in other.neutral_command(_scenario("tp1"))


def test_neutralising_replaces_each_machine_path_and_the_key(run: Run, tmp_path: Path) -> None:
    text = (
        f"model={run.model} gemma={run.model_dir('tiny-gemma3')} home={run.home}/x "
        f"tmp={run.tmp}/y root={run.root}/z venv={run.env_dir}/bin/python repo={REPO}/LICENSE "
        f"key={KEY} user-home={Path.home()}/.cache"
    )
    assert run.neutralise_text(text) == (
        "model=/models/tiny-llama gemma=/models/tiny-gemma3 home=/home/vllm/x "
        "tmp=/var/tmp/y root=/var/tmp/z venv=/opt/venv/bin/python repo=/src/vllm_evidence/LICENSE "
        "key=*** user-home=/home/vllm/.cache"
    )


def test_neutralising_leaves_other_text_alone(run: Run) -> None:
    text = "INFO 12-02 13:42:48 world_size=2 rank=1 /models/tiny-llama /opt/venv 'api_key': '***'"
    assert run.neutralise_text(text) == text


def test_bytes_that_are_not_utf8_survive_neutralising(run: Run) -> None:
    data = b"\xff\xfe " + KEY.encode() + b" \x80"
    assert run.neutralise(data) == b"\xff\xfe *** \x80"


def test_the_base_interpreter_is_neutral_unless_it_is_a_system_prefix(tmp_path: Path) -> None:
    run = Run(env_dir=tmp_path / "v", root=tmp_path / "r", port=1, base_prefix="/opt/python3.11")
    assert run.neutralise_text("/opt/python3.11/lib") == "/usr/local/lib"
    usr = Run(env_dir=tmp_path / "v", root=tmp_path / "r", port=1, base_prefix="/usr")
    assert usr.neutralise_text("/usr/lib") == "/usr/lib"


def test_the_forbidden_strings_are_the_key_its_prefix_and_the_machine_paths(run: Run) -> None:
    forbidden = run.forbidden()
    for needle in (KEY, "live-tier-key-", str(run.root), str(run.env_dir), str(REPO)):
        assert needle in forbidden
    assert "/" not in forbidden
    assert "" not in forbidden


def test_a_run_has_one_launcher_key_pair_made_on_first_use(run: Run) -> None:
    """The private key is the owner's alone (0600), made once per run; its public half
    verifies what it signs; and the private key's text is forbidden in what is recorded."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

    assert not (run.root / "keys").exists()
    private, public = run.receipt_keys
    assert run.receipt_keys == (private, public)
    assert private.stat().st_mode & 0o777 == 0o600
    key = serialization.load_pem_private_key(private.read_bytes(), password=None)
    half = serialization.load_pem_public_key(public.read_bytes())
    assert isinstance(key, Ed25519PrivateKey)
    assert isinstance(half, Ed25519PublicKey)
    half.verify(key.sign(b"receipt"), b"receipt")  # raises if it is not the other half
    again = private.read_bytes()
    assert run.receipt_keys == (private, public)
    assert private.read_bytes() == again  # not made again
    body = [line for line in again.decode().splitlines() if "-" not in line]
    assert body
    assert all(line in run.forbidden() for line in body)
    assert not any(line in run.forbidden() for line in public.read_text().splitlines())


def test_without_a_key_pair_nothing_of_one_is_forbidden(run: Run) -> None:
    assert not any("MC4CAQ" in needle for needle in run.forbidden())
