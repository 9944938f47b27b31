"""The executor backend a launch ran with, and the markers that decided it.

The adapters read what each line shows about the executor (an
:class:`~vllm_evidence._adapters.startup_log.ExecutorObservation`: a marker, the backend
it names if it names one, where); which backends a marker that names none is consistent
with depends on the release, and that is the law table's to say
(:data:`vllm_evidence.upstream.EXECUTOR_LAW_TABLE`).  The law is applied here, once:
:func:`resolve_executor` gives the backend the markers decide and the markers that
decided it, and the decisions and the renderers both read that.
"""

from __future__ import annotations

from typing import final

import attrs
from packaging.version import Version

from vllm_evidence._adapters.startup_log import ExecutorObservation, Launch
from vllm_evidence._seal import Sealed, minter
from vllm_evidence.upstream import (
    ExecutorBackend,
    ExecutorMarker,
    ExecutorMarkerLaw,
    executor_marker_law,
    executor_marker_laws,
)

__all__ = ["ResolvedExecutor", "compatible_backends", "resolve_executor"]

#: The markers that name their backend themselves.
_NAMING = (ExecutorMarker.CONFIG_FIELD, ExecutorMarker.ARG, ExecutorMarker.CPU_FALLBACK_LINE)

#: The markers that print the resolved value: when one is there, it alone decides.
_RESOLVED = (ExecutorMarker.CONFIG_FIELD, ExecutorMarker.CPU_FALLBACK_LINE)


@final
@attrs.frozen(init=False, repr=False)
class ResolvedExecutor(Sealed):
    """A launch's executor backend as its markers decide it, with those markers."""

    __public_constructor__ = "vllm_evidence.assess()"

    backend: ExecutorBackend | None
    """The backend, when the markers seen decide it; ``None`` when they do not."""
    evidence: tuple[ExecutorObservation, ...]
    """The markers consistent with :attr:`backend`, in line order (empty when undecided)."""

    def _repr_summary(self) -> str:
        if self.backend is None:
            return "not established"
        return f"{self.backend.value}, {len(self.evidence)} marker(s)"


_mint_resolved = minter(ResolvedExecutor, ResolvedExecutor.__attrs_init__)


def compatible_backends(
    observation: ExecutorObservation, version: Version | None
) -> frozenset[ExecutorBackend]:
    """The backends one marker is consistent with, for the launch's ``version``.

    A marker that names its backend is consistent with that one.  Any other is
    consistent with what the law table's law for ``version`` says
    (:data:`vllm_evidence.upstream.EXECUTOR_LAW_TABLE`); where no law holds (an unknown
    version, or one outside every span read for the marker), with every backend some
    law allows: nothing is borrowed from a neighbouring release.
    """
    if observation.marker in _NAMING:
        return frozenset({observation.named}) if observation.named else frozenset()
    law = None if version is None else executor_marker_law(observation.marker, version)
    if isinstance(law, ExecutorMarkerLaw):
        return law.backends
    return frozenset().union(*(law.backends for law in executor_marker_laws(observation.marker)))


def resolve_executor(launch: Launch) -> ResolvedExecutor:
    """The backend the launch's markers decide, and the markers that decided it.

    The engine-init ``distributed_executor_backend=`` field and the CPU platform's
    fallback line, when printed, are the resolved value and alone decide.  Otherwise
    every marker's compatible set (:func:`compatible_backends`) is intersected; one
    backend left decides, none or several does not.
    """
    version = launch.version.version if launch.version else None
    observations = launch.executor_observations
    resolved = [compatible_backends(o, version) for o in observations if o.marker in _RESOLVED]
    sets = resolved or [compatible_backends(o, version) for o in observations]
    common = frozenset.intersection(*sets) if sets else frozenset()
    if len(common) != 1:
        return _mint_resolved(backend=None, evidence=())
    (backend,) = common
    return _mint_resolved(
        backend=backend,
        evidence=tuple(o for o in observations if backend in compatible_backends(o, version)),
    )
