"""Exceptions raised by vllm_evidence.

Domain answers ("this evidence does not establish X") are *returned* as typed refusal
values, never raised.  Exceptions are for inputs that cannot be read at all and for
programmer errors::

    EvidenceError
    ├── InputError            unreadable input: a missing file, a directory where a file
    │                          was expected, a malformed URL, a binary blob
    │   └── CaptureIntegrityError   a saved capture whose bytes no longer match its manifest
    └── SealedTypeError (also a TypeError)   see vllm_evidence._seal
"""

from __future__ import annotations

__all__ = ["CaptureIntegrityError", "EvidenceError", "InputError"]


class EvidenceError(Exception):
    """Root of the exceptions this package raises on purpose."""


class InputError(EvidenceError):
    """Input that cannot be read as evidence at all.  ``str()`` is one line for a person."""


class CaptureIntegrityError(InputError):
    """A saved capture directory whose files do not match its manifest's digests."""
