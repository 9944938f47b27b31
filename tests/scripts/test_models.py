"""The tiny models' build scripts and command lines, and the libstdc++ shim's version
script (nothing is built or compiled here)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from live_vllm.common import REPO
from live_vllm.models import MODEL_NEUTRALS, MODEL_SCRIPTS, model_argv
from live_vllm.releases import RELEASES
from live_vllm.shim import SHIM_VERSION, version_script


@pytest.mark.parametrize("model", sorted(MODEL_SCRIPTS))
def test_each_build_script_is_python_that_saves_a_model_and_a_tokenizer(model: str) -> None:
    tree = ast.parse(MODEL_SCRIPTS[model])
    calls = {
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    }
    assert {"save_pretrained", "manual_seed", "train_from_iterator"} <= calls


def test_every_model_has_a_neutral_path_and_only_those() -> None:
    assert sorted(MODEL_SCRIPTS) == sorted(MODEL_NEUTRALS)
    assert sorted(MODEL_SCRIPTS) == ["tiny-gemma3", "tiny-llama", "tiny-llama-hd32"]
    assert MODEL_NEUTRALS == {
        "tiny-llama": "/models/tiny-llama",
        "tiny-llama-hd32": "/models/tiny-llama-hd32",
        "tiny-gemma3": "/models/tiny-gemma3",
    }


@pytest.mark.parametrize("version", ["0.32.0", "0.26.0", "0.8.5"])
def test_the_head_size_32_llama_has_two_heads_on_every_release(version: str) -> None:
    """The model a generating scenario serves: head size 32 whatever the release's."""
    argv = model_argv(Path("out"), Path("env"), RELEASES[version], "tiny-llama-hd32")
    assert argv[2] == MODEL_SCRIPTS["tiny-llama"]
    assert argv[-1] == "2"


@pytest.mark.parametrize(("version", "heads"), [("0.32.0", "4"), ("0.26.0", "4"), ("0.8.5", "2")])
def test_the_model_has_as_many_heads_as_the_release_takes(version: str, heads: str) -> None:
    argv = model_argv(Path("out"), Path("env"), RELEASES[version], "tiny-llama")
    assert argv[:2] == [str(Path("env") / "bin" / "python"), "-c"]
    assert argv[2] == MODEL_SCRIPTS["tiny-llama"]
    assert argv[3:] == ["out", str(REPO / "LICENSE"), heads]
    assert (REPO / "LICENSE").is_file()


def test_the_hybrid_model_has_its_own_script() -> None:
    argv = model_argv(Path("out"), Path("env"), RELEASES["0.32.0"], "tiny-gemma3")
    assert argv[2] == MODEL_SCRIPTS["tiny-gemma3"] != MODEL_SCRIPTS["tiny-llama"]
    assert "Gemma3ForCausalLM" in argv[2]


def test_the_shim_defines_every_version_of_the_real_library_and_its_own() -> None:
    real = b"\x7fELF\x00GLIBCXX_3.4\x00CXXABI_1.3.9\x00GLIBCXX_3.4.30\x00GLIBCXX_3.4\x00"
    assert version_script(real) == (
        "CXXABI_1.3.9 { };\n"
        "GLIBCXX_3.4 { };\n"
        "GLIBCXX_3.4.30 { };\n"
        "GLIBCXX_3.4.32 { global: _ZSt21ios_base_library_initv; };\n"
    )


def test_names_not_delimited_by_nul_and_the_shims_own_version_are_not_copied() -> None:
    real = b"xGLIBCXX_3.4.29\x00 GLIBCXX_3.4.28 \x00GLIBCXX_3.4.32\x00\x00GLIBCXX_\x00"
    assert version_script(real) == f"{SHIM_VERSION} {{ global: _ZSt21ios_base_library_initv; }};\n"
