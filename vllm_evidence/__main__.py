"""``python -m vllm_evidence``."""

import sys

from vllm_evidence.cli import main

sys.exit(main())
