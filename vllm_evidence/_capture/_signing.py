"""The HMAC-SHA256 names of :mod:`vllm_evidence._capture.signing`, under their former
names (package-internal): an evidence document (:mod:`vllm_evidence._rederive`) is still
signed with a shared key.  Nothing is defined here; the one signing module is
:mod:`vllm_evidence._capture.signing`.
"""

from __future__ import annotations

from vllm_evidence._capture.signing import HMAC_SHA256 as ALGORITHM
from vllm_evidence._capture.signing import MIN_KEY_BYTES, canonical
from vllm_evidence._capture.signing import check_hmac_key as check_key
from vllm_evidence._capture.signing import environment_hmac_key as environment_key
from vllm_evidence._capture.signing import hmac_key_id as key_id
from vllm_evidence._capture.signing import hmac_matches as signature_matches
from vllm_evidence._capture.signing import hmac_sign as sign

__all__ = [
    "ALGORITHM",
    "MIN_KEY_BYTES",
    "canonical",
    "check_key",
    "environment_key",
    "key_id",
    "sign",
    "signature_matches",
]
