"""vllm_evidence: what a running vLLM server's evidence does and does not establish.

The main entry points, imported lazily (``import vllm_evidence`` stays cheap)::

    from vllm_evidence import assess, probe_sync, read_startup_log, readback_from_batch

    batch = probe_sync("http://127.0.0.1:8000")          # GET only, one bracketed batch
    log = read_startup_log("vllm.log")                   # StartupLog | LogReadFailure
    assessment = assess(readback_from_batch(batch), log)  # six sealed decisions

The package has seven public faces, each name in one of them: this one (probe, read,
assess, and the types they take and return), :mod:`vllm_evidence.decisions` (the
decision types, their reasons and the units they carry), :mod:`vllm_evidence.upstream`
(the version-scoped law table), :mod:`vllm_evidence.serialize` (the JSON documents),
:mod:`vllm_evidence.errors`, :mod:`vllm_evidence.watch` (continuous rounds over many
targets) and :mod:`vllm_evidence.testing` (hypothesis strategies and the stub server);
:mod:`vllm_evidence.cli` is the command line's entry point.  Every other module is
private: its name begins with ``_`` and it may change in any release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vllm_evidence import _lazy

if TYPE_CHECKING:
    from vllm_evidence._adapters.outcome import (
        HttpError,
        NotFound,
        NotRequested,
        Outcome,
        Parsed,
        Redirected,
        TimedOut,
        TooLarge,
        Unauthorized,
        Unparsed,
        Unreachable,
    )
    from vllm_evidence._adapters.process_tree import ProcessTree, observe_process_tree
    from vllm_evidence._adapters.receipt import LaunchReceipt, read_launch_receipt
    from vllm_evidence._adapters.startup_log import LogReadFailure, StartupLog, read_startup_log
    from vllm_evidence._assessment import Assessment, Claim, assess, claim_established
    from vllm_evidence._capture.batch import CaptureBatch
    from vllm_evidence._capture.directory import save
    from vllm_evidence._capture.http import (
        DEFAULT_BODY_BUDGET_BYTES,
        BodyBudget,
        ProbeSession,
        ProbeSettings,
        probe,
        probe_sync,
    )
    from vllm_evidence._capture.log import WrapWidth
    from vllm_evidence._capture.proc import ProcRead, read_proc
    from vllm_evidence._capture.signing import (
        SigningKey,
        VerificationKey,
        read_signing_key,
        read_verification_key,
    )
    from vllm_evidence._readback import (
        CapturedReadback,
        HistoricalBundle,
        historical_bundle,
        load,
        readback_from_batch,
    )
    from vllm_evidence._readback.evidence import FrontDoor

#: Where each public name lives (imported on first use).
_LAZY: dict[str, str] = {
    "HttpError": "vllm_evidence._adapters.outcome",
    "NotFound": "vllm_evidence._adapters.outcome",
    "NotRequested": "vllm_evidence._adapters.outcome",
    "Outcome": "vllm_evidence._adapters.outcome",
    "Parsed": "vllm_evidence._adapters.outcome",
    "Redirected": "vllm_evidence._adapters.outcome",
    "TimedOut": "vllm_evidence._adapters.outcome",
    "TooLarge": "vllm_evidence._adapters.outcome",
    "Unauthorized": "vllm_evidence._adapters.outcome",
    "Unparsed": "vllm_evidence._adapters.outcome",
    "Unreachable": "vllm_evidence._adapters.outcome",
    "DEFAULT_BODY_BUDGET_BYTES": "vllm_evidence._capture.http",
    "Assessment": "vllm_evidence._assessment",
    "Claim": "vllm_evidence._assessment",
    "assess": "vllm_evidence._assessment",
    "claim_established": "vllm_evidence._assessment",
    "CaptureBatch": "vllm_evidence._capture.batch",
    "save": "vllm_evidence._capture.directory",
    "BodyBudget": "vllm_evidence._capture.http",
    "ProbeSession": "vllm_evidence._capture.http",
    "ProbeSettings": "vllm_evidence._capture.http",
    "probe": "vllm_evidence._capture.http",
    "probe_sync": "vllm_evidence._capture.http",
    "WrapWidth": "vllm_evidence._capture.log",
    "ProcRead": "vllm_evidence._capture.proc",
    "read_proc": "vllm_evidence._capture.proc",
    "SigningKey": "vllm_evidence._capture.signing",
    "VerificationKey": "vllm_evidence._capture.signing",
    "read_signing_key": "vllm_evidence._capture.signing",
    "read_verification_key": "vllm_evidence._capture.signing",
    "ProcessTree": "vllm_evidence._adapters.process_tree",
    "observe_process_tree": "vllm_evidence._adapters.process_tree",
    "LaunchReceipt": "vllm_evidence._adapters.receipt",
    "read_launch_receipt": "vllm_evidence._adapters.receipt",
    "LogReadFailure": "vllm_evidence._adapters.startup_log",
    "StartupLog": "vllm_evidence._adapters.startup_log",
    "read_startup_log": "vllm_evidence._adapters.startup_log",
    "CapturedReadback": "vllm_evidence._readback",
    "HistoricalBundle": "vllm_evidence._readback",
    "historical_bundle": "vllm_evidence._readback",
    "load": "vllm_evidence._readback",
    "readback_from_batch": "vllm_evidence._readback",
    "FrontDoor": "vllm_evidence._readback.evidence",
}

__all__ = [
    "DEFAULT_BODY_BUDGET_BYTES",
    "Assessment",
    "BodyBudget",
    "CaptureBatch",
    "CapturedReadback",
    "Claim",
    "FrontDoor",
    "HistoricalBundle",
    "HttpError",
    "LaunchReceipt",
    "LogReadFailure",
    "NotFound",
    "NotRequested",
    "Outcome",
    "Parsed",
    "ProbeSession",
    "ProbeSettings",
    "ProcRead",
    "ProcessTree",
    "Redirected",
    "SigningKey",
    "StartupLog",
    "TimedOut",
    "TooLarge",
    "Unauthorized",
    "Unparsed",
    "Unreachable",
    "VerificationKey",
    "WrapWidth",
    "assess",
    "claim_established",
    "historical_bundle",
    "load",
    "observe_process_tree",
    "probe",
    "probe_sync",
    "read_launch_receipt",
    "read_proc",
    "read_signing_key",
    "read_startup_log",
    "read_verification_key",
    "readback_from_batch",
    "save",
]

if not TYPE_CHECKING:  # to a type checker a name is what the imports above say, no more
    __getattr__, __dir__ = _lazy.lazy_attributes(__name__, _LAZY, __all__)
