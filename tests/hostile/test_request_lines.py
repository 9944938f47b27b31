"""The closed route set, as request lines on the wire, over the CLI's option combinations.

A recording server on 127.0.0.1 keeps every raw request line.  For each combination of
the options that shape what ``probe`` sends (a base path with a prefix or escapes, the
development routes, a key, a fleet, saving, JSON), every line must be ``GET`` of the
base path followed by exactly one closed route's own target, ``HTTP/1.1``, and every
route the combination asks for must be read.
"""

from __future__ import annotations

import contextlib
import io
import itertools
from pathlib import Path

import pytest

from tests.hostile._server import hostile_server, real_reply
from vllm_evidence.cli import main
from vllm_evidence.upstream._routes import PROBE_ROUTES, Route

_DEV = {Route.SERVER_INFO, Route.SERVER_INFO_JSON, Route.GET_WORLD_SIZE}
_ALL = set(PROBE_ROUTES)
BASES = ["", "/", "/prefix", "/v%7Eendor/a;b=c/", "/a%2Fb"]


def _reply(target: str, headers: dict[str, str]) -> bytes:
    for base in BASES:
        if base.rstrip("/") and target.startswith(base.rstrip("/")):
            return real_reply(target.removeprefix(base.rstrip("/")))
    return real_reply(target)


COMBINATIONS = list(
    itertools.product(
        BASES,
        [False, True],  # --no-development-routes
        [False, True],  # --api-key-env
        ["one", "fleet", "save"],
    )
)


@pytest.mark.parametrize(
    ("base", "no_dev", "key", "mode"),
    COMBINATIONS,
    ids=[
        f"{b or 'root'}-{'nodev' if n else 'dev'}-{'key' if k else 'nokey'}-{m}"
        for b, n, k, m in COMBINATIONS
    ],
)
def test_every_request_line_is_one_closed_route(
    base: str, no_dev: bool, key: bool, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("RECORDER_KEY", "sk-recorder")
    with hostile_server(_reply) as server:
        url = server.url + base
        argv = ["probe", url, *([url] if mode == "fleet" else []), "--timeout", "5"]
        argv += ["--no-development-routes"] if no_dev else []
        argv += ["--api-key-env", "RECORDER_KEY"] if key else []
        if mode == "fleet":
            argv += ["--json"]
        if mode == "save":
            argv += ["--save", str(tmp_path / "saved")]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert main(argv) == 0
        lines = [r.line.decode("latin-1") for r in server.requests]
    prefix = base.rstrip("/")
    allowed = {f"GET {prefix}{r.target} HTTP/1.1": r for r in PROBE_ROUTES}
    assert [line for line in lines if line not in allowed] == []
    read = [allowed[line] for line in lines]
    expected = _ALL - _DEV if no_dev else _ALL
    servers = 2 if mode == "fleet" else 1
    assert sorted(read, key=str) == sorted(
        # /metrics is in expected once: three more reads make two at each end of a batch
        [r for r in expected for _ in range(servers)] + [Route.METRICS] * 3 * servers,
        key=str,
    )
    assert Route.COLLECTIVE_RPC not in read
