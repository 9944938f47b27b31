"""Accuracy: how many logs as people paste them ``vllm-evidence log --json`` reads exactly.

Run: ``python benchmarks/bench_pasted_logs.py DIR [DIR ...] [--show-misses]``.

Each ``DIR`` holds cases ``NN.log`` (the pasted lines, as pasted) and ``NN.json``, what a
person reading the paste finds in it, written without running this package::

    {"source": "owner/repo#123", "forms": ["fenced", "elided"],
     "version": "0.6.3" | null, "tensor_parallel_size": 2 | null,
     "pipeline_parallel_size": 1 | null, "ranks": [0, 1],
     "capacity_tokens": [1048576], "gpu_blocks": [65536]}

``version`` is what the lines themselves print; the two sizes as an engine-init or
non-default-args line prints them; ``ranks`` the global ranks the lines name (rank
lines, worker tags); ``capacity_tokens`` and ``gpu_blocks`` the distinct figures of the
``KV cache size: N tokens`` and ``# GPU blocks: N`` lines.  The reader's side is read
from the JSON document a machine consumer gets (the ``startup-log`` schema), over all
the paste's launches: the versions printed, the sizes of the engine-init line (else of
the non-default args), the global ranks of ``resolved_parallel`` and the ranks named
under a pasted head (``pasted_ranks``), the capacity and block figures.

A case is *read exactly* when all six facts agree.  The figure printed is that share
over every case, then each fact's own share, then the share read exactly when a rank
the document names only in its worker's own engine (``unmapped_worker_tags``'
``engine_local_rank``, an unmapped rank line's rank: no line says which engine, so it
is no global rank) is counted as the person's, then (with ``--show-misses``) each miss:
the case, the fact, what the person read and what the reader did.  The set the
project measures on is one it has not seen (docs/testing.md, "Pasted logs"); its cases
are public third-party text and are not kept in the repository.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from vllm_evidence._adapters.startup_log import StartupLog, read_startup_log
from vllm_evidence._output.startup_log import startup_log_document

FACTS = (
    "version",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "ranks",
    "capacity_tokens",
    "gpu_blocks",
)


def _version(text: str) -> str:
    return text.removeprefix("v")


def read_facts(document: Mapping[str, Any]) -> dict[str, object]:
    """The six facts of one ``startup-log`` document, in the case file's shapes."""
    versions: set[str] = set()
    tp: set[int] = set()
    pp: set[int] = set()
    ranks: set[int] = set()
    capacity: set[int] = set()
    blocks: set[int] = set()
    local: set[int] = set()
    for launch in document["launches"]:
        versions.update(_version(v["text"]) for v in launch["versions"])
        parallel = launch["parallel"]
        if parallel is not None:
            tp.add(parallel["tensor_parallel_size"])
            pp.add(parallel["pipeline_parallel_size"])
        else:  # each size as the first non-default-args line that gives it
            for key, sizes in (("tensor_parallel_size", tp), ("pipeline_parallel_size", pp)):
                given = [a[key] for a in launch["non_default_args"] if a[key] is not None]
                sizes.update(given[:1])
        resolved = launch["resolved_parallel"]
        ranks.update(g["rank"] for g in resolved["global_ranks"])
        ranks.update(p["rank"] for p in launch["pasted_ranks"])
        # Named in their own engine only (no line says which engine): apart.
        unmapped = set(resolved["unmapped_rank_lines"])
        local.update(r["rank"] for r in launch["ranks"] if r["line"] in unmapped)
        local.update(
            t["engine_local_rank"]
            for t in resolved["unmapped_worker_tags"]
            if t["engine_local_rank"] is not None
        )
        if not resolved["global_ranks"] and resolved["tensor_parallel_size"] is None:
            local.update(r["rank"] for r in launch["ranks"])
        capacity.update(c["tokens"] for c in launch["capacity"] if c["tokens"] is not None)
        blocks.update(b["gpu_blocks"] for b in launch["blocks"])
    return {
        "version": _one(versions),
        "tensor_parallel_size": _one(tp),
        "pipeline_parallel_size": _one(pp),
        "ranks": sorted(ranks),
        "capacity_tokens": sorted(capacity),
        "gpu_blocks": sorted(blocks),
        "engine_local_ranks": sorted(local - ranks),
    }


def _one(values: set[Any]) -> object:
    """The one value, ``None`` for none, the sorted list where the paste holds several."""
    if not values:
        return None
    if len(values) == 1:
        return next(iter(values))
    return sorted(values)


def expected_facts(case: Mapping[str, Any]) -> dict[str, object]:
    """The six facts a person wrote down, in the same shapes as :func:`read_facts`."""
    version = case.get("version")
    return {
        "version": None if version is None else _version(str(version)),
        "tensor_parallel_size": case.get("tensor_parallel_size"),
        "pipeline_parallel_size": case.get("pipeline_parallel_size"),
        "ranks": sorted(case.get("ranks") or []),
        "capacity_tokens": sorted(case.get("capacity_tokens") or []),
        "gpu_blocks": sorted(case.get("gpu_blocks") or []),
    }


def score_case(log: bytes, case: Mapping[str, Any]) -> tuple[dict[str, tuple[Any, Any]], bool]:
    """Each fact the reader got otherwise than the person, ``{fact: (expected, read)}``,
    and whether the ranks the person read are the ones the document names counting a
    worker's rank in its own engine (``engine_local_ranks``) where no line says which."""
    parsed = read_startup_log(io.BytesIO(log))  # as `vllm-evidence log` reads a file
    if not isinstance(parsed, StartupLog):
        return {"read": ("a startup log", str(parsed))}, False
    got = read_facts(startup_log_document(parsed))
    want = expected_facts(case)
    missed = {fact: (want[fact], got[fact]) for fact in FACTS if want[fact] != got[fact]}
    named = sorted({*_ints(got["ranks"]), *_ints(got["engine_local_ranks"])})
    return missed, named == want["ranks"]


def _ints(value: object) -> list[int]:
    return [v for v in value if isinstance(v, int)] if isinstance(value, list) else []


def cases(dirs: Iterable[Path]) -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for d in dirs:
        for expected in sorted(d.glob("*.json")):
            log = expected.with_suffix(".log")
            if log.exists():
                found.append((log, json.loads(expected.read_text(encoding="utf-8"))))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+", type=Path)
    parser.add_argument("--show-misses", action="store_true")
    args = parser.parse_args(argv)
    found = cases(args.dirs)
    if not found:
        print("no cases (NN.log beside NN.json) in " + ", ".join(map(str, args.dirs)))
        return 2
    scored = {log: score_case(log.read_bytes(), case) for log, case in found}
    misses = {log: missed for log, (missed, _) in scored.items()}
    exact = sum(1 for m in misses.values() if not m)
    n = len(found)
    print(f"read exactly: {exact}/{n} ({100 * exact / n:.1f} %)")
    for fact in FACTS:
        right = sum(1 for m in misses.values() if fact not in m)
        print(f"  {fact:24} {right}/{n}")
    local = sum(1 for missed, named in scored.values() if set(missed) <= {"ranks"} and named)
    print(
        f"read exactly, a rank named only in its own engine counted: {local}/{n} "
        f"({100 * local / n:.1f} %)"
    )
    if args.show_misses:
        sources = {log: case.get("source", "?") for log, case in found}
        for log, missed in misses.items():
            for fact, (want, got) in missed.items():
                print(f"{log} ({sources[log]}): {fact}: read by a person {want!r}, by us {got!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
