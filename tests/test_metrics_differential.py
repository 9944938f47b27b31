"""The targeted /metrics scanner against prometheus_client's full parser, differentially."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from tests._paths import public_capture, real_body
from vllm_evidence.adapters.metrics import CACHE_CONFIG_INFO, PROCESS_START_TIME, scan_metrics

Sample = tuple[str, tuple[tuple[str, str], ...], float, float | None]


def _same_float(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def reference(text: str) -> list[Sample]:
    """The targeted samples as prometheus_client parses them."""
    return [
        (
            s.name,
            tuple(sorted(s.labels.items())),
            float(s.value),
            None if s.timestamp is None else float(s.timestamp),
        )
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name in (CACHE_CONFIG_INFO, PROCESS_START_TIME)
    ]


def scanned(text: str) -> list[Sample]:
    samples, _ = scan_metrics(text)
    return [
        (
            s.name,
            tuple(sorted(s.labels.items())),
            float(s.value),
            None if s.timestamp_ms is None else float(s.timestamp_ms) / 1000,
        )
        for s in samples
    ]


def assert_same(text: str) -> None:
    ours, theirs = scanned(text), reference(text)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert a[:2] == b[:2]
        assert _same_float(a[2], b[2])
        assert (a[3] is None and b[3] is None) or (
            a[3] is not None and b[3] is not None and _same_float(a[3], b[3])
        )


def test_real_bodies_agree() -> None:
    for body in (
        real_body("metrics"),
        public_capture("metrics/aibrix-runtime-qwen2.5-coder-v0engine.txt"),
    ):
        text = body.decode()
        assert reference(text), "the reference found no targeted sample: nothing compared"
        assert_same(text)


_label_names = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,12}", fullmatch=True).filter(
    lambda n: not n.startswith("__")  # reserved: not valid exposition text
)
# Label values as wire text: plain characters, the three escapes, and a backslash
# before an ordinary character (kept as written by both parsers).
_label_wire_values = st.lists(
    st.sampled_from([*list("abcXYZ019 ._-:,={}[]()'#"), "\\\\", '\\"', "\\n", "\\q", "é"]),
    max_size=8,
).map("".join)
_numbers = st.one_of(
    st.integers(min_value=0, max_value=10**12).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1.0", "1.79601185221e+09", "+Inf", "-Inf", "NaN", "0.92", "1e-4", ".5"]),
)
_blank = st.sampled_from([" ", "  ", "\t", ""])


@st.composite
def _target_line(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from([CACHE_CONFIG_INFO, PROCESS_START_TIME]))
    names = draw(st.lists(_label_names, unique=True, max_size=6))
    if name == PROCESS_START_TIME:
        names = []
    pad = draw(_blank)
    pairs = [f'{pad}{n}{draw(_blank)}={draw(_blank)}"{draw(_label_wire_values)}"' for n in names]
    empty_braces: bool = draw(st.booleans())
    trailing_comma: bool = draw(st.booleans())
    labels = ""
    if pairs or empty_braces:
        labels = "{" + ",".join(pairs) + ("," if pairs and trailing_comma else "") + "}"
    value = draw(_numbers)
    ts = draw(st.one_of(st.none(), st.integers(min_value=0, max_value=2**42).map(str)))
    lead = draw(st.sampled_from(["", " ", "  "]))
    gap = draw(st.sampled_from([" ", "   "]))
    line = f"{lead}{name}{draw(st.sampled_from(['', ' ']))}{labels}{gap}{value}"
    if ts is not None:
        line += f"{gap}{ts}"
    return line + draw(st.sampled_from(["", " "]))


_other_lines = st.sampled_from(
    [
        "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig",
        "# TYPE vllm:cache_config_info gauge",
        "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.",
        "# TYPE process_start_time_seconds gauge",
        "# TYPE vllm:num_requests_running gauge",
        'vllm:num_requests_running{engine="0",model_name="m"} 0.0',
        'vllm:cache_config_info_total{x="y"} 3',
        "process_start_time_seconds_created 12",
        "# a free comment",
        "",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_target_line(), _other_lines), max_size=12))
def test_generated_bodies_agree(lines: list[str]) -> None:
    text = "\n".join(lines) + "\n"
    assert_same(text)


def test_escapes_agree_on_a_hand_written_line() -> None:
    text = 'vllm:cache_config_info{a="q\\"q",b="b\\\\s",c="n\\nn",d="x\\y"} 1.0 1700000000123\n'
    assert scanned(text) == [
        (
            CACHE_CONFIG_INFO,
            (("a", 'q"q'), ("b", "b\\s"), ("c", "n\nn"), ("d", "x\\y")),
            1.0,
            1700000000.123,
        )
    ]
    assert_same(text)


def test_family_names_are_the_declared_vllm_ones() -> None:
    _, families = scan_metrics(
        "# TYPE vllm:a counter\nvllm:a_total 1\n  # HELP   vllm:b  help text\n"
        "# TYPE other gauge\nother 3\n# a comment naming vllm:c\n"
        'vllm:cache_config_info{x="1"} 1\n'
    )
    assert families == frozenset({"vllm:a", "vllm:b", CACHE_CONFIG_INFO})
