"""``python -m live_vllm`` (with ``scripts/`` on the path): the live tier's command line."""

from __future__ import annotations

import sys

from live_vllm.cli import main

if __name__ == "__main__":
    sys.exit(main())
