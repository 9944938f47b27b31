"""The recorded real vLLM servers that ship with the package, by name.

Each scenario is a capture of a real vLLM server (raw bodies and headers of every probe
route), its ``startup.log``, and the launch receipt ``vllm-evidence launch`` would have
written for that launch.  :func:`real_scenarios` lists their names
(``"vllm-0.32.0-cpu/tp2-devmode"``: the build, then the scenario); :func:`real_scenario`
opens one; the ``vllm_front_door`` fixture's ``replay(name)`` serves one on 127.0.0.1 on
the port its log names, so that its log joins the replayed front door as it joined the
live one.  Nothing here needs hypothesis.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, final

import attrs

from vllm_evidence._adapters.receipt import LaunchReceipt, read_launch_receipt
from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._capture.signing import VerificationKey, read_verification_key
from vllm_evidence.errors import InputError

if TYPE_CHECKING:
    from vllm_evidence.testing._stub import StubFrontDoor, StubRequest

__all__ = ["RealScenario", "ReplayedFrontDoor", "real_scenario", "real_scenarios"]

#: ``vllm-<release>-<build>-<scenario>`` as the shipped directories are named.
_DIRECTORY_RE = re.compile(r"(vllm-[0-9][0-9A-Za-z.+]*-[a-z]+)-([a-z0-9][a-z0-9-]*)")
_PORT_RE = re.compile(rb"'port': ([0-9]+)")


def _shipped() -> dict[str, str]:
    """Scenario name → directory name under ``vllm_evidence/demo_data``."""
    root = resources.files("vllm_evidence") / "demo_data"
    out: dict[str, str] = {}
    for entry in root.iterdir():
        m = _DIRECTORY_RE.fullmatch(entry.name)
        if m is not None and entry.is_dir():
            out[f"{m.group(1)}/{m.group(2)}"] = entry.name
    return out


def demo_receipt_key() -> VerificationKey:
    """The public key the shipped scenarios' receipts are signed by
    (``demo_data/receipt-public-key.pem``: a key made for the demo, its private half not
    kept)."""
    with resources.as_file(
        resources.files("vllm_evidence") / "demo_data" / "receipt-public-key.pem"
    ) as path:
        return read_verification_key(path, what="demo receipt key")


def real_scenarios() -> tuple[str, ...]:
    """The names of the recorded real servers that ship with the package, sorted:
    ``("vllm-0.32.0-cpu/tp1-devmode", "vllm-0.32.0-cpu/tp2-apikey",
    "vllm-0.32.0-cpu/tp2-devmode")`` in this release."""
    return tuple(sorted(_shipped()))


@final
@attrs.frozen(eq=False)
class RealScenario:
    """One recorded real server: its capture directory, its log and its receipt."""

    name: str
    """``"<build>/<scenario>"``, one of :func:`real_scenarios`."""
    directory: Path
    """The capture directory (``<route>.body``/``<route>.headers``): what a stub serves."""
    startup_log_path: Path
    """The server's recorded ``startup.log``."""
    receipt_path: Path
    """``launch-receipt.json``: the receipt of the launch the log records."""
    port: int
    """The port the launch's log names (its ``'port': N`` argument), 0 if none."""

    @property
    def startup_log(self) -> StartupLog:
        """The startup log, read."""
        read = read_startup_log(self.startup_log_path)
        if not isinstance(read, StartupLog):  # pragma: no cover - shipped data reads
            raise InputError(read.describe())
        return read

    @property
    def receipt(self) -> LaunchReceipt:
        """The launch receipt, read."""
        return read_launch_receipt(self.receipt_path, verification_key=demo_receipt_key())


@contextmanager
def real_scenario(name: str) -> Iterator[RealScenario]:
    """Open the shipped scenario ``name`` (its files stay readable inside the context).

    An unknown name is an :class:`~vllm_evidence.errors.InputError` naming the known ones.
    """
    shipped = _shipped()
    if name not in shipped:
        msg = f"no recorded scenario {name!r}; known: {', '.join(sorted(shipped))}"
        raise InputError(msg)
    data = resources.files("vllm_evidence") / "demo_data" / shipped[name]
    with resources.as_file(data) as directory:
        path = Path(directory)
        log_path = path / "startup.log"
        found = _PORT_RE.search(log_path.read_bytes())
        yield RealScenario(
            name=name,
            directory=path,
            startup_log_path=log_path,
            receipt_path=path / "launch-receipt.json",
            port=int(found.group(1)) if found else 0,
        )


@final
@attrs.frozen(eq=False)
class ReplayedFrontDoor:
    """A recorded real server replayed by a stub, with its startup log and receipt.

    ``url``, ``port`` and ``requests`` are the stub's (:attr:`door`).  When
    :attr:`on_logged_port` is true the stub serves on the port the log names, as the
    live server did; when that port was taken on this machine it serves on a free one
    (with the receipt the start time still decides the log join, as through a port
    forward; without it the join refuses ``port_contradicted``).
    """

    scenario: RealScenario
    door: StubFrontDoor
    on_logged_port: bool
    """Whether the stub serves on the port the recorded log names."""

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def url(self) -> str:
        return self.door.url

    @property
    def port(self) -> int:
        return self.door.port

    @property
    def requests(self) -> list[StubRequest]:
        """Every request the stub received (:class:`~vllm_evidence.testing.StubRequest`)."""
        return self.door.requests

    @property
    def startup_log(self) -> StartupLog:
        """The recorded server's startup log, read."""
        return self.scenario.startup_log

    @property
    def startup_log_path(self) -> Path:
        return self.scenario.startup_log_path

    @property
    def receipt(self) -> LaunchReceipt:
        """The launch receipt of the recorded launch, read."""
        return self.scenario.receipt

    @property
    def receipt_path(self) -> Path:
        return self.scenario.receipt_path
