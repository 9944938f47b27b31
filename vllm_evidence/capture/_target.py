"""A server's base URL, cleaned: what the probe reads and what a capture names.

Kept apart from the HTTP client so that reading a saved capture (which cleans its
manifest's target again) imports neither httpx nor asyncio: a target already in the
clean form is recognised by one pattern, and only any other text is parsed with
``httpx.URL``, as the probe parses it.
"""

from __future__ import annotations

import re

from vllm_evidence.errors import InputError

__all__ = ["clean_target"]

#: Targets that cleaning leaves as they are, and that need no URL parser: ``http(s)``,
#: a lower-case host name whose labels start with a letter (no ``--``, so no IDNA) or a
#: dotted quad, a port without a leading zero that is not the scheme's default, and a
#: path of plain RFC 3986 characters without escapes, empty, ``.`` or ``..`` segments or
#: a trailing ``/``.  A test checks every target of this form against ``httpx.URL``.
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_LABEL = r"[a-z](?:[a-z0-9]|-(?!-))*(?<!-)"
_SEGMENT = r"/(?!\.\.?(?:/|\Z))[A-Za-z0-9\-._~!$&'()*+,;=:@]+"
_PORT = r"[1-9][0-9]{0,4}"
CLEAN_TARGET = re.compile(
    rf"(?P<scheme>https?)://(?:{_OCTET}(?:\.{_OCTET}){{3}}|{_LABEL}(?:\.{_LABEL})*)"
    rf"(?::(?P<port>{_PORT}))?(?:{_SEGMENT})*"
)
_DEFAULT_PORT = {"http": 80, "https": 443}


def _kept_port(scheme: str, port: str | None) -> bool:
    """Whether cleaning keeps the port as written (a default port is dropped)."""
    return port is None or (int(port) < 65536 and int(port) != _DEFAULT_PORT[scheme])


def clean_target(url: str) -> str:
    """The base URL to read, credentials removed; :class:`InputError` if it is not one.

    ``http://user:pw@host:8000/prefix/`` becomes ``http://host:8000/prefix``.  A query
    or fragment is refused: the probe appends only the closed routes' own targets.  The
    path is kept as the server will see it (percent-escapes stay escaped), and an escape
    that the server would decode into ``?``, ``#`` or a control character is refused:
    ``/collective_rpc%23`` must never reach the server as ``GET /collective_rpc``.
    """
    clean = CLEAN_TARGET.fullmatch(url)
    if clean is not None and _kept_port(clean.group("scheme"), clean.group("port")):
        return url
    import httpx

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        msg = "not a URL (expected http://host:port or https://host:port)"
        raise InputError(msg) from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        msg = "not an http(s) URL with a host (expected http://host:port)"
        raise InputError(msg)
    if parsed.query or parsed.fragment:
        msg = "the server URL must not carry a query or fragment"
        raise InputError(msg)
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    if parsed.port is not None and not 0 < parsed.port < 65536:
        msg = f"the port must be 1..65535, got {parsed.port}"
        raise InputError(msg)
    port = f":{parsed.port}" if parsed.port is not None else ""
    path = _base_path(parsed.raw_path.decode("ascii")).rstrip("/")
    return f"{parsed.scheme}://{host}{port}{path}"


#: A base path as it goes on the wire: RFC 3986 path characters and percent-escapes.
_RAW_PATH_RE = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*")
_ESCAPE_RE = re.compile(r"%([0-9A-Fa-f]{2})")


def _base_path(raw: str) -> str:
    """The base URL's path, escaped as sent; :class:`InputError` if it could end a route."""
    if not _RAW_PATH_RE.fullmatch(raw):
        msg = "the server URL's path has characters a request path cannot carry"
        raise InputError(msg)
    for match in _ESCAPE_RE.finditer(raw):
        byte = int(match.group(1), 16)
        if byte in (0x23, 0x3F) or byte < 0x20 or byte == 0x7F:
            msg = (
                f"the server URL's path encodes {match.group(0)} ('?', '#' or a control "
                "character): the server would read a different route than the probe sends"
            )
            raise InputError(msg)
    return raw
