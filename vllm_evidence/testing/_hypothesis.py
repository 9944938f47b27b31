"""Registers the kit's strategies for the sealed public types (hypothesis entry point).

Hypothesis calls :func:`_hypothesis_setup_hook` when it is imported, through the
``hypothesis`` entry-point group in this package's metadata, so ``st.from_type(T)``
works for the sealed types, which have no public constructor to infer from.
"""

from __future__ import annotations

from typing import Any


def _hypothesis_setup_hook() -> None:
    from hypothesis import strategies as st

    from vllm_evidence._adapters.metrics import MetricsObservation
    from vllm_evidence._adapters.models import ServedModels
    from vllm_evidence._adapters.server_info import ServerInfo
    from vllm_evidence._adapters.startup_log import StartupLog
    from vllm_evidence._assessment import Assessment
    from vllm_evidence._capture.batch import CaptureBatch
    from vllm_evidence._readback import CapturedReadback, HistoricalBundle

    # The strategies module imports hypothesis, which runs this hook while it is being
    # imported: resolve it only when a value is drawn.
    def lazy(name: str) -> st.SearchStrategy[Any]:
        def resolve() -> st.SearchStrategy[Any]:
            import random

            # Resolving runs inside a draw; the import may run third-party module code
            # that draws from the global random (rich, through httpx), which hypothesis
            # rejects: keep the global random's state as it was.
            state = random.getstate()
            try:
                from vllm_evidence.testing import _strategies as strategies
            finally:
                random.setstate(state)

            made: st.SearchStrategy[Any] = getattr(strategies, name)()
            return made

        return st.deferred(resolve)

    st.register_type_strategy(Assessment, lazy("assessments"))
    st.register_type_strategy(StartupLog, lazy("read_startup_logs"))
    st.register_type_strategy(HistoricalBundle, lazy("historical_bundles"))
    st.register_type_strategy(CapturedReadback, lazy("captured_readbacks"))
    st.register_type_strategy(CaptureBatch, lazy("capture_batches"))
    st.register_type_strategy(MetricsObservation, lazy("metrics_observations"))
    st.register_type_strategy(ServedModels, lazy("served_models"))
    st.register_type_strategy(ServerInfo, lazy("server_infos"))
