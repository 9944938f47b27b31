"""Subcommands of ``vllm-evidence``.

Each subcommand lives in its own module here and exposes ``register(subparsers)``,
which adds its parser and sets ``handler`` to a function ``(args) -> int``.  Modules
import heavy dependencies (httpx, rich) inside their handlers, so ``--help`` and
``--version`` stay fast.
"""

from __future__ import annotations

#: Module names under ``vllm_evidence._cli``, in the order ``--help`` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "probe",
    "watch",
    "explain",
    "demo",
    "log",
    "laws",
    "audit",
    "launch",
    "schema",
)
