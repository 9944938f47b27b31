"""``_scrub.scrub``: the one function every rendered and saved string passes through."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from vllm_evidence._scrub import REDACTED, SHORT_SECRET, remember, scrub, scrub_body


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        ("http://alice:S3cretPW@h:1/?x=1 must not carry a query", "S3cretPW"),
        ("https://u:p%40ss@h/x", "p%40ss"),
        ("see http://tok@h", "tok@"),
        ("Authorization: Bearer abc.def", "abc.def"),
        ('{"authorization": "Basic dXNlcjpwdw=="}', "dXNlcjpwdw=="),
        ("illegal header line: bytearray(b'X-Echo Bearer zz9')", "zz9"),
        ("http://h/login?token=T0K3N&auth=Bearer%20Q", "T0K3N"),
        ("http://h/login?api_key=K&x=1", "api_key=K"),
    ],
)
def test_credentials_in_text_are_removed(text: str, gone: str) -> None:
    out = scrub(text)
    assert gone not in out
    assert REDACTED in out


def test_a_remembered_secret_is_removed_as_given_and_percent_encoded() -> None:
    remember("K+y/1=")
    assert scrub("a K+y/1= b K%2By%2F1%3D c") == f"a {REDACTED} b {REDACTED} c"
    assert scrub_body(b"x K+y/1= y") == b"x *** y"


def test_a_secret_passed_in_is_removed_without_being_remembered() -> None:
    assert scrub("one XYZ", secrets=["XYZ"]) == f"one {REDACTED}"
    assert scrub("one XYZ") == "one XYZ"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\x1b[31mb", "a\\x1b[31mb"),
        ("nul\x00", "nul\\x00"),
        ("two\nlines\r", "two\\x0alines\\x0d"),
        ("c1\x9b", "c1\\x9b"),
        ("bidi\u202egpj.exe", "bidi\\u202egpj.exe"),
        ("zw\u200bj", "zw\\u200bj"),
        ("lone\ud800", "lone\\ud800"),
    ],
)
def test_text_has_every_control_character_escaped(raw: str, shown: str) -> None:
    assert scrub(raw) == shown


def test_json_text_keeps_its_meaning_and_loses_raw_controls() -> None:
    document = {"id": "m\x1b\x9b\u202e\x7f", "url": "http://a:pw@h"}
    text = scrub(json.dumps(document, ensure_ascii=False), form="json")
    assert not any(ch in text for ch in "\x1b\x9b\u202e\x7f")
    assert json.loads(text) == {"id": "m\x1b\x9b\u202e\x7f", "url": "http://***@h"}


def test_ordinary_report_text_is_unchanged() -> None:
    text = "capacity ESTABLISHED 2 engines × 41,216 tokens → basic health: token budget"
    assert scrub(text) == text


# --- the word shortcut: the same output as every pattern run on every text -------------

_PIECES = (
    "http://",
    "https://u:p@",
    "@",
    "Authorization: ",
    "proxy-AUTHORIZATION=",
    "Bearer ",
    "BASIC ",
    "basic%20",
    "token=",
    "API-KEY=",
    "Password=",
    "auth=",
    "HF_TOKEN=",
    "VLLM_KEY",
    "=",
    "x",
    " ",
    "&",
    "\n",
    "\x7f",
    "é",
    "\u0130",  # İ: matches "i" case-insensitively
    "\u017f",  # long s: matches "s"
    "\u212a",  # Kelvin sign: matches "k"
    "\u202e",
    "=" * 40,  # two of these: past the count where the words are searched one by one
)


def _every_pattern(text: str, form: str) -> str:
    """The scrubber as it was before the shortcut: every pattern on every text."""
    from vllm_evidence import _scrub as s

    text = s._USERINFO_RE.sub(rf"\1{REDACTED}@", text)
    text = s._AUTH_HEADER_RE.sub(rf"\1{REDACTED}", text)
    text = s._SCHEME_TOKEN_RE.sub(rf"\1 {REDACTED}", text)
    text = s._PARAM_RE.sub(rf"\1{REDACTED}", text)
    text = s._VARIABLE_RE.sub(s._variable_value, text)
    if form == "line":
        return s._CONTROL_RE.sub(s._escape, text)
    if form == "json":
        return s._JSON_RAW_RE.sub(s._json_escape, text)
    return text


@settings(max_examples=500, deadline=None)
@given(
    pieces=st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=4)), max_size=12),
    form=st.sampled_from(["line", "json", "secrets"]),
)
def test_the_word_shortcut_changes_no_output(pieces: list[str], form: str) -> None:
    text = "".join(pieces)
    assert scrub(text, form=form) == _every_pattern(text, form)  # type: ignore[arg-type]


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=())))
def test_printability_is_read_from_the_folded_bytes_as_from_the_text(text: str) -> None:
    from vllm_evidence._scrub import _folded, _printable

    assert _printable(_folded(text)) == text.isprintable()


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([b"=", b"key", b"token", b"x", b"pwd", b"=="]), max_size=80))
@example([b"="] * 70 + [b"token", b"="])
@example([b"="] * 70 + [b"token"])
def test_secret_parameter_words_are_found_however_many_equals_there_are(
    pieces: list[bytes],
) -> None:
    from vllm_evidence._scrub import _PARAM_WORDS, _has_param_word

    lower = b"".join(pieces)
    assert _has_param_word(lower) == any(word in lower for word in _PARAM_WORDS)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("pa\u017f\u017fword=hunter2", "pa\u017f\u017fword=***"),  # non-ASCII: every pattern
        ("apiKey=\u212a", "apiKey=***"),
        # the words folded: each of the four letters stands in a word the shortcut seeks
        ("author\u0130zation: tok3n \u00d7 2", "author\u0130zation: *** \u00d7 2"),
        ("\u00e9 \u017fecret=abc", "\u00e9 \u017fecret=***"),
        ("\u00e9 api_\u212aey=abc", "\u00e9 api_\u212aey=***"),
        ("\u00e9 BA\u0131SIC x", "\u00e9 BA\u0131SIC x"),  # the scheme words are literal
        ("ranks \u00d7 2 \u2026 no words", "ranks \u00d7 2 \u2026 no words"),
        ("a\x7fb", "a\\x7fb"),  # DEL is ASCII and still escaped
        ("plain ascii, no words", "plain ascii, no words"),
    ],
)
def test_texts_the_shortcut_must_not_skip(text: str, shown: str) -> None:
    assert scrub(text) == shown


@pytest.mark.parametrize(
    ("secret", "text", "expected"),
    [
        # A one-letter key: the letter inside words, numbers and names is left alone;
        # where it stands alone it goes, even as a word (the price of a guessable key).
        ("a", "a batch: ranks [0, 1]; rank a", "*** batch: ranks [0, 1]; rank ***"),
        ("1", "ranks [0, 1] of 12, v0.1.1", "ranks [0, ***] of 12, v0.1.1"),
        ("k3y", "Bearer k3y; echoed 'k3y'", "Bearer ***; echoed '***'"),
        ("k3y", "monk3ys k3y_x x-k3y", "monk3ys k3y_x x-k3y"),
        # At SHORT_SECRET characters and above, every occurrence goes.
        ("12345678", "x12345678y 12345678", f"x{REDACTED}y {REDACTED}"),
    ],
)
def test_a_short_key_is_scrubbed_only_where_it_stands_alone(
    secret: str, text: str, expected: str
) -> None:
    assert scrub(text, secrets=[secret]) == expected


def test_a_short_key_in_a_body_is_scrubbed_where_it_stands_alone() -> None:
    assert scrub_body(b"batch, key a!", secrets=["a"]) == b"batch, key ***!"
    assert scrub_body(b"xa12345678", secrets=["12345678"]) == b"xa***"


def test_the_short_key_boundary_is_eight_characters() -> None:
    assert SHORT_SECRET == 8
    assert scrub("x1234567y", secrets=["1234567"]) == "x1234567y"
    assert scrub("x12345678y", secrets=["12345678"]) == f"x{REDACTED}y"


# --- environment assignments in text -----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # The launcher's one line when the first word is an assignment (``env`` forgotten).
        (
            "cannot start 'HF_TOKEN=sk-live-1234': No such file",
            "cannot start 'HF_TOKEN=***': No such file",
        ),
        ("VLLM_API_KEY=abc vllm serve", "VLLM_API_KEY=*** vllm serve"),
        ("x AWS_ACCESS_KEY_ID=AKIA1 y", "x AWS_ACCESS_KEY_ID=*** y"),
        ("PGPASSWORD=a,b;c&d e", "PGPASSWORD=*** e"),  # the value runs to whitespace
        ('"DB_PASS=x"', '"DB_PASS=***"'),
        ("one\nGITHUB_TOKEN=ghp_1\ntwo", "one\\x0aGITHUB_TOKEN=***\\x0atwo"),
        # Not a credential variable, or not an environment's (upper case only in text):
        ("TOKENIZERS_PARALLELISM=false MAX_TOKENS=5", "TOKENIZERS_PARALLELISM=false MAX_TOKENS=5"),
        ("load(..., verify_key=...)", "load(..., verify_key=...)"),
        ("kv_cache_size_tokens=41216", "kv_cache_size_tokens=41216"),
        ("xHF_TOKEN=1", "xHF_TOKEN=1"),  # inside a word: no assignment
    ],
)
def test_a_credential_assignment_in_text_loses_its_value(text: str, shown: str) -> None:
    assert scrub(text) == shown


# --- command lines -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "--api-key",
        "--hf-token",
        "--hf_token",
        "--token",
        "--auth",
        "--auth-token",
        "--password",
        "--passwd",
        "--client-secret",
        "--key",
        "--apikey",
        "--watermark-config.key",
        "X-Api-Key",
        "access_token",
        "AccountKey",
        "Authorization",
        "--oauth2",
        "--pass",
        "--cookie",
        "--PASSWORD",
    ],
)
def test_these_names_hold_a_credential(name: str) -> None:
    from vllm_evidence._scrub import credential_name

    assert credential_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "--tokenizer",
        "--tokenizer-mode",
        "--max-num-batched-tokens",
        "--dbo-decode-token-threshold",
        "--return-tokens-as-token-ids",
        "--ssl-keyfile",
        "--ssl-certfile",
        "--api-key-file",
        "--api-key-env",
        "--allowed-headers",
        "--port",
        "--model",
        "--tensor-parallel-size",
        "-tp",
        "--author",
        "--bypass",
        "",
        "--",
    ],
)
def test_these_names_hold_no_credential(name: str) -> None:
    from vllm_evidence._scrub import credential_name

    assert not credential_name(name)


@pytest.mark.parametrize(
    ("name", "credential"),
    [
        ("HF_TOKEN", True),
        ("HUGGING_FACE_HUB_TOKEN", True),
        ("VLLM_API_KEY", True),
        ("OPENAI_API_KEY", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("AWS_SESSION_TOKEN", True),
        ("AWS_ACCESS_KEY_ID", True),  # any word: KEY
        ("WANDB_API_KEY", True),
        ("GITHUB_TOKEN", True),
        ("FOO_SECRET", True),
        ("SECRET_KEY_BASE", True),
        ("PGPASSWORD", True),
        ("MYSQL_PWD", True),
        ("DB_PASS", True),
        ("SSH_AUTH_SOCK", True),  # a path: hidden all the same (any word: AUTH)
        ("hf_token", True),  # any case
        ("ApiKey2", True),
        ("TOKENIZERS_PARALLELISM", False),
        ("VLLM_MAX_TOKENS_PER_EXPERT_FP4_MOE", False),
        ("VLLM_ENABLE_PREGRAD_PASSES", False),
        ("VLLM_USE_FASTOKENS", False),
        ("CUDA_VISIBLE_DEVICES", False),
        ("PATH", False),
        ("AUTHOR", False),
    ],
)
def test_a_variable_holds_a_credential_when_any_word_is_one(name: str, credential: bool) -> None:
    from vllm_evidence._scrub import credential_variable

    assert credential_variable(name) is credential


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        # Secret options, both shapes; the names kept.
        (["--api-key", "k", "--api-key=k2"], ["--api-key", "***", "--api-key=***"]),
        (
            ["--token", "t", "--auth=a", "--password", "p"],
            ["--token", "***", "--auth=***", "--password", "***"],
        ),
        # vLLM's --api-key takes every key up to the next option (nargs="+").
        (["--api-key", "a", "b", "-tp", "2"], ["--api-key", "***", "***", "-tp", "2"]),
        (["--api-key", "a", "--port", "8000"], ["--api-key", "***", "--port", "8000"]),
        # Any other secret option takes one value.
        (["--token", "a", "/models/m"], ["--token", "***", "/models/m"]),
        # A value never starts with "--": vLLM's bare --hf-token (the stored login).
        (["--hf-token", "--port", "8000"], ["--hf-token", "--port", "8000"]),
        (["--token", "--", "x"], ["--token", "--", "x"]),
        # ...but one that starts with a single "-" is a value (a key may).
        (["--token", "-abc"], ["--token", "***"]),
        (["--api-key", "-abc", "-tp", "2"], ["--api-key", "***", "-tp", "2"]),
        (["--api-key"], ["--api-key"]),
        # argparse's abbreviations and vLLM's underscores.
        (
            ["--api-k", "k", "--hf-t=t", "--hf_token", "t"],
            ["--api-k", "***", "--hf-t=***", "--hf_token", "***"],
        ),
        (["--api", "8"], ["--api", "8"]),  # ambiguous with --api-server-count: no option
        # -k: next, =, glued; a single-dash name of its own is read by its name.
        (["-k", "v", "-k=v", "-kv"], ["-k", "***", "-k=***", "-k***"]),
        (["-key", "v", "-pass", "v"], ["-key", "***", "-pass", "***"]),
        (["-keyform", "PEM"], ["-k***", "PEM"]),
        # vLLM's watermark key: the whole JSON (vLLM hides it too), or the dotted key.
        (
            ["--watermark-config", '{"key": 5}', "--watermark-config.key", "5"],
            ["--watermark-config", "***", "--watermark-config.key", "***"],
        ),
        (["--watermark-config.algorithm", "gumbel"], ["--watermark-config.algorithm", "gumbel"]),
        # Environment assignments, as an argument or an option's value; the whole value.
        (
            ["env", "HF_TOKEN=t", "PASSWORD=two words", "TOKENIZERS_PARALLELISM=false"],
            ["env", "HF_TOKEN=***", "PASSWORD=***", "TOKENIZERS_PARALLELISM=false"],
        ),
        (
            ["--env=GITHUB_TOKEN=g", "-e", "VLLM_API_KEY=v"],
            ["--env=GITHUB_TOKEN=***", "-e", "VLLM_API_KEY=***"],
        ),
        # Headers, URLs, pairs inside an argument.
        (
            [
                "--header",
                "Authorization: Bearer b",
                "-H",
                "X-Api-Key: one two",
                "-H",
                "Accept: json",
            ],
            ["--header", "Authorization: ***", "-H", "X-Api-Key: ***", "-H", "Accept: json"],
        ),
        (
            ["https://u:pw@h/x", "--url=http://h/?token=t"],
            ["https://***@h/x", "--url=http://h/?token=***"],
        ),
        (
            ['{"api_key": "a b", "n": 1}', "{'token': 't'}", "AccountName=a;AccountKey=k;x=1"],
            ['{"api_key": "***", "n": 1}', "{'token': '***'}", "AccountName=a;AccountKey=***;x=1"],
        ),
        # A shell's -c script: words, a quoted value to its closing quote.
        (
            ["sh", "-c", "HF_TOKEN='a b' vllm serve m --api-key k1 k2 --token \"c d\" --port 8000"],
            ["sh", "-c", "HF_TOKEN=*** vllm serve m --api-key *** *** --token *** *** --port 8000"],
        ),
        (
            ["bash", "-lc", "export X=1;  OPENAI_API_KEY=o exec x"],
            ["bash", "-lc", "export X=1;  OPENAI_API_KEY=*** exec x"],
        ),
        # Paths, names, sizes and vLLM's flags keep their values.
        (
            ["--ssl-keyfile", "/k.pem", "--api-key-file", "/run/k", "--api-key-env", "VLLM_KEY"],
            ["--ssl-keyfile", "/k.pem", "--api-key-file", "/run/k", "--api-key-env", "VLLM_KEY"],
        ),
        (
            [
                "--tokenizer",
                "/tok",
                "--max-num-batched-tokens",
                "8192",
                "--allow-credentials",
                "/m",
            ],
            [
                "--tokenizer",
                "/tok",
                "--max-num-batched-tokens",
                "8192",
                "--allow-credentials",
                "/m",
            ],
        ),
        (
            ["vllm", "serve", "/models/m", "-tp", "2", "--port", "8000", "--lora-modules", "a=/l"],
            ["vllm", "serve", "/models/m", "-tp", "2", "--port", "8000", "--lora-modules", "a=/l"],
        ),
        # Words of an argument that holds whitespace; a -c script is words only.
        (
            ["--vllm-args", "--api-key X --port 1", "--args=--token t"],
            ["--vllm-args", "--api-key *** --port 1", "--args=--token ***"],
        ),
        (["sh", "-c", "-k x"], ["sh", "-c", "-k ***"]),
        (
            ["tool", "-c", "-k", "x", "-c", "--token", "t"],
            ["tool", "-c", "-k", "***", "-c", "--token", "***"],
        ),
        (["sh", "-c", "HF_TOKEN=x"], ["sh", "-c", "HF_TOKEN=***"]),
        (["--token=a b", "-k", "a b"], ["--token=***", "-k", "***"]),
        ([], []),
    ],
)
def test_a_command_line_keeps_its_shape_and_loses_its_secrets(
    argv: list[str], shown: list[str]
) -> None:
    from vllm_evidence._scrub import scrub_argv

    assert scrub_argv(argv) == shown
    assert scrub_argv(shown) == shown  # a receipt is scrubbed again as it is read


_VLLM_OPTIONS = Path(__file__).parent / "hostile" / "vllm-0.32.0-serve-options.txt"


def _vllm_options() -> list[tuple[str, str]]:
    rows = []
    for line in _VLLM_OPTIONS.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            names, nargs = line.split("\t")
            rows += [(name, nargs) for name in names.split()]
    return rows


def test_of_vllm_serve_s_options_exactly_three_carry_a_secret() -> None:
    """Every option string of ``vllm serve`` (0.32.0): the three that carry a secret
    lose their value, every other option keeps its value, every flag leaves the next
    argument alone."""
    from vllm_evidence._scrub import scrub_argv

    options = _vllm_options()
    assert len(options) > 300
    secret = {"--api-key", "--hf-token", "--watermark-config"}
    for name, nargs in options:
        if name in secret:
            assert scrub_argv([name, "v"]) == [name, "***"], name
        elif nargs == "0":
            assert scrub_argv([name, "/models/m"]) == [name, "/models/m"], name
        elif nargs in {"+", "*"}:
            assert scrub_argv([name, "a", "b"]) == [name, "a", "b"], name
        else:
            assert scrub_argv([name, "v"]) == [name, "v"], name
    assert secret <= {name for name, _ in options}


_SAFE_ARGS = st.sampled_from(
    ["vllm", "serve", "/models/m", "-tp", "2", "--port", "8000", "--model", "m", "x=1", "--"]
)
_CANARY = "CANARY-q7z"
_SECRET_FORMS = st.sampled_from(
    [
        ["--api-key", _CANARY],
        [f"--api-key={_CANARY}"],
        ["--api-key", "k", _CANARY],
        ["-k", _CANARY],
        [f"-k{_CANARY}"],
        ["--token", _CANARY],
        ["--auth", _CANARY],
        [f"--hf_token={_CANARY}"],
        [f"HF_TOKEN={_CANARY}"],
        [f"env VLLM_API_KEY={_CANARY}"],
        [f"https://u:{_CANARY}@h/"],
        ["--header", f"Authorization: Bearer {_CANARY}"],
        ["--header", f"X-Api-Key: {_CANARY}"],
        ['{"token": "' + _CANARY + '"}'],
        ["sh", "-c", f"vllm serve --api-key {_CANARY} --port 1"],
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    before=st.lists(_SAFE_ARGS, max_size=5),
    form=_SECRET_FORMS,
    after=st.lists(st.sampled_from(["--port", "8000", "--model", "/models/m"]), max_size=4),
)
def test_a_planted_canary_never_survives_and_scrubbing_twice_changes_nothing(
    before: list[str], form: list[str], after: list[str]
) -> None:
    from vllm_evidence._scrub import scrub_argv

    shown = scrub_argv([*before, *form, *after])
    assert not any(_CANARY in arg for arg in shown)
    assert scrub_argv(shown) == shown


@settings(max_examples=300, deadline=None)
@given(st.lists(_SAFE_ARGS, max_size=12))
def test_a_command_line_without_a_secret_is_kept_as_it_is(argv: list[str]) -> None:
    from vllm_evidence._scrub import scrub_argv

    assert scrub_argv(argv) == argv
