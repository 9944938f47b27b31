"""Hypothesis strategies: generated startup logs with known figures, plus noise."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st


@dataclass(frozen=True)
class GenCapacity:
    """One generated capacity report: what the reader must find."""

    fmt: str  # "one_line" | "two_line"
    device: str
    tokens: int
    max_model_len: int
    concurrency: str  # exact %.2f text


@dataclass(frozen=True)
class GenLaunch:
    api_pid: int
    version: str
    capacity: tuple[GenCapacity, ...]
    memory: tuple[str, ...]


@st.composite
def capacities(draw: st.DrawFn) -> GenCapacity:
    fmt = draw(st.sampled_from(["one_line", "two_line"]))
    device = draw(st.sampled_from(["GPU", "CPU", "XPU"]))
    whole = draw(st.integers(0, 99999))
    cents = draw(st.integers(0, 99))
    return GenCapacity(
        fmt=fmt,
        device=device,
        tokens=draw(st.integers(0, 10**9)),
        max_model_len=draw(st.integers(1, 10**7)),
        concurrency=f"{whole}.{cents:02d}",
    )


@st.composite
def launches(draw: st.DrawFn, pid: int) -> GenLaunch:
    version = draw(st.sampled_from(["0.10.1.1", "0.11.0", "0.32.0", "0.6.6.post1"]))
    caps = tuple(draw(st.lists(capacities(), max_size=3)))
    sign = st.sampled_from(["", "-"])
    mem = tuple(
        f"{draw(sign)}{draw(st.integers(0, 99))}.{draw(st.integers(0, 99)):02d}"
        for _ in range(draw(st.integers(0, 2)))
    )
    return GenLaunch(api_pid=pid, version=version, capacity=caps, memory=mem)


NOISE = (
    "INFO 09-03 02:11:08 [__init__.py:241] Automatically detected platform cuda.",
    "(VllmWorker TP0 pid=900) INFO 09-03 02:12:01 [cuda.py:328] Using Flash Attention backend.",
    "Loading safetensors checkpoint shards: 100% Completed | 1/1",
    "  warnings.warn(",
    "(APIServer pid=1) INFO:     Started server process [1]",
)


def render(launch: GenLaunch, *, ansi: bool, crlf: bool, noise: list[int]) -> list[str]:
    """The launch as log lines (noise lines interleaved at the given positions)."""

    def tag(name: str, pid: int) -> str:
        t = f"({name} pid={pid})"
        return f"\x1b[1;36m{t}\x1b[0;0m " if ansi else t + " "

    pre = "INFO 01-02 03:04:05 [kv_cache_utils.py:1] "
    out = [tag("APIServer", launch.api_pid) + pre + f"vLLM API server version {launch.version}"]
    engine = tag("EngineCore_DP0", launch.api_pid + 1) + pre
    worker = tag("Worker", launch.api_pid + 2) + pre
    out.extend(worker + f"Available KV cache memory: {m} GiB" for m in launch.memory)
    for c in launch.capacity:
        if c.fmt == "one_line":
            out.append(
                engine + f"{c.device} KV cache size: {c.tokens:,} tokens, Maximum concurrency for "
                f"{c.max_model_len:,} tokens per request: {c.concurrency}x"
            )
        else:
            out.append(engine + f"{c.device} KV cache size: {c.tokens:,} tokens")
            out.append(
                engine + f"Maximum concurrency for {c.max_model_len:,} tokens per request: "
                f"{c.concurrency}x"
            )
    for i, n in enumerate(noise):
        out.insert(1 + min(n, len(out) - 1), NOISE[i % len(NOISE)])
    end = "\r\n" if crlf else "\n"
    return [line + end for line in out]
