"""Print the mutation score per area from ``mutmut results --all true`` (standard library only).

Usage: python scripts/mutation_score.py RESULTS_FILE [AREA...]

Each line of RESULTS_FILE reads ``    vllm_evidence.<area>.<module>.<mutant>: <status>``
(``_adapters``, ``_audit``: the area without its ``_``).
The score of an area is killed / (killed + survived + no tests + timeout + suspicious):
a mutant the type checker rejects never reaches the tests and is counted apart, and a
mutant named in docs/mutation.md as equivalent is subtracted from the survivors.
"""

from __future__ import annotations

import collections
import re
import sys
from pathlib import Path

LINE = re.compile(r"^\s*vllm_evidence\.(?P<area>\w+)\.(?P<name>\S+): (?P<status>.+)$")
EQUIVALENT = re.compile(r"^\| `(?P<name>vllm_evidence\.[^`]+)` \| equivalent")
DOC = Path(__file__).resolve().parent.parent / "docs" / "mutation.md"


def _equivalent() -> set[str]:
    """Mutant names the survivors table in docs/mutation.md marks as equivalent."""
    if not DOC.exists():
        return set()
    found = (EQUIVALENT.match(line) for line in DOC.read_text(encoding="utf-8").splitlines())
    return {m.group("name") for m in found if m is not None}


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    areas = argv[2:] or ["decisions", "upstream", "adapters", "audit"]
    equivalent = _equivalent()
    counts: dict[str, collections.Counter[str]] = {a: collections.Counter() for a in areas}
    survivors: list[str] = []
    for line in Path(argv[1]).read_text(encoding="utf-8").splitlines():
        m = LINE.match(line)
        # a private package's mutants read ``vllm_evidence._adapters.…``: area "adapters"
        area = m.group("area").removeprefix("_") if m is not None else ""
        if m is None or area not in counts:
            continue
        status = m.group("status")
        name = f"vllm_evidence.{m.group('area')}.{m.group('name')}"
        if status == "survived" and name in equivalent:
            status = "equivalent"
        counts[area][status] += 1
        if status in ("survived", "no tests", "timeout", "suspicious"):
            survivors.append(f"{name}: {status}")
    header = (
        f"{'area':<10} {'killed':>7} {'survived':>9} {'no tests':>9} {'timeout':>8} "
        f"{'equiv.':>7} {'typecheck':>10} {'total':>6}  score"
    )
    print(header)
    for area, c in counts.items():
        tested = c["killed"] + c["survived"] + c["no tests"] + c["timeout"] + c["suspicious"]
        total = sum(c.values())
        score = f"{100 * c['killed'] / tested:.1f}%" if tested else "n/a"
        print(
            f"{area:<10} {c['killed']:>7} {c['survived']:>9} {c['no tests']:>9} "
            f"{c['timeout']:>8} {c['equivalent']:>7} {c['caught by type check']:>10} "
            f"{total:>6}  {score}"
        )
    if survivors:
        print("not killed:")
        for survivor in survivors:
            print(f"  {survivor}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
