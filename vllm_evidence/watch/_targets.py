"""What a watch reads: :class:`Target` (a front door, optionally its startup log and launch
receipt, and labels), a targets file read into them, and a stable shard of them.

**A targets file** is one of two forms, told apart by its name and its first character:

* plain lines, as ``vllm-evidence probe --targets`` reads them: one base URL a line, blank
  lines and ``#`` comments skipped; after the URL, optionally ``log=PATH`` (the server's
  startup log) and ``receipt=PATH`` (its launch receipt), separated by spaces, each path
  relative to the file's directory (a path holding a space needs the JSON form);
* Prometheus file-based service discovery (``file_sd``): a JSON array (a ``.json`` file,
  or any file whose first character is ``[``) or YAML (a ``.yml`` or ``.yaml`` file, read
  when PyYAML is installed) of groups, each ``{"targets": ["host:port", …], "labels":
  {…}}``.  A target is ``host:port`` (the scheme from the ``__scheme__`` label, ``http``
  by default) or a whole base URL.  Labels are carried into every output about the
  target; those that begin with ``__`` are Prometheus's own and are not, except that
  ``__startup_log__`` and ``__receipt__`` name the group's one target's log and receipt.

Every entry is hostile: the file is a regular file of at most :data:`TARGETS_FILE_LIMIT`
bytes, holding at most :data:`MAX_TARGETS` targets; JSON is read strictly (no key twice,
nesting of at most three levels), YAML with every scalar a string, no alias, anchor or
tag, and the same nesting bound, so a few bytes never cost much; label names are
Prometheus label names, label values strings of at most :data:`MAX_LABEL_CHARS`
characters, at most :data:`MAX_LABELS` of them.  A URL is read by the package's one URL
parser (:func:`~vllm_evidence._capture.http.clean_target`).  The first bad entry refuses
the file with one line (:class:`TargetsFileError`) naming the entry by its line or its
group and position, never quoting a URL (it may hold a password); a URL given twice is
refused with both places named.

**Sharding.**  :class:`Shard` ``I/N`` keeps the targets whose URL hashes to ``I`` modulo
``N`` (the first 8 bytes of the SHA-256 of the canonical URL, big-endian): a target's shard
depends on its URL alone, never on its place in the file, so N watchers given the same
file (or files listing the same servers in any order) take disjoint shares that cover it,
and a server added to the file moves no other.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, final

import attrs

from vllm_evidence._capture._files import NamedFileError, read_named_file
from vllm_evidence._capture._strict_json import StrictJsonError, strict_loads
from vllm_evidence._capture._target import clean_target
from vllm_evidence.errors import InputError

__all__ = [
    "MAX_LABELS",
    "MAX_LABEL_CHARS",
    "MAX_TARGETS",
    "TARGETS_FILE_LIMIT",
    "Shard",
    "Target",
    "TargetsFileError",
    "parse_targets",
    "read_targets",
    "shard_index",
]

#: The largest targets file read (a hundred thousand targets of ~160 bytes).
TARGETS_FILE_LIMIT: Final = 16 * 1024 * 1024
#: The most targets one file may list.
MAX_TARGETS: Final = 100_000
#: The most labels one target may carry.
MAX_LABELS: Final = 64
#: The longest label value (characters).
MAX_LABEL_CHARS: Final = 1024
#: The longest path of a log or receipt (characters).
_MAX_PATH_CHARS: Final = 4096
#: The deepest nesting a file_sd document has: the array, a group, its targets or labels.
_MAX_DEPTH: Final = 3
_LABEL_NAME: Final = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]{0,127}")
_SCHEMES: Final = ("http", "https")
_LOG_LABEL: Final = "__startup_log__"
_RECEIPT_LABEL: Final = "__receipt__"


class TargetsFileError(InputError):
    """A targets file, or one of its entries, that is refused: ``str()`` is one line."""


def _clean_url(url: str) -> str:
    return clean_target(url)


def _labels(value: Mapping[str, str] | Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    pairs = list(value.items()) if isinstance(value, Mapping) else list(value)
    if len(pairs) > MAX_LABELS:
        msg = f"at most {MAX_LABELS} labels, got {len(pairs)}"
        raise InputError(msg)
    seen: set[str] = set()
    for pair in pairs:
        item: object = pair  # callers outside mypy can pass anything
        if not (isinstance(item, tuple) and len(item) == 2):
            msg = "labels are (name, value) pairs of strings"
            raise InputError(msg)
        name, text = item
        _check_label(name, text)
        if name in seen:
            msg = f"label {name} is given twice"
            raise InputError(msg)
        seen.add(name)
    return tuple(sorted(pairs))


def _check_label(name: object, value: object) -> None:
    if not isinstance(name, str) or not _LABEL_NAME.fullmatch(name):
        shown = repr(name)[:60] if isinstance(name, str) else type(name).__name__
        msg = (
            f"label name {shown} is not a Prometheus label name "
            "([a-zA-Z_][a-zA-Z0-9_]*, at most 128 characters)"
        )
        raise InputError(msg)
    if name.startswith("__"):
        msg = f"label {name}: names beginning with __ are Prometheus's own"
        raise InputError(msg)
    if not isinstance(value, str):
        msg = f"label {name}: the value must be a string, got {type(value).__name__}"
        raise InputError(msg)
    if len(value) > MAX_LABEL_CHARS:
        msg = f"label {name}: the value is longer than {MAX_LABEL_CHARS} characters"
        raise InputError(msg)


def _path(value: str | os.PathLike[str] | None) -> str | None:
    return None if value is None else os.fspath(value)


@final
@attrs.frozen
class Target:
    """One server a watch reads: its front door's base URL (cleaned by
    :func:`~vllm_evidence._capture.http.clean_target`: an :class:`InputError` if it is not
    one), optionally its startup log and the launch receipt that witnesses the log, and
    labels carried into every output about it."""

    url: str = attrs.field(converter=_clean_url)
    startup_log: str | None = attrs.field(default=None, converter=_path, kw_only=True)
    """The server's startup log: followed, not re-read (its appended bytes each round)."""
    receipt: str | None = attrs.field(default=None, converter=_path, kw_only=True)
    """The launch receipt `vllm-evidence launch` keeps for the log: read each round."""
    labels: tuple[tuple[str, str], ...] = attrs.field(default=(), converter=_labels, kw_only=True)
    """``(name, value)`` pairs, sorted by name: Prometheus label names, string values."""

    def __attrs_post_init__(self) -> None:
        if self.receipt is not None and self.startup_log is None:
            msg = "a receipt goes with a startup log: a receipt witnesses a log"
            raise InputError(msg)
        for path in (self.startup_log, self.receipt):
            if path is not None and (not path or len(path) > _MAX_PATH_CHARS or "\0" in path):
                msg = f"a log or receipt path must be 1 to {_MAX_PATH_CHARS} characters, no NUL"
                raise InputError(msg)

    @property
    def label_map(self) -> dict[str, str]:
        """The labels as a mapping."""
        return dict(self.labels)


# ------------------------------------------------------------------------------ shards


def shard_index(url: str, count: int) -> int:
    """The shard (``0 .. count-1``) the target at ``url`` belongs to: the first 8 bytes of
    the SHA-256 of its canonical URL, big-endian, modulo ``count``."""
    if count < 1:
        msg = f"a shard count must be at least 1, got {count}"
        raise ValueError(msg)
    digest = hashlib.sha256(clean_target(url).encode("ascii")).digest()
    return int.from_bytes(digest[:8], "big") % count


_SHARD: Final = re.compile(r"([0-9]{1,6})/([0-9]{1,6})")


@final
@attrs.frozen
class Shard:
    """The share ``index`` of ``count`` of a list of targets (see the module)."""

    index: int
    count: int

    def __attrs_post_init__(self) -> None:
        if not (self.count >= 1 and 0 <= self.index < self.count):
            msg = (
                f"shard {self.index}/{self.count}: the index counts from 0 and must be "
                f"below the count (0/{max(self.count, 1)} .. {max(self.count, 1) - 1}/"
                f"{max(self.count, 1)})"
            )
            raise InputError(msg)

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"I/N"`` (``I`` from 0): an :class:`InputError` for anything else."""
        found = _SHARD.fullmatch(text.strip())
        if found is None:
            msg = f"a shard is I/N (I from 0 to N-1, e.g. 0/4), got {text[:40]!r}"
            raise InputError(msg)
        return cls(int(found.group(1)), int(found.group(2)))

    def holds(self, target: Target) -> bool:
        """Whether ``target`` is in this share."""
        return shard_index(target.url, self.count) == self.index

    def take(self, targets: Iterable[Target]) -> list[Target]:
        """The targets of this share, in their order."""
        return [t for t in targets if self.holds(t)]


# ------------------------------------------------------------------------ targets files


def read_targets(path: str | os.PathLike[str]) -> list[Target]:
    """The targets a file lists (see the module for the forms); ``"-"`` is standard input.
    Raises :class:`TargetsFileError` (one line) for a file or entry that is refused."""
    import sys

    name = os.fspath(path)
    try:
        if name == "-":
            raw = sys.stdin.buffer.read(TARGETS_FILE_LIMIT + 1)
            if len(raw) > TARGETS_FILE_LIMIT:
                msg = f"standard input holds more than {TARGETS_FILE_LIMIT:,} bytes"
                raise TargetsFileError(msg)
        else:
            raw = read_named_file(name, TARGETS_FILE_LIMIT, what="targets file")
    except NamedFileError as exc:
        raise TargetsFileError(str(exc)) from None
    except OSError as exc:
        msg = f"targets file {name}: cannot be read ({exc.strerror or type(exc).__name__})"
        raise TargetsFileError(msg) from None
    base = Path.cwd() if name == "-" else Path(name).parent
    return parse_targets(raw, name="standard input" if name == "-" else name, base=base)


def parse_targets(
    raw: bytes, *, name: str = "targets file", base: str | os.PathLike[str] | None = None
) -> list[Target]:
    """The targets of a targets file's bytes; ``name`` names it in errors (its suffix
    tells JSON and YAML apart), ``base`` is where relative paths start (default: the
    working directory)."""
    if len(raw) > TARGETS_FILE_LIMIT:
        msg = f"{name}: more than {TARGETS_FILE_LIMIT:,} bytes"
        raise TargetsFileError(msg)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"{name}: not UTF-8 text (byte {exc.start:,})"
        raise TargetsFileError(msg) from None
    text = text.removeprefix("\ufeff")
    root = Path.cwd() if base is None else Path(base)
    suffix = Path(name).suffix.lower()
    if suffix in (".yml", ".yaml"):
        targets = _from_groups(_yaml_groups(text, name), name, root)
    elif suffix == ".json" or text.lstrip().startswith("["):
        targets = _from_groups(_json_groups(text, name), name, root)
    else:
        targets = list(_plain(text, name, root))
    _unique(targets, name)
    return [target for target, _ in targets]


def _unique(targets: Sequence[tuple[Target, str]], name: str) -> None:
    if len(targets) > MAX_TARGETS:
        msg = f"{name}: more than {MAX_TARGETS:,} targets"
        raise TargetsFileError(msg)
    first: dict[str, str] = {}
    for target, where in targets:
        if target.url in first:
            msg = (
                f"{name} {where}: the same server as {first[target.url]} (each server is "
                "listed once)"
            )
            raise TargetsFileError(msg)
        first[target.url] = where


def _resolve(root: Path, path: str) -> str:
    return path if Path(path).is_absolute() else str(root / path)


_PLAIN_KEYS: Final = ("log", "receipt")


def _plain(text: str, name: str, root: Path) -> Iterator[tuple[Target, str]]:
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        where = f"line {number}"
        try:
            yield _plain_line(fields, root), where
        except InputError as exc:
            looks_yaml = number == 1 and fields[0] in ("-", "targets:")
            hint = (
                " (a file_sd YAML file is read when its name ends in .yml or .yaml)"
                if looks_yaml
                else ""
            )
            msg = f"{name} {where}: {exc}{hint}"
            raise TargetsFileError(msg) from None


def _plain_line(fields: list[str], root: Path) -> Target:
    if len(fields) > 1 + len(_PLAIN_KEYS):
        msg = "a line is a URL, then at most log=PATH and receipt=PATH"
        raise InputError(msg)
    given: dict[str, str] = {}
    for field in fields[1:]:
        key, equals, value = field.partition("=")
        if not equals or key not in _PLAIN_KEYS or not value or key in given:
            msg = "after the URL, only log=PATH and receipt=PATH, each at most once"
            raise InputError(msg)
        given[key] = _resolve(root, value)
    return Target(fields[0], startup_log=given.get("log"), receipt=given.get("receipt"))


def _json_groups(text: str, name: str) -> object:
    try:
        return strict_loads(text, max_depth=_MAX_DEPTH, max_int_chars=20)
    except StrictJsonError as exc:
        msg = f"{name}: not a file_sd JSON document ({exc})"
        raise TargetsFileError(msg) from None
    except ValueError as exc:
        where = f"line {exc.lineno}" if hasattr(exc, "lineno") else "its text"
        msg = f"{name}: not JSON ({where}: {getattr(exc, 'msg', type(exc).__name__)})"
        raise TargetsFileError(msg) from None


def _yaml_groups(text: str, name: str) -> object:
    """A file_sd YAML document, read with every scalar a string (PyYAML's base loader),
    after its events are checked: no alias, anchor or tag, nesting within the bound."""
    import importlib

    try:
        yaml: Any = importlib.import_module("yaml")
    except ImportError:
        msg = f"{name}: a YAML targets file needs PyYAML (pip install pyyaml); JSON needs nothing"
        raise TargetsFileError(msg) from None
    try:
        depth = 0
        for event in yaml.parse(text, Loader=yaml.BaseLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                msg = f"{name}: YAML anchors and aliases are not read"
                raise TargetsFileError(msg)
            if getattr(event, "tag", None) is not None:
                msg = f"{name}: YAML tags are not read"
                raise TargetsFileError(msg)
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > _MAX_DEPTH:
                    msg = f"{name}: nested deeper than {_MAX_DEPTH} levels"
                    raise TargetsFileError(msg)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        document = yaml.load(text, Loader=yaml.BaseLoader)  # every scalar a str, no object
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "its text"
        problem = getattr(exc, "problem", None) or type(exc).__name__
        msg = f"{name}: not YAML ({where}: {problem})"
        raise TargetsFileError(msg) from None
    return [] if document in (None, "") else document


def _from_groups(document: object, name: str, root: Path) -> list[tuple[Target, str]]:
    if not isinstance(document, list):
        msg = f"{name}: a file_sd document is an array of groups ({{targets, labels}})"
        raise TargetsFileError(msg)
    found: list[tuple[Target, str]] = []
    for number, group in enumerate(document, 1):
        where = f"group {number}"
        if not isinstance(group, dict):
            msg = f"{name} {where}: a group is an object with targets and labels"
            raise TargetsFileError(msg)
        unknown = sorted(set(group) - {"targets", "labels"})
        if unknown:
            msg = f"{name} {where}: unknown key {unknown[0][:40]!r} (a group has targets, labels)"
            raise TargetsFileError(msg)
        hosts = group.get("targets")
        labels = group.get("labels", {})
        if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
            msg = f"{name} {where}: targets must be an array of strings"
            raise TargetsFileError(msg)
        if not isinstance(labels, dict):
            msg = f"{name} {where}: labels must be an object of strings"
            raise TargetsFileError(msg)
        if len(found) + len(hosts) > MAX_TARGETS:
            msg = f"{name}: more than {MAX_TARGETS:,} targets"
            raise TargetsFileError(msg)
        scheme, log, receipt, kept = _group_labels(labels, f"{name} {where}")
        if log is not None and len(hosts) != 1:
            msg = (
                f"{name} {where}: {_LOG_LABEL} goes with a group of one target (a log is one "
                "server's)"
            )
            raise TargetsFileError(msg)
        for index, host in enumerate(hosts, 1):
            at = f"{where} target {index}"
            url = host if "://" in host else f"{scheme}://{host}"
            try:
                target = Target(
                    url,
                    startup_log=None if log is None else _resolve(root, log),
                    receipt=None if receipt is None else _resolve(root, receipt),
                    labels=kept,
                )
            except InputError as exc:
                msg = f"{name} {at}: {exc}"
                raise TargetsFileError(msg) from None
            found.append((target, at))
    return found


def _group_labels(
    labels: dict[Any, Any], where: str
) -> tuple[str, str | None, str | None, tuple[tuple[str, str], ...]]:
    if len(labels) > MAX_LABELS + 3:
        msg = f"{where}: at most {MAX_LABELS} labels"
        raise TargetsFileError(msg)
    kept: list[tuple[str, str]] = []
    scheme, log, receipt = "http", None, None
    for key, value in labels.items():
        if isinstance(key, str) and key.startswith("__"):
            if not isinstance(value, str):
                msg = f"{where}: label {key[:40]}: the value must be a string"
                raise TargetsFileError(msg)
            if key == "__scheme__":
                if value not in _SCHEMES:
                    msg = f"{where}: __scheme__ must be http or https"
                    raise TargetsFileError(msg)
                scheme = value
            elif key == _LOG_LABEL:
                log = value
            elif key == _RECEIPT_LABEL:
                receipt = value
            continue  # Prometheus's own labels are not carried
        try:
            _check_label(key, value)
        except InputError as exc:
            msg = f"{where}: {exc}"
            raise TargetsFileError(msg) from None
        kept.append((key, value))
    if receipt is not None and log is None:
        msg = f"{where}: {_RECEIPT_LABEL} goes with {_LOG_LABEL} (a receipt witnesses a log)"
        raise TargetsFileError(msg)
    return scheme, log, receipt, tuple(kept)
