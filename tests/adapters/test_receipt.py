"""The launch receipt reader: strict, bounded, typed (issue "Hostile input, round 3",
items 5 and 9).

Every field is read with its exact type and a bound, in both directions: what the
launcher writes is read back to the same values, and each malformed or hostile input is
one :class:`InputError` line, read in time and memory linear in its size.  The
reproducers of the issue (``1e999999999``, ``1e99999999``, 5,000 ``[``, a duplicate key)
each have their own test, their memory measured with ``tracemalloc`` under a generous
ceiling.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from vllm_evidence._adapters.receipt import (
    RECEIPT_SCHEMA,
    RECEIPT_SCHEMAS,
    LogWriteFailureRecord,
    ReceiptRecord,
    parse_launch_receipt,
)
from vllm_evidence._launch import receipt_document
from vllm_evidence.errors import InputError

V1 = "vllm-evidence.launch-receipt/1"
V2 = "vllm-evidence.launch-receipt/2"
V3 = "vllm-evidence.launch-receipt/3"
SHA = "ab" * 32

#: Peak traced allocation allowed to read one small hostile receipt (a few KB are
#: needed; the bug took 1 GB to 3.8 GB).
MAX_PEAK_BYTES = 10 * 1024 * 1024


def _fields(**changes: object) -> dict[str, object]:
    document: dict[str, object] = {
        "schema": V2,
        "pid": 4242,
        "process_start_time_seconds": "1.79601501985e+09",
        "start_time_unavailable": None,
        "argv": ["vllm", "serve", "/models/m"],
        "host": "node-7",
        "log_path": "/var/log/vllm.log",
        "log_bytes": 1234,
        "log_sha256": SHA,
        "log_write_failure": None,
    }
    document.update(changes)
    return document


def _bytes(**changes: object) -> bytes:
    return json.dumps(_fields(**changes)).encode()


def _without(name: str, **changes: object) -> bytes:
    document = _fields(**changes)
    del document[name]
    return json.dumps(document).encode()


def _refusal(data: bytes) -> str:
    with pytest.raises(InputError) as raised:
        parse_launch_receipt(data, "r.json")
    line = str(raised.value)
    assert line.startswith("launch receipt r.json: "), line
    assert "\n" not in line
    assert len(line) < 400, line
    return line


def _peak(action: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        action()
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak


def _refused_within_bounds(data: bytes) -> str:
    lines: list[str] = []
    peak = _peak(lambda: lines.append(_refusal(data)))
    assert peak < MAX_PEAK_BYTES, f"peak {peak:,} bytes for a {len(data):,}-byte receipt"
    return lines[0]


# --- admitted: what the launcher writes reads back ----------------------------------------


def test_a_v2_receipt_reads_to_exactly_its_values() -> None:
    receipt = parse_launch_receipt(_bytes())
    assert receipt.pid == 4242
    assert receipt.process_start_seconds == Decimal("1796015019.85")
    assert str(receipt.process_start_seconds) == "1796015019.85"  # exact: no float rounding
    assert receipt.start_time_unavailable is None
    assert receipt.argv == ("vllm", "serve", "/models/m")
    assert receipt.host == "node-7"
    assert receipt.log_path == "/var/log/vllm.log"
    assert receipt.log_bytes == 1234
    assert receipt.log_sha256 == SHA
    assert receipt.log_write_failure is None


def test_a_v1_receipt_without_log_write_failure_reads_as_none() -> None:
    receipt = parse_launch_receipt(_without("log_write_failure", schema=V1))
    assert receipt.log_write_failure is None
    assert receipt.pid == 4242


def test_a_v2_receipt_without_log_write_failure_reads_as_none() -> None:
    assert parse_launch_receipt(_without("log_write_failure")).log_write_failure is None


def test_a_log_write_failure_is_read_into_the_typed_receipt() -> None:
    failure = {"at_byte": 65536, "error": "[Errno 28] No space left on device"}
    receipt = parse_launch_receipt(_bytes(log_write_failure=failure))
    assert receipt.log_write_failure is not None
    assert receipt.log_write_failure.at_byte == 65536
    assert receipt.log_write_failure.error == "[Errno 28] No space left on device"
    assert "log not written past byte 65,536" in repr(receipt)


def test_the_launcher_writes_the_current_schema_and_the_reader_takes_it() -> None:
    assert RECEIPT_SCHEMA == V3
    assert RECEIPT_SCHEMAS == (V1, V2, V3)
    record = ReceiptRecord(
        schema=RECEIPT_SCHEMA,
        pid=7,
        process_start_time_seconds="1.7e+09",
        start_time_unavailable=None,
        argv=["vllm"],
        host="h",
        log_path=None,
        log_bytes=10,
        log_sha256=SHA,
        log_write_failure=LogWriteFailureRecord(at_byte=10, error="EIO"),
    )
    document = receipt_document(record)
    assert document["log_write_failure"] == {"at_byte": 10, "error": "EIO"}
    assert document["signature"] is None  # no signing key: unsigned
    receipt = parse_launch_receipt(json.dumps(document).encode())
    assert receipt.log_write_failure is not None
    assert (receipt.log_write_failure.at_byte, receipt.log_write_failure.error) == (10, "EIO")


def test_a_record_without_a_failure_writes_null() -> None:
    record = ReceiptRecord(
        schema=RECEIPT_SCHEMA,
        pid=7,
        process_start_time_seconds=None,
        start_time_unavailable="no /proc",
        argv=[],
        host="h",
        log_path=None,
        log_bytes=0,
        log_sha256=SHA,
    )
    assert receipt_document(record)["log_write_failure"] is None


@pytest.mark.parametrize(
    ("text", "exact"),
    [
        ("1.7e+09", Decimal(1700000000)),
        ("1796015019.85", Decimal("1796015019.85")),
        ("1.79601501985e+09", Decimal("1796015019.85")),
        ("1700000000", Decimal(1700000000)),
        ("99999999999", Decimal(99999999999)),  # just below the year-5138 bound
    ],
)
def test_a_start_time_in_the_exposition_grammar_is_kept_exact(text: str, exact: Decimal) -> None:
    assert parse_launch_receipt(_bytes(process_start_time_seconds=text)).process_start_seconds == (
        exact
    )


def test_limits_are_admitted_at_their_edge() -> None:
    top = parse_launch_receipt(_bytes(pid=2**31 - 1, log_bytes=10**18 - 1))
    assert (top.pid, top.log_bytes) == (2**31 - 1, 10**18 - 1)
    assert parse_launch_receipt(_bytes(pid=1, log_bytes=0)).pid == 1


# --- the reproducers ---------------------------------------------------------------


def test_a_start_time_of_1e999999999_is_one_line_in_linear_memory() -> None:
    line = _refused_within_bounds(_bytes(process_start_time_seconds="1e999999999"))
    assert "process_start_time_seconds '1e999999999'" in line


def test_a_start_time_of_1e99999999_is_one_line_in_linear_memory() -> None:
    line = _refused_within_bounds(_bytes(process_start_time_seconds="1e99999999"))
    assert "'1e99999999'" in line


@pytest.mark.parametrize("text", ["1e-999999999", "1e400", "1e11", "1e-100", "0.0", "-1"])
def test_a_start_time_past_the_bounds_is_refused(text: str) -> None:
    line = _refused_within_bounds(_bytes(process_start_time_seconds=text))
    assert "process_start_time_seconds" in line


def test_a_start_time_is_bounded_by_its_length_not_only_its_value() -> None:
    assert parse_launch_receipt(_bytes(process_start_time_seconds="0.5")).process_start_seconds == (
        Decimal("0.5")
    )
    line = _refusal(_bytes(process_start_time_seconds="0." + "0" * 40 + "5"))
    assert "at most 32 characters" in line


def test_5000_nested_brackets_are_one_line_not_a_recursion_error() -> None:
    line = _refused_within_bounds(b"[" * 5000)
    assert "nested deeper than 2 levels" in line


def test_5000_nested_brackets_inside_a_field_are_one_line() -> None:
    data = _bytes().replace(b'"argv": [', b'"argv": [' + b"[" * 5000, 1)
    assert "nested deeper" in _refused_within_bounds(data)


def test_a_duplicate_key_is_refused() -> None:
    data = _bytes().replace(b'"pid": 4242', b'"pid": 4242, "pid": 1', 1)
    assert "duplicate key 'pid'" in _refusal(data)


def test_a_duplicate_key_inside_log_write_failure_is_refused() -> None:
    data = _bytes(log_write_failure={"at_byte": 1, "error": "e"}).replace(
        b'"at_byte": 1', b'"at_byte": 1, "at_byte": 2', 1
    )
    assert "duplicate key 'at_byte'" in _refusal(data)


@pytest.mark.parametrize(
    ("number", "needle"),
    [
        (b"1e999999999", "non-integer number '1e999999999'"),
        (b"9" * 5000, "an integer of 5,000 characters"),
        (b"4242.0", "non-integer number '4242.0'"),
        (b"NaN", "the non-number 'NaN'"),
        (b"Infinity", "the non-number 'Infinity'"),
    ],
)
def test_a_json_number_past_the_bounds_is_refused_from_its_text(number: bytes, needle: str) -> None:
    data = _bytes().replace(b'"pid": 4242', b'"pid": ' + number, 1)
    assert needle in _refused_within_bounds(data)


def test_a_million_digit_integer_is_refused_in_linear_memory() -> None:
    data = _bytes().replace(b'"log_bytes": 1234', b'"log_bytes": ' + b"7" * 1_000_000, 1)
    line = _refusal(data)
    assert "an integer of 1,000,000 characters" in line


# --- refused: each field's type and bound -------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"schema": "vllm-evidence.launch-receipt/4"}, "schema must be one of"),
        ({"schema": None}, "not null"),
        ({"pid": True}, "'pid' must be an integer, not a boolean"),
        ({"pid": "4242"}, "'pid' must be an integer, not a string"),
        ({"pid": 0}, "pid must be positive"),
        ({"pid": 2**31}, "at most 2,147,483,647"),
        ({"log_bytes": -1}, "log_bytes must be at least 0"),
        ({"log_bytes": 10**18}, "an integer of 19 characters (at most 18 are read)"),
        ({"log_bytes": "12"}, "'log_bytes' must be an integer"),
        ({"argv": "vllm serve"}, "'argv' must be an array of strings, not a string"),
        ({"argv": ["vllm", 1]}, "'argv[1]' must be a string, not an integer"),
        ({"host": None}, "'host' must be a string, not null"),
        ({"host": ["h"]}, "'host' must be a string, not an array"),
        ({"log_path": 5}, "'log_path' must be a string"),
        ({"log_sha256": "AB" * 32}, "log_sha256 must be 64 lower-case hex digits"),
        ({"log_sha256": 5}, "'log_sha256' must be a string"),
        ({"process_start_time_seconds": 1.7e9}, "non-integer number"),
        ({"process_start_time_seconds": 1700000000}, "must be a string, not an integer"),
        ({"process_start_time_seconds": "inf"}, "not a number as /metrics prints one"),
        ({"process_start_time_seconds": "nan"}, "not a number as /metrics prints one"),
        ({"process_start_time_seconds": "1_700_000_000"}, "not a number"),
        ({"process_start_time_seconds": " 1.7e+09"}, "not a number"),
        ({"process_start_time_seconds": None}, "no process_start_time_seconds"),
        ({"start_time_unavailable": 3}, "'start_time_unavailable' must be a string"),
        ({"extra": 1}, "unknown field(s) 'extra'"),
        ({"log_write_failure": "disk full"}, "must be null or an object, not a string"),
        ({"log_write_failure": {"at_byte": 1}}, "missing ['error']"),
        ({"log_write_failure": {"at_byte": 1, "error": "e", "x": 1}}, "unknown ['x']"),
        ({"log_write_failure": {"at_byte": -1, "error": "e"}}, "at_byte must be at least 0"),
        ({"log_write_failure": {"at_byte": True, "error": "e"}}, "must be an integer"),
        ({"log_write_failure": {"at_byte": 1, "error": None}}, "must be a string, not null"),
        ({"log_write_failure": {"at_byte": 1, "error": "e" * 1025}}, "longer than 1024"),
        ({"host": "\ud800"}, "unpaired surrogate"),
    ],
)
def test_a_malformed_field_is_one_line(changes: dict[str, Any], needle: str) -> None:
    assert needle in _refusal(_bytes(**changes))


def test_a_missing_field_is_named() -> None:
    assert "'host' missing" in _refusal(_without("host"))


def test_a_v1_receipt_does_not_carry_log_write_failure() -> None:
    # /1 has no such field: a /1 receipt that names it is not one the launcher wrote.
    line = _refusal(_bytes(schema=V1, log_write_failure=None))
    assert "unknown field(s) 'log_write_failure' for vllm-evidence.launch-receipt/1" in line


def test_a_v2_receipt_does_not_carry_a_signature() -> None:
    # /2 has no such field; a /3 receipt may (null: unsigned).
    line = _refusal(_bytes(signature=None))
    assert "unknown field(s) 'signature' for vllm-evidence.launch-receipt/2" in line
    assert parse_launch_receipt(_bytes(schema=V3, signature=None)).signer_key_id is None


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"", "not a receipt's JSON: not JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[]", "not a JSON object but an array"),
        (b"null", "not a JSON object but null"),
        (b'"x"', "not a JSON object but a string"),
        (b"{", "not JSON"),
        (b"\xef\xbb\xbf{}", "not JSON"),
    ],
)
def test_bytes_that_are_no_receipt_are_one_line(data: bytes, needle: str) -> None:
    assert needle in _refusal(data)


def test_a_receipt_past_the_size_cap_is_refused_before_decoding() -> None:
    assert "larger than 1,048,576 bytes" in _refusal(b" " * (1024 * 1024 + 1))


def test_a_non_bytes_argument_is_one_line() -> None:
    anything: Any = "{}"
    assert "not bytes but str" in _refusal(anything)
