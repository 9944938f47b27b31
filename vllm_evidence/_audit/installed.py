"""What the upstream audit reads from the installed vLLM: the only code that imports vLLM.

:func:`probe_installed_vllm` runs inside a vLLM environment and returns plain data
(:class:`~vllm_evidence._audit.Installed`) that :func:`~vllm_evidence._audit.audit`
compares with the laws.  It is exercised against a real vLLM by ``scripts/audit-upstream``
(run by ``.ci/run``), not by the unit tests, which have no vLLM (they read
:func:`app_routes` alone, on route objects of both FastAPI shapes); mutation testing
leaves this module out for that reason (see ``do_not_mutate`` in ``[tool.mutmut]`` of
``pyproject.toml``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from vllm_evidence._audit import (
    Installed,
    RouteTable,
    Unavailable,
    engine_label_added,
)

__all__ = ["app_routes", "probe_installed_vllm"]


def _module_source(name: str) -> str | Unavailable:
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        return Unavailable(f"cannot find {name}: {exc}")
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return Unavailable(f"no Python source for {name}")
    try:
        return Path(spec.origin).read_text(encoding="utf-8")
    except OSError as exc:
        return Unavailable(f"cannot read {name}: {exc}")


def _cache_config_labels() -> frozenset[str] | Unavailable:
    try:
        from vllm.config import CacheConfig

        labels = frozenset(CacheConfig().metrics_info())
    except Exception as exc:  # noqa: BLE001  # any failure makes the check not checkable
        return Unavailable(f"cannot build a default CacheConfig: {exc!r}")
    loggers = _module_source("vllm.v1.metrics.loggers")
    if isinstance(loggers, Unavailable):
        return loggers
    return labels | {"engine"} if engine_label_added(loggers) else labels


def _executor_backends() -> tuple[str, ...] | Unavailable:
    import typing

    try:
        from vllm.config.parallel import DistributedExecutorBackend
    except ImportError as exc:
        return Unavailable(f"no DistributedExecutorBackend: {exc}")
    return tuple(str(arg) for arg in typing.get_args(DistributedExecutorBackend))


#: Where the ``--api-key`` middleware keeps ``GUARDED_PREFIX``, newest first: its own
#: module from 0.29, ``serve/utils/server_utils.py`` in 0.23 to 0.28,
#: ``openai/server_utils.py`` in 0.22.  Before 0.22 the guard tests a literal ``"/v1"``
#: inside the middleware, which is not read here.
_GUARD_MODULES = (
    "vllm.entrypoints.serve.middleware.authenticate",
    "vllm.entrypoints.serve.utils.server_utils",
    "vllm.entrypoints.openai.server_utils",
)


def _guarded_prefixes() -> tuple[str, ...] | Unavailable:
    """``GUARDED_PREFIX`` of the ``--api-key`` middleware, from the first module of
    :data:`_GUARD_MODULES` the installed release has."""
    import importlib

    missing = []
    for name in _GUARD_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            missing.append(f"no {name} ({exc})")
            continue
        prefixes = getattr(module, "GUARDED_PREFIX", None)
        if not isinstance(prefixes, tuple) or not all(isinstance(p, str) for p in prefixes):
            return Unavailable(f"{name} has no GUARDED_PREFIX tuple")
        return tuple(prefixes)
    return Unavailable("; ".join(missing))


#: A development-mode test at the top level of ``api_server.py`` (0.13 and older): the
#: development routes are registered once, when the module is first imported.
_IMPORT_TIME_DEV_ROUTES = re.compile(r"^if envs\.VLLM_SERVER_DEV_MODE\b", re.MULTILINE)


def _router_registration() -> Callable[[Any, Any], Any] | Unavailable:
    """How the installed release registers its routes on an app, without a server.

    0.32 on: ``vllm.entrypoints.launchers.api_server.routers.register_api_routers`` on a
    bare app.  Before (0.26.0 read): ``vllm.entrypoints.openai.api_server.build_app`` with
    the CLI's default arguments (``make_arg_parser`` over ``FlexibleArgumentParser``,
    which moved from ``vllm.utils`` to ``vllm.utils.argparse_utils``).  Raises
    :class:`ImportError` when neither is there.  A release that registers its
    development routes when ``api_server.py`` is imported (0.13 and older) cannot show
    both modes' route sets in one process: :class:`Unavailable`.
    """
    import importlib

    try:
        routers = importlib.import_module("vllm.entrypoints.launchers.api_server.routers")
    except ImportError:
        pass
    else:

        def register_new(fastapi: Any, argparse: Any) -> Any:
            app = fastapi.FastAPI()
            app.state.args = argparse.Namespace()
            routers.register_api_routers(app.state.args, app, ("generate",), None)
            return app

        return register_new
    api_server = importlib.import_module("vllm.entrypoints.openai.api_server")
    cli_args = importlib.import_module("vllm.entrypoints.openai.cli_args")
    try:
        parser_type = importlib.import_module("vllm.utils.argparse_utils").FlexibleArgumentParser
    except (ImportError, AttributeError):
        parser_type = importlib.import_module("vllm.utils").FlexibleArgumentParser

    import inspect

    source = _module_source("vllm.entrypoints.openai.api_server")
    if isinstance(source, str) and _IMPORT_TIME_DEV_ROUTES.search(source):
        return Unavailable(
            "this release registers its development routes when api_server.py is first "
            "imported (a top-level 'if envs.VLLM_SERVER_DEV_MODE:'), so one process cannot "
            "build both modes' router sets; pass --dev-log/--plain-log"
        )
    # build_app(args, supported_tasks, …) from 0.16 on; build_app(args) in 0.14 and 0.15,
    # which register every route whatever the model's tasks.
    takes_tasks = len(inspect.signature(api_server.build_app).parameters) > 1

    def register_old(fastapi: Any, argparse: Any) -> Any:
        del fastapi, argparse  # build_app makes its own app
        args = cli_args.make_arg_parser(parser_type()).parse_args([])
        if takes_tasks:
            return api_server.build_app(args, ("generate",))
        return api_server.build_app(args)

    return register_old


def app_routes(routes: Iterable[Any]) -> frozenset[tuple[str, str]] | Unavailable:
    """``(path, METHOD)`` of every route an app serves, included routers flattened.

    FastAPI up to 0.13x copies an included router's routes into the app's list; later
    releases (0.165 with vLLM 0.23.0's unpinned requirements) keep one
    ``_IncludedRouter`` entry per ``include_router`` call, holding the router and its
    prefix.  Both are read: an entry with ``original_router`` and ``include_context`` is
    walked (its prefix joined in front), one with ``path`` and ``methods`` is a route,
    one with a path and no methods (a mount, a websocket) serves no HTTP method we ask
    about.  Any other kind makes the table unreadable, never silently shorter.
    """
    found: set[tuple[str, str]] = set()
    pending: list[tuple[str, Any]] = [("", route) for route in routes]
    while pending:
        prefix, route = pending.pop()
        router = getattr(route, "original_router", None)
        context = getattr(route, "include_context", None)
        if router is not None and context is not None:
            inner = prefix + str(getattr(context, "prefix", "") or "")
            pending.extend((inner, child) for child in getattr(router, "routes", ()))
            continue
        path = getattr(route, "path", None)
        if not isinstance(path, str):
            return Unavailable(
                f"cannot read the router set: a route of kind {type(route).__name__} has no path"
            )
        for method in getattr(route, "methods", None) or ():
            found.add((prefix + path, str(method).upper()))
    return frozenset(found)


def _built_route_tables() -> tuple[RouteTable | Unavailable, RouteTable | Unavailable]:
    """Both route tables, from the router registration a launch runs (no server)."""
    import argparse
    import importlib
    import os

    try:
        fastapi = importlib.import_module("fastapi")
        envs = importlib.import_module("vllm.envs")
        register = _router_registration()
    except ImportError as exc:
        why = Unavailable(f"cannot build the router set ({exc}); pass --dev-log/--plain-log")
        return why, why
    if isinstance(register, Unavailable):
        return register, register
    origin = "router set built with VLLM_SERVER_DEV_MODE={} (tasks: generate)"
    saved = os.environ.get("VLLM_SERVER_DEV_MODE")
    tables: list[RouteTable | Unavailable] = []
    try:
        for flag in ("1", "0"):
            os.environ["VLLM_SERVER_DEV_MODE"] = flag
            if bool(envs.VLLM_SERVER_DEV_MODE) is not (flag == "1"):
                tables.append(Unavailable("vllm.envs ignores VLLM_SERVER_DEV_MODE (cached)"))
                continue
            try:
                app = register(fastapi, argparse)
            except Exception as exc:  # noqa: BLE001  # version-specific; report, don't crash
                tables.append(Unavailable(f"cannot build the router set: {exc!r}"))
                continue
            routes = app_routes(app.routes)
            if isinstance(routes, Unavailable):
                tables.append(routes)
                continue
            tables.append(RouteTable(routes, origin.format(flag)))
    finally:
        if saved is None:
            os.environ.pop("VLLM_SERVER_DEV_MODE", None)
        else:
            os.environ["VLLM_SERVER_DEV_MODE"] = saved
    return tables[0], tables[1]


def probe_installed_vllm(
    dev_routes: RouteTable | None = None, plain_routes: RouteTable | None = None
) -> Installed:
    """Import the installed vLLM and extract what the audit compares.

    Route tables given (read from real launches' logs) are used as they are; a mode
    without one gets the router set built in this process.  Raises whatever importing
    ``vllm`` raises.
    """
    import vllm

    built: tuple[RouteTable | Unavailable, RouteTable | Unavailable]
    if dev_routes is not None and plain_routes is not None:
        built = (dev_routes, plain_routes)
    else:
        built = _built_route_tables()
    dev = dev_routes if dev_routes is not None else built[0]
    plain = plain_routes if plain_routes is not None else built[1]
    return Installed(
        version=str(vllm.__version__),
        cache_config_labels=_cache_config_labels(),
        capacity_source=_module_source("vllm.v1.core.kv_cache_utils"),
        executor_backends=_executor_backends(),
        dev_routes=dev,
        plain_routes=plain,
        guarded_prefixes=_guarded_prefixes(),
    )
