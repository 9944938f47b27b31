"""Exact measures: the numbers vLLM prints, parsed from their wire text without rounding.

Every measure is a small frozen value type with one meaning:

* :class:`TokenCount`, :class:`BlockCount`, :class:`ByteCount`: non-negative integers;
* :class:`BlockSize`: a V0 KV-cache block size, one of the values V0's ``--block-size``
  admits (:data:`V0_BLOCK_SIZES`), never any other integer;
* :class:`BasisPoint`: a fraction in basis points (``"0.86"`` is 8600 bp, ``"0.855"``
  is 8550 bp — two different settings), never a float;
* :class:`Concurrency`: a non-negative exact decimal factor (``"2048.00"`` keeps
  its printed precision);
* :class:`GiB`: a signed exact decimal figure of gibibytes, as vLLM logs
  ``Available KV cache memory`` (negative values happen and are kept).

Each has a ``parse`` classmethod taking wire text and returning the measure or a
:class:`MeasureParseFailure` naming what was wrong.  Nothing is rounded: a fraction
finer than a basis point, a negative count, ``NaN``/``inf``, a bool, or a thousands
separator where the source format prints none is a failure, not a nearby value.
Thousands separators are accepted only when the caller says the source prints them
(``thousands=True``: vLLM's capacity log lines use ``f"{n:,}"``).

Measures may be constructed directly (``TokenCount(2048)``): a number alone moves no
decision, since decisions read sealed evidence that only the parsers make.
"""

from __future__ import annotations

import enum
import re
from decimal import Context, Decimal, InvalidOperation
from typing import Self, final

import attrs

from vllm_evidence._seal import Sealed, minter

__all__ = [
    "V0_BLOCK_SIZES",
    "BasisPoint",
    "BlockCount",
    "BlockSize",
    "ByteCount",
    "Concurrency",
    "GiB",
    "MeasureParseFailure",
    "ParseFailureReason",
    "TokenCount",
]

_PLAIN_INT = re.compile(r"[0-9]+")
_GROUPED_INT = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+")
_DECIMAL = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: A longer integer is no count vLLM prints (2**64 has 20 digits; 40 allows separators).
_MAX_DIGITS = 40
#: The largest decimal exponent read: every float ``repr`` (a label value) is inside it
#: (``5e-324`` .. ``1.8e308``), and past it ``decimal`` overflows (``1e999999999``
#: basis points) or underflows to zero (``1e-999999999`` read as 0 bp).
_MAX_EXPONENT = 400
#: Enough precision for any text of ``_MAX_DIGITS`` characters scaled exactly.
_EXACT = Context(prec=_MAX_DIGITS + _MAX_EXPONENT + 8)
#: Basis points past this many digits are not a fraction anyone configured.
_MAX_BP_DIGITS = 18
_NON_FINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)


class ParseFailureReason(enum.Enum):
    """Why wire text is not the measure it was read as."""

    NOT_TEXT = "not_text"
    EMPTY = "empty"
    NOT_A_NUMBER = "not_a_number"
    NOT_AN_INTEGER = "not_an_integer"
    NEGATIVE = "negative"
    NOT_FINITE = "not_finite"
    FINER_THAN_UNIT = "finer_than_unit"
    OUT_OF_RANGE = "out_of_range"
    """More digits than any count vLLM prints (and than Python's ``int()`` will read)."""
    SEPARATORS_NOT_ALLOWED = "separators_not_allowed"
    MALFORMED_SEPARATORS = "malformed_separators"
    NOT_A_BLOCK_SIZE = "not_a_block_size"
    """An integer that is none of the block sizes V0 admits (:data:`V0_BLOCK_SIZES`)."""


@final
@attrs.frozen(init=False, repr=False)
class MeasureParseFailure(Sealed):
    """Wire text that did not parse as the measure it was read as."""

    __public_constructor__ = (
        "vllm_evidence.decisions.TokenCount.parse() (or another measure's parse())"
    )

    measure: str
    """The measure's type name, e.g. ``"TokenCount"``."""
    text: str
    """The wire text as received (``repr`` of a non-text value)."""
    reason: ParseFailureReason

    def describe(self) -> str:
        """One line: what was read, and why it is not that measure."""
        return (
            f"{self.measure} must be parsed from exact wire text, "
            f"got {self.text!r} ({self.reason.value})"
        )


_mint_failure = minter(MeasureParseFailure, MeasureParseFailure.__attrs_init__)


def _fail(measure: str, text: object, reason: ParseFailureReason) -> MeasureParseFailure:
    shown = text if isinstance(text, str) else repr(text)
    return _mint_failure(measure=measure, text=shown, reason=reason)


def _parse_int(measure: str, text: object, *, thousands: bool) -> int | MeasureParseFailure:
    if not isinstance(text, str):
        return _fail(measure, text, ParseFailureReason.NOT_TEXT)
    if text == "":
        return _fail(measure, text, ParseFailureReason.EMPTY)
    if len(text) > _MAX_DIGITS:
        if _PLAIN_INT.fullmatch(text) or _GROUPED_INT.fullmatch(text):
            return _fail(measure, text[:40] + "...", ParseFailureReason.OUT_OF_RANGE)
        return _fail(measure, text[:40] + "...", ParseFailureReason.NOT_A_NUMBER)
    if _PLAIN_INT.fullmatch(text):
        return int(text)
    if "," in text:
        if not thousands:
            return _fail(measure, text, ParseFailureReason.SEPARATORS_NOT_ALLOWED)
        if _GROUPED_INT.fullmatch(text):
            return int(text.replace(",", ""))
        return _fail(measure, text, ParseFailureReason.MALFORMED_SEPARATORS)
    return _classify_non_integer(measure, text)


def _classify_non_integer(measure: str, text: str) -> MeasureParseFailure:
    if _NON_FINITE.fullmatch(text):
        return _fail(measure, text, ParseFailureReason.NOT_FINITE)
    if text.startswith("-") and _DECIMAL.fullmatch(text[1:]):
        return _fail(measure, text, ParseFailureReason.NEGATIVE)
    if _DECIMAL.fullmatch(text):
        return _fail(measure, text, ParseFailureReason.NOT_AN_INTEGER)
    return _fail(measure, text, ParseFailureReason.NOT_A_NUMBER)


def _parse_decimal(measure: str, text: object, *, signed: bool) -> Decimal | MeasureParseFailure:
    if not isinstance(text, str):
        return _fail(measure, text, ParseFailureReason.NOT_TEXT)
    if text == "":
        return _fail(measure, text, ParseFailureReason.EMPTY)
    if _NON_FINITE.fullmatch(text):
        return _fail(measure, text, ParseFailureReason.NOT_FINITE)
    if len(text) > _MAX_DIGITS:
        return _fail(measure, text[:40] + "...", ParseFailureReason.OUT_OF_RANGE)
    body = text
    negative = False
    if signed and text.startswith("-"):
        body, negative = text[1:], True
    if not _DECIMAL.fullmatch(body):
        if not signed and text.startswith("-") and _DECIMAL.fullmatch(text[1:]):
            return _fail(measure, text, ParseFailureReason.NEGATIVE)
        if "," in text:
            return _fail(measure, text, ParseFailureReason.SEPARATORS_NOT_ALLOWED)
        return _fail(measure, text, ParseFailureReason.NOT_A_NUMBER)
    try:
        # Decimal(text) keeps the sign of a negative zero ("-0.00") exactly.
        value = Decimal(("-" if negative else "") + body)
    except InvalidOperation:  # pragma: no cover - the regex admits only valid decimals
        return _fail(measure, text, ParseFailureReason.NOT_A_NUMBER)
    exponent = value.as_tuple().exponent
    if not isinstance(exponent, int) or abs(exponent) > _MAX_EXPONENT:
        return _fail(measure, text, ParseFailureReason.OUT_OF_RANGE)
    return value


def _check_count(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if type(value) is not int:
        msg = f"{attribute.name} must be an int, got {value!r} that is a {type(value).__name__}"
        raise TypeError(msg)
    if value < 0:
        msg = f"{attribute.name} must be >= 0, got {value!r}"
        raise ValueError(msg)


def _check_decimal(instance: object, attribute: attrs.Attribute[Decimal], value: Decimal) -> None:
    if type(value) is not Decimal:
        msg = f"{attribute.name} must be a Decimal, got {value!r} that is a {type(value).__name__}"
        raise TypeError(msg)
    if not value.is_finite():
        msg = f"{attribute.name} must be finite, got {value!r}"
        raise ValueError(msg)


def _check_non_negative_decimal(
    instance: object, attribute: attrs.Attribute[Decimal], value: Decimal
) -> None:
    _check_decimal(instance, attribute, value)
    if value < 0:
        msg = f"{attribute.name} must be >= 0, got {value!r}"
        raise ValueError(msg)


@final
@attrs.frozen(order=True)
class TokenCount:
    """A number of tokens (KV-cache capacity, ``max_model_len``, block size)."""

    value: int = attrs.field(validator=_check_count)

    @classmethod
    def parse(cls, text: str, *, thousands: bool = False) -> Self | MeasureParseFailure:
        """Parse ``"4194304"`` (or ``"4,194,304"`` with ``thousands=True``)."""
        parsed = _parse_int(cls.__name__, text, thousands=thousands)
        return parsed if isinstance(parsed, MeasureParseFailure) else cls(parsed)

    def __add__(self, other: TokenCount) -> TokenCount:
        if not isinstance(other, TokenCount):
            return NotImplemented
        return TokenCount(self.value + other.value)

    def __str__(self) -> str:
        return f"{self.value:,} tokens"


@final
@attrs.frozen(order=True)
class BlockCount:
    """A number of KV-cache blocks."""

    value: int = attrs.field(validator=_check_count)

    @classmethod
    def parse(cls, text: str, *, thousands: bool = False) -> Self | MeasureParseFailure:
        """Parse ``"507"`` (V0 log lines and cache-config labels print no separators)."""
        parsed = _parse_int(cls.__name__, text, thousands=thousands)
        return parsed if isinstance(parsed, MeasureParseFailure) else cls(parsed)

    def __add__(self, other: BlockCount) -> BlockCount:
        if not isinstance(other, BlockCount):
            return NotImplemented
        return BlockCount(self.value + other.value)

    def times_block_size(self, block_size: TokenCount | BlockSize) -> TokenCount:
        """Blocks × tokens per block.  Only V0 capacity is this product; see the laws."""
        return TokenCount(self.value * block_size.value)

    def __str__(self) -> str:
        return f"{self.value:,} blocks"


#: The KV-cache block sizes a V0 launch can run with: ``BlockSize = Literal[1, 8, 16, 32,
#: 64, 128]`` (v0.8.5 ``config.py`` L1290, v0.9.2 ``config.py`` L1476, v0.10.1.1 and
#: v0.10.2 ``config/cache.py`` L24), which ``--block-size`` takes as its ``choices``
#: (``EngineArgs.get_kwargs``: ``choices = sorted(get_args(Literal))``, v0.8.5
#: ``engine/arg_utils.py`` L153-157, the argument L556); v0.6.6.post1 gives
#: ``choices=[8, 16, 32, 64, 128]`` (``engine/arg_utils.py`` L428-436), a subset.  A launch
#: that gives none takes its platform's default, also in the set (16, or 128 with IPEX on
#: CPU: v0.8.5 ``platforms/cpu.py`` L74-75; 16 on CPU in v0.6.6.post1 ``platforms/cpu.py``
#: L63-64; 128 on HPU, 32 or 16 with OpenVINO).  Neuron alone sets the block size to
#: ``max_model_len`` (v0.6.6.post1 ``platforms/neuron.py`` L38-39, v0.8.5 L51-52): such a
#: launch's block size is no :class:`BlockSize`, and is refused, never read as one.
V0_BLOCK_SIZES: tuple[int, ...] = (1, 8, 16, 32, 64, 128)


def _check_block_size(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    _check_count(instance, attribute, value)
    if value not in V0_BLOCK_SIZES:
        msg = f"{attribute.name} must be one of V0's block sizes {V0_BLOCK_SIZES}, got {value!r}"
        raise ValueError(msg)


@final
@attrs.frozen(order=True)
class BlockSize:
    """A V0 KV-cache block size in tokens: one of :data:`V0_BLOCK_SIZES`.

    ``BlockSize(7)`` raises; :meth:`parse` and :meth:`of` return a typed failure instead
    (``not_a_block_size``), so a derived integer outside the set is refused, never taken
    for a block size.
    """

    value: int = attrs.field(validator=_check_block_size)

    @classmethod
    def parse(cls, text: str) -> Self | MeasureParseFailure:
        """Parse ``"16"``: a plain integer that is one of V0's block sizes."""
        parsed = _parse_int(cls.__name__, text, thousands=False)
        if isinstance(parsed, MeasureParseFailure):
            return parsed
        return cls.of(parsed)

    @classmethod
    def of(cls, value: int) -> Self | MeasureParseFailure:
        """The block size ``value`` is, or a typed failure when it is none of the set."""
        if type(value) is not int:  # a bool, a float: not an integer
            return _fail(cls.__name__, value, ParseFailureReason.NOT_AN_INTEGER)
        if value < 0:
            return _fail(cls.__name__, str(value), ParseFailureReason.NEGATIVE)
        if value not in V0_BLOCK_SIZES:
            return _fail(cls.__name__, str(value), ParseFailureReason.NOT_A_BLOCK_SIZE)
        return cls(value)

    @classmethod
    def between(cls, low: int, high: int) -> tuple[BlockSize, ...]:
        """Every block size from ``low`` to ``high`` inclusive, ascending (none when
        ``low > high``)."""
        return tuple(BlockSize(v) for v in V0_BLOCK_SIZES if low <= v <= high)

    @property
    def tokens(self) -> TokenCount:
        """The block size as a token count."""
        return TokenCount(self.value)

    def __str__(self) -> str:
        return f"{self.value} tokens per block"


@final
@attrs.frozen(order=True)
class ByteCount:
    """A number of bytes."""

    value: int = attrs.field(validator=_check_count)

    @classmethod
    def parse(cls, text: str, *, thousands: bool = False) -> Self | MeasureParseFailure:
        """Parse ``"1073741824"``."""
        parsed = _parse_int(cls.__name__, text, thousands=thousands)
        return parsed if isinstance(parsed, MeasureParseFailure) else cls(parsed)

    def __add__(self, other: ByteCount) -> ByteCount:
        if not isinstance(other, ByteCount):
            return NotImplemented
        return ByteCount(self.value + other.value)

    def __str__(self) -> str:
        return f"{self.value:,} bytes"


@final
@attrs.frozen(order=True)
class BasisPoint:
    """A fraction in basis points: 1.0 is 10000 bp; 0.855 is 8550 bp."""

    value: int = attrs.field(validator=_check_count)

    @classmethod
    def parse(cls, text: str) -> Self | MeasureParseFailure:
        """Parse a decimal fraction (``"0.86"``, ``"1"``, ``"1e-04"``) exactly."""
        parsed = _parse_decimal(cls.__name__, text, signed=False)
        if isinstance(parsed, MeasureParseFailure):
            return parsed
        scaled = parsed.scaleb(4, context=_EXACT)  # exact: no rounding, no underflow
        if scaled != scaled.to_integral_value(context=_EXACT):
            return _fail(cls.__name__, text, ParseFailureReason.FINER_THAN_UNIT)
        if scaled.adjusted() >= _MAX_BP_DIGITS:
            return _fail(cls.__name__, text, ParseFailureReason.OUT_OF_RANGE)
        return cls(int(scaled))

    def as_decimal(self) -> Decimal:
        """The fraction as an exact decimal (8550 bp is ``Decimal("0.855")``)."""
        return Decimal(self.value).scaleb(-4).normalize()

    def __str__(self) -> str:
        return f"{self.as_decimal()} ({self.value} bp)"


@final
@attrs.frozen(order=True)
class Concurrency:
    """A non-negative concurrency factor, exact: ``"2048.00"`` stays ``2048.00``."""

    value: Decimal = attrs.field(validator=_check_non_negative_decimal)

    @classmethod
    def parse(cls, text: str) -> Self | MeasureParseFailure:
        """Parse ``"37.68"`` (log, ``%.2f``) or ``"37.6875"`` (label, float ``repr``)."""
        parsed = _parse_decimal(cls.__name__, text, signed=False)
        return parsed if isinstance(parsed, MeasureParseFailure) else cls(parsed)

    def __str__(self) -> str:
        return f"{self.value}x"


@final
@attrs.frozen(order=True)
class GiB:
    """A signed exact figure in gibibytes, as vLLM logs it (``"-0.53"``)."""

    value: Decimal = attrs.field(validator=_check_decimal)

    @classmethod
    def parse(cls, text: str) -> Self | MeasureParseFailure:
        """Parse ``"31.83"`` or ``"-0.53"`` exactly."""
        parsed = _parse_decimal(cls.__name__, text, signed=True)
        return parsed if isinstance(parsed, MeasureParseFailure) else cls(parsed)

    def __str__(self) -> str:
        return f"{self.value} GiB"
