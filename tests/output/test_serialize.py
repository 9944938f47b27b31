"""The one converter (``vllm_evidence.serialize``): it renders, it never structures a
sealed type, and a manifest it reads back names the bad field in one line."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

import vllm_evidence
from tests._paths import REAL
from tests._reseal import reseal
from vllm_evidence import serialize
from vllm_evidence._assessment import Assessment, assess
from vllm_evidence._capture.directory import MANIFEST, read, save
from vllm_evidence._capture.http import probe_sync
from vllm_evidence._measure import BasisPoint, Concurrency, GiB, TokenCount
from vllm_evidence._readback import load
from vllm_evidence._readback.evidence import Source, route_source
from vllm_evidence._seal import SealedTypeError
from vllm_evidence.errors import CaptureIntegrityError, InputError
from vllm_evidence.testing._stub import serve_capture
from vllm_evidence.upstream._laws import ReleaseLaws


def test_generic_hooks_print_values_as_the_documents_do() -> None:
    c = serialize.converter
    assert c.unstructure(Version("0.10.1.1")) == "0.10.1.1"
    assert c.unstructure(Decimal("2048.00")) == "2048.00"  # exact, never a float
    assert c.unstructure(TokenCount(4096)) == 4096
    assert c.unstructure(BasisPoint(8550)) == 8550
    assert c.unstructure(Concurrency(Decimal("2.50"))) == "2.50"
    assert c.unstructure(GiB(Decimal("-0.00"))) == "-0.00"


def test_each_rendering_is_for_a_class_without_subclasses_and_comes_before_the_refusal() -> None:
    # register_rendering matches the class itself (cattrs' class hooks also matched its
    # subclasses): it is the same only while no rendered class has one.
    import vllm_evidence._output.audit
    import vllm_evidence._rederive._write  # noqa: F401  # every layer's renderings
    from vllm_evidence._converter import _refuse_unstructure, _rendered

    assert len(_rendered) >= 40
    assert [cls for cls in _rendered if cls.__subclasses__()] == []
    for cls in _rendered:
        assert serialize.converter.get_unstructure_hook(cls) is not _refuse_unstructure, cls


def test_source_as_json_goes_through_the_converter() -> None:
    source = route_source("/version")
    assert source.as_json() == serialize.converter.unstructure(source)
    assert source.as_json() == {"kind": "front_door", "where": "GET /version"}


@pytest.mark.parametrize("cls", [Assessment, Source, ReleaseLaws])
def test_the_converter_never_structures_a_sealed_type(cls: type[Any]) -> None:
    with pytest.raises(SealedTypeError, match="never structured"):
        serialize.converter.structure({}, cls)


def test_a_sealed_type_without_a_hook_is_refused_not_dumped() -> None:
    from vllm_evidence._measure import MeasureParseFailure

    failure = TokenCount.parse("-1")
    assert isinstance(failure, MeasureParseFailure)
    with pytest.raises(TypeError, match="no JSON rendering registered"):
        serialize.converter.unstructure(failure)


def test_the_document_functions_are_the_serialize_ones_alone() -> None:
    assert not hasattr(vllm_evidence, "assessment_document")  # one home: serialize
    document = serialize.assessment_document(assess(load(REAL, bodies=True)))
    assert document["schema"] == "vllm-evidence.assessment/9"
    assert json.loads(json.dumps(document)) == document


# --- the manifest, read back by the converter -----------------------------------------


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with serve_capture(REAL) as door:
        batch = probe_sync(door.url)
    return save(batch, tmp_path_factory.mktemp("manifest") / "capture")


def _edited(saved: Path, tmp_path: Path, edit: Any) -> Path:
    import shutil

    copy = tmp_path / "capture"
    shutil.copytree(saved, copy)
    reseal(copy, edit)  # past the seal: what the reader does with each field
    return copy


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda m: m["requests"][0].__setitem__("status", True), "requests[0].status"),
        (lambda m: m["requests"][0].__setitem__("status", "200"), "requests[0].status"),
        (lambda m: m["requests"][1].pop("route"), "requests[1].route"),
        (lambda m: m["requests"][0].__setitem__("role", "sideways"), "requests[0].role"),
        (lambda m: m["requests"][0].__setitem__("started_at", "noon"), "requests[0].started_at"),
        (lambda m: m["requests"][0].__setitem__("headers", "a: b"), "requests[0].headers"),
        (
            lambda m: m["requests"][0].__setitem__("headers", [["a", 1]]),
            "requests[0].headers[0][1]",
        ),
        (lambda m: m.__setitem__("requests", {}), "requests"),
        (lambda m: m.__setitem__("batch_id", 7), "batch_id"),
        (lambda m: m["requests"][2].__setitem__("detail", None), "requests[2].detail"),
    ],
)
def test_a_malformed_manifest_field_is_one_line_naming_it(
    saved: Path, tmp_path: Path, edit: Any, field: str
) -> None:
    with pytest.raises(InputError) as excinfo:
        read(_edited(saved, tmp_path, edit))
    message = str(excinfo.value)
    assert "\n" not in message
    assert str(tmp_path / "capture" / MANIFEST) in message
    assert f"manifest field {field!r}" in message


def test_a_header_pair_of_three_is_malformed(saved: Path, tmp_path: Path) -> None:
    copy = _edited(saved, tmp_path, lambda m: m["requests"][0].__setitem__("headers", [["a"] * 3]))
    with pytest.raises(InputError, match="malformed headers"):
        read(copy)


def test_the_digest_check_still_runs_after_structuring(saved: Path, tmp_path: Path) -> None:
    copy = _edited(saved, tmp_path, lambda m: None)
    body = copy / "version.body"
    body.write_bytes(body.read_bytes() + b" ")
    with pytest.raises(CaptureIntegrityError, match="does not match"):
        read(copy)


def test_serialize_goes_back_only_by_re_derivation() -> None:
    from tests._evidence import probe_stub, real_log
    from vllm_evidence import assess, serialize
    from vllm_evidence.errors import EvidenceMismatchError

    assessment = assess(probe_stub(), real_log())
    text = serialize.dumps(assessment, embed_log=True)
    assert serialize.loads(text) == assessment
    tampered = text.replace('"verdict": "established"', '"verdict": "refused"', 1)
    assert tampered != text
    with pytest.raises(EvidenceMismatchError):
        serialize.loads(tampered)
