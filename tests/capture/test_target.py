"""``capture._target``: a clean target is recognised without a URL parser."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vllm_evidence.capture._target import CLEAN_TARGET, clean_target
from vllm_evidence.errors import InputError


def _as_httpx_writes_it(url: str) -> str:
    """``url`` parsed by httpx and written back as the probe sends it (the oracle)."""
    parsed = httpx.URL(url)
    port = "" if parsed.port is None else f":{parsed.port}"
    path = parsed.raw_path.decode("ascii").rstrip("/")  # the documented cleaning
    return f"{parsed.scheme}://{parsed.host}{port}{path}"


@settings(max_examples=400, deadline=None)
@given(st.from_regex(CLEAN_TARGET, fullmatch=True))
def test_a_target_of_the_clean_form_is_what_httpx_reads(url: str) -> None:
    clean = CLEAN_TARGET.fullmatch(url)
    assert clean is not None
    port, default = clean.group("port"), {"http": 80, "https": 443}[clean.group("scheme")]
    if port is not None and (int(port) > 65535 or int(port) == default):
        # A default or impossible port: not kept as written; httpx decides.
        with pytest.raises((InputError, AssertionError)):
            assert clean_target(url) == url
        return
    assert _as_httpx_writes_it(url) == url
    assert clean_target(url) == url


@pytest.mark.parametrize(
    ("url", "cleaned"),
    [
        ("http://H:8000", "http://h:8000"),
        ("http://h:80", "http://h"),
        ("https://h:443/x", "https://h/x"),
        ("http://h:08000", "http://h:8000"),
        ("http://h/a/../b", "http://h/b"),
        ("http://h/./b", "http://h/b"),
        ("http://h/p/", "http://h/p"),
        ("http://u:pw@h:1", "http://h:1"),
        ("http://[::1]:8000", "http://[::1]:8000"),
    ],
)
def test_any_other_target_is_cleaned_by_parsing_it(url: str, cleaned: str) -> None:
    assert CLEAN_TARGET.fullmatch(url) is None or url != cleaned
    assert clean_target(url) == cleaned


@pytest.mark.parametrize("url", ["https://a:80", "http://a:443"])
def test_the_other_schemes_default_port_is_kept(url: str) -> None:
    assert clean_target(url) == url == _as_httpx_writes_it(url)


@pytest.mark.parametrize("url", ["http://1.2.3.999", "http://h:70000", "ftp://h", "http://h/?q"])
def test_a_target_that_is_not_one_is_refused(url: str) -> None:
    with pytest.raises(InputError):
        clean_target(url)
