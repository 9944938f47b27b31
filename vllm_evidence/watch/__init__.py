"""Continuous verification: rounds over many targets and the transitions between them.

The layer above the assessment (and its documents): :func:`watch` (or a
:class:`Watcher`, one round at a time) reads every :class:`Target` each round — its
launch receipt, its startup log *followed* by its appended bytes, its front door — and
yields a :class:`Round`: each target's verdicts, whether it is ready (every required
claim established) and the transitions since the round before (:class:`ClaimChanged`,
:class:`Restarted`, :class:`ReachChanged`, :class:`LogChanged`).  Targets come from URLs or
a targets file (:func:`read_targets`: plain lines or Prometheus file_sd), and
:class:`Shard` takes a stable share of them.  :func:`round_lines` gives a round's JSON
lines (``vllm-evidence.watch-transition/2`` and ``vllm-evidence.watch-round/2``).
"""

from __future__ import annotations

from vllm_evidence._capture.follow import FollowEvent, FollowState
from vllm_evidence.watch._documents import (
    ROUND_SCHEMA,
    TRANSITION_SCHEMA,
    round_document,
    round_lines,
    transition_document,
)
from vllm_evidence.watch._round import (
    ClaimChanged,
    ClaimVerdict,
    LogChanged,
    LogView,
    Reach,
    ReachChanged,
    Restarted,
    Round,
    TargetRound,
    Transition,
)
from vllm_evidence.watch._targets import (
    Shard,
    Target,
    TargetsFileError,
    parse_targets,
    read_targets,
    shard_index,
)
from vllm_evidence.watch._watcher import (
    DEFAULT_CONCURRENCY,
    DEFAULT_INTERVAL_S,
    INLINE_BODY_BYTES,
    Watcher,
    watch,
)

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_INTERVAL_S",
    "INLINE_BODY_BYTES",
    "ROUND_SCHEMA",
    "TRANSITION_SCHEMA",
    "ClaimChanged",
    "ClaimVerdict",
    "FollowEvent",
    "FollowState",
    "LogChanged",
    "LogView",
    "Reach",
    "ReachChanged",
    "Restarted",
    "Round",
    "Shard",
    "Target",
    "TargetRound",
    "TargetsFileError",
    "Transition",
    "Watcher",
    "parse_targets",
    "read_targets",
    "round_document",
    "round_lines",
    "shard_index",
    "transition_document",
    "watch",
]
