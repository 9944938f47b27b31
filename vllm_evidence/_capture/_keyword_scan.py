"""The keyword prefilter of the log reader: which lines of a block hold a keyword.

:mod:`vllm_evidence._capture.log` decodes, without hard-wrap joining, only the lines this
finds; it searches the raw bytes of a block, never decoding them, with one automaton of
all the caller's keywords.
"""

from __future__ import annotations

from collections.abc import Sequence

from ahocorasick_rs import BytesAhoCorasick, MatchKind

__all__ = ["KeywordScan"]

_WINDOW_BYTES = 64 * 1024
"""The automaton searches a block in windows of about this size, each cut after a newline,
so that one window's list of matches stays small whatever the block holds."""


class KeywordScan:
    """Find the lines of a block that hold any of ``keywords``, without decoding the block.

    One Aho-Corasick automaton of all the keywords (``ahocorasick_rs``, leftmost-first,
    whose SIMD prefilter runs at several GB/s when matches are rare) searches each block
    once: never one pass per keyword, and the speed does not depend on which bytes are
    common in the log.
    """

    def __init__(self, keywords: Sequence[bytes]) -> None:
        self.keywords = tuple(keywords)
        if not self.keywords or not all(self.keywords) or any(b"\n" in k for k in keywords):
            msg = "keywords must be non-empty byte strings without a newline"
            raise ValueError(msg)
        self._find = BytesAhoCorasick(self.keywords, matchkind=MatchKind.LeftmostFirst)
        self._find_matches = self._find.find_matches_as_indexes

    def line_starts(self, block: bytes, start: int = 0, end: int | None = None) -> list[int]:
        """Start offsets, ascending, of the lines of ``block[start:end]`` that hold a keyword.

        ``block[start:end]`` is whole lines (it ends with a newline and ``start`` begins a
        line); keywords hold no newline, so a match never crosses a line and a window
        cut after a newline loses none.  A line is reported iff it holds a keyword:
        exactly the lines one regular-expression search of all keywords would find.
        """
        find = block.find
        matches = self._find_matches
        view = memoryview(block)
        starts: list[int] = []
        size = len(block) if end is None else end
        line_end = start - 1  # the newline ending the last line reported
        pos = start
        while pos < size:
            cut = find(b"\n", min(pos + _WINDOW_BYTES, size) - 1, size)
            stop = size if cut < 0 else cut + 1
            for _, found, _ in matches(view[pos:stop]):
                at = pos + found
                if at > line_end:
                    starts.append(max(block.rfind(b"\n", start, at) + 1, start))
                    line_end = find(b"\n", at, size)
                    if line_end < 0:
                        line_end = size
            pos = stop
        return starts
