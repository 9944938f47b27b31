"""Fuzzing the launch receipt reader: every input is a receipt or one typed line.

Each input is a receipt the launcher could have written (``/1``, ``/2`` or ``/3``, with
or without a ``log_write_failure``, ``/3`` signed or not) mutated — bytes flipped, cut,
duplicated, hostile tokens spliced in (``1e999999999`` as a number and as the start
time's string, 5,000 ``[``, 5,000-digit integers, a key given twice, unpaired
surrogates, ``NaN``, ``true`` for an integer) — or a receipt whose fields hold hostile
JSON values, or raw bytes.
Every input gives a :class:`LaunchReceipt` or an :class:`InputError` whose text is one
short line; never another exception.  A receipt read is then used as the package uses
one: its repr, its JSON rendering, its pickle (a re-derivation), and its start time
written out in full as the log join writes it — each bounded.  No input reads as
observed in process (only the launcher's own code marks a receipt so), and a receipt
the launcher signed reads as verified after a mutation only when the mutation left every
field as it was (whitespace, key order): an edit never keeps the signature.

Marked ``slow``: ``VLLM_EVIDENCE_FUZZ_EXAMPLES`` is the number of inputs of the module
(default 600; ``VLLM_EVIDENCE_FUZZ_EXAMPLES=100000 pytest -m slow tests/hostile`` sends
100,000 receipts).  The run's figures (inputs, receipts read, refusals) are printed at
the end of the module.
"""

from __future__ import annotations

import json
import os
import pickle
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vllm_evidence._output.assessment  # noqa: F401  # registers the receipt's JSON hook
from vllm_evidence._adapters.receipt import (
    LaunchReceipt,
    ReceiptAuthentication,
    parse_launch_receipt,
)
from vllm_evidence._capture.signing import SigningKey, canonical
from vllm_evidence._converter import converter
from vllm_evidence.errors import InputError

#: The launcher's key in this module.
KEY = SigningKey.generate()
SCHEMAS = [f"vllm-evidence.launch-receipt/{n}" for n in (1, 2, 3)]

TOTAL = int(os.environ.get("VLLM_EVIDENCE_FUZZ_EXAMPLES", "600"))
#: Percent of :data:`TOTAL` per test (they add up to 100: TOTAL inputs in all).
WEIGHTS = {"mutated": 50, "fields": 25, "raw": 10, "signed": 15}

pytestmark = pytest.mark.slow

#: What happened to every input of the module, for the figures printed at its end.
SEEN: Counter[str] = Counter()


def fuzz(name: str) -> settings:
    return settings(
        max_examples=max(1, TOTAL * WEIGHTS[name] // 100),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@pytest.fixture(scope="module", autouse=True)
def _figures(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    plugins = request.config.pluginmanager
    reporter, capture = plugins.getplugin("terminalreporter"), plugins.getplugin("capturemanager")
    if reporter is None or capture is None or not SEEN:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(
            f"receipt fuzz: {SEEN['input']:,} inputs, {SEEN['receipt']:,} receipts read, "
            f"{SEEN['refused']:,} refused as one line, {SEEN['crash']:,} crashes"
        )


SHA = "0123456789abcdef" * 4

TOKENS = [
    b"[" * 5_000,
    b"{" * 3_000,
    b"9" * 5_000,
    b"1e999999999",
    b"1e99999999",
    b"-1e999999999",
    b"1e-999999999",
    b'"1e999999999"',
    b'"1e99999999"',
    b'"1e-999999999"',
    b'"' + b"9" * 5_000 + b'"',
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"true",
    b"null",
    b"1.0",
    b"-0",
    b"2147483648",
    b"999999999999999999",
    b"1000000000000000000",
    b'"\\ud800"',
    b'"\\u0000"',
    b"\\",
    b'"',
    b",",
    b":",
    b"}",
    b"]",
    b"\x00",
    b"\xff\xfe",
    b"\xef\xbb\xbf",
    "\u202e".encode(),
    b'"pid": 1, "pid": 2',
    b'"log_write_failure": {"at_byte": 1, "error": "e"}',
    b'"log_write_failure": {"at_byte": 1, "at_byte": 2, "error": "e"}',
    b'"schema": "vllm-evidence.launch-receipt/1"',
    b'"schema": "vllm-evidence.launch-receipt/2"',
    b'"schema": "vllm-evidence.launch-receipt/3"',
    b'"signature": null',
    b'"signature": {"algorithm": "ed25519", "key_id": "0000000000000000", "ed25519": "00"}',
    b'"key_id": "' + KEY.key_id.encode() + b'"',
    b'"extra": 1',
]

KEYS = [
    "schema",
    "pid",
    "process_start_time_seconds",
    "start_time_unavailable",
    "argv",
    "host",
    "log_path",
    "log_bytes",
    "log_sha256",
    "log_write_failure",
    "at_byte",
    "error",
    "signature",
    "algorithm",
    "key_id",
    "ed25519",
]


def mostly(valid: st.SearchStrategy[Any], past: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Values of one field: valid four times in five, near or past a bound otherwise."""
    return st.one_of(valid, valid, valid, valid, past)


starts = mostly(
    st.one_of(
        st.sampled_from(["1.7e+09", "1796015019.85", "1.79601501985e+09"]),
        st.floats(min_value=1, max_value=9e10).map(repr),
    ),
    st.one_of(
        st.none(),
        st.sampled_from(["1e999999999", "1e99999999", "1e-999999999", "1e11", "0"]),
        st.decimals(allow_nan=True, allow_infinity=True).map(str),
        st.text(alphabet="0123456789.eE+-_ infa", max_size=40),
    ),
)

failures = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {
            "at_byte": mostly(st.integers(0, 10**18 - 1), st.integers(-5, 10**19)),
            "error": mostly(st.text(max_size=80), st.text(min_size=1020, max_size=1030)),
        }
    ),
)


@st.composite
def receipts(draw: st.DrawFn) -> dict[str, Any]:
    """A receipt document as the launcher writes one, its values near and past bounds."""
    start = draw(starts)
    document: dict[str, Any] = {
        "schema": draw(st.sampled_from(SCHEMAS)),
        "pid": draw(mostly(st.integers(1, 2**31 - 1), st.integers(-1, 2**31 + 1))),
        "process_start_time_seconds": start,
        "start_time_unavailable": (
            draw(st.none() | st.text(max_size=30)) if start else "no /proc here"
        ),
        "argv": draw(st.lists(st.text(max_size=20), max_size=6)),
        "host": draw(st.text(max_size=20)),
        "log_path": draw(st.none() | st.text(max_size=30)),
        "log_bytes": draw(mostly(st.integers(0, 10**18 - 1), st.integers(-1, 10**19))),
        "log_sha256": draw(mostly(st.just(SHA), st.sampled_from([SHA.upper(), SHA[:63], ""]))),
    }
    if not document["schema"].endswith("/1") and draw(st.booleans()):
        document["log_write_failure"] = draw(failures)
    if document["schema"].endswith("/3") and draw(st.booleans()):
        document["signature"] = None
        if draw(st.booleans()):  # the launcher's signature of what it wrote
            document["signature"] = {
                "algorithm": "ed25519",
                "key_id": KEY.key_id,
                "ed25519": KEY.sign(canonical(document, without="signature")),
            }
    return document


def encoded(document: dict[str, Any], indent: int | None) -> bytes:
    return json.dumps(document, indent=indent).encode("utf-8", "surrogatepass")


receipt_bytes = st.builds(encoded, receipts(), st.none() | st.integers(0, 4))


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[bytes]) -> bytes:
    data = bytearray(draw(base))
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        position = draw(st.integers(min_value=0, max_value=len(data)))
        match draw(st.integers(min_value=0, max_value=4)):
            case 0 if data:
                data[min(position, len(data) - 1)] ^= draw(st.integers(1, 255))
            case 1:
                end = draw(st.integers(min_value=position, max_value=len(data)))
                del data[position:end]
            case 2:
                data[position:position] = draw(st.sampled_from(TOKENS))
            case 3:
                end = draw(st.integers(min_value=position, max_value=len(data)))
                data[position:position] = data[position:end]
            case _:
                data[position:position] = draw(st.binary(max_size=16))
    return bytes(data)


json_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
    | st.sampled_from(["1e999999999", "\ud800", *SCHEMAS, "ed25519", KEY.key_id, "0" * 128]),
    lambda inner: (
        st.lists(inner, max_size=6)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=10), inner, max_size=8)
    ),
    max_leaves=30,
)


@st.composite
def hostile_fields(draw: st.DrawFn) -> bytes:
    """A receipt with some of its fields replaced by hostile JSON values."""
    document = draw(receipts())
    for key in draw(st.sets(st.sampled_from(KEYS), max_size=4)):
        document[key] = draw(json_values)
    return json.dumps(document, allow_nan=True).encode("utf-8", "surrogatepass")


def check(data: bytes) -> LaunchReceipt | None:
    """The one property: a receipt, used as the package uses one, or one typed line."""
    SEEN["input"] += 1
    try:
        receipt = parse_launch_receipt(data, "fuzzed.json", verification_key=KEY.verification_key)
    except InputError as exc:
        line = str(exc)
        assert line.startswith("launch receipt fuzzed.json: "), line[:200]
        assert "\n" not in line, line[:200]
        assert len(line) < 600, line[:600]
        SEEN["refused"] += 1
        return None
    except BaseException:
        SEEN["crash"] += 1
        raise
    assert isinstance(receipt, LaunchReceipt)
    SEEN["receipt"] += 1
    assert len(repr(receipt)) < 2_000
    json.dumps(converter.unstructure(receipt))
    assert pickle.loads(pickle.dumps(receipt)) == receipt  # noqa: S301  # our own bytes
    if receipt.process_start_seconds is not None:
        # As the log join writes a start time: in full, whatever exponent was printed.
        assert len(format(receipt.process_start_seconds, "f")) < 64
    if receipt.log_write_failure is not None:
        assert 0 <= receipt.log_write_failure.at_byte < 10**18
    assert receipt.authentication is not ReceiptAuthentication.OBSERVED_IN_PROCESS
    SEEN[receipt.authentication.value] += 1
    return receipt


@fuzz("mutated")
@given(mutated(receipt_bytes))
def test_a_mutated_receipt_is_read_or_refused_in_one_line(data: bytes) -> None:
    check(data)


@fuzz("fields")
@given(st.one_of(receipt_bytes, hostile_fields()))
def test_hostile_field_values_are_read_or_refused_in_one_line(data: bytes) -> None:
    check(data)


@fuzz("raw")
@given(
    st.one_of(st.binary(max_size=512), st.lists(st.sampled_from(TOKENS), max_size=8).map(b"".join))
)
def test_raw_bytes_are_refused_in_one_line(data: bytes) -> None:
    check(data)


@st.composite
def signed_receipts(draw: st.DrawFn) -> dict[str, Any]:
    """A ``/3`` receipt the launcher signed, with valid fields."""
    document = draw(receipts())
    document.update(
        schema=SCHEMAS[2],
        pid=draw(st.integers(1, 2**31 - 1)),
        process_start_time_seconds="1.7e+09",
        start_time_unavailable=None,
        log_bytes=draw(st.integers(0, 10**6)),
        log_sha256=SHA,
        log_write_failure=None,
    )
    document["signature"] = {
        "algorithm": "ed25519",
        "key_id": KEY.key_id,
        "ed25519": KEY.sign(canonical(document, without="signature")),
    }
    return document


@fuzz("signed")
@given(st.data())
def test_a_mutated_signed_receipt_verifies_only_unedited(data: st.DataObject) -> None:
    document = data.draw(signed_receipts())
    original = encoded(document, data.draw(st.none() | st.integers(0, 4)))
    assert check(original) is not None
    mutated_bytes = data.draw(mutated(st.just(original)))
    receipt = check(mutated_bytes)
    if receipt is not None and receipt.authentication is ReceiptAuthentication.VERIFIED:
        read = json.loads(mutated_bytes)
        assert canonical(read, without="signature") == canonical(document, without="signature")
        SEEN["verified after a mutation (fields unchanged)"] += 1


def test_the_generated_receipts_reach_both_outcomes() -> None:
    # A fuzzer whose inputs were all refused (or all read) would test one arm only.
    admitted = encoded(
        {
            "schema": "vllm-evidence.launch-receipt/2",
            "pid": 1,
            "process_start_time_seconds": "1.7e+09",
            "start_time_unavailable": None,
            "argv": [],
            "host": "h",
            "log_path": None,
            "log_bytes": 0,
            "log_sha256": SHA,
            "log_write_failure": {"at_byte": 0, "error": "EIO"},
        },
        None,
    )
    assert isinstance(parse_launch_receipt(admitted), LaunchReceipt)
    with pytest.raises(InputError):
        parse_launch_receipt(admitted.replace(b'"pid": 1', b'"pid": 1e999999999'))
