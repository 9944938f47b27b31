"""The README's release table says what the law table says, cell by cell.

Each column is one law's typed rule, spelled in words here by hand; a row's cell must be
the words of the law that holds for its release.  A change of a span or a rule in
``upstream/_table.py`` that the README does not follow fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.version import Version

from vllm_evidence.upstream import (
    CapacityAuthority,
    CapacityFormat,
    CapacityLaw,
    CapacityLogFormatLaw,
    CapacitySource,
    ExecutorBackend,
    HealthCoverage,
    HealthLaw,
    IncarnationMarker,
    IncarnationMarkerLaw,
    ParallelEvidenceLaw,
    ReleaseLaws,
    Route,
    laws_for,
)

README = Path(__file__).resolve().parents[2] / "README.md"
ROW = re.compile(r"^\| (?P<v>\d+\.\d+\.\d+(?:\.\d+)?) \|(?P<cells>.*)\|\s*$")

LINE = {
    CapacityAuthority.PER_WORKER_BEFORE_REDUCTION: "log per worker, before the minimum",
    CapacityAuthority.NOT_GROUP_AWARE: "log per engine, not group-aware",
}
FORMAT = {CapacityFormat.V1_TWO_LINE: "two lines", CapacityFormat.V1_ONE_LINE: "one line"}
HEALTH = {
    HealthCoverage.API_SERVER_ONLY: "API server only",
    HealthCoverage.WORKER_DEATH_REACHES: "worker death reaches",
}
MARKER = {
    IncarnationMarker.PRESENT_UNLESS_MULTIPROCESS_REGISTRY: "present unless multiprocess registry",
    IncarnationMarker.ABSENT_BY_DEFAULT_WITH_DP: "absent by default with DP > 1 (`vllm serve`)",
}


def _rows() -> dict[str, list[str]]:
    rows = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if m:
            rows[m["v"]] = [c.strip() for c in m["cells"].split(" | ")]
    return rows


def _capacity(laws: ReleaseLaws) -> str:
    line = laws.capacity(CapacitySource.LOG_CAPACITY_LINE)
    label = laws.capacity(CapacitySource.LABEL_KV_CACHE_SIZE_TOKENS)
    fmt = laws.capacity_log_format()
    assert isinstance(line, CapacityLaw)
    assert isinstance(label, CapacityLaw)
    assert isinstance(fmt, CapacityLogFormatLaw)
    if line.authority is CapacityAuthority.AUTHORITATIVE:
        head = f"log ({FORMAT[fmt.format]})"
        head += ", group-aware" if label.authority is CapacityAuthority.ABSENT else ""
    else:
        head = LINE[line.authority]
    if label.authority is CapacityAuthority.AUTHORITATIVE:
        return f"{head} and `kv_cache_size_tokens`"
    assert label.authority is CapacityAuthority.ABSENT
    return f"{head}; no label"


def _parallel(laws: ReleaseLaws) -> str:
    json_form = laws.parallel_evidence(Route.SERVER_INFO_JSON)
    if isinstance(json_form, ParallelEvidenceLaw):
        assert json_form.reports_data_parallel_size
        return "`/server_info` JSON: TP, PP, DP"
    text = laws.parallel_evidence(Route.SERVER_INFO)
    assert isinstance(text, ParallelEvidenceLaw)
    assert not text.reports_data_parallel_size
    return "`/server_info` text: TP, PP (no DP)"


def _health(laws: ReleaseLaws) -> str:
    law = laws.health(ExecutorBackend.MP)
    assert isinstance(law, HealthLaw)
    return HEALTH[law.coverage]


def _marker(laws: ReleaseLaws) -> str:
    law = laws.incarnation_marker()
    assert isinstance(law, IncarnationMarkerLaw)
    return MARKER[law.marker]


def test_the_table_lists_the_read_releases_on_each_side_of_a_change() -> None:
    """0.8.5 to 0.32.0: every release where a column changes, and the read release before it."""
    assert list(_rows()) == [
        "0.8.5",
        "0.9.1",
        "0.9.2",
        "0.10.1.1",
        "0.11.0",
        "0.11.1",
        "0.14.0",
        "0.14.1",
        "0.15.0",
        "0.17.0",
        "0.20.0",
        "0.20.1",
        "0.23.0",
        "0.24.0",
        "0.26.0",
        "0.27.0",
        "0.27.1",
        "0.28.0",
        "0.29.0",
        "0.31.0",
        "0.32.0",
    ]


@pytest.mark.parametrize(("version", "cells"), list(_rows().items()))
def test_each_cell_is_the_law_of_its_release(version: str, cells: list[str]) -> None:
    laws = laws_for(Version(version))
    assert isinstance(laws, ReleaseLaws)
    capacity, parallel, health, marker, known = cells
    assert capacity == _capacity(laws)
    assert parallel == _parallel(laws)
    assert health == _health(laws)
    assert marker.startswith(_marker(laws))
    real = Path(__file__).resolve().parents[1] / "fixtures" / "real" / f"vllm-{version}-cpu"
    assert known == ("source, run" if real.is_dir() else "source")
