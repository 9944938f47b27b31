"""Edit a saved capture's manifest and recompute its (unkeyed) seal, as anyone can.

What an unsigned capture cannot stop: the tests that check what a reader does with an
edited field use it to get past the seal; the signature tests use it to show that only
a signature tells the edit apart.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def canonical(document: dict[str, Any]) -> bytes:
    unsealed = {key: value for key, value in document.items() if key != "seal"}
    return json.dumps(unsealed, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def reseal(directory: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Apply ``edit`` to ``manifest.json`` and write it back with a matching seal (the
    signature, if any, is kept as it was and so no longer verifies)."""
    path = directory / "manifest.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    edit(document)
    document["seal"]["canonical_sha256"] = hashlib.sha256(canonical(document)).hexdigest()
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
