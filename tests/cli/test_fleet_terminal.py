"""A fleet's table on a terminal and in a pipe.

On a terminal (a pseudo-terminal here) the table fills in while servers are still being
read, under a line counting servers done, failed and refused; piped, it is printed once,
plainly, in the order given, with no control sequences.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from contextlib import ExitStack

from tests._paths import REAL
from vllm_evidence.testing._stub import serve_capture


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(extra)
    return env


def test_on_a_terminal_rows_appear_while_the_fleet_is_still_being_read() -> None:
    with ExitStack() as stack:
        fast = [stack.enter_context(serve_capture(REAL)) for _ in range(2)]
        slow = stack.enter_context(serve_capture(REAL, latency_s=1.0))
        leader, follower = os.openpty()
        child = subprocess.Popen(
            [sys.executable, "-m", "vllm_evidence", "probe", *(d.url for d in fast), slow.url],
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=follower,
            env=_env(TERM="xterm-256color", COLUMNS="200", LINES="40"),
        )
        os.close(follower)
        seen = live_view = b""
        running_when_two_were_done = None
        while True:
            ready, _, _ = select.select([leader], [], [], 60)
            assert ready, "the CLI wrote nothing for 60 s"
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
            if running_when_two_were_done is None and b"2/3 servers done" in seen:
                running_when_two_were_done = child.poll() is None
                live_view = seen
        child.wait(timeout=60)
        os.close(leader)
    assert child.returncode == 0, seen.decode("utf-8", "replace")[-2000:]
    # The live view counted two servers done, and showed their rows, before the third
    # (slow) one was read and while the command was still running.
    assert running_when_two_were_done is True
    assert b"2 assessed, 0 failed" in live_view
    assert fast[0].url.encode() in live_view or fast[1].url.encode() in live_view
    assert b"\x1b[" in seen  # drawn and redrawn in place
    # At the end, the whole table in the order given.
    text = seen.decode("utf-8", "replace")
    final = text[text.rindex("3 vLLM servers") :]
    positions = [final.index(d.url) for d in (*fast, slow)]
    assert positions == sorted(positions)


def test_piped_the_table_is_printed_once_plainly_in_the_order_given() -> None:
    with ExitStack() as stack:
        doors = [stack.enter_context(serve_capture(REAL)) for _ in range(3)]
        out = subprocess.run(
            [sys.executable, "-m", "vllm_evidence", "probe", *(d.url for d in doors)],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
            env=_env(TERM="xterm-256color"),
        )
    assert out.returncode == 0
    assert "\x1b" not in out.stdout
    assert "\x1b" not in out.stderr
    assert "servers done" not in out.stdout + out.stderr
    assert out.stdout.count("3 vLLM servers") == 1
    positions = [out.stdout.index(d.url) for d in doors]
    assert positions == sorted(positions)
