"""A server's base URL, cleaned: what the probe reads and what a capture names.

**One URL parser, one host.**  The probe sends its API key to the host of the URL it
was given.  URL parsers do not all read the same host out of one string:
``http://127.0.0.1:9\\@localhost:8000/`` is ``localhost:8000`` to Python's
``urllib.parse`` and to httpx, and ``127.0.0.1:9`` to a WHATWG parser (a browser,
``curl``), which ends the host at the backslash.  So :func:`clean_target` is the one
parser every part of the package reads a base URL with, and it takes only the URLs on
which every parser reads the same ``(scheme, host, port)``.  It refuses, with a one-line
:class:`InputError` that never quotes the URL:

* any character that is not printable ASCII: spaces, tabs, line breaks and other
  controls (parsers strip some of them, silently), and non-ASCII text (an
  internationalised host name normalises differently under IDNA 2003, IDNA 2008 and
  UTS 46, and fullwidth dots are dots to some: write its ``xn--`` form);
* a backslash anywhere (a WHATWG parser reads it as ``/``);
* anything but ``http://`` or ``https://`` then the host (``http:/h``, ``http:\\\\h``
  and ``http:h`` are ``http://h`` to a WHATWG parser and have no host to others);
* user information (``user@``, ``user:pass@``, several ``@``) of any kind: the probe
  never sends it (a key goes in a header), and parsers disagree on which ``@`` ends it;
* a query or a fragment (``http://good?@evil/``, ``http://evil#@good/``): the probe
  appends only the closed routes' own targets;
* a host that is not an IPv6 literal in brackets, a dotted-quad IPv4 address, or a name
  of ASCII letters, digits, ``-``, ``_`` and ``.``: a percent-escape in the host (a
  WHATWG parser decodes it, others do not), an IPv4 address in any other form
  (``127.1``, ``0x7f.0.0.1``, ``2130706433``, ``017.0.0.1``: a WHATWG parser and the C
  resolver read them as ``127.0.0.1``, others as names), an ``xn--`` label that is not
  valid IDNA 2008 or that holds right-to-left text, an empty label, an IPv6 literal
  that does not parse (or carries a zone);
* a port that is not 1..65535 in ASCII decimal digits (``:+80``, ``: 80``, ``:8_0``,
  ``:80:81`` and an empty port are each something to one parser and nothing to another);
* a path character outside RFC 3986 (parsers percent-encode different sets) or a
  percent-escape a server would decode into a different route (``%23``, ``%3F``, a
  control) or a dot segment (``%2e%2e``).

What it keeps comes out in one canonical form, which it leaves as it is: the scheme and
host lower-case, an IPv6 address compressed in brackets, the port without leading zeros
and dropped when it is the scheme's default, the path as the server will see it
(escapes kept, ``.`` and ``..`` segments resolved, no trailing ``/``).

It imports no HTTP client (reading a saved capture cleans its manifest's target again);
``idna`` (httpx's own dependency) only for an ``xn--`` label.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Final

from vllm_evidence.errors import InputError

__all__ = ["clean_target"]

_DEFAULT_PORT: Final = {"http": 80, "https": 443}

#: Printable ASCII, no space: any other character is refused before parsing.
_PRINTABLE_RE: Final = re.compile(r"[\x21-\x7e]*")
_SCHEME_RE: Final = re.compile(r"(?P<scheme>[A-Za-z]+)://")
#: A host name's characters (upper case is lowered).
_NAME_RE: Final = re.compile(r"[A-Za-z0-9._-]+")
#: A label a WHATWG parser reads as a number (so the host as an IPv4 address).
_NUMERIC_LABEL_RE: Final = re.compile(r"[0-9]+|0[xX][0-9A-Fa-f]*")
_OCTET: Final = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_DOTTED_QUAD_RE: Final = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")
_IPV6_RE: Final = re.compile(r"[0-9A-Fa-f:.]+")
_PORT_RE: Final = re.compile(r"[0-9]+")
#: A base path as it goes on the wire: RFC 3986 path characters and percent-escapes.
_RAW_PATH_RE: Final = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*")
_ESCAPE_RE: Final = re.compile(r"%([0-9A-Fa-f]{2})")
#: Dot segments written with an escape: resolved by a WHATWG parser, kept by others.
_ENCODED_DOTS: Final = frozenset({"%2e", ".%2e", "%2e.", "%2e%2e"})


def clean_target(url: str) -> str:
    """The base URL to read, in its canonical form; :class:`InputError` if it is not one
    that every URL parser reads the same host from (see the module's documentation).

    ``http://H:08000/a/../p/`` becomes ``http://h:8000/p``.  The path is kept as the
    server will see it (percent-escapes stay escaped), and an escape the server would
    decode into ``?``, ``#``, a control character or a dot segment is refused:
    ``/collective_rpc%23`` must never reach the server as ``GET /collective_rpc``.  The
    error never quotes the URL (it may carry a password).
    """
    try:
        printable = _PRINTABLE_RE.fullmatch(url)
    except TypeError:  # callers outside mypy can pass anything
        msg = "not a URL (expected http://host:port or https://host:port)"
        raise InputError(msg) from None
    if not printable:
        msg = (
            "the server URL holds a space, a control or a non-ASCII character (URL parsers "
            "drop or map them differently: write a host name in its ASCII xn-- form and "
            "path bytes as %XX escapes)"
        )
        raise InputError(msg)
    if "\\" in url:
        msg = "the server URL holds a backslash (URL parsers disagree on whether it ends the host)"
        raise InputError(msg)
    opening = _SCHEME_RE.match(url)
    scheme = "" if opening is None else opening.group("scheme").lower()
    if opening is None or scheme not in _DEFAULT_PORT:
        msg = "not an http(s) URL with a host (expected http://host:port or https://host:port)"
        raise InputError(msg)
    rest = url[opening.end() :]
    end = len(rest)
    for stop in "/?#":
        at = rest.find(stop)
        if at != -1:
            end = min(end, at)
    authority, tail = rest[:end], rest[end:]
    if "@" in authority:
        msg = (
            "the server URL carries user information (user@ or user:password@): the probe "
            "never sends it, and URL parsers disagree on which '@' ends it (an API key "
            "goes in the Authorization header: api_key=, --api-key-env)"
        )
        raise InputError(msg)
    if "?" in tail or "#" in tail:
        msg = "the server URL must not carry a query or fragment"
        raise InputError(msg)
    host, port = _host_and_port(authority)
    kept_port = "" if port in (None, _DEFAULT_PORT[scheme]) else f":{port}"
    path = _base_path(tail).rstrip("/")
    return f"{scheme}://{host}{kept_port}{path}"


def _host_and_port(authority: str) -> tuple[str, int | None]:
    """The canonical host and the port (``None``: the scheme's default) of an authority
    with no user information."""
    if not authority:
        msg = "not an http(s) URL with a host (expected http://host:port or https://host:port)"
        raise InputError(msg)
    if authority.startswith("["):
        inside, closed, after = authority[1:].partition("]")
        if not closed or not _IPV6_RE.fullmatch(inside):
            msg = "the server URL's IPv6 address is malformed (expected [address]:port)"
            raise InputError(msg)
        try:
            address = ipaddress.IPv6Address(inside)
        except ValueError:
            msg = "the server URL's IPv6 address is malformed (expected [address]:port)"
            raise InputError(msg) from None
        if after and not after.startswith(":"):
            msg = "the server URL's IPv6 address is malformed (expected [address]:port)"
            raise InputError(msg)
        return f"[{address.compressed}]", _port(after[1:]) if after else None
    if "[" in authority or "]" in authority:
        msg = "the server URL's host has a bracket outside an IPv6 address ([address]:port)"
        raise InputError(msg)
    if authority.count(":") > 1:
        msg = (
            "the server URL's authority has more than one ':' (an IPv6 address goes in "
            "brackets; a port is one number)"
        )
        raise InputError(msg)
    name, colon, port_text = authority.partition(":")
    return _host_name(name), _port(port_text) if colon else None


def _port(text: str) -> int:
    if not _PORT_RE.fullmatch(text):
        msg = "the server URL's port must be a number 1..65535 in decimal digits"
        raise InputError(msg)
    digits = text.lstrip("0")
    if not digits or len(digits) > 5 or int(digits) > 65535:
        msg = "the server URL's port must be 1..65535"
        raise InputError(msg)
    return int(digits)


def _host_name(name: str) -> str:
    """A host that is not an IPv6 literal: a dotted quad or an ASCII name, lower-case."""
    if not name:
        msg = "not an http(s) URL with a host (expected http://host:port or https://host:port)"
        raise InputError(msg)
    if "%" in name:
        msg = (
            "the server URL's host holds a percent-escape (some URL parsers decode it, "
            "others do not)"
        )
        raise InputError(msg)
    if not _NAME_RE.fullmatch(name):
        msg = (
            "the server URL's host may hold only ASCII letters, digits, '-', '_' and '.' "
            "(or be an IPv6 address in brackets)"
        )
        raise InputError(msg)
    name = name.lower()
    labels = name.split(".")
    trailing_dot = len(labels) > 1 and labels[-1] == ""
    if trailing_dot:
        labels.pop()
    if "" in labels:
        msg = "the server URL's host has an empty label ('..' or a leading '.')"
        raise InputError(msg)
    if _NUMERIC_LABEL_RE.fullmatch(labels[-1]):
        # A WHATWG parser (and the C resolver) reads this host as an IPv4 address in
        # whatever form it is written; other parsers keep it as a name.
        if trailing_dot or not _DOTTED_QUAD_RE.fullmatch(name):
            msg = (
                "the server URL's host is an IPv4 address only some URL parsers read as "
                "one: write it as four decimal numbers 0-255 without leading zeros"
            )
            raise InputError(msg)
        return name
    for label in labels:
        if label.startswith("xn--"):
            _check_a_label(label)
    return name


def _check_a_label(label: str) -> None:
    """An ``xn--`` label: valid IDNA 2008 that encodes back to itself, with no
    right-to-left text (whose rules span the whole host name)."""
    import unicodedata

    import idna

    msg = (
        "the server URL's host has an xn-- label that is not a valid internationalised "
        "name every URL parser reads the same"
    )
    try:
        decoded = idna.decode(label)
        again = idna.encode(decoded).decode("ascii")
    except (idna.IDNAError, UnicodeError, ValueError):
        raise InputError(msg) from None
    if again != label or decoded.isascii():
        raise InputError(msg)
    if any(unicodedata.bidirectional(c) in ("R", "AL", "AN") for c in decoded):
        raise InputError(msg)


def _base_path(raw: str) -> str:
    """The base URL's path, escaped as sent, dot segments resolved; :class:`InputError`
    if a parser or the server could read it as another path."""
    if not _RAW_PATH_RE.fullmatch(raw):
        msg = "the server URL's path has characters a request path cannot carry"
        raise InputError(msg)
    if "%" not in raw and "/." not in raw:
        return raw  # no escape and no dot segment: nothing to check or resolve
    for match in _ESCAPE_RE.finditer(raw):
        byte = int(match.group(1), 16)
        if byte in (0x23, 0x3F) or byte < 0x20 or byte == 0x7F:
            msg = (
                f"the server URL's path encodes {match.group(0)} ('?', '#' or a control "
                "character): the server would read a different route than the probe sends"
            )
            raise InputError(msg)
    kept: list[str] = []
    for segment in raw[1:].split("/"):
        if segment.lower() in _ENCODED_DOTS:
            msg = (
                "the server URL's path has a dot segment written with escapes (%2e): URL "
                "parsers and servers resolve it differently"
            )
            raise InputError(msg)
        if segment == "..":
            if kept:
                kept.pop()
        elif segment != ".":
            kept.append(segment)
    return "".join("/" + segment for segment in kept)
