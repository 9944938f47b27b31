"""Readback: the one joined view of a server, built from what the adapters read.

* :mod:`~vllm_evidence._readback.front_door` — a captured readback (one bracketed probe
  batch, route by route, with its ``/metrics`` :class:`Bracket`) or a historical bundle
  (caller-supplied bodies, no bracket, never joined);
* :mod:`~vllm_evidence._readback.evidence` — :class:`Evidence`: a front-door readback, one
  launch of a startup log, its receipt and the launcher's process tree, each observation
  with its :class:`Source`, which is what every decision reads;
* :mod:`~vllm_evidence._readback.parallel` and :mod:`~vllm_evidence._readback.executor` —
  what a launch resolves to, not what it decides: its parallel sizes and the global rank
  each worker names, its executor backend and the markers that decided it (the
  release's laws applied once), read alike by the decisions and the renderers;
* :mod:`~vllm_evidence._readback.processes` — which of a launch's workers and engine cores
  the launcher's process tree no longer holds (its pids named by the launch's log);
* :func:`load` — a saved capture directory, its digests verified and every observation
  re-derived from the bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vllm_evidence._readback.evidence import Evidence, FrontDoor, Source, SourceKind
from vllm_evidence._readback.front_door import (
    Bracket,
    CapturedReadback,
    HistoricalBundle,
    historical_bundle,
    readback_from_batch,
)

if TYPE_CHECKING:
    from pathlib import Path

    from vllm_evidence._capture.signing import VerificationKey

__all__ = [
    "Bracket",
    "CapturedReadback",
    "Evidence",
    "FrontDoor",
    "HistoricalBundle",
    "Source",
    "SourceKind",
    "historical_bundle",
    "load",
    "readback_from_batch",
]


def load(
    directory: str | Path,
    *,
    bodies: bool = False,
    verify_key: VerificationKey | bytes | None = None,
) -> CapturedReadback | HistoricalBundle:
    """Read a capture directory back, re-deriving every observation from its bytes.

    With ``manifest.json``: its seal, the signature (under ``verify_key``, when given:
    the signer's :class:`~vllm_evidence._capture.signing.VerificationKey`, or the HMAC
    key's bytes for a capture saved before Ed25519),
    the file set and every file's digest are checked first (a mismatch raises
    :class:`~vllm_evidence.errors.CaptureIntegrityError` and nothing is derived), then
    the batch is rebuilt and its adapters re-run.  Without: an
    :class:`~vllm_evidence.errors.InputError`, unless ``bodies=True`` asks for the bare
    bodies as a historical bundle.  :func:`vllm_evidence._capture.directory.read_capture`
    also says what vouches for the bytes.
    """
    # Here, not at import: a probe that saves nothing never loads the directory code.
    from vllm_evidence._capture.directory import BareBodies, read

    bytes_read = read(directory, bodies=bodies, verify_key=verify_key)
    if isinstance(bytes_read, BareBodies):
        return historical_bundle(bytes_read.bodies, statuses=bytes_read.statuses)
    return readback_from_batch(bytes_read)
