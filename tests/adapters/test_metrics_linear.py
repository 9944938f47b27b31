"""The /metrics scanner's line-start check, against a plain reading of the rule.

A targeted name is a sample only when blanks alone stand between its line's start and
the name.  The scanner decides that by walking back over the blanks just before the
name (linear in the body); the oracle here slices from the line's start (the obvious,
quadratic reading).  They must agree everywhere, including on one long line holding the
name many times — the hostile body that made the old scan quadratic.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vllm_evidence.adapters.failure import BodyParseFailure
from vllm_evidence.adapters.metrics import PROCESS_START_TIME, _starts_line, parse_metrics


def oracle(text: str, at: int) -> bool:
    line_start = text.rfind("\n", 0, at) + 1
    return not text[line_start:at].strip()


@given(st.text(alphabet=" \t\n\r\x0b\x0c\xa0ab", max_size=40), st.data())
def test_starts_line_agrees_with_the_slice_reading(text: str, data: st.DataObject) -> None:
    at = data.draw(st.integers(min_value=0, max_value=len(text)))
    assert _starts_line(text, at) == oracle(text, at)


def test_only_the_first_of_many_names_on_one_line_starts_it() -> None:
    text = f"{PROCESS_START_TIME} " * 1000
    starts = list(range(0, len(text), len(PROCESS_START_TIME) + 1))
    assert [_starts_line(text, at) for at in starts] == [oracle(text, at) for at in starts]
    assert _starts_line(text, 0)
    assert not _starts_line(text, len(PROCESS_START_TIME) + 1)


def test_a_long_line_of_repeated_names_is_a_parse_failure_not_a_hang() -> None:
    body = (f"{PROCESS_START_TIME} " * 200_000).encode()  # 5.4 MB, one line
    assert isinstance(parse_metrics(body), BodyParseFailure)


def test_blanks_before_a_sample_still_start_its_line() -> None:
    body = f"# TYPE {PROCESS_START_TIME} gauge\n \t {PROCESS_START_TIME} 17.5\n".encode()
    parsed = parse_metrics(body)
    assert not isinstance(parsed, BodyParseFailure)
    assert parsed.process_start_time is not None
    assert str(parsed.process_start_time.seconds) == "17.5"
