"""The one scrubber every string this package renders or saves goes through.

A server is not trusted: it can reflect the API key into a header, a redirect target or
an error body, put a password in a ``Location``, and put ESC, NUL or newlines in a
served model id.  A person can type ``http://alice:pw@host`` on the command line.  So
every string that leaves the package — an error line, a report line, a table cell, a
JSON document, a recorded header or transport detail saved in ``manifest.json`` — is
passed through :func:`scrub`, which

* replaces every secret this process was given (:func:`remember`: the API key of a
  probe) and its percent-encoded form with ``***`` — wherever it occurs when it has at
  least :data:`SHORT_SECRET` characters, and only where it stands alone as a token (no
  letter, digit, ``-``, ``_`` or ``.`` on either side) when shorter, so a key such as
  ``"a"`` or ``"1"`` does not turn every ``a`` or ``1`` of a report into ``***`` (a key
  that short is guessable anyway: ``probe`` says so once on stderr);
* replaces URL userinfo (``scheme://user:password@``) with ``***@``, the credential of an
  ``Authorization``/``Proxy-Authorization`` header or a ``Bearer``/``Basic`` token with
  ``***``, the value of a ``token=``/``api_key=``/``password=``-style parameter with
  ``***``, and the value of an environment assignment to a credential variable written
  the way environments are (upper case: ``HF_TOKEN=…``, ``VLLM_API_KEY=…``; the rule is
  :func:`credential_variable`) with ``***``;
* for text (``form="line"``) escapes every control and invisible format character
  (C0, DEL, C1, bidirectional overrides, zero-width characters, line and paragraph
  separators, lone surrogates) as ``\\xNN``/``\\uNNNN``, so one field is one line and a
  terminal interprets nothing; for a JSON text (``form="json"``) escapes those JSON
  leaves raw as ``\\uNNNN`` (the same string to a JSON reader).

:func:`scrub_body` removes the known secrets from a raw body (bytes), the only edit the
probe makes to what a server sent.

:func:`scrub_argv` is the scrubber of a command line (the launch receipt's ``argv``): it
knows which argument is an option's value, so it hides the value of every secret option
(``--api-key X``, ``--api-key=X``, ``-k X``, ``--hf-token X``, ``--token``, ``--auth``,
``--password``, …), of every environment assignment to a credential variable
(``HF_TOKEN=X``, any case), and of every credential pair inside an argument (a header
``X-Api-Key: X``, a JSON or dict ``"token": "X"``, ``AccountKey=X;``), keeping the
names, so the receipt still shows the command's shape.  The rules and why each is drawn
where it is are in its docstring.
"""

from __future__ import annotations

import functools
import re
import threading
import urllib.parse
from collections.abc import Iterable, Sequence
from typing import Final, Literal

__all__ = [
    "REDACTED",
    "SHORT_SECRET",
    "credential_name",
    "credential_variable",
    "forget_all",
    "remember",
    "scrub",
    "scrub_argv",
    "scrub_body",
]

REDACTED: Final = "***"
#: A secret shorter than this is scrubbed only where it stands alone as a token.
SHORT_SECRET: Final = 8
_TOKEN_CHARS: Final = "A-Za-z0-9_.\\-"  # noqa: S105  # a character class, not a secret

_lock = threading.Lock()
_known: frozenset[str] = frozenset()


def remember(secret: str | None) -> None:
    """Scrub ``secret`` from everything this process renders or saves from now on."""
    global _known  # noqa: PLW0603  # one process-wide set, swapped whole under the lock
    if not secret:
        return
    with _lock:
        _known = _known | {secret}


def forget_all() -> None:
    """Forget every remembered secret (tests only)."""
    global _known  # noqa: PLW0603
    with _lock:
        _known = frozenset()


def _forms(secrets: Iterable[str]) -> tuple[str, ...]:
    """Each secret as given and percent-encoded, longest first (a key inside a key)."""
    return _forms_of(_known, tuple(secrets))


@functools.lru_cache(maxsize=64)
def _forms_of(known: frozenset[str], secrets: tuple[str, ...]) -> tuple[str, ...]:
    # Cached: every recorded header of every exchange is scrubbed, and the secrets
    # change once a probe, if at all.
    found = {s for s in (*known, *secrets) if s}
    found |= {urllib.parse.quote(s, safe="") for s in found}
    found |= {urllib.parse.quote_plus(s, safe="") for s in found}
    return tuple(sorted(found, key=len, reverse=True))


def _short_re(secret: str) -> re.Pattern[str]:
    """A short secret where it stands alone: no token character on either side."""
    return re.compile(f"(?<![{_TOKEN_CHARS}]){re.escape(secret)}(?![{_TOKEN_CHARS}])")


def _short_re_bytes(secret: bytes) -> re.Pattern[bytes]:
    chars = _TOKEN_CHARS.encode()
    return re.compile(b"(?<![" + chars + b"])" + re.escape(secret) + b"(?![" + chars + b"])")


_USERINFO_RE: Final = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#\s@]*(?:@[^/?#\s@]*)*@")
_AUTH_HEADER_RE: Final = re.compile(
    r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)"
    r"(?:(bearer|basic|digest|token)(?:\s+|%20|\+))?[^\s\"',;&]+"
)
_SCHEME_TOKEN_RE: Final = re.compile(
    r"\b([Bb]earer|BEARER|Basic|BASIC)(?:\s+|%20|\+)[^\s\"',;&)\]}]+"
)
_PARAM_RE: Final = re.compile(
    r"(?i)\b((?:api[_-]?key|access[_-]?token|refresh[_-]?token|token|password|passwd|pwd|"
    r"secret|auth)=)[^&\s#\"',;]+"
)
#: What json.dumps leaves raw that a terminal may act on: DEL, C1, the soft hyphen, the
#: Arabic letter mark, the Mongolian vowel separator, zero-width and bidirectional
#: characters, line and paragraph separators, word joiners and invisible operators, the
#: BOM, interlinear annotation marks, and lone surrogates.  Text escapes these and C0.
_JSON_RAW: Final = (
    "\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\ufeff\ufff9-\ufffb\ud800-\udfff"
)
_CONTROL_RE: Final = re.compile(f"[\x00-\x1f{_JSON_RAW}]")
_JSON_RAW_RE: Final = re.compile(f"[{_JSON_RAW}]")  # json.dumps escapes C0 itself


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def scrub(
    text: str, *, secrets: Iterable[str] = (), form: Literal["line", "json", "secrets"] = "line"
) -> str:
    """``text`` with every secret removed and (by ``form``) its control characters escaped.

    ``"line"``: one field or one line of text, every control character escaped.
    ``"json"``: a JSON text from :func:`json.dumps`, the controls JSON leaves raw escaped.
    ``"secrets"``: secrets removed only (a value kept as data, such as a recorded header).
    """
    for secret in _forms(secrets):
        if len(secret) >= SHORT_SECRET:
            text = text.replace(secret, REDACTED)
        elif secret in text:
            text = _short_re(secret).sub(REDACTED, text)
    text, lower = _credential_shapes(text)
    if text.isprintable() if len(text) < _LONG else _printable(lower):
        # Every character either form escapes (C0, DEL, C1, format characters, line and
        # paragraph separators, surrogates) is non-printable: nothing to escape.
        return text
    if form == "line":
        return _CONTROL_RE.sub(_escape, text)
    if form == "json":
        return _JSON_RAW_RE.sub(_json_escape, text)
    return text


#: From this length on, printability is read by :func:`_printable` (cheaper on long
#: text, dearer on a header value).
_LONG: Final = 256
#: Printable ASCII: what :func:`_printable` takes out before looking at the rest.
_PRINTABLE_ASCII: Final = bytes(range(0x20, 0x7F))


def _printable(folded: bytes) -> bool:
    """Whether the text :func:`_folded` made ``folded`` of is printable
    (:meth:`str.isprintable`).  Printable ASCII, nearly all of any text here, is taken
    out first (one table pass, ~6x cheaper than ``isprintable`` on 15 KB); what is left
    is ASCII controls and whole UTF-8 sequences, looked at as characters.  Folding and
    lower-casing map printable letters to printable letters, so the answer is the
    text's own."""
    rest = folded.translate(None, _PRINTABLE_ASCII)
    return not rest or rest.decode("utf-8", "surrogatepass").isprintable()


#: The words each credential pattern cannot match without (lower case): a pattern runs
#: only on text that holds one of its words.  Case-insensitive matching of an ASCII
#: letter also accepts four non-ASCII letters (U+0130, U+0131, U+017F, U+212A; the
#: ``re`` documentation, IGNORECASE), so those four are folded to the ASCII letter they
#: match before the words are looked for: the shortcut then holds for any text.  A
#: report or a JSON document holds none of these words, and the four patterns, which no
#: literal anchors, cost 1-2 ms each on a 13 KB document.
_PARAM_WORDS: Final = (b"key=", b"token=", b"password=", b"passwd=", b"pwd=", b"secret=", b"auth=")
_FOLD: Final = {"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"}
_FOLD_RE: Final = re.compile("[\u0130\u0131\u017f\u212a]")


def _folded(text: str) -> bytes:
    """``text``'s ASCII letters lower-cased, the four letters folded to the ASCII letters
    they match, as UTF-8 (no other character can match a word's letters; lower-casing
    bytes is several times cheaper than lower-casing a non-ASCII str)."""
    if not text.isascii() and any(letter in text for letter in _FOLD):
        text = _FOLD_RE.sub(lambda m: _FOLD[m.group(0)], text)
    return text.encode("utf-8", "surrogatepass").lower()


def _credential_shapes(text: str) -> tuple[str, bytes]:
    """URL userinfo, authorization headers, bearer/basic tokens, secret parameters → ***;
    returns the text and its :func:`_folded` bytes."""
    if "://" in text and "@" in text:
        text = _USERINFO_RE.sub(rf"\1{REDACTED}@", text)
    lower = _folded(text)
    if b"authorization" in lower:
        text = _AUTH_HEADER_RE.sub(rf"\1{REDACTED}", text)
        lower = _folded(text)
    if b"bearer" in lower or b"basic" in lower:
        text = _SCHEME_TOKEN_RE.sub(rf"\1 {REDACTED}", text)
        lower = _folded(text)
    if "=" in text and _has_param_word(lower):
        text = _PARAM_RE.sub(rf"\1{REDACTED}", text)
        lower = _folded(text)
    if "=" in text and _has_variable_name(text):
        assigned = _VARIABLE_RE.sub(_variable_value, text)
        if assigned != text:
            text, lower = assigned, _folded(assigned)
    return text, lower


#: An environment assignment in text, written as environments are: an upper-case name
#: (no letter, digit or ``_`` before it) and ``=``; its value ends at whitespace or a
#: quote (a value may hold ``,``, ``;`` or ``&``, which end a URL's parameter; the quote
#: ends ``cannot start 'HF_TOKEN=…'``).  Upper case only: the package's own prose says
#: ``verify_key=...``, and a lower-case ``hf_token=`` in text is no environment's.  (In
#: a command line, where an argument is known to be one, any case counts:
#: :func:`scrub_argv`.)  The name is one run that cannot backtrack into another (the
#: look-behind), so the search is linear in the text.
_VARIABLE_RE: Final = re.compile(r"(?<![A-Za-z0-9_])([A-Z_][A-Z0-9_]*)=([^\s\"']+)")
#: The last character of a name :data:`_VARIABLE_RE` matches.
_NAME_END: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _has_variable_name(text: str) -> bool:
    """Whether an ``=`` of ``text`` follows an upper-case name that is a credential
    variable's (the run of name characters before it): the pattern runs only then.  A
    rendered text has few ``=`` (``TP=2`` in prose), so they are looked at one by one,
    each name walked back over once; a text of many is searched by the pattern."""
    if text.count("=") > _MANY_EQUALS:
        return True
    at = text.find("=", 1)
    while at != -1:
        start = at
        while start and text[start - 1] in _NAME_END:
            start -= 1
        if start < at and credential_variable(text[start:at]):
            return True
        at = text.find("=", at + 1)
    return False


def _variable_value(match: re.Match[str]) -> str:
    if credential_variable(match.group(1)):
        return f"{match.group(1)}={REDACTED}"
    return match.group(0)


#: Past this many ``=``, :func:`_has_param_word` searches for each word instead.
_MANY_EQUALS: Final = 64


def _has_param_word(lower: bytes) -> bool:
    """Whether one of :data:`_PARAM_WORDS` is in ``lower``.  Each word ends with ``=``,
    of which a rendered text has few: the words are looked for where each ``=`` ends
    (seven substring searches of a 15 KB document cost ~50 us, as its first letters
    are common); a text of many ``=`` is searched word by word, as before."""
    if lower.count(b"=") > _MANY_EQUALS:
        return any(word in lower for word in _PARAM_WORDS)
    at = lower.find(b"=")
    while at != -1:
        if lower.endswith(_PARAM_WORDS, 0, at + 1):
            return True
        at = lower.find(b"=", at + 1)
    return False


def scrub_body(body: bytes, *, secrets: Iterable[str] = ()) -> bytes:
    """``body`` with every known secret (as given and percent-encoded) replaced by ``***``."""
    for secret in _forms(secrets):
        raw = secret.encode("utf-8", "surrogateescape")
        if len(secret) >= SHORT_SECRET:
            body = body.replace(raw, REDACTED.encode())
        elif raw in body:
            body = _short_re_bytes(raw).sub(REDACTED.encode(), body)
    return body


# --- command lines ---------------------------------------------------------------------

#: A word that is a credential's name on its own (trailing digits dropped: ``pass2``).
_CREDENTIAL_WORDS: Final = frozenset({"pass", "pw", "pwd", "bearer", "authorization"})
#: A word ending with one of these is a credential's name: ``key``, ``apikey``,
#: ``accountkey``, ``token``, ``hftoken``, ``clientsecret``, ``dbpassword``, ``oauth``.
#: A word that only begins with one is not: ``tokens``, ``tokenizer``, ``keyfile``.
_CREDENTIAL_ENDINGS: Final = (
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "credential",
    "credentials",
    "auth",
    "cookie",
)
_WORD_SPLIT_RE: Final = re.compile(r"[^a-z0-9]+")


def _words(name: str) -> list[str]:
    """``name``'s words, lower case, split at every character not a letter or digit
    (``-``, ``_``, ``.``), trailing digits dropped."""
    return [word.rstrip("0123456789") for word in _WORD_SPLIT_RE.split(name.lower()) if word]


def _credential_word(word: str) -> bool:
    return word in _CREDENTIAL_WORDS or word.endswith(_CREDENTIAL_ENDINGS)


def credential_name(name: str) -> bool:
    """Whether an option, a key or a header named ``name`` holds a credential: its
    **last** word does (case-insensitive).  ``--api-key``, ``--hf-token``, ``--token``,
    ``--auth``, ``--password``, ``--client-secret``, ``--watermark-config.key``,
    ``X-Api-Key``, ``"access_token"`` do; ``--tokenizer``, ``--max-num-batched-tokens``,
    ``--dbo-decode-token-threshold``, ``--ssl-keyfile``, ``--api-key-file``,
    ``--api-key-env`` (a path or a variable's name, not the secret) do not."""
    words = _words(name)
    return bool(words) and _credential_word(words[-1])


def credential_variable(name: str) -> bool:
    """Whether an environment variable named ``name`` holds a credential: **any** of its
    words does (case-insensitive): ``HF_TOKEN``, ``HUGGING_FACE_HUB_TOKEN``,
    ``VLLM_API_KEY``, ``OPENAI_API_KEY``, ``AWS_SECRET_ACCESS_KEY``,
    ``AWS_SESSION_TOKEN``, ``WANDB_API_KEY``, ``GITHUB_TOKEN``, ``SECRET_KEY_BASE``,
    ``MYSQL_PWD``, ``AWS_ACCESS_KEY_ID`` do; ``TOKENIZERS_PARALLELISM``,
    ``VLLM_MAX_TOKENS_PER_EXPERT_FP4_MOE``, ``VLLM_ENABLE_PREGRAD_PASSES`` do not."""
    return any(_credential_word(word) for word in _words(name))


#: vLLM's own secret options (``vllm serve``'s parser, 0.32.0: ``engine/arg_utils.py``,
#: ``entrypoints/openai/cli_args.py``), each with the shortest abbreviation argparse
#: takes for it (``allow_abbrev``: ``--api-k`` is ``--api-key``; ``--api`` could be
#: ``--api-server-count``).  ``--watermark-config``'s JSON holds the watermark's secret
#: key: vLLM hides the whole value in its own log (``_SENSITIVE_ARG_FIELDS``), so does
#: this; ``--watermark-config.key N`` is a credential by its name.
_VLLM_SECRET_OPTIONS: Final = (
    ("--api-key", "--api-k"),
    ("--hf-token", "--hf-t"),
    ("--watermark-config", "--watermark-"),
)
#: vLLM's one option whose values run to the next option (``nargs="+"``: several keys).
_MANY_VALUES: Final = "--api-key"
#: vLLM's flags (no value) whose name reads as a credential's: what follows is no value.
_VLLM_FLAGS: Final = frozenset({"--allow-credentials", "--no-allow-credentials"})
_OPTION_NAME_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*")
#: ``NAME=VALUE``: an environment assignment (``env``, ``docker run -e``, ``sh -c``).
_ASSIGNMENT_RE: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=", re.ASCII)
#: A whole argument that is a header: ``X-Api-Key: VALUE`` (the value runs to the end).
_HEADER_RE: Final = re.compile(r"(\s*([A-Za-z0-9_\-]+)\s*:\s*)\S", re.ASCII)
#: A ``name: value`` / ``name=value`` pair inside an argument: JSON (``"token": "X"``), a
#: Python dict, YAML, a connection string (``AccountKey=X;``).  The name starts where no
#: name character is before it, a quoted value ends at its quote (no escapes: each
#: quote can fail to close once, so the search is linear), a bare one at a separator.
_PAIR_RE: Final = re.compile(
    r"(?<![A-Za-z0-9_.\-])(([\"']?)([A-Za-z_][A-Za-z0-9_.\-]*)\2\s*[:=]\s*)"
    r"(\"[^\"]*\"|'[^']*'|[^\s\"',;&}\])]+)"
)
_WHITESPACE_RE: Final = re.compile(r"(\s+)")
#: A shell's (or an interpreter's) ``-c``, and its bundled forms ``-lc``, ``-ec``: the
#: argument after it is a script, read as words.
_SCRIPT_FLAG_RE: Final = re.compile(r"-[A-Za-z]*c")
#: Take no value, one value, or every value up to the next option.
_NONE, _ONE, _MANY = 0, 1, 2


def scrub_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with the value of every secret shown as ``***`` and every name kept, so
    the command's shape stays readable (``--api-key ***``, ``HF_TOKEN=***``).

    The rules, case-insensitive:

    * **Secret options** (:func:`credential_name`: the option's last word is a
      credential's), as ``--opt VALUE`` and ``--opt=VALUE``: ``--api-key``,
      ``--hf-token``, ``--token``, ``--auth``, ``--auth-token``, ``--password``,
      ``--secret``, ``--key``, single-dash ``-pass``/``-token``; vLLM's ``--api-key``,
      ``--hf-token`` and ``--watermark-config`` also by argparse's abbreviations and
      with ``_`` for ``-``.  ``-k`` (no ``vllm serve`` option has it; it is a key or
      pass phrase elsewhere, ``openssl enc -k``): ``-k VALUE``, ``-k=VALUE``, ``-kVALUE``.
      The value is the next argument unless that one starts with ``--`` (an option of
      its own: ``--hf-token --port 8000`` is vLLM's bare ``--hf-token``); ``--api-key``
      takes every argument up to the next one starting with ``-`` (``nargs="+"``).
      Paths and names are not secrets: ``--ssl-keyfile``, ``--api-key-file``,
      ``--api-key-env``, ``--tokenizer``, ``--max-num-batched-tokens`` keep their
      values, and the argument after vLLM's flag ``--allow-credentials`` is not one.
    * **Environment assignments** ``NAME=VALUE`` (an argument, or an option's ``=``
      value: ``--env=HF_TOKEN=X``) where :func:`credential_variable` (any word of the
      name is a credential's): ``VLLM_API_KEY``, ``HF_TOKEN``, ``FOO_SECRET``, … The
      value is the rest of the argument, as ``env`` takes it (``PASSWORD=two words``).
    * **Inside any argument**: what :func:`scrub` removes (URL userinfo,
      ``Authorization: …``, ``Bearer``/``Basic`` tokens, ``token=``-style parameters,
      remembered secrets); a header ``Name: VALUE`` whose name is a credential's (the
      whole value); a ``name: value`` or ``name=value`` pair whose name is
      (``{"api_key": "X"}``, ``AccountKey=X;``).
    * **An argument holding whitespace** is also read as words by the rules above
      (``--vllm-args "--api-key X"``); the argument after a ``-c`` (``sh -c``,
      ``bash -lc``, ``python -c``) is a script, read as words only, so
      ``sh -c "HF_TOKEN=X vllm serve --api-key Y --port 8000"`` keeps its shape as
      ``HF_TOKEN=*** vllm serve --api-key *** --port 8000``; in a script a value in
      quotes runs to its closing quote.

    Applying it twice changes nothing (``***`` is no secret): a receipt is scrubbed as
    it is written and again as it is read.
    """
    return _scrub_words(argv, quoted=False)


def _secret_option(option: str) -> tuple[bool, bool]:
    """``(secret, many values)`` for an option spelled ``option`` (no ``=``)."""
    normal = option.lower().replace("_", "-")
    if normal in _VLLM_FLAGS:
        return False, False
    if "." not in normal:
        for full, shortest in _VLLM_SECRET_OPTIONS:
            if normal.startswith(shortest) and full.startswith(normal):
                return True, full == _MANY_VALUES
    return credential_name(option), False


def _option(word: str) -> tuple[str, int, str] | None:
    """For a secret option: ``(the word as kept, which values follow, the value's text
    after ``=`` or "")``; ``None`` for anything else."""
    if not word.startswith("-") or word.startswith("---"):
        return None
    dashes = "--" if word.startswith("--") else "-"
    rest = word[len(dashes) :]
    name, eq, value = rest.partition("=")
    glued = dashes == "-" and rest[:1] == "k" and rest != "k" and not eq
    if glued and not (_OPTION_NAME_RE.fullmatch(name) and credential_name(name)):
        return f"-k{REDACTED}", _NONE, rest[1:]  # -kVALUE (-key, -keypass: their own names)
    if not _OPTION_NAME_RE.fullmatch(name):
        return None
    if dashes == "-" and name == "k":
        secret, many = True, False
    else:
        secret, many = _secret_option(dashes + name)
    if not secret:
        return None
    if eq:
        return f"{dashes}{name}={REDACTED}", _NONE, value
    return word, _MANY if many else _ONE, ""


def _opens(value: str) -> str:
    """The quote ``value`` opens and does not close (``'a`` of ``'a b'``), or ""."""
    if value[:1] in ("'", '"') and not (len(value) > 1 and value.endswith(value[0])):
        return value[0]
    return ""


def _scrub_words(words: Sequence[str], *, quoted: bool) -> list[str]:
    """``words`` scrubbed: argv (``quoted=False``) or the words of one argument that
    holds whitespace (``quoted=True``: the argument as a whole has been through
    :func:`scrub` and the pairs; a value in quotes runs to its closing quote, an
    assignment's value to the end of its word)."""
    out: list[str] = []
    taking, took, quote, script = _NONE, False, "", False
    for word in words:
        # After a -c, an argument of several words is a script (one word is read as
        # any argument: ``tool -c -k KEY`` is a flag and a key).
        after_c = script and _WHITESPACE_RE.search(word) is not None
        script = False
        if quote:  # a quoted value, blanked to its closing quote
            out.append(REDACTED)
            if word.endswith(quote):
                quote = ""
            continue
        if taking != _NONE:
            if word.startswith("--") or (took and word.startswith("-")):
                taking = _NONE  # an option of its own, never a value
            else:
                out.append(REDACTED)
                quote = _opens(word) if quoted else ""
                took = True
                if taking == _ONE:
                    taking = _NONE
                continue
        option = None if after_c else _option(word)  # a script is no option: -c '-k x'
        if option is not None:
            shown, taking, value = option
            out.append(shown)
            took = False
            quote = _opens(value) if quoted else ""
        elif not quoted:
            out.append(_scrub_argument(word, script=after_c))
            script = _SCRIPT_FLAG_RE.fullmatch(word) is not None
        else:
            prefix, rest = _option_value(word)
            assignment = _ASSIGNMENT_RE.match(rest)
            if assignment is not None and credential_variable(assignment.group(1)):
                out.append(f"{prefix}{assignment.group(0)}{REDACTED}")
                quote = _opens(rest[assignment.end() :])
            else:
                out.append(word)
    return out


def _option_value(word: str) -> tuple[str, str]:
    """``("--opt=", VALUE)`` for ``--opt=VALUE``; ``("", word)`` for anything else."""
    if word.startswith("-") and "=" in word:
        name, _, value = word.partition("=")
        if _OPTION_NAME_RE.fullmatch(name.lstrip("-")):
            return f"{name}=", value
    return "", word


def _scrub_argument(word: str, *, script: bool) -> str:
    """One argument that is not a secret option: an option's ``=`` value on its own
    (``--env=HF_TOKEN=X``), an assignment (its value: the rest of the argument, as
    ``env`` takes it), a header, what :func:`scrub` removes, pairs, and, where it
    holds whitespace, its words.  A shell's ``-c`` script (``script``) is words only:
    no leading assignment or header takes the rest of it."""
    prefix, word = _option_value(word)
    assignment = None if script else _ASSIGNMENT_RE.match(word)
    if assignment is not None and credential_variable(assignment.group(1)):
        return f"{prefix}{assignment.group(0)}{REDACTED}"
    word = scrub(word, form="secrets")
    header = None if script else _HEADER_RE.match(word)
    if header is not None and credential_name(header.group(2)):
        return f"{prefix}{header.group(1)}{REDACTED}"
    if ":" in word or "=" in word:
        word = _PAIR_RE.sub(_pair_value, word)
    if _WHITESPACE_RE.search(word):
        pieces = _WHITESPACE_RE.split(word)
        scrubbed = iter(_scrub_words(pieces[0::2], quoted=True))
        word = "".join(p if i % 2 else next(scrubbed) for i, p in enumerate(pieces))
    return prefix + word


def _pair_value(match: re.Match[str]) -> str:
    if not credential_name(match.group(3)):
        return match.group(0)
    value = match.group(4)
    quote = value[0] if value[0] in ("'", '"') else ""
    return f"{match.group(1)}{quote}{REDACTED}{quote}"
