"""Exceptions raised by vllm_evidence.

Domain answers ("this evidence does not establish X") are *returned* as typed refusal
values, never raised.  Exceptions are for inputs that cannot be read at all and for
programmer errors::

    EvidenceError
    ├── InputError (also a ValueError)   unreadable input: a missing file, a directory
    │                          where a file was expected, a malformed URL, a binary blob
    │   └── CaptureIntegrityError   a saved capture whose bytes no longer match its manifest
    │       └── EvidenceMismatchError (also a ValueError)   a serialized assessment whose
    │                                    evidence does not reproduce its digests or verdicts
    └── SealedTypeError (also a TypeError)   a sealed type constructed, copied into a new
                                             value, pickled or subclassed; see
                                             vllm_evidence._seal
"""

from __future__ import annotations

__all__ = [
    "CaptureIntegrityError",
    "EvidenceError",
    "EvidenceMismatchError",
    "InputError",
    "MisuseError",
    "SealedTypeError",
]


class EvidenceError(Exception):
    """Root of the exceptions this package raises on purpose."""


class InputError(EvidenceError, ValueError):
    """Input that cannot be read as evidence at all.  ``str()`` is one line for a person.

    Also a :class:`ValueError`, so code that guards a call with ``except ValueError``
    (the conventional "bad argument value") catches it.
    """


class CaptureIntegrityError(InputError):
    """A saved capture directory whose files do not match its manifest's digests."""


class EvidenceMismatchError(CaptureIntegrityError, ValueError):
    """Re-derived evidence that does not match what a document or pickle recorded.

    Raised by :func:`vllm_evidence._rederive.loads` (and by unpickling a sealed value) when
    an embedded body or log no longer has its recorded SHA-256, a log file on disk has
    changed, or the decisions re-run over the bytes do not reproduce the stored verdicts.
    Nothing is returned: a stored decision is never trusted.
    """


class SealedTypeError(EvidenceError, TypeError):
    """A sealed type was constructed, copied into a new value, pickled or subclassed."""


class MisuseError(EvidenceError, TypeError):
    """A public function handed the wrong kind of value; the message names the call that
    takes it (``assess(batch)``: use ``readback_from_batch(batch)`` first)."""
