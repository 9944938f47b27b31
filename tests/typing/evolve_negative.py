"""``attrs.evolve`` on a sealed value: an ordinary mypy error, never an INTERNAL ERROR.

mypy's attrs plugin types ``evolve`` from the class's ``__init__``, and for an
``init=False`` class it finds the inherited ``Sealed.__init__``.  When that was a plain
function with a positional-only parameter, the plugin crashed (it built a keyword
parameter from a nameless argument).  ``Sealed.__init__`` is now ``@final``, which the
plugin does not read as an attrs initializer, so it reports "expected an attrs class"
[misc] instead.  Each ``# type: ignore[misc]`` is needed only while that holds: under
``warn_unused_ignores`` an accepted line is an error, and a crash fails the whole run.
Type-checked, never imported; ``tests/test_typing_evolve.py`` runs the same lines
through a bare ``mypy --strict`` in a subprocess.
"""

from __future__ import annotations

import attrs

from vllm_evidence._adapters.outcome import Parsed
from vllm_evidence._adapters.version import SelfReportedVersion
from vllm_evidence._assessment import Assessment
from vllm_evidence._measure import MeasureParseFailure, TokenCount
from vllm_evidence._readback import CapturedReadback
from vllm_evidence.decisions import ParallelEstablished


def decisions(decision: ParallelEstablished) -> None:
    attrs.evolve(decision)  # type: ignore[misc]
    attrs.evolve(decision, detail="edited")  # type: ignore[misc]


def readbacks(readback: CapturedReadback, parsed: Parsed[SelfReportedVersion]) -> None:
    attrs.evolve(readback)  # type: ignore[misc]
    attrs.evolve(parsed, observation=parsed.observation)  # type: ignore[misc]


def assessments(assessment: Assessment) -> None:
    attrs.evolve(assessment, startup_log=None)  # type: ignore[misc]


def measures(failure: MeasureParseFailure, tokens: TokenCount) -> TokenCount:
    attrs.evolve(failure, text="x")  # type: ignore[misc]
    return attrs.evolve(tokens, value=1)  # not sealed: evolve is fine
