"""URL confusion: the host that receives the API key is the host every parser sees.

``vllm-evidence probe 'http://127.0.0.1:9\\@localhost:P/' --api-key-env K`` once sent the
key to ``localhost:P`` while a WHATWG parser (a browser, ``curl``) reads ``127.0.0.1:9``.
Here two recording servers listen on loopback: the one a URL names, which must receive
the key on every request, and another, which must receive nothing.  Each URL below is
written around their two ports, with its outcome written by hand.  Then URL-ish strings
generated from a grammar of authority pieces: every one the cleaner accepts reads the
same ``(scheme, host, port)`` under ``urllib.parse``, ``httpx.URL`` and the WHATWG reading
of :mod:`tests.capture._url_readings` as where the probe connects; every one built only of
plain pieces is accepted; no refusal quotes a password.

The generated property is marked ``slow``: 2,000 examples by default, and a quarter of
``VLLM_EVIDENCE_FUZZ_EXAMPLES`` when that is larger (``.ci/run``: 25,000).
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.capture._url_readings import readings
from tests.hostile._server import HostileServer, hostile_server, real_reply
from vllm_evidence._capture._target import clean_target
from vllm_evidence._capture._wire import server_address
from vllm_evidence.cli import main
from vllm_evidence.errors import InputError
from vllm_evidence.upstream._routes import PROBE_ROUTES

KEY = "sk-confusion-canary-4417"

#: URLs around the named server's port ``{a}`` and the other's ``{b}``: ``a`` when the
#: probe reads the named server (which gets the key), ``refused`` when it refuses the URL
#: (and neither server gets a byte).
FORMS = [
    ("http://127.0.0.1:{a}", "a"),
    ("http://127.0.0.1:{a}/", "a"),
    ("HTTP://127.0.0.1:0{a}/", "a"),
    ("http://localhost:{a}", "a"),
    # the issue's case, both ways round: urllib and httpx read the host after the '@'
    ("http://127.0.0.1:{b}\\@localhost:{a}/", "refused"),
    ("http://127.0.0.1:{b}\\@127.0.0.1:{a}/", "refused"),
    ("http://127.0.0.1:{a}\\@127.0.0.1:{b}/", "refused"),
    ("http:/\\127.0.0.1:{b}\\@127.0.0.1:{a}/", "refused"),
    ("http://127.0.0.1:{a}/\\@127.0.0.1:{b}/", "refused"),
    ("http://127.0.0.1:{b}@127.0.0.1:{a}/", "refused"),
    ("http://x@127.0.0.1:{b}@127.0.0.1:{a}/", "refused"),
    ("http://127.0.0.1%3A{b}@127.0.0.1:{a}/", "refused"),
    ("http://127.0.0.1:{a}#@127.0.0.1:{b}/", "refused"),
    ("http://127.0.0.1:{a}?@127.0.0.1:{b}/", "refused"),
    ("http://127.0.0.1:{a}\t@127.0.0.1:{b}/", "refused"),
    ("http://127.0.0.1:{a}:{b}/", "refused"),
    ("http://127.1:{a}/", "refused"),
]


@contextlib.contextmanager
def _two_servers() -> Iterator[tuple[HostileServer, HostileServer]]:
    with (
        hostile_server(lambda t, h: real_reply(t)) as named,
        hostile_server(lambda t, h: real_reply(t)) as other,
    ):
        yield named, other


def _port(server: HostileServer) -> int:
    return int(server.url.rpartition(":")[2])


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(("form", "outcome"), FORMS)
def test_the_key_goes_only_to_the_host_every_parser_reads(
    form: str, outcome: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONFUSION_KEY", KEY)
    monkeypatch.setenv("NO_COLOR", "1")
    with _two_servers() as (named, other):
        a, b = _port(named), _port(other)
        url = form.format(a=a, b=b)
        status, out, err = _cli("probe", url, "--api-key-env", "CONFUSION_KEY", "--timeout", "3")
        named_requests, other_requests = list(named.requests), list(other.requests)
    assert other_requests == []  # never a byte to the server the URL does not name
    assert KEY not in out + err
    if outcome == "refused":
        assert status == 2
        assert out == ""
        assert err.count("\n") == 1
        assert err.startswith("vllm-evidence probe: error: the server URL")
        assert f":{b}" not in err  # nothing of what is before the '@' is quoted
        assert named_requests == []
        return
    assert status == 0, err
    # every parser reads the named server here, and that is where the key went
    host = "localhost" if "localhost" in form else "127.0.0.1"
    assert set(readings(url)) == {("http", host, a)}
    assert len(named_requests) == len(PROBE_ROUTES) + 3
    assert {r.headers.get("authorization") for r in named_requests} == {f"Bearer {KEY}"}


def test_the_library_refuses_the_issues_url_before_sending() -> None:
    from vllm_evidence import probe_sync

    with _two_servers() as (named, other):
        url = f"http://127.0.0.1:{_port(other)}\\@localhost:{_port(named)}/"
        with pytest.raises(InputError, match="backslash"):
            probe_sync(url, api_key=KEY, timeout=3)
        assert named.requests == []
        assert other.requests == []


def test_a_fleet_reads_its_good_urls_and_names_a_confused_one_without_sending(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CONFUSION_KEY", KEY)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "400")
    with _two_servers() as (named, other):
        a, b = _port(named), _port(other)
        confused = f"http://127.0.0.1:{b}\\@127.0.0.1:{a}/"
        status, out, err = _cli(
            "probe", named.url, confused, "--api-key-env", "CONFUSION_KEY", "--timeout", "3"
        )
        named_requests, other_requests = list(named.requests), list(other.requests)
    assert status == 0, err
    assert other_requests == []
    # the good URL was read once (every route); the confused one sent nothing anywhere
    assert len(named_requests) == len(PROBE_ROUTES) + 3
    assert "backslash" in out
    assert KEY not in out + err


# -- the generated property -----------------------------------------------------------

_BUDGET = int(os.environ.get("VLLM_EVIDENCE_FUZZ_EXAMPLES", "0"))
EXAMPLES = max(2000, _BUDGET // 4)

#: Pieces of a URL: the plain ones (every URL made only of them is a clean target) and
#: the tricky ones (each a known way for parsers to disagree, or to refuse).
SCHEMES = (["http", "https", "HTTP", "hTtPs"], ["ftp", "", "ht tp", "h\ttp", "http:", "javascript"])
SEPARATORS = (["://"], [":/", ":", ":///", ":\\\\", ":/\\", "://\\", ":\\/", "//", ": //", "://:"])
USERINFO = (
    [""],
    [
        "u@",
        "u:pwSECRET@",
        "a@b@",
        "a%40b@",
        "@",
        ":@",
        "127.0.0.1:9\\@",
        "x\\@",
        "u:pwSECRET@h:1@",
        "%00@",
        "a\t@",
        "h:1#@",
        "h:1?@",
    ],
)
HOSTS = (
    [
        "h",
        "example.com",
        "EXAMPLE.Com",
        "127.0.0.1",
        "10.0.0.255",
        "192.168.0.1",
        "[::1]",
        "[::FFFF:127.0.0.1]",
        "[2001:db8::8a2e:370:7334]",
        "xn--bcher-kva.de",
        "a-b.c_d",
        "vllm.svc.cluster.local.",
        "1.2.3.4.example",
    ],
    [
        "127.1",
        "0x7f.0.0.1",
        "2130706433",
        "017.0.0.1",
        "1.2.3.999",
        "1.2.3.4.",
        "example.123",
        "example.0x1",
        "09.1.1.1",
        "0x",
        "[::1",
        "::1",
        "[::1%25eth0]",
        "[v1.x]",
        "[::1]x",
        "[]",
        "a%2eb",
        "%41",
        "\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11",
        "\uff25\uff38\uff21\uff2d\uff30\uff2c\uff25.com",
        "b\u00fccher.de",
        "fa\u00df.de",
        "xn--abc.de",
        "xn--mgbh0fb.example",
        "a..b",
        ".a",
        "",
        "a b",
        "a\x00b",
        "a|b",
        "a^b",
        "a<b",
        "[",
        "a]",
        "h\u200b",
    ],
)
PORTS = (
    ["", ":80", ":443", ":8000", ":08000", ":65535", ":1"],
    [
        ":",
        ":0",
        ":65536",
        ":+80",
        ": 80",
        ":80:81",
        ":8_0",
        ":\u0668\u0660",
        ":0x50",
        ":80a",
        ":-1",
    ],
)
AFTER_AUTHORITY = (
    [""],
    ["\\", "#", "?", "@evil", "\\@evil:81", "#@good", "?@good", "\t", "\n", " ", "\\\\evil"],
)
PATHS = (
    ["", "/", "/p", "/a/../b", "/v%7Eendor/a;b=c/", "/a%2Fb", "/a//b", "/@x", "/.", "/%C3%BC"],
    ["/%2e%2e/x", "/a b", "/\\x", "/?q", "#f", "/a%23", "/%zz", "/a|b", "/\u00fc", "/\x7f"],
)
#: Characters one mutation splices in anywhere.
SPLICES = [
    "\\",
    "@",
    ":",
    "/",
    "#",
    "?",
    "[",
    "]",
    "%",
    "\t",
    "\n",
    " ",
    "\x00",
    "\uff0e",
    "\u3002",
]


@st.composite
def url_ish(draw: st.DrawFn) -> tuple[str, bool]:
    """A URL-ish string, and whether it was made only of plain pieces."""
    text, plain = "", True
    for plain_pieces, tricky_pieces in (SCHEMES, SEPARATORS, USERINFO, HOSTS, PORTS):
        if draw(st.integers(0, 3)) == 0:
            text += draw(st.sampled_from(tricky_pieces))
            plain = False
        else:
            text += draw(st.sampled_from(plain_pieces))
    if draw(st.integers(0, 4)) == 0:
        text += draw(st.sampled_from(AFTER_AUTHORITY[1]))
        plain = False
    for _ in range(draw(st.integers(0, 2))):
        plain_path, tricky_path = PATHS
        tricky = draw(st.integers(0, 3)) == 0
        text += draw(st.sampled_from(tricky_path if tricky else plain_path))
        plain = plain and not tricky
    if draw(st.integers(0, 5)) == 0:
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(SPLICES)) + text[at:]
        plain = False
    return text, plain


def _cleaned(url: str) -> str | InputError:
    try:
        return clean_target(url)
    except InputError as refused:
        return refused


@pytest.mark.slow
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(url_ish())
def test_every_accepted_url_names_one_host_to_every_parser(case: tuple[str, bool]) -> None:
    url, plain = case
    cleaned = _cleaned(url)
    if isinstance(cleaned, InputError):
        assert not plain, f"a URL of plain pieces was refused: {url!r}: {cleaned}"
        assert "\n" not in str(cleaned)
        assert "SECRET" not in str(cleaned)
        return
    address = server_address(cleaned)
    where = (address.scheme, address.host, address.port)
    assert readings(url) == (where, where, where), url
    assert clean_target(cleaned) == cleaned


def test_every_url_of_plain_pieces_is_accepted_and_names_one_host() -> None:
    """The admitting direction, exhaustively: no plain piece is refused."""
    paths = ["", *PATHS[0], "/p/../q/./r//"]
    count = 0
    for scheme in SCHEMES[0]:
        for host in HOSTS[0]:
            for port in PORTS[0]:
                for path in paths:
                    url = f"{scheme}://{host}{port}{path}"
                    address = server_address(clean_target(url))
                    where = (address.scheme, address.host, address.port)
                    assert readings(url) == (where, where, where), url
                    count += 1
    assert count == 4 * 13 * 7 * 12


@pytest.mark.parametrize(
    ("before", "pieces", "after"),
    [
        ("", SCHEMES[1], "://h:8000/p"),
        ("http", SEPARATORS[1], "h:8000/p"),
        ("http://", USERINFO[1], "h:8000/p"),
        ("http://", HOSTS[1], ":8000/p"),
        ("http://h", PORTS[1], "/p"),
        ("http://h:8000", AFTER_AUTHORITY[1], "/p"),
        ("http://h:8000", PATHS[1], ""),
    ],
    ids=["scheme", "separator", "userinfo", "host", "port", "after-authority", "path"],
)
def test_each_tricky_piece_alone_is_refused(before: str, pieces: list[str], after: str) -> None:
    """The refusing direction: one tricky piece in an otherwise plain URL is refused."""
    for piece in pieces:
        with pytest.raises(InputError):
            clean_target(before + piece + after)
