"""``capture._target``: one URL parser, one host.

Every URL :func:`clean_target` accepts names one ``(scheme, host, port)`` under every
parser (``urllib.parse``, ``httpx.URL`` and the WHATWG reading of
:mod:`tests.capture._url_readings`), and that is the address the probe connects to
(:func:`~vllm_evidence._capture._wire.server_address` of the cleaned target).  The
classic URL-confusion set is refused, and for each one the three readings, written here
by hand, show the disagreement it would have let through.  The generated version of the
same property is ``tests/hostile/test_url_confusion.py``.
"""

from __future__ import annotations

import re

import pytest

from tests.capture._url_readings import Reading, readings
from vllm_evidence._capture._target import clean_target
from vllm_evidence._capture._wire import server_address
from vllm_evidence.errors import InputError

#: Accepted URLs and their cleaned form, written by hand.
ACCEPTED = [
    ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
    ("http://H:8000", "http://h:8000"),
    ("HTTP://Example.COM/", "http://example.com"),
    ("http://h:80", "http://h"),
    ("https://h:443/x", "https://h/x"),
    ("https://a:80", "https://a:80"),
    ("http://a:443", "http://a:443"),
    ("http://h:08000", "http://h:8000"),
    ("http://h:000000080", "http://h"),
    ("http://h:1", "http://h:1"),
    ("http://h:65535", "http://h:65535"),
    ("http://h/a/../b", "http://h/b"),
    ("http://h/./b", "http://h/b"),
    ("http://h/../../b", "http://h/b"),
    ("http://h/p/", "http://h/p"),
    ("http://h/a//b/", "http://h/a//b"),
    ("http://h/v%7Eendor/a;b=c/", "http://h/v%7Eendor/a;b=c"),
    ("http://h:8000/a%20b/", "http://h:8000/a%20b"),
    # '@' after the authority is a path character to every parser, not user information
    ("http://h/@x", "http://h/@x"),
    ("http://[::1]:8000", "http://[::1]:8000"),
    ("http://[::1]:80/", "http://[::1]"),
    ("http://[0:0:0:0:0:0:0:1]:8000", "http://[::1]:8000"),
    ("http://[::FFFF:127.0.0.1]:8000", "http://[::ffff:7f00:1]:8000"),
    ("https://[2001:DB8::1]", "https://[2001:db8::1]"),
    ("http://xn--bcher-kva.de", "http://xn--bcher-kva.de"),
    ("http://XN--BCHER-KVA.de:8000", "http://xn--bcher-kva.de:8000"),
    ("http://vllm_0.svc.cluster.local.:8000", "http://vllm_0.svc.cluster.local.:8000"),
    ("http://1.2.3.4.example", "http://1.2.3.4.example"),
    ("http://0.0.0.0:8000", "http://0.0.0.0:8000"),
    ("http://255.255.255.255", "http://255.255.255.255"),
    ("http://a-b--c.example", "http://a-b--c.example"),
]

_LOCAL = ("http", "localhost", 8000)
_LOOP = ("http", "127.0.0.1", 80)

#: Refused URLs on which the parsers disagree: the words of the refusal, and the
#: ``(urllib, httpx, whatwg)`` readings, written by hand from each parser's rules.
CONFUSIONS: list[tuple[str, str, tuple[Reading, Reading, Reading]]] = [
    # the case: a WHATWG parser ends the host at the backslash
    (
        "http://127.0.0.1:9\\@localhost:8000/",
        "backslash",
        (_LOCAL, _LOCAL, ("http", "127.0.0.1", 9)),
    ),
    (
        "http://127.0.0.1:80\\@evil/",
        "backslash",
        (("http", "evil", 80), ("http", "evil", 80), _LOOP),
    ),
    ("http://a\\@b/", "backslash", (("http", "b", 80), ("http", "b", 80), ("http", "a", 80))),
    ("http:\\\\h/", "backslash", (None, None, ("http", "h", 80))),
    ("http:/h", "not an http(s) URL with a host", (None, None, ("http", "h", 80))),
    ("http:h", "not an http(s) URL with a host", (None, None, ("http", "h", 80))),
    ("http:///h", "not an http(s) URL with a host", (None, None, ("http", "h", 80))),
    # fullwidth digits and dots: a name to urllib, refused by httpx, 127.0.0.1 to WHATWG
    (
        "http://\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11/",
        "non-ASCII",
        (("http", "\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11", 80), None, _LOOP),
    ),
    (
        "http://\uff25\uff38\uff21\uff2d\uff30\uff2c\uff25.com/",
        "non-ASCII",
        (
            ("http", "\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com", 80),
            None,
            ("http", "example.com", 80),
        ),
    ),
    # IDNA 2008 and UTS 46 keep the sharp s (xn--fa-hia); urllib keeps the text, which
    # the resolver's IDNA 2003 codec turns into fass.de: another host
    (
        "http://fa\u00df.de/",
        "non-ASCII",
        (("http", "fa\u00df.de", 80), ("http", "xn--fa-hia.de", 80), ("http", "xn--fa-hia.de", 80)),
    ),
    (
        "http://ex\tample.com/",
        "control",
        (("http", "example.com", 80), None, ("http", "example.com", 80)),
    ),
    (" http://h/", "space", (("http", "h", 80), None, ("http", "h", 80))),
    ("http://h\n/", "control", (("http", "h", 80), None, ("http", "h", 80))),
    (
        "http://a%2eb/",
        "percent-escape",
        (("http", "a%2eb", 80), ("http", "a%2eb", 80), ("http", "a.b", 80)),
    ),
    ("http://127.1/", "IPv4", (("http", "127.1", 80), ("http", "127.1", 80), _LOOP)),
    ("http://0x7f.0.0.1/", "IPv4", (("http", "0x7f.0.0.1", 80), ("http", "0x7f.0.0.1", 80), _LOOP)),
    ("http://2130706433/", "IPv4", (("http", "2130706433", 80), ("http", "2130706433", 80), _LOOP)),
    ("http://017.0.0.1/", "IPv4", (("http", "017.0.0.1", 80), None, ("http", "15.0.0.1", 80))),
    ("http://1.2.3.999/", "IPv4", (("http", "1.2.3.999", 80), None, None)),
    (
        "http://1.2.3.4./",
        "IPv4",
        (("http", "1.2.3.4.", 80), ("http", "1.2.3.4.", 80), ("http", "1.2.3.4", 80)),
    ),
    ("http://h:+80/", "port", (None, ("http", "h", 80), None)),
    ("http://h:8_0/", "port", (None, ("http", "h", 80), None)),
    ("http://h:\u0668\u0660/", "non-ASCII", (None, ("http", "h", 80), None)),  # Arabic-Indic 80
    ("http://h: 80/", "space", (None, ("http", "h", 80), None)),
    ("http://h:65536/", "1..65535", (None, ("http", "h", 65536), None)),
    ("http://xn--abc.de/", "xn--", (("http", "xn--abc.de", 80), ("http", "xn--abc.de", 80), None)),
    (
        "http://[::1%25eth0]/",
        "IPv6",
        (("http", "::1%25eth0", 80), ("http", "::1%25eth0", 80), None),
    ),
    ("http://[v1.x]/", "IPv6", (("http", "v1.x", 80), None, None)),
    ("http://[::1]x/", "IPv6", (("http", "::1", 80), None, None)),
]

#: Refused URLs on which the parsers agree: the probe refuses them all the same (user
#: information is never sent, a query would follow the route, port 0 reaches nothing),
#: with the words of the refusal and the one reading all three parsers give.
POLICY: list[tuple[str, str, Reading]] = [
    ("http://u:pw@h:1", "user information", ("http", "h", 1)),
    ("http://alice@h/", "user information", ("http", "h", 80)),
    ("http://a@b@c/", "user information", ("http", "c", 80)),
    ("http://a%40b@c/", "user information", ("http", "c", 80)),
    ("http://@h/", "user information", ("http", "h", 80)),
    ("http://evil.com#@good/", "query or fragment", ("http", "evil.com", 80)),
    ("http://good?@evil/", "query or fragment", ("http", "good", 80)),
    ("http://h/?q", "query or fragment", ("http", "h", 80)),
    ("http://h/#f", "query or fragment", ("http", "h", 80)),
    ("http://h:", "port", ("http", "h", 80)),
    ("http://[::1]:/", "port", ("http", "::1", 80)),
    ("http://h:0", "1..65535", ("http", "h", 0)),
    ("http://a..b/", "empty label", ("http", "a..b", 80)),
    ("http://h/a b", "space", ("http", "h", 80)),
    ("http://h/a|b", "path has characters", ("http", "h", 80)),
    ("http://h/%2e%2e/metrics", "dot segment", ("http", "h", 80)),
    ("http://h/collective_rpc%23", "different route", ("http", "h", 80)),
    ("http://h/p%3Fx", "different route", ("http", "h", 80)),
    ("http://h/p%zz", "path has characters", ("http", "h", 80)),
    ("http://good:80:81/", "more than one ':'", None),
    ("http://::1/", "more than one ':'", None),
    ("http://[::1", "IPv6", None),
    ("ftp://h", "not an http(s) URL", None),
    ("not a url", "space", None),
    ("http://", "not an http(s) URL with a host", None),
    ("http://:80", "not an http(s) URL with a host", None),
]


def _address(target: str) -> tuple[str, str, int]:
    """Where the probe's connections go for a cleaned target (the host the key reaches)."""
    address = server_address(target)
    return address.scheme, address.host, address.port


@pytest.mark.parametrize(("url", "cleaned"), ACCEPTED)
def test_an_accepted_url_is_cleaned_to_its_canonical_form(url: str, cleaned: str) -> None:
    assert clean_target(url) == cleaned
    assert clean_target(cleaned) == cleaned  # the canonical form is left as it is


@pytest.mark.parametrize(("url", "cleaned"), ACCEPTED)
def test_every_parser_reads_an_accepted_urls_host_where_the_probe_connects(
    url: str, cleaned: str
) -> None:
    where = _address(cleaned)
    assert readings(url) == (where, where, where)
    assert readings(cleaned) == (where, where, where)


@pytest.mark.parametrize(("url", "words", "seen"), CONFUSIONS)
def test_a_url_parsers_disagree_on_is_refused(
    url: str, words: str, seen: tuple[Reading, Reading, Reading]
) -> None:
    assert readings(url) == seen  # the oracles read what is written above
    assert len(set(seen)) > 1  # ... and they disagree
    with pytest.raises(InputError, match=re.escape(words)):
        clean_target(url)


@pytest.mark.parametrize(("url", "words", "seen"), POLICY)
def test_a_url_the_probe_never_reads_is_refused_though_parsers_agree(
    url: str, words: str, seen: Reading
) -> None:
    assert readings(url) == (seen, seen, seen)
    with pytest.raises(InputError, match=re.escape(words)):
        clean_target(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://alice:S3cretPW@h:1/",
        "http://alice:S3cretPW@h:1\\@evil/",
        "http://alice:S3cretPW@h@evil:1/",
        "http://alice:S3cretPW\t@h/",
        "http://alice:S3cretPW@h:1/?x=1",
    ],
)
def test_a_refusal_is_one_line_that_never_quotes_the_url(url: str) -> None:
    with pytest.raises(InputError) as refused:
        clean_target(url)
    text = str(refused.value)
    assert "\n" not in text
    assert "S3cretPW" not in text
    assert "alice" not in text


def test_a_value_that_is_not_text_is_refused_as_not_a_url() -> None:
    for value in (None, b"http://h", 8000):
        with pytest.raises(InputError, match="not a URL"):
            clean_target(value)  # type: ignore[arg-type]
