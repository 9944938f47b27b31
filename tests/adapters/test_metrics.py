"""``/metrics``: the targeted scanner against prometheus_client's full parser,
differentially; the adapter on real and hand-written bodies; each damage's words.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from tests._paths import public_capture, real_body
from vllm_evidence._adapters.failure import BodyParseFailure
from vllm_evidence._adapters.metrics import (
    CACHE_CONFIG_INFO,
    PROCESS_START_TIME,
    MetricsObservation,
    parse_metrics,
    scan_metrics,
)
from vllm_evidence._measure import TokenCount
from vllm_evidence.upstream._routes import Route

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


# --- the adapter on real and hand-written bodies (expected values copied by hand) ---


# Copied by hand from tests/fixtures/captures/vllm-0.32.0-cpu-tp1-devmode/metrics.body
REAL_CACHE_CONFIG_LABELS = {
    "_block_size_resolved": "True",
    "block_size": "128",
    "cache_dtype": "auto",
    "cache_hit_alignment_tokens": "None",
    "effective_attention_block_size": "128",
    "enable_mamba_shared_prefix_checkpoint": "False",
    "enable_prefix_caching": "True",
    "engine": "0",
    "gpu_memory_utilization": "0.92",
    "hash_block_size": "None",
    "is_attention_free": "False",
    "kv_cache_dtype_skip_layers": "[]",
    "kv_cache_layout": "None",
    "kv_cache_max_concurrency": "2048.0",
    "kv_cache_memory_bytes": "1073741824",
    "kv_cache_size_tokens": "4194304",
    "kv_offloading_backend": "native",
    "kv_offloading_size": "None",
    "kv_sharing_fast_prefill": "False",
    "mamba_block_size": "None",
    "mamba_cache_dtype": "auto",
    "mamba_cache_mode": "none",
    "mamba_page_size_padded": "None",
    "mamba_ssm_cache_dtype": "auto",
    "num_cpu_blocks": "None",
    "num_gpu_blocks": "32768",
    "num_gpu_blocks_override": "None",
    "prefix_cache_retention_interval": "0",
    "prefix_caching_hash_algo": "sha256",
    "prefix_match_unit": "None",
    "replayssm_buffer_len": "16",
    "skip_page_size_padded": "None",
    "sliding_window": "None",
    "swa_bounded_replay": "True",
    "use_kda_recoverssm": "False",
    "use_replayssm": "False",
    "user_specified_block_size": "False",
}


def test_metrics_real_capture() -> None:
    parsed = parse_metrics(real_body("metrics"))
    assert isinstance(parsed, MetricsObservation)
    assert len(parsed.cache_config_info) == 1
    series = parsed.cache_config_info[0]
    assert series.labels == REAL_CACHE_CONFIG_LABELS
    assert series.engine == "0"
    assert series.value == Decimal("1.0")
    assert TokenCount.parse(series.label("kv_cache_size_tokens") or "") == TokenCount(4194304)
    assert parsed.process_start_time is not None
    assert parsed.process_start_time.seconds == Decimal("1.79601185221e+09")
    assert {"vllm:cache_config_info", "vllm:num_requests_running"} <= parsed.vllm_families
    assert "process_start_time_seconds" not in parsed.vllm_families
    assert all(name.startswith("vllm:") for name in parsed.vllm_families)


def test_metrics_v0_era_without_help_or_engine() -> None:
    parsed = parse_metrics(public_capture("metrics/aibrix-runtime-qwen2.5-coder-v0engine.txt"))
    assert isinstance(parsed, MetricsObservation)
    assert len(parsed.cache_config_info) == 1
    series = parsed.cache_config_info[0]
    assert series.engine is None
    assert series.labels == {
        "block_size": "16",
        "cache_dtype": "auto",
        "calculate_kv_scales": "False",
        "cpu_offload_gb": "0",
        "enable_prefix_caching": "False",
        "gpu_memory_utilization": "0.9",
        "is_attention_free": "False",
        "num_cpu_blocks": "9362",
        "num_gpu_blocks": "81767",
        "num_gpu_blocks_override": "None",
        "sliding_window": "None",
        "swap_space_bytes": "4294967296",
    }
    assert parsed.process_start_time is None
    assert "vllm:num_requests_swapped" in parsed.vllm_families


def test_metrics_escapes_whitespace_and_timestamps() -> None:
    body = (
        b"# TYPE vllm:cache_config_info gauge\n"
        b'  vllm:cache_config_info { a = "x\\"y" , b="back\\\\slash",c="line\\nbreak",'
        b'd="keep\\q", engine="1", } 1.0 1700000000000\n'
        b"process_start_time_seconds   1.5e+09  \n"
    )
    parsed = parse_metrics(body)
    assert isinstance(parsed, MetricsObservation)
    assert parsed.cache_config_info[0].labels == {
        "a": 'x"y',
        "b": "back\\slash",
        "c": "line\nbreak",
        "d": "keep\\q",
        "engine": "1",
    }
    assert parsed.process_start_time is not None
    assert parsed.process_start_time.seconds == Decimal(1500000000)


def test_metrics_one_series_per_engine() -> None:
    body = (
        b'vllm:cache_config_info{engine="0",num_gpu_blocks="200"} 1.0\n'
        b'vllm:cache_config_info{engine="1",num_gpu_blocks="200"} 1.0\n'
    )
    parsed = parse_metrics(body)
    assert isinstance(parsed, MetricsObservation)
    assert [engine for engine, _ in parsed.series_by_engine()] == ["0", "1"]
    assert parsed.process_start_time is None


def test_metrics_does_not_take_a_longer_name_for_the_target() -> None:
    body = b'vllm:cache_config_info_extra{a="b"} 1\nprocess_start_time_seconds_x 5\n'
    parsed = parse_metrics(body)
    assert isinstance(parsed, MetricsObservation)
    assert parsed.cache_config_info == ()
    assert parsed.process_start_time is None


@pytest.mark.parametrize(
    "body",
    [
        b'vllm:cache_config_info{a="unterminated} 1\n',
        b"vllm:cache_config_info{a=unquoted} 1\n",
        b'vllm:cache_config_info{a="b"}\n',
        b"process_start_time_seconds one\n",
        b"process_start_time_seconds 1\nprocess_start_time_seconds 2\n",
        b"\xff\xfe",
        b"",
    ],
)
def test_metrics_malformed_is_a_failure(body: bytes) -> None:
    parsed = parse_metrics(body)
    assert isinstance(parsed, BodyParseFailure)
    assert parsed.route is Route.METRICS


# --- whitespace inside label sets and each damage's words (from mutation testing) ---


def _reason(outcome: object) -> str:
    assert isinstance(outcome, BodyParseFailure), outcome
    return outcome.reason


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(_label_names, st.text(alphabet='=,{}a "\\', max_size=6)),
        max_size=8,
    ),
    st.booleans(),
)
def test_label_sets_as_every_exposition_writes_them_agree(
    pairs: list[tuple[str, str]], trailing_comma: bool
) -> None:
    """``{a="x",b="y"}``: no blanks, values full of ``=`` and ``,`` (the split's seams),
    names repeated (an error), quotes and backslashes escaped as on the wire."""
    wire = [(n, v.replace("\\", "\\\\").replace('"', '\\"')) for n, v in pairs]
    labels = ",".join(f'{n}="{v}"' for n, v in wire) + ("," if wire and trailing_comma else "")
    text = f"{CACHE_CONFIG_INFO}{{{labels}}} 1\n"
    if len({n for n, _ in pairs}) < len(pairs):
        assert _reason(parse_metrics(text.encode())).startswith(
            "malformed targeted sample: duplicate or reserved label"
        )
    else:
        assert_same(text)
        (sample,), _ = scan_metrics(text)
        assert dict(sample.labels) == dict(pairs)


def test_label_sets_may_carry_blanks() -> None:
    body = (
        b"# TYPE vllm:cache_config_info gauge\n"
        b'vllm:cache_config_info{ engine = "0" ,\tblock_size="16" } 1.0\n'
    )
    metrics = parse_metrics(body)
    assert isinstance(metrics, MetricsObservation)
    (series,) = metrics.cache_config_info
    assert (series.label("engine"), series.label("block_size")) == ("0", "16")


@pytest.mark.parametrize(
    ("labels", "reason"),
    [
        ('{0a="1"}', "bad label name"),
        ('{a "1"}', "missing '=' after label name"),
        ("{a=1}", "label value is not quoted"),
        ('{a="1}', "unterminated label value"),
    ],
)
def test_a_damaged_label_set_says_what_is_wrong(labels: str, reason: str) -> None:
    body = f"# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{labels} 1.0\n"
    assert _reason(parse_metrics(body.encode())) == f"malformed targeted sample: {reason}"


# --------------------------------------------------------------------------------
# The /metrics scanner's line-start rule, against a plain reading of it.
#
# A targeted name is a sample only when whitespace alone stands between its line's start
# and the name, and a family is declared only by a ``#`` line.  The scanner finds both in
# one regex pass from newline to newline (linear in the body); the oracle here splits the
# text into lines and reads each.  They must agree everywhere.


def _line_by_line(text: str) -> tuple[list[tuple[str, str]], set[str]]:
    """The obvious reading, one line at a time (quadratic on nothing, but slow): each
    line whose first non-blank text is a targeted name followed by ``{``, a blank or the
    line's end, with the rest of its line; each ``# HELP``/``# TYPE`` of a vllm: name."""
    declared = re.compile(r"[ \t]*#[ \t]+(?:HELP|TYPE)[ \t]+(vllm:[a-zA-Z0-9_:]+)")
    targets, families = [], set()
    for line in text.split("\n"):
        found = declared.match(line)
        if found:
            families.add(found.group(1))
        stripped = line.lstrip()
        for name in (CACHE_CONFIG_INFO, PROCESS_START_TIME):
            after = stripped[len(name) : len(name) + 1]
            if stripped.startswith(name) and (after == "" or after in "{ \t\r\f\v"):
                targets.append((name, stripped[len(name) :]))
    return targets, families


_PIECES = st.sampled_from(
    [
        PROCESS_START_TIME,
        CACHE_CONFIG_INFO,
        "vllm:x",
        "# HELP ",
        "# TYPE ",
        "#",
        "HELP",
        "{",
        "}",
        "_x",
        " ",
        "\t",
        "\n",
        "\r",
        "\x0b",
        "\xa0",
        "\u2003",
        "1",
    ]
)


@settings(max_examples=1000, deadline=None)
@given(st.lists(_PIECES, max_size=24).map("".join))
def test_the_scan_finds_what_reading_line_by_line_finds(text: str) -> None:
    from vllm_evidence._adapters import metrics

    targets, families = _line_by_line(text)
    assert [(name, rest) for _, name, rest in metrics._sample_lines(text)] == targets
    # Declarations: reached ``#`` by ``#``, by one regex pass, and by the default mix.
    assert metrics._declared(text, jumps=10**9) == families
    assert metrics._declared(text, jumps=0) == families
    assert metrics._declared(text, jumps=2) == families
    assert metrics._declared(text) == families


def test_sample_lines_are_given_in_body_order_with_their_offsets() -> None:
    from vllm_evidence._adapters import metrics

    text = f"{CACHE_CONFIG_INFO} 1\nx 2\n  {PROCESS_START_TIME} 3\n{CACHE_CONFIG_INFO}{{}} 4"
    assert metrics._sample_lines(text) == [
        (0, CACHE_CONFIG_INFO, " 1"),
        (text.index(PROCESS_START_TIME), PROCESS_START_TIME, " 3"),
        (text.rindex(CACHE_CONFIG_INFO), CACHE_CONFIG_INFO, "{} 4"),
    ]


def test_a_declaration_after_a_blank_is_read_by_the_line_rule() -> None:
    """A ``#`` after a blank is an indented declaration or text inside another line."""
    body = (
        "# HELP vllm:a doc # TYPE vllm:inside gauge\n"
        " \t# TYPE vllm:indented gauge\n"
        'x{l="# HELP vllm:in_a_value"} 1\n'
        "#\tTYPE\tvllm:tabs gauge\n"
    )
    _, families = scan_metrics(body)
    assert families == frozenset({"vllm:a", "vllm:indented", "vllm:tabs"})


@pytest.mark.parametrize(
    ("body", "declared"),
    [
        # HELP then TYPE of the same family: one declaration, whatever the doc holds.
        ("# HELP vllm:a doc # TYPE vllm:in_doc\n# TYPE vllm:a gauge\n", {"vllm:a"}),
        # The TYPE line names a longer family: both are declared.
        ("# HELP vllm:a doc\n# TYPE vllm:ab gauge\n", {"vllm:a", "vllm:ab"}),
        # HELP not followed by its TYPE: the doc's ``#`` is text, not a declaration.
        ("# HELP vllm:a doc # TYPE vllm:in_doc\nx 1\n# TYPE vllm:b gauge\n", {"vllm:a", "vllm:b"}),
        # Text after the TYPE name is read on: a declaration there is inside a line.
        ("# HELP vllm:a d\n# TYPE vllm:a gauge # TYPE vllm:c\n", {"vllm:a"}),
        ("# HELP vllm:a\n# TYPE vllm:a gauge\n", {"vllm:a"}),  # no doc text at all
    ],
)
def test_a_help_line_and_its_type_line_declare_what_each_line_declares(
    body: str, declared: set[str]
) -> None:
    from vllm_evidence._adapters import metrics

    assert _line_by_line(body)[1] == declared  # the oracle agrees with the case as written
    for jumps in (None, 0, 1, 10**9):
        assert metrics._declared("x\n" + body, jumps=jumps) == declared


def test_only_the_first_of_many_names_on_one_line_starts_it() -> None:
    text = f"{PROCESS_START_TIME} " * 1000 + "\n"
    assert _line_by_line(text)[0] == [(PROCESS_START_TIME, text[len(PROCESS_START_TIME) : -1])]
    assert isinstance(parse_metrics(text.encode()), BodyParseFailure)


def test_a_long_line_of_repeated_names_is_a_parse_failure_not_a_hang() -> None:
    body = (f"{PROCESS_START_TIME} " * 200_000).encode()  # 5.4 MB, one line
    assert isinstance(parse_metrics(body), BodyParseFailure)


def test_blanks_before_a_sample_still_start_its_line() -> None:
    body = f"# TYPE {PROCESS_START_TIME} gauge\n \t {PROCESS_START_TIME} 17.5\n".encode()
    parsed = parse_metrics(body)
    assert not isinstance(parsed, BodyParseFailure)
    assert parsed.process_start_time is not None
    assert str(parsed.process_start_time.seconds) == "17.5"


def _engine_index(label: str | None) -> int | None:
    labels = "" if label is None else f'engine="{label}",'
    body = f'vllm:cache_config_info{{{labels}block_size="16"}} 1.0\n'.encode()
    observed = parse_metrics(body)
    assert isinstance(observed, MetricsObservation), observed
    (series,) = observed.cache_config_info
    assert series.engine == label
    return series.engine_index


@pytest.mark.parametrize(
    ("label", "index"),
    [
        ("0", 0),
        ("3", 3),
        ("999999999999999999", 999_999_999_999_999_999),  # 18 digits: the most read
        (None, None),  # V0 prints no engine label: no index (the decision reads engine 0)
        ("1000000000000000000", None),  # 19 digits
        ("03", None),  # vLLM prints str(index): never a leading zero
        ("-3", None),
        ("+3", None),
        ("\u0663", None),  # a non-ASCII digit
        ("", None),
        ("x", None),
        (" 3", None),
    ],
)
def test_the_engine_label_is_read_as_the_index_vllm_prints(
    label: str | None, index: int | None
) -> None:
    assert _engine_index(label) == index
