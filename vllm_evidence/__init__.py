"""vllm_evidence: what a running vLLM server's evidence does and does not establish.

The main entry points, imported lazily (``import vllm_evidence`` stays cheap)::

    from vllm_evidence import assess, probe_sync, read_startup_log, readback_from_batch

    batch = probe_sync("http://127.0.0.1:8000")          # GET only, one bracketed batch
    log = read_startup_log("vllm.log")                   # StartupLog | LogReadFailure
    assessment = assess(readback_from_batch(batch), log)  # six sealed decisions

See :mod:`vllm_evidence.decisions` for the decision types and
:mod:`vllm_evidence.upstream` for the version-scoped law table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vllm_evidence._lazy import lazy_attributes

if TYPE_CHECKING:
    from vllm_evidence.assessment import Assessment, Claim, assess, claim_established
    from vllm_evidence.capture.directory import save
    from vllm_evidence.capture.http import probe, probe_sync
    from vllm_evidence.errors import (
        CaptureIntegrityError,
        EvidenceError,
        InputError,
        SealedTypeError,
    )
    from vllm_evidence.output.assessment import assessment_document
    from vllm_evidence.readback import historical_bundle, load, readback_from_batch
    from vllm_evidence.upstream import laws_for

__all__ = [
    "Assessment",
    "CaptureIntegrityError",
    "Claim",
    "EvidenceError",
    "InputError",
    "LogReadFailure",
    "SealedTypeError",
    "StartupLog",
    "assess",
    "assessment_document",
    "claim_established",
    "historical_bundle",
    "laws_for",
    "load",
    "probe",
    "probe_sync",
    "read_startup_log",
    "readback_from_batch",
    "save",
]

_LAZY: dict[str, str] = {
    "Assessment": "vllm_evidence.assessment",
    "assess": "vllm_evidence.assessment",
    "Claim": "vllm_evidence.assessment",
    "claim_established": "vllm_evidence.assessment",
    "assessment_document": "vllm_evidence.output.assessment",
    "load": "vllm_evidence.readback",
    "save": "vllm_evidence.capture.directory",
    "probe": "vllm_evidence.capture.http",
    "probe_sync": "vllm_evidence.capture.http",
    "LogReadFailure": "vllm_evidence.adapters.startup_log",
    "StartupLog": "vllm_evidence.adapters.startup_log",
    "read_startup_log": "vllm_evidence.adapters.startup_log",
    "CaptureIntegrityError": "vllm_evidence.errors",
    "EvidenceError": "vllm_evidence.errors",
    "InputError": "vllm_evidence.errors",
    "SealedTypeError": "vllm_evidence.errors",
    "historical_bundle": "vllm_evidence.readback",
    "readback_from_batch": "vllm_evidence.readback",
    "laws_for": "vllm_evidence.upstream",
}

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
