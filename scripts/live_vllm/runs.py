"""One recording run: its paths and secret, the command line and environment of each
scenario's server, and the neutralisation that takes everything machine-specific out of
what is recorded."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from live_vllm.common import (
    API_KEY_PREFIX,
    BASE_PYTHON_NEUTRAL,
    HOME_NEUTRAL,
    HOST,
    MODEL_NEUTRAL,
    REPO,
    TMP_NEUTRAL,
    USER_NEUTRAL,
    VENV_NEUTRAL,
    offline_env,
)
from live_vllm.models import MODEL_NEUTRALS
from live_vllm.releases import RELEASES, VLLM_VERSION, Release
from live_vllm.scenarios import Scenario
from live_vllm.shim import shim_path

__all__ = ["Run", "user_name"]

#: Write a fresh Ed25519 key pair: the private key (mode 0600) to argv[1], its public
#: half to argv[2].
_MAKE_KEYS = """
import os, sys
from vllm_evidence._capture.signing import SigningKey
key = SigningKey.generate()
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
with os.fdopen(fd, "wb") as out:
    out.write(key.private_pem())
with open(sys.argv[2], "wb") as out:
    out.write(key.verification_key.pem())
"""


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
        return self.release.own

    @property
    def model(self) -> Path:
        """Where the run writes the tiny Llama."""
        return self.root / "models" / "tiny-llama"

    def model_dir(self, model: str) -> Path:
        """Where the run writes ``model`` (``MODEL_SCRIPTS``)."""
        return self.root / "models" / model

    @property
    def home(self) -> Path:
        """The servers' home directory."""
        return self.root / "home"

    @property
    def tmp(self) -> Path:
        """The servers' temporary directory."""
        return self.root / "tmp"

    @property
    def receipt_keys(self) -> tuple[Path, Path]:
        """The run's launcher key pair, made on first use: the Ed25519 private key the
        launcher signs its receipts with (mode 0600) and the public key every probe given
        a receipt verifies it under (a receipt no key vouches for joins no log)."""
        directory = self.root / "keys"
        private, public = directory / "receipt-signing.pem", directory / "receipt-public.pem"
        if not (private.is_file() and public.is_file()):
            # Made by the product itself, in a process of its own (this package stays in
            # the standard library and uses the product only as a user does).
            directory.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                [sys.executable, "-c", _MAKE_KEYS, str(private), str(public)],
                check=True,
                cwd=REPO,
                timeout=120,
            )
        return private, public

    def argv(self, scenario: Scenario) -> list[str]:
        """The vLLM API server command line of ``scenario`` (the launcher's command, when
        launched)."""
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
            env["LD_PRELOAD"] = str(shim_path(self.env_dir))
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
        return offline_env(base) | self.scenario_env(scenario)

    def neutral_command(self, scenario: Scenario) -> str:
        """The scenario's variables and command line as the fixtures write them: port and
        key as placeholders, every path neutral."""
        env = " ".join(f"{k}={v}" for k, v in self.scenario_env(scenario).items())
        argv = self.argv(scenario)
        argv[argv.index("--port") + 1] = "<port>"
        if scenario.api_key:
            argv[argv.index("--api-key") + 1] = "<random secret>"
        return self.neutralise_text(f"{env} {' '.join(argv)}")

    # ---------------------------------------------------------- neutralisation

    def replacements(self) -> list[tuple[str, str]]:
        """(machine-specific text, its neutral name), longest first."""
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
        """``text`` with every machine-specific path, the user name and the key neutral."""
        for old, new in self.replacements():
            text = text.replace(old, new)
        user = user_name()
        if user and user != USER_NEUTRAL:
            text = re.sub(
                rf"torchinductor_{re.escape(user)}\b", f"torchinductor_{USER_NEUTRAL}", text
            )
        text = re.sub(r"(?<![\w.-])/tmp/", f"{TMP_NEUTRAL}/", text)
        home = re.escape(str(Path.home()))
        return re.sub(rf"(?<![\w.-]){home}(?![\w-])", HOME_NEUTRAL, text)

    def neutralise(self, data: bytes) -> bytes:
        """:meth:`neutralise_text` on bytes (undecodable bytes kept as they are)."""
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
        private = self.root / "keys" / "receipt-signing.pem"
        if private.is_file():  # the launcher's private key, line by line
            items |= {line for line in private.read_text("ascii").splitlines() if "-" not in line}
        return sorted(i for i in items if i and i != "/")


def user_name() -> str:
    """The user this runs as (its name is in torch's cache directory, neutralised)."""
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return os.environ.get("USER", "")
