"""A watch's JSON lines (:mod:`vllm_evidence.watch._documents`) against their published
schemas (``schemas/watch-round.json``, ``schemas/watch-transition.json``): every document
a real sequence of rounds produces validates, one missing a key or carrying a wrong value
does not, and labels reach every document about their target.  Field values are written
by hand from what the test did."""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.watch._kit import DEATH, KILL, PUBLIC, launch_files, log_lines, turn, write_receipt
from vllm_evidence.testing._stub import serve_capture
from vllm_evidence.watch import (
    ROUND_SCHEMA,
    TRANSITION_SCHEMA,
    Round,
    Target,
    Watcher,
    round_document,
    round_lines,
    transition_document,
)


def schema(name: str) -> dict[str, Any]:
    text = resources.files("vllm_evidence").joinpath("schemas", f"{name}.json").read_text("utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


ROUND = Draft202012Validator(schema("watch-round"))
TRANSITION = Draft202012Validator(schema("watch-transition"))


def valid(validator: Draft202012Validator, document: object) -> bool:
    return not list(validator.iter_errors(document))


@pytest.fixture(scope="module")
def sequence(tmp_path_factory: pytest.TempPathFactory) -> list[Round]:
    """Rounds with a transition of every kind: a restart, a rank lost (a claim), a log
    rotated, the server gone."""
    directory = tmp_path_factory.mktemp("watch")
    log, receipt = launch_files(directory)
    done = []
    with serve_capture(KILL) as door:
        target = Target(door.url, startup_log=log, receipt=receipt, labels={"pool": "a"})
        plain = Target("http://127.0.0.1:9", labels={"pool": "b", "zone": "eu"})
        watcher = Watcher(
            [target, plain], require=("parallel",), interval=15, timeout=1, receipt_key=PUBLIC
        )
        done.append(turn(watcher))
        with log.open("ab") as handle:
            handle.write(log_lines()[DEATH])
        write_receipt(receipt, log)
        done.append(turn(watcher))
        door.restart()
        moved = log.read_bytes()
        log.rename(directory / "startup.log.1")
        log.write_bytes(moved)
        done.append(turn(watcher))
    done.append(turn(watcher))  # the server is gone
    return done


def test_every_document_of_the_sequence_validates(sequence: list[Round]) -> None:
    lines = [document for round_ in sequence for document in round_lines(round_)]
    changes = {d["change"] for d in lines if d["schema"] == TRANSITION_SCHEMA}
    assert changes == {"claim", "restart", "log", "reach"}
    for document in lines:
        validator = ROUND if document["schema"] == ROUND_SCHEMA else TRANSITION
        errors = [e.message for e in validator.iter_errors(document)]
        assert errors == [], document


def test_a_round_line_follows_its_transitions(sequence: list[Round]) -> None:
    lines = round_lines(sequence[1])
    assert [d["schema"] for d in lines] == [TRANSITION_SCHEMA] * 2 + [ROUND_SCHEMA]
    assert all(d["round"] == 2 for d in lines)


def test_the_round_document_says_each_targets_state(sequence: list[Round]) -> None:
    document = round_document(sequence[1])
    assert document["round"] == 2
    assert document["interval_s"] == 15.0
    assert document["required"] == ["parallel"]
    assert document["counts"] == {"targets": 2, "answering": 1, "ready": 0, "transitions": 2}
    served, nothing = document["targets"]
    assert served["labels"] == {"pool": "a"}
    assert served["reach"] == "answering"
    assert served["process_start_time_seconds"] == "1796218926.79"
    assert served["claims"]["parallel"] == {"verdict": "refused", "reason": "rank_lost"}
    assert served["claims"]["log_join"] == {"verdict": "established", "reason": "established"}
    assert served["ready"] is False
    assert served["log"]["state"] == "following"
    assert served["log"]["event"] is None
    assert nothing["labels"] == {"pool": "b", "zone": "eu"}
    assert nothing["reach"] == "unreachable"
    assert nothing["process_start_time_seconds"] is None
    assert nothing["log"] is None


def test_each_transition_document_names_its_change(sequence: list[Round]) -> None:
    lost = [transition_document(t) for t in sequence[1].transitions]
    assert [(d["change"], d["claim"]) for d in lost] == [
        ("claim", "parallel"),
        ("claim", "health_coverage"),
    ]
    assert lost[0]["before"] == {"verdict": "established", "reason": "established"}
    assert lost[0]["after"] == {"verdict": "refused", "reason": "rank_lost"}
    assert lost[0]["detail"].startswith("rank 1 (VllmWorker-1")
    assert lost[0]["labels"] == {"pool": "a"}
    restarted = [transition_document(t) for t in sequence[2].transitions]
    assert restarted[0]["change"] == "restart"
    assert restarted[0]["before"] == {"process_start_time_seconds": "1796218926.79"}
    assert restarted[0]["after"] == {"process_start_time_seconds": "1796219926.79"}
    logged = next(d for d in restarted if d["change"] == "log")
    assert logged["after"] == {"state": "following", "event": "rotated"}
    gone = [transition_document(t) for t in sequence[3].transitions]
    assert [(d["change"], d["before"], d["after"]) for d in gone] == [
        ("reach", {"reach": "answering"}, {"reach": "unreachable"})
    ]


@pytest.mark.parametrize("key", ["schema", "round", "counts", "targets", "required"])
def test_a_round_document_missing_a_key_does_not_validate(sequence: list[Round], key: str) -> None:
    document = round_document(sequence[1])
    assert valid(ROUND, document)
    del document[key]
    assert not valid(ROUND, document)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("targets", 0, "reach"), "sleeping"),
        (("targets", 0, "claims", "parallel", "verdict"), "maybe"),
        (("targets", 0, "claims", "nonsense"), {"verdict": "refused", "reason": "x"}),
        (("targets", 0, "log", "event"), "moved"),
        (("schema",), "vllm-evidence.watch-round/1"),  # the version before
    ],
)
def test_a_round_document_with_a_wrong_value_does_not_validate(
    sequence: list[Round], path: tuple[Any, ...], value: object
) -> None:
    document = copy.deepcopy(round_document(sequence[1]))
    holder: Any = document
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = value
    assert not valid(ROUND, document)


def test_a_transition_whose_parts_do_not_match_its_change_does_not_validate(
    sequence: list[Round],
) -> None:
    claim = transition_document(sequence[1].transitions[0])
    assert valid(TRANSITION, claim)
    restart_shaped = {**claim, "change": "restart"}
    assert not valid(TRANSITION, restart_shaped)
    no_claim = {**claim, "claim": None}
    assert not valid(TRANSITION, no_claim)
    missing = {k: v for k, v in claim.items() if k != "labels"}
    assert not valid(TRANSITION, missing)


def test_each_schema_names_the_version_its_documents_carry() -> None:
    for name, version in (("watch-round", ROUND_SCHEMA), ("watch-transition", TRANSITION_SCHEMA)):
        document = schema(name)
        Draft202012Validator.check_schema(document)
        assert document["x-vllm-evidence-schema"] == version
        assert document["$id"] == f"urn:vllm-evidence:schema:{name}:2"
        assert document["properties"]["schema"] == {"const": version}


def test_the_schemas_are_pinned(tmp_path: Path) -> None:
    import hashlib

    pins = json.loads((Path(__file__).parents[1] / "golden" / "schemas.json").read_text("utf-8"))
    for name in ("watch-round", "watch-transition"):
        raw = resources.files("vllm_evidence").joinpath("schemas", f"{name}.json").read_bytes()
        assert pins[name] == {
            "version": json.loads(raw)["x-vllm-evidence-schema"],
            "sha256": hashlib.sha256(raw).hexdigest(),
        }
