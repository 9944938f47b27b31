"""A vLLM startup log, read into launches of typed observations.

Split the way ``packaging`` splits its tokenizer, parser and public types:

* ``_lexer`` (private): ANSI codes, docker and CRI records, wrappers, process tags, the
  record prefix; tolerant ``key=value`` splitting;
* ``_grammar`` (private): the message formats vLLM prints, one logical line in, typed
  observations out; ``_workers`` (private) the lines a worker prints about itself;
* :mod:`~vllm_evidence._adapters.startup_log.observations`: the observation types;
* :mod:`~vllm_evidence._adapters.startup_log.launch`: :class:`Launch` and
  :class:`StartupLog`, and the rules that split a log into launches;
* :mod:`~vllm_evidence._adapters.startup_log.reader`: the launch assembler (the capacity
  pairing included) and :func:`read_startup_log`, which drives
  :mod:`vllm_evidence._capture.log`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vllm_evidence._adapters.startup_log.launch import Launch, StartupLog
from vllm_evidence._adapters.startup_log.observations import (
    AvailableMemoryObservation,
    BlocksObservation,
    CapacityFormat,
    CapacityObservation,
    CompileCacheForm,
    CompileCacheObservation,
    EngineConfigObservation,
    ExecutorBackend,
    ExecutorMarker,
    ExecutorObservation,
    LifeEvent,
    LifeKind,
    NonDefaultArgsObservation,
    ProcessTag,
    RankForm,
    RankObservation,
    RouteObservation,
    VersionObservation,
    VersionSource,
    WorkerName,
    WorkerNameForm,
)
from vllm_evidence._lazy import lazy_attributes

if TYPE_CHECKING:
    from vllm_evidence._adapters.startup_log._grammar import KEYWORDS, KEYWORDS_BYTES_RE
    from vllm_evidence._adapters.startup_log._lexer import split_top_level
    from vllm_evidence._adapters.startup_log.reader import keyword_line_starts, read_startup_log
    from vllm_evidence._capture.log import LogReadFailure, LogReadFailureReason

__all__ = [
    "KEYWORDS",
    "KEYWORDS_BYTES_RE",
    "AvailableMemoryObservation",
    "BlocksObservation",
    "CapacityFormat",
    "CapacityObservation",
    "CompileCacheForm",
    "CompileCacheObservation",
    "EngineConfigObservation",
    "ExecutorBackend",
    "ExecutorMarker",
    "ExecutorObservation",
    "Launch",
    "LifeEvent",
    "LifeKind",
    "LogReadFailure",
    "LogReadFailureReason",
    "NonDefaultArgsObservation",
    "ProcessTag",
    "RankForm",
    "RankObservation",
    "RouteObservation",
    "StartupLog",
    "VersionObservation",
    "VersionSource",
    "WorkerName",
    "WorkerNameForm",
    "keyword_line_starts",
    "read_startup_log",
    "split_top_level",
]

#: The reader and its grammar, imported on first use: the types above are what the
#: decisions need, and a probe without a log never loads the log's grammar (its ~30
#: patterns) or the file reader.
_LAZY: dict[str, str] = {
    "KEYWORDS": "vllm_evidence._adapters.startup_log._grammar",
    "KEYWORDS_BYTES_RE": "vllm_evidence._adapters.startup_log._grammar",
    "split_top_level": "vllm_evidence._adapters.startup_log._lexer",
    "keyword_line_starts": "vllm_evidence._adapters.startup_log.reader",
    "read_startup_log": "vllm_evidence._adapters.startup_log.reader",
    "LogReadFailure": "vllm_evidence._capture.log",
    "LogReadFailureReason": "vllm_evidence._capture.log",
}

if not TYPE_CHECKING:  # to a type checker a name is what the imports above say, no more
    __getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
