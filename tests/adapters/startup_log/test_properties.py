"""Generated logs in each format, with noise: parsed figures equal generated ones."""

from __future__ import annotations

import io
import re

from hypothesis import assume, given
from hypothesis import strategies as st

from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence.testing._strategies._log_lines import _reader_launches as launches
from vllm_evidence.testing._strategies._log_lines import _ReaderLaunch as GenLaunch
from vllm_evidence.testing._strategies._log_lines import _render_reader_launch as render


@st.composite
def logs(draw: st.DrawFn) -> tuple[list[GenLaunch], str]:
    gens = [draw(launches(pid=100 * (i + 1))) for i in range(draw(st.integers(1, 3)))]
    ansi = draw(st.booleans())
    crlf = draw(st.booleans())
    text = "".join(
        line
        for g in gens
        for line in render(
            g, ansi=ansi, crlf=crlf, noise=draw(st.lists(st.integers(0, 8), max_size=4))
        )
    )
    return gens, text


@given(logs())
def test_generated_figures_round_trip(case: tuple[list[GenLaunch], str]) -> None:
    gens, text = case
    log = read_startup_log(io.BytesIO(text.encode()))
    assert isinstance(log, StartupLog)
    assert len(log.launches) == len(gens)
    for gen, launch in zip(gens, log.launches, strict=True):
        assert launch.version is not None
        assert launch.version.text == gen.version
        assert launch.api_server_pids == (gen.api_pid,)
        got = [
            (
                c.device,
                c.tokens.value if c.tokens else None,
                c.max_model_len.value if c.max_model_len else None,
                str(c.max_concurrency.value) if c.max_concurrency else None,
            )
            for c in launch.capacity
        ]
        want = [(c.device, c.tokens, c.max_model_len, c.concurrency) for c in gen.capacity]
        assert got == want
        assert [m.text for m in launch.available_memory] == list(gen.memory)


@given(logs(), st.integers(70, 200))
def test_hard_wrapped_generated_logs_round_trip(
    case: tuple[list[GenLaunch], str], width: int
) -> None:
    gens, text = case
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # a terminal wraps what it shows
    wrapped = []
    starts = re.compile(r"\s*$|\(|[A-Z]+[ :]|[A-Z][a-z]{2} |\d{4}-|#@")
    for line in text.splitlines():
        if not line.startswith(("(", "INFO")):
            # a complete line near the width followed by a prefix-less one reads as a wrap
            continue
        rest = line
        while len(rest) > width:
            wrapped.append(rest[:width])
            rest = rest[width:]
            # a cut that leaves a continuation looking like a new record is ambiguous
            assume(not starts.match(rest))
        wrapped.append(rest)
    log = read_startup_log(io.BytesIO("\n".join(wrapped).encode()), wrap_width=width)
    assert isinstance(log, StartupLog)
    assert len(log.launches) == len(gens)
    for gen, launch in zip(gens, log.launches, strict=True):
        assert [c.tokens.value if c.tokens else None for c in launch.capacity] == [
            c.tokens for c in gen.capacity
        ]
        assert [m.text for m in launch.available_memory] == list(gen.memory)
