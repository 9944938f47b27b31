"""Targets and targets files (:mod:`vllm_evidence.watch._targets`): the plain form and
Prometheus file_sd (JSON, YAML), hostile entries refused in one line naming the entry,
and shards that depend on the URL alone.

Expected values are written by hand; a shard's expected index is computed here with
``hashlib`` from the rule the module states (SHA-256 of the canonical URL, first 8 bytes
big-endian, modulo N), not by calling the module.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from vllm_evidence.errors import InputError
from vllm_evidence.watch import Shard, Target, TargetsFileError, parse_targets, read_targets
from vllm_evidence.watch._targets import MAX_LABEL_CHARS, TARGETS_FILE_LIMIT


def parse(text: str, name: str = "fleet.txt", base: Path | None = None) -> list[Target]:
    return parse_targets(text.encode(), name=name, base=base or Path("/srv"))


def refusal(text: str | bytes, name: str = "fleet.txt") -> str:
    raw = text.encode() if isinstance(text, str) else text
    with pytest.raises(TargetsFileError) as caught:
        parse_targets(raw, name=name, base=Path("/srv"))
    message = str(caught.value)
    assert "\n" not in message
    return message


# --- the plain form ------------------------------------------------------------------


def test_plain_lines_are_urls_with_optional_log_and_receipt() -> None:
    targets = parse(
        "# the fleet\n\nhttp://A:8000/\n  http://b:8001 log=b.log receipt=/r/b.json  \n"
    )
    assert targets == [
        Target("http://a:8000"),
        Target("http://b:8001", startup_log="/srv/b.log", receipt="/r/b.json"),
    ]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("http://a:8000\nftp://b\n", "fleet.txt line 2: not an http(s) URL"),
        ("http://a:8000 color=red\n", "fleet.txt line 1: after the URL, only log=PATH"),
        ("http://a:8000 log=a log=b\n", "fleet.txt line 1: after the URL, only log=PATH"),
        ("http://a:8000 receipt=r.json\n", "fleet.txt line 1: a receipt goes with a startup log"),
        ("http://a:8000 log=a receipt=b c=d\n", "fleet.txt line 1: a line is a URL, then"),
        ("http://a:8000\nhttp://A:8000/\n", "fleet.txt line 2: the same server as line 1"),
        ("- targets: [a:1]\n", "(a file_sd YAML file is read when its name ends in .yml"),
    ],
)
def test_a_bad_plain_line_refuses_the_file_naming_the_line(text: str, words: str) -> None:
    assert words in refusal(text)


def test_a_url_with_a_password_is_refused_without_quoting_it() -> None:
    message = refusal("http://user:hunter2@a:8000\n")
    assert "line 1" in message
    assert "hunter2" not in message


def test_bytes_that_are_not_utf8_are_refused_with_their_offset() -> None:
    assert refusal(b"http://a:8000\n\xff\n") == "fleet.txt: not UTF-8 text (byte 14)"


# --- file_sd JSON --------------------------------------------------------------------

FILE_SD = [
    {"targets": ["gpu-1:8000", "gpu-2:8000"], "labels": {"pool": "a", "__meta_x": "dropped"}},
    {"targets": ["gpu-3:8443"], "labels": {"__scheme__": "https", "zone": "eu"}},
    {
        "targets": ["http://gpu-4:8000/"],
        "labels": {"__startup_log__": "logs/4.log", "__receipt__": "logs/4.json"},
    },
]


def test_file_sd_json_groups_carry_their_labels_and_drop_prometheus_own() -> None:
    targets = parse(json.dumps(FILE_SD), name="fleet.json")
    assert targets == [
        Target("http://gpu-1:8000", labels={"pool": "a"}),
        Target("http://gpu-2:8000", labels={"pool": "a"}),
        Target("https://gpu-3:8443", labels={"zone": "eu"}),
        Target("http://gpu-4:8000", startup_log="/srv/logs/4.log", receipt="/srv/logs/4.json"),
    ]
    assert targets[2].label_map == {"zone": "eu"}


def test_a_file_starting_with_a_bracket_is_read_as_json_whatever_its_name() -> None:
    assert parse('[{"targets": ["h:1"]}]', name="fleet.txt") == [Target("http://h:1")]


@pytest.mark.parametrize(
    ("document", "words"),
    [
        ('{"targets": []}', "a file_sd document is an array of groups"),
        ('[["h:1"]]', "group 1: a group is an object"),
        ('[{"targets": "h:1"}]', "group 1: targets must be an array of strings"),
        ('[{"targets": [1]}]', "group 1: targets must be an array of strings"),
        ('[{"targets": ["h:1"], "labels": ["x"]}]', "group 1: labels must be an object"),
        ('[{"targets": ["h:1"], "job": "x"}]', "group 1: unknown key 'job'"),
        ('[{"targets": ["h:1"], "labels": {"a-b": "x"}}]', "is not a Prometheus label name"),
        ('[{"targets": ["h:1"], "labels": {"a": 1}}]', "label a: the value must be a string"),
        ('[{"targets": ["h:1"], "labels": {"__scheme__": "ftp"}}]', "__scheme__ must be http"),
        ('[{"targets": ["h:1"], "labels": {"__receipt__": "r"}}]', "__receipt__ goes with"),
        (
            '[{"targets": ["h:1", "h:2"], "labels": {"__startup_log__": "l"}}]',
            "__startup_log__ goes with a group of one target",
        ),
        ('[{"targets": ["h:1"]}, {"targets": ["h:2", "H:1"]}]', "group 2 target 2: the same"),
        ('[{"targets": ["h:99999"]}]', "group 1 target 1:"),
        ('[{"targets": ["h:1"], "targets": ["h:2"]}]', "duplicate key 'targets'"),
        ("[[[[[]]]]]", "nested deeper than 3 levels"),
        ('[{"targets": ["h:1"]', "not JSON"),
    ],
)
def test_a_bad_file_sd_entry_refuses_the_file_naming_the_entry(document: str, words: str) -> None:
    message = refusal(document, name="fleet.json")
    assert message.startswith("fleet.json")
    assert words in message


def test_a_label_value_past_its_bound_is_refused() -> None:
    document = json.dumps([{"targets": ["h:1"], "labels": {"a": "x" * (MAX_LABEL_CHARS + 1)}}])
    assert "longer than 1024 characters" in refusal(document, name="fleet.json")


# --- file_sd YAML --------------------------------------------------------------------

YAML = """\
- targets: [gpu-1:8000, "gpu-2:8000"]
  labels:
    pool: a
    port_count: 2
- targets:
    - gpu-3:8443
  labels: {__scheme__: https}
"""


def test_file_sd_yaml_reads_every_scalar_as_the_string_written() -> None:
    pytest.importorskip("yaml")
    assert parse(YAML, name="fleet.yaml") == [
        Target("http://gpu-1:8000", labels={"pool": "a", "port_count": "2"}),
        Target("http://gpu-2:8000", labels={"pool": "a", "port_count": "2"}),
        Target("https://gpu-3:8443"),
    ]


@pytest.mark.parametrize(
    ("document", "words"),
    [
        ("- targets: &t [h:1]\n- targets: *t\n", "YAML anchors and aliases are not read"),
        ("- targets: !!python/object:os.system [h:1]\n", "YAML tags are not read"),
        ("- targets: [[[h:1]]]\n", "nested deeper than 3 levels"),
        ("- targets: [h:1\n", "not YAML (line"),
        ("targets: [h:1]\n", "a file_sd document is an array of groups"),
    ],
)
def test_a_hostile_yaml_file_is_refused_in_one_line(document: str, words: str) -> None:
    pytest.importorskip("yaml")
    assert words in refusal(document, name="fleet.yml")


def test_an_empty_yaml_file_lists_nothing() -> None:
    pytest.importorskip("yaml")
    assert parse("", name="fleet.yaml") == []


# --- files ---------------------------------------------------------------------------


def test_a_file_is_read_with_paths_relative_to_its_directory(tmp_path: Path) -> None:
    listed = tmp_path / "fleet.txt"
    listed.write_text("http://a:8000 log=a.log\n", encoding="utf-8")
    assert read_targets(listed) == [Target("http://a:8000", startup_log=str(tmp_path / "a.log"))]


def test_a_file_past_the_bound_is_refused_before_it_is_read(tmp_path: Path) -> None:
    listed = tmp_path / "fleet.txt"
    with listed.open("wb") as handle:
        handle.truncate(TARGETS_FILE_LIMIT + 1)
    with pytest.raises(TargetsFileError, match="larger than the 16,777,216 bytes allowed"):
        read_targets(listed)


def test_a_directory_or_missing_file_is_a_one_line_refusal(tmp_path: Path) -> None:
    with pytest.raises(TargetsFileError, match="is a directory"):
        read_targets(tmp_path)
    with pytest.raises(TargetsFileError, match="cannot be read"):
        read_targets(tmp_path / "nope.txt")


def test_a_target_refuses_bad_labels_and_a_receipt_without_a_log() -> None:
    with pytest.raises(InputError, match="not a Prometheus label name"):
        Target("http://a:1", labels={"1a": "x"})
    with pytest.raises(InputError, match="Prometheus's own"):
        Target("http://a:1", labels={"__x": "y"})
    with pytest.raises(InputError, match="a receipt goes with a startup log"):
        Target("http://a:1", receipt="r.json")
    assert Target("http://a:1", labels=[("b", "2"), ("a", "1")]).labels == (("a", "1"), ("b", "2"))


# --- shards --------------------------------------------------------------------------


def expected_shard(url: str, count: int) -> int:
    return int.from_bytes(hashlib.sha256(url.encode()).digest()[:8], "big") % count


URLS = [f"http://gpu-{n}.pool:8000" for n in range(200)]


def test_a_shard_is_the_hash_of_the_canonical_url() -> None:
    for url in URLS[:20]:
        assert Shard(expected_shard(url, 4), 4).holds(Target(url))
        assert not Shard((expected_shard(url, 4) + 1) % 4, 4).holds(Target(url))
    # The canonical form decides: another spelling of the same server, the same shard.
    spelled = Target("HTTP://GPU-7.pool:8000/")
    assert Shard(expected_shard("http://gpu-7.pool:8000", 4), 4).holds(spelled)


def test_the_shards_cover_the_list_once_whatever_its_order() -> None:
    targets = [Target(url) for url in URLS]
    shares = [Shard(i, 4).take(targets) for i in range(4)]
    assert sorted(t.url for share in shares for t in share) == sorted(URLS)
    assert all(shares)  # 200 servers over 4 shards: none empty
    backwards = [Shard(i, 4).take(list(reversed(targets))) for i in range(4)]
    assert [sorted(t.url for t in s) for s in backwards] == [
        sorted(t.url for t in s) for s in shares
    ]


def test_a_server_added_to_the_file_moves_no_other() -> None:
    before = [Target(url) for url in URLS]
    after = [Target("http://new:8000"), *before]
    for i in range(4):
        kept = {t.url for t in Shard(i, 4).take(after)} - {"http://new:8000"}
        assert kept == {t.url for t in Shard(i, 4).take(before)}


@pytest.mark.parametrize(
    ("text", "words"),
    [("4/4", "the index counts from 0"), ("1/0", "the index counts from 0"), ("a/b", "I/N")],
)
def test_a_bad_shard_is_a_one_line_refusal(text: str, words: str) -> None:
    with pytest.raises(InputError, match=words):
        Shard.parse(text)


def test_a_shard_parses_its_index_and_count() -> None:
    assert Shard.parse(" 2/8 ") == Shard(2, 8)
