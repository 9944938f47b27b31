"""Exact measures: wire text in, exact values out, typed failures for everything else."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vllm_evidence._measure import (
    BasisPoint,
    BlockCount,
    BlockSize,
    ByteCount,
    Concurrency,
    GiB,
    MeasureParseFailure,
    ParseFailureReason,
    TokenCount,
)


@pytest.mark.parametrize(
    ("text", "thousands", "expected"),
    [
        ("4194304", False, 4194304),
        ("4,194,304", True, 4194304),
        ("2,048", True, 2048),
        ("512", True, 512),
        ("0", False, 0),
        ("1,192,160", True, 1192160),
    ],
)
def test_token_count_parses_exactly(text: str, thousands: bool, expected: int) -> None:
    assert TokenCount(expected) == TokenCount.parse(text, thousands=thousands)


@pytest.mark.parametrize(
    ("text", "thousands", "reason"),
    [
        ("1,234", False, ParseFailureReason.SEPARATORS_NOT_ALLOWED),
        ("12,34", True, ParseFailureReason.MALFORMED_SEPARATORS),
        ("1,2345", True, ParseFailureReason.MALFORMED_SEPARATORS),
        (",123", True, ParseFailureReason.MALFORMED_SEPARATORS),
        ("-1", False, ParseFailureReason.NEGATIVE),
        ("1.5", False, ParseFailureReason.NOT_AN_INTEGER),
        ("4194304.0", False, ParseFailureReason.NOT_AN_INTEGER),
        ("NaN", False, ParseFailureReason.NOT_FINITE),
        ("inf", False, ParseFailureReason.NOT_FINITE),
        ("-Infinity", False, ParseFailureReason.NOT_FINITE),
        ("None", False, ParseFailureReason.NOT_A_NUMBER),
        ("", False, ParseFailureReason.EMPTY),
        (" 12", False, ParseFailureReason.NOT_A_NUMBER),
        ("+12", False, ParseFailureReason.NOT_A_NUMBER),
        ("0x10", False, ParseFailureReason.NOT_A_NUMBER),
    ],
)
def test_token_count_refuses_inexact_text(
    text: str, thousands: bool, reason: ParseFailureReason
) -> None:
    result = TokenCount.parse(text, thousands=thousands)
    assert isinstance(result, MeasureParseFailure)
    assert (reason, text, "TokenCount") == (result.reason, result.text, result.measure)
    assert repr(text) in result.describe()


def test_a_bool_or_int_is_not_wire_text() -> None:
    for value in (True, 5, 5.0):
        result = TokenCount.parse(value)  # type: ignore[arg-type]  # untyped JSON reaches here
        assert isinstance(result, MeasureParseFailure)
        assert result.reason == ParseFailureReason.NOT_TEXT


def test_direct_construction_validates() -> None:
    with pytest.raises(TypeError):
        TokenCount(True)
    with pytest.raises(TypeError):
        TokenCount(3.0)  # type: ignore[arg-type]  # the point of the test
    with pytest.raises(ValueError, match=">= 0"):
        BlockCount(-1)
    with pytest.raises(ValueError, match="finite"):
        Concurrency(Decimal("NaN"))
    with pytest.raises(ValueError, match=">= 0"):
        Concurrency(Decimal("-1"))
    assert Decimal("-0.53") == GiB(Decimal("-0.53")).value


@pytest.mark.parametrize(
    ("text", "bp"),
    [("0.86", 8600), ("0.855", 8550), ("0.9", 9000), ("0.92", 9200), ("1", 10000), ("1e-04", 1)],
)
def test_basis_points_are_exact(text: str, bp: int) -> None:
    assert BasisPoint(bp) == BasisPoint.parse(text)


def test_different_settings_stay_different() -> None:
    assert BasisPoint.parse("0.855") != BasisPoint.parse("0.86")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("0.85555", ParseFailureReason.FINER_THAN_UNIT),
        ("1e-05", ParseFailureReason.FINER_THAN_UNIT),
        ("-0.5", ParseFailureReason.NEGATIVE),
        ("nan", ParseFailureReason.NOT_FINITE),
        ("0,86", ParseFailureReason.SEPARATORS_NOT_ALLOWED),
        ("abc", ParseFailureReason.NOT_A_NUMBER),
    ],
)
def test_basis_points_refuse(text: str, reason: ParseFailureReason) -> None:
    result = BasisPoint.parse(text)
    assert isinstance(result, MeasureParseFailure)
    assert reason == result.reason


def test_basis_point_renders_its_fraction() -> None:
    assert Decimal("0.855") == BasisPoint(8550).as_decimal()
    assert str(BasisPoint(8550)) == "0.855 (8550 bp)"


def test_concurrency_keeps_printed_precision() -> None:
    parsed = Concurrency.parse("2048.00")
    assert isinstance(parsed, Concurrency)
    assert str(parsed.value) == "2048.00"
    assert Concurrency(Decimal("37.6875")) == Concurrency.parse("37.6875")
    assert isinstance(Concurrency.parse("-1.00"), MeasureParseFailure)


def test_gib_keeps_sign_and_digits() -> None:
    assert GiB(Decimal("-0.53")) == GiB.parse("-0.53")
    parsed = GiB.parse("31.83")
    assert isinstance(parsed, GiB)
    assert str(parsed.value) == "31.83"
    assert isinstance(GiB.parse("--1"), MeasureParseFailure)
    assert isinstance(GiB.parse("inf"), MeasureParseFailure)


def test_arithmetic_is_within_a_unit() -> None:
    assert TokenCount(5) == TokenCount(2) + TokenCount(3)
    assert BlockCount(5) == BlockCount(2) + BlockCount(3)
    assert ByteCount(5) == ByteCount(2) + ByteCount(3)
    assert TokenCount(507 * 16) == BlockCount(507).times_block_size(TokenCount(16))
    with pytest.raises(TypeError):
        TokenCount(1) + BlockCount(1)  # type: ignore[operator]  # the point of the test
    with pytest.raises(TypeError):
        _ = TokenCount(1) < BlockCount(2)  # type: ignore[operator]  # the point of the test
    assert TokenCount(1) < TokenCount(2)


@given(st.integers(min_value=0, max_value=10**15))
def test_token_count_round_trips_both_spellings(n: int) -> None:
    assert TokenCount(n) == TokenCount.parse(str(n))
    assert TokenCount(n) == TokenCount.parse(f"{n:,}", thousands=True)


@given(st.integers(min_value=1000, max_value=10**15))
def test_grouped_text_without_permission_is_refused(n: int) -> None:
    result = TokenCount.parse(f"{n:,}")
    assert isinstance(result, MeasureParseFailure)
    assert result.reason == ParseFailureReason.SEPARATORS_NOT_ALLOWED


@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=0, max_value=8))
def test_basis_point_parse_is_exact_at_any_scale(numerator: int, exponent: int) -> None:
    """A decimal fraction parses iff it is a whole number of basis points."""
    value = Decimal(numerator).scaleb(-exponent)
    result = BasisPoint.parse(format(value, "f"))
    scaled = value * 10000
    if scaled == scaled.to_integral_value():
        assert BasisPoint(int(scaled)) == result
    else:
        assert isinstance(result, MeasureParseFailure)
        assert result.reason == ParseFailureReason.FINER_THAN_UNIT


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=0))
def test_concurrency_from_a_float_repr_is_that_float_exactly(x: float) -> None:
    result = Concurrency.parse(repr(x))
    assert isinstance(result, Concurrency)
    assert Decimal(repr(x)) == result.value


def test_negative_zero_keeps_its_sign() -> None:
    parsed = GiB.parse("-0.00")
    assert isinstance(parsed, GiB)
    assert str(parsed.value) == "-0.00"


@pytest.mark.parametrize(
    "text", ["1e999999999", "1e-999999999", "0e999999999", "1e401", "1e-420", "1.5E+999"]
)
@pytest.mark.parametrize("measure", [BasisPoint, Concurrency, GiB])
def test_an_exponent_past_any_figure_is_out_of_range_not_an_overflow(
    measure: type[BasisPoint | Concurrency | GiB], text: str
) -> None:
    """Issue 15, item 9: ``decimal.Overflow`` and a silent 0 bp were both possible."""
    result = measure.parse(text)
    assert isinstance(result, MeasureParseFailure), result
    assert result.reason is ParseFailureReason.OUT_OF_RANGE


def test_basis_points_are_exact_past_the_decimal_context_precision() -> None:
    """31 significant digits: the default 28-digit context would round it to 10000 bp."""
    result = BasisPoint.parse("1.00000000000000000000000000001")
    assert isinstance(result, MeasureParseFailure)
    assert result.reason is ParseFailureReason.FINER_THAN_UNIT
    assert BasisPoint.parse("1e-4") == BasisPoint(1)
    assert BasisPoint.parse("12345678901234") == BasisPoint(123456789012340000)


def test_basis_points_past_eighteen_digits_are_out_of_range() -> None:
    result = BasisPoint.parse("123456789012345")
    assert isinstance(result, MeasureParseFailure)
    assert result.reason is ParseFailureReason.OUT_OF_RANGE


# --- BlockSize: V0's --block-size choices, nothing else ---------------------------------


@pytest.mark.parametrize("text", ["1", "8", "16", "32", "64", "128"])
def test_every_block_size_v0_admits_is_read(text: str) -> None:
    # BlockSize = Literal[1, 8, 16, 32, 64, 128] (v0.8.5 config.py L1290).
    parsed = BlockSize.parse(text)
    assert isinstance(parsed, BlockSize), parsed
    assert parsed.value == int(text)
    assert parsed.tokens == TokenCount(int(text))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("0", ParseFailureReason.NOT_A_BLOCK_SIZE),
        ("2", ParseFailureReason.NOT_A_BLOCK_SIZE),
        ("7", ParseFailureReason.NOT_A_BLOCK_SIZE),
        ("24", ParseFailureReason.NOT_A_BLOCK_SIZE),
        ("256", ParseFailureReason.NOT_A_BLOCK_SIZE),  # V1's larger sizes are not V0's
        ("2048", ParseFailureReason.NOT_A_BLOCK_SIZE),  # Neuron's max_model_len
        ("16.0", ParseFailureReason.NOT_AN_INTEGER),
        ("-16", ParseFailureReason.NEGATIVE),
        ("1,6", ParseFailureReason.SEPARATORS_NOT_ALLOWED),
        ("", ParseFailureReason.EMPTY),
    ],
)
def test_a_block_size_outside_v0s_choices_is_a_typed_failure(
    text: str, reason: ParseFailureReason
) -> None:
    parsed = BlockSize.parse(text)
    assert isinstance(parsed, MeasureParseFailure), parsed
    assert (parsed.measure, parsed.reason) == ("BlockSize", reason)


def test_a_derived_integer_is_a_block_size_only_inside_the_set() -> None:
    assert BlockSize.of(16) == BlockSize(16)
    for value, reason in (
        (17, ParseFailureReason.NOT_A_BLOCK_SIZE),
        (-1, ParseFailureReason.NEGATIVE),
        (True, ParseFailureReason.NOT_AN_INTEGER),
    ):
        failed = BlockSize.of(value)
        assert isinstance(failed, MeasureParseFailure), value
        assert failed.reason is reason
    with pytest.raises(ValueError, match="one of V0's block sizes"):
        BlockSize(17)


def test_the_block_sizes_between_two_bounds_are_the_sets_members_there() -> None:
    assert BlockSize.between(9, 40) == (BlockSize(16), BlockSize(32))
    assert BlockSize.between(16, 16) == (BlockSize(16),)
    assert BlockSize.between(17, 31) == ()
    assert BlockSize.between(129, 4096) == ()
    assert BlockSize.between(8, 1) == ()


def test_blocks_times_a_block_size_is_the_token_figure() -> None:
    # 65,536 blocks of 16 tokens (issue 33's V0 launch): 1,048,576 tokens.
    assert BlockCount(65_536).times_block_size(BlockSize(16)) == TokenCount(1_048_576)
