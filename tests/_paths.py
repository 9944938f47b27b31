"""Where the real captures are, relative to this file (a clean clone has them)."""

from __future__ import annotations

from pathlib import Path

CAPTURES = Path(__file__).parent / "fixtures" / "captures"
REAL = CAPTURES / "vllm-0.32.0-cpu-tp1-devmode"
PUBLIC = CAPTURES / "public"


def real_body(stem: str) -> bytes:
    """A body of the real vLLM 0.32.0 capture."""
    return (REAL / f"{stem}.body").read_bytes()


def public_capture(relative: str) -> bytes:
    """A public capture with its ``#@`` header lines (through ``#@ ---``) removed."""
    lines = (PUBLIC / relative).read_bytes().splitlines(keepends=True)
    end = next(i for i, line in enumerate(lines) if line.startswith(b"#@ ---"))
    return b"".join(lines[end + 1 :])


#: How long a replay waits for the fixed port its log names when another suite's replay
#: of the same log holds it (suites run side by side: a mutation run beside the tests).
PORT_WAIT_S = 120.0
