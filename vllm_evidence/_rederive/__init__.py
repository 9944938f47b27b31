"""Re-derivation is the only way back: an assessment as its raw evidence, and read again.

:func:`dumps` writes one JSON document (schema ``vllm-evidence.evidence/3``) that holds
the *raw evidence* of an :class:`~vllm_evidence._assessment.Assessment`, never a decision
to be trusted:

* the front door: for a captured readback every exchange of its batch (route, role,
  transport, status, recorded headers, the body in base64 with its SHA-256, the size
  limit, the monotonic and wall-clock timestamps, the detail) with the batch id and
  target; for a historical bundle the bodies (with their SHA-256) and statuses it was
  built from;
* the startup log: its path, SHA-256, size and wrap width — by reference (the file is
  read again by :func:`loads`, only its first ``size_bytes``, so a log appended to since
  still loads; a relative path is read from the loading process's working directory)
  or, with ``embed_log=True``, with its bytes in base64;
* which launch of the log was assessed;
* the launch receipt given with the log (its bytes in base64), or ``null``;
* each decision's ``verdict`` and ``reason``, as a check only.

:func:`loads` parses the document defensively (bounded size and nesting, no floats, no
huge integers, no duplicate keys, every field type-checked: any malformed document is an
:class:`~vllm_evidence.errors.InputError`), rebuilds the batch through the capture
layer's own constructors, checks every digest, runs the adapters and :func:`assess`
again, and refuses with :class:`~vllm_evidence.errors.EvidenceMismatchError` when a
digest or a re-derived verdict differs from the recorded one.

No API key or other secret is written: an exchange never holds the request's headers,
only the response headers in :data:`~vllm_evidence._capture.batch.RECORDED_HEADERS`, and
the target is stored without credentials.

A startup log read from a stream keeps neither its bytes nor a path, so an assessment of
one cannot be written (nor pickled): read the log from a file.

The module is a package of three parts: ``_write`` (the document :func:`dumps` writes,
built by the converter's hook), ``_strict_json`` (the defensive JSON reading and the
typed field access) and ``_read`` (:func:`loads`: the re-derivation and its checks).
"""

from __future__ import annotations

from vllm_evidence._rederive._read import loads
from vllm_evidence._rederive._strict_json import MAX_DEPTH, MAX_DOCUMENT_CHARS
from vllm_evidence._rederive._write import SCHEMA, dumps

__all__ = ["MAX_DEPTH", "MAX_DOCUMENT_CHARS", "SCHEMA", "dumps", "loads"]
