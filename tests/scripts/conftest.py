"""The live tier's package (``scripts/live_vllm/``) is not installed: its tests import it
from ``scripts/``, as ``scripts/live-vllm`` runs it. Nothing here needs vLLM."""

from __future__ import annotations

import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.append(str(SCRIPTS))
