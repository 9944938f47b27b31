"""Three readings of one URL's ``(scheme, host, port)``, none of them the package's.

The oracles :func:`~vllm_evidence._capture._target.clean_target` is compared with: what
Python's ``urllib.parse.urlsplit`` reads, what ``httpx.URL`` reads (its ASCII host, the
one it would put in a ``Host`` header), and :func:`whatwg`, a reading of the WHATWG URL
Standard's parser (what a browser, ``curl`` and most other tools read) written down here
for the parts that decide a host:

* leading and trailing C0 controls and spaces are stripped, and every tab, LF and CR is
  removed, wherever it is;
* ``http`` and ``https`` are *special*: after ``scheme:``, any run of ``/`` and ``\\`` is
  skipped (so ``http:h``, ``http:/\\h`` and ``http:///h`` all have host ``h``), and the
  authority ends at the first ``/``, ``\\``, ``?`` or ``#``;
* the last ``@`` in the authority ends the user information (several ``@`` are one
  userinfo); nothing after it is a failure;
* the port follows the first ``:`` outside brackets: ASCII digits only (anything else
  fails, ``:80:81`` included), at most 65535, empty means the default;
* a host in brackets is an IPv6 address (no zone); any other host is percent-decoded
  (UTF-8), then mapped by UTS 46 (non-transitional: ``ß`` stays, fullwidth letters and
  dots become ASCII) and encoded to ASCII, an all-ASCII host without ``xn--`` labels only
  lower-cased; a forbidden code point (space, ``#%/:<>?@[\\]^|``, controls) fails;
* a host whose last label (after one trailing dot) is a number (decimal, ``0x`` hex, or
  octal with a leading ``0``) is an IPv4 address, of one to four parts, the last filling
  the remaining bytes (``127.1``, ``2130706433`` and ``0x7f.0.0.1`` are ``127.0.0.1``).

The UTS 46 step uses the ``idna`` package's mapping and IDNA 2008 labels, stricter than
the standard in places: "WHATWG-ish".  Each reading is ``(scheme, host, port)`` with the
port filled in from the scheme and an IPv6 host compressed (``::ffff:7f00:1``), or
``None`` where that parser refuses the URL or finds no http(s) host in it.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import unquote_to_bytes, urlsplit

import httpx
import idna

Reading = tuple[str, str, int] | None

DEFAULT_PORT = {"http": 80, "https": 443}
_C0_OR_SPACE = "".join(chr(i) for i in range(0x21))
_FORBIDDEN_DOMAIN = set(" #%/:<>?@[\\]^|\x7f") | {chr(i) for i in range(0x20)}


def _ipv6(text: str) -> str | None:
    if "%" in text:
        return None
    try:
        return ipaddress.IPv6Address(text).compressed
    except ValueError:
        return None


def _same_host(host: str) -> str:
    """An IPv6 host in its compressed form (other hosts as they are)."""
    if ":" in host:
        compressed = _ipv6(host.strip("[]"))
        if compressed is not None:
            return compressed
    return host


def urllib_reading(url: str) -> Reading:
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORT or not host:
        return None
    return parts.scheme, _same_host(host), DEFAULT_PORT[parts.scheme] if port is None else port


def httpx_reading(url: str) -> Reading:
    try:
        parsed = httpx.URL(url)
        host = parsed.raw_host.decode("ascii")
    except (httpx.InvalidURL, UnicodeError):
        return None
    if parsed.scheme not in DEFAULT_PORT or not host:
        return None
    port = parsed.port
    return parsed.scheme, _same_host(host), DEFAULT_PORT[parsed.scheme] if port is None else port


def _ipv4_number(part: str) -> int | None:
    """A WHATWG IPv4 number: decimal, ``0x`` hexadecimal or ``0``-led octal."""
    if not part:
        return None
    radix = 10
    if part[:2] in ("0x", "0X"):
        part, radix = part[2:], 16
    elif len(part) > 1 and part[0] == "0":
        part, radix = part[1:], 8
    if not part:
        return 0
    digits = {10: "0123456789", 16: "0123456789abcdefABCDEF", 8: "01234567"}[radix]
    if any(c not in digits for c in part):
        return None
    return int(part, radix)


def _ends_in_a_number(host: str) -> bool:
    parts = host.split(".")
    if parts[-1] == "":
        if len(parts) == 1:
            return False
        parts.pop()
    last = parts[-1]
    if last and all(c in "0123456789" for c in last):
        return True
    return _ipv4_number(last) is not None


def _ipv4(host: str) -> str | None:
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if len(parts) > 4:
        return None
    numbers = [_ipv4_number(part) for part in parts]
    if any(n is None for n in numbers):
        return None
    values = [n for n in numbers if n is not None]
    if any(n > 255 for n in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        return None
    address = values[-1] + sum(n * 256 ** (3 - i) for i, n in enumerate(values[:-1]))
    return str(ipaddress.IPv4Address(address))


def _domain_to_ascii(domain: str) -> str | None:
    labels = domain.split(".")
    if domain.isascii() and not any(label.lower().startswith("xn--") for label in labels):
        return domain.lower()
    try:
        mapped = idna.uts46_remap(domain, std3_rules=False, transitional=False)
    except idna.IDNAError:
        return None
    out = []
    for label in mapped.split("."):
        if label.isascii() and not label.startswith("xn--"):
            out.append(label)
            continue
        try:
            if label.startswith("xn--"):
                decoded = idna.decode(label)
                if decoded.isascii():
                    return None
            out.append(idna.encode(label).decode("ascii"))
        except (idna.IDNAError, UnicodeError):
            return None
    return ".".join(out)


def whatwg(url: str) -> Reading:
    url = url.strip(_C0_OR_SPACE)
    url = url.replace("\t", "").replace("\n", "").replace("\r", "")
    opening = re.match(r"([A-Za-z][A-Za-z0-9+\-.]*):", url)
    if opening is None:
        return None
    scheme = opening.group(1).lower()
    if scheme not in DEFAULT_PORT:
        return None
    rest = url[opening.end() :].lstrip("/\\")
    end = next((i for i, c in enumerate(rest) if c in "/\\?#"), len(rest))
    authority = rest[:end]
    at = authority.rfind("@")
    hostport = authority[at + 1 :]
    if at != -1 and not hostport:
        return None
    inside, colon = False, -1
    for i, c in enumerate(hostport):
        if c == "[":
            inside = True
        elif c == "]":
            inside = False
        elif c == ":" and not inside:
            colon = i
            break
    host_text = hostport if colon == -1 else hostport[:colon]
    port_text = "" if colon == -1 else hostport[colon + 1 :]
    if port_text and not all(c in "0123456789" for c in port_text):
        return None
    port = int(port_text) if port_text else DEFAULT_PORT[scheme]
    if port > 65535 or not host_text:
        return None
    if host_text.startswith("["):
        if not host_text.endswith("]"):
            return None
        address = _ipv6(host_text[1:-1])
        return None if address is None else (scheme, address, port)
    domain = unquote_to_bytes(host_text).decode("utf-8", errors="replace")
    ascii_domain = _domain_to_ascii(domain)
    if not ascii_domain or any(c in _FORBIDDEN_DOMAIN for c in ascii_domain):
        return None
    if _ends_in_a_number(ascii_domain):
        address4 = _ipv4(ascii_domain)
        return None if address4 is None else (scheme, address4, port)
    return scheme, ascii_domain, port


def readings(url: str) -> tuple[Reading, Reading, Reading]:
    """``(urllib, httpx, whatwg)`` readings of ``url``."""
    return urllib_reading(url), httpx_reading(url), whatwg(url)
