"""Every JSON document the package emits, from one converter, and their JSON Schemas.

Each document is the package converter's rendering (:data:`converter`, a
:class:`cattrs.Converter`) of a typed value: the hooks sit beside the types they render
(``output/`` and ``_capture/directory.py``) and are registered when those modules are
imported, which this module does.  The converter only *unstructures* sealed values:
nothing decided is read back from JSON (structuring a sealed type raises
:class:`~vllm_evidence._seal.SealedTypeError`); a saved capture is re-read from its
bytes by :func:`vllm_evidence.load`.

===================  =====================================  ==========================
document             function                               schema (``schema(name)``)
===================  =====================================  ==========================
assessment           :func:`assessment_document`            ``assessment``
startup log          :func:`startup_log_document`           ``startup-log``
law table            :func:`laws_document`                  ``laws``
upstream audit       :func:`audit_document`                 ``audit``
capture manifest     :func:`manifest_document`              ``capture-manifest``
launch receipt       :func:`receipt_document`               ``launch-receipt``
watch round          ``watch.round_document``               ``watch-round``
watch transition     ``watch.transition_document``          ``watch-transition``
===================  =====================================  ==========================

Going back is re-derivation only: :func:`dumps` writes an assessment's raw evidence
(``vllm-evidence.evidence/3``) and :func:`loads` runs the parsers and decisions over it
again, refusing when the bytes do not reproduce the recorded digests and verdicts (see
:mod:`vllm_evidence._rederive`).  Pickling a sealed value works the same way.

The schemas (JSON Schema draft 2020-12) ship as package data in
``vllm_evidence/schemas/`` and are printed by ``vllm-evidence schema NAME``.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import TYPE_CHECKING

from vllm_evidence._capture.directory import manifest_document
from vllm_evidence._converter import converter
from vllm_evidence._launch import receipt_document
from vllm_evidence._output.assessment import AssessmentDocument, assessment_document
from vllm_evidence._output.audit import audit_document
from vllm_evidence._output.front_door import front_door_document
from vllm_evidence._output.laws import LawTable, law_json, laws_document
from vllm_evidence._output.startup_log import startup_log_document
from vllm_evidence._rederive import dumps, loads

if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "SCHEMA_NAMES",
    "AssessmentDocument",
    "LawTable",
    "assessment_document",
    "audit_document",
    "converter",
    "dumps",
    "front_door_document",
    "law_json",
    "laws_document",
    "loads",
    "manifest_document",
    "receipt_document",
    "schema",
    "startup_log_document",
]

#: The published schemas, by the name ``vllm-evidence schema NAME`` takes.
SCHEMA_NAMES: tuple[str, ...] = (
    "assessment",
    "startup-log",
    "laws",
    "audit",
    "capture-manifest",
    "launch-receipt",
    "watch-round",
    "watch-transition",
)


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the document ``name`` (one of
    :data:`SCHEMA_NAMES`); :class:`KeyError` for any other name."""
    if name not in SCHEMA_NAMES:
        raise KeyError(name)
    text = resources.files("vllm_evidence").joinpath("schemas", f"{name}.json").read_text("utf-8")
    document: dict[str, Any] = json.loads(text)
    return document
