"""The top-level namespace: every exported name resolves, and nothing else does."""

from __future__ import annotations

import subprocess
import sys
from typing import Literal, get_args, get_origin

import pytest

import vllm_evidence


@pytest.mark.parametrize("name", vllm_evidence.__all__)
def test_every_exported_name_resolves(name: str) -> None:
    value = getattr(vllm_evidence, name)
    if get_origin(value) is Literal:  # a type alias (``Claim``): it has no name of its own
        assert get_args(value)
        return
    assert getattr(value, "__name__", name) == name


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = vllm_evidence.nope


def test_dir_is_the_public_api() -> None:
    assert dir(vllm_evidence) == sorted(vllm_evidence.__all__)


def test_importing_the_cli_does_not_import_httpx_or_rich() -> None:
    code = (
        "import sys, vllm_evidence.cli; "
        "vllm_evidence.cli.build_parser(); "
        "print(sorted(m for m in ('httpx', 'rich') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
