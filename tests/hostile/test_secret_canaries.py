"""Item 3 of "Hostile input, round 3": no secret of a launched command line in any
receipt or output.

A real ``vllm-evidence launch --receipt R --log L -- python -c 'print(1)' <args>`` runs
with a canary planted in every form a command line carries a secret in (secret options
in both shapes, vLLM's ``nargs="+"`` keys and argparse abbreviations, ``-k``, credential
environment assignments, URL userinfo, headers, JSON, a shell's ``-c`` script); the
child ignores its arguments.  Then ``probe`` and ``explain`` render that receipt (text,
``--json``, ``--save``), a hand-written receipt carrying the canaries raw is rendered
the same way, and the launcher is given a command it cannot start whose name is an
assignment.  No canary may appear in the receipt, the log, any stdout or stderr, any
saved file, any JSON or text, or the in-process reprs and documents; and every
non-secret value (``--tensor-parallel-size 2``, ``--model /models/m``, ``--port 8000``,
``--ssl-keyfile PATH``, …) must stay visible, with every secret's name.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._cli import run_cli
from tests._paths import REAL
from vllm_evidence.testing._stub import serve_capture

CHILD = "print(1)"


def _canary(n: int) -> str:
    return f"CANARY{n:02d}x7q"


#: One canary per secret, in every form; ``_canary(n)`` for n in 1..N.
PLANTED: tuple[str, ...] = (
    "--api-key=" + _canary(1),
    "--api-key",
    _canary(2),
    _canary(3),  # vLLM's --api-key takes several keys (nargs="+")
    "--model",
    "/models/m",
    "-k",
    _canary(4),
    "-k" + _canary(5),
    "--token",
    _canary(6),
    "--auth",
    _canary(7),
    "--auth=" + _canary(8),
    "--password",
    _canary(9),
    "--hf-token",
    _canary(10),
    "--hf_token=" + _canary(11),
    "--api-k",  # argparse's abbreviation of --api-key
    _canary(12),
    "--tensor-parallel-size",
    "2",
    "env",
    "VLLM_API_KEY=" + _canary(13),
    "HF_TOKEN=" + _canary(14),
    "FOO_SECRET=" + _canary(15),
    "HUGGING_FACE_HUB_TOKEN=" + _canary(16),
    "OPENAI_API_KEY=" + _canary(17),
    "AWS_SECRET_ACCESS_KEY=" + _canary(18),
    "AWS_SESSION_TOKEN=" + _canary(19),
    "WANDB_API_KEY=" + _canary(20),
    "GITHUB_TOKEN=" + _canary(21),
    "hf_token=" + _canary(22),
    "TOKENIZERS_PARALLELISM=false",
    f"https://u:{_canary(23)}@h/",
    "--header",
    f"Authorization: Bearer {_canary(24)}",
    "--header",
    f"X-Api-Key: {_canary(25)}",
    "--watermark-config",
    '{"key": 8675309126, "algorithm": "gumbel"}',
    "--watermark-config.key=8675309127",
    "--kv-transfer-config",
    '{"kv_role": "kv_both", "kv_connector_extra_config": {"api_token": "' + _canary(28) + '"}}',
    "--env=AWS_SESSION_TOKEN=" + _canary(29),
    "sh",
    "-c",
    f"HF_TOKEN={_canary(30)} exec vllm serve /models/m --api-key {_canary(31)} --port 8000",
    "--model-loader-extra-config",
    f"AccountName=a;AccountKey={_canary(32)};EndpointSuffix=x",
    "--secret",
    _canary(33),
    "--client-secret=" + _canary(34),
    f"http://h/x?token={_canary(35)}&api_key={_canary(36)}",
    "--password",
    f"two words {_canary(37)}",
    "PGPASSWORD=" + _canary(38),
    "MYSQL_PWD=" + _canary(39),
    "--hf-token",  # vLLM's bare --hf-token (use the stored login): the next is an option
    "--served-model-name",
    "served-m",
    "--port",
    "8000",
    "--tokenizer",
    "/models/tok",
    "--max-num-batched-tokens",
    "8192",
    "--ssl-keyfile",
    "/etc/tls/key.pem",
    "--allowed-headers",
    "x-request-id",
)
CANARIES: tuple[str, ...] = (
    *(_canary(n) for n in range(1, 26)),
    "8675309126",
    "8675309127",
    *(_canary(n) for n in range(28, 40)),
)

#: The receipt's argv, written out by hand: every name kept, every secret ``***``.
SHOWN: list[str] = [
    "--api-key=***",
    "--api-key",
    "***",
    "***",
    "--model",
    "/models/m",
    "-k",
    "***",
    "-k***",
    "--token",
    "***",
    "--auth",
    "***",
    "--auth=***",
    "--password",
    "***",
    "--hf-token",
    "***",
    "--hf_token=***",
    "--api-k",
    "***",
    "--tensor-parallel-size",
    "2",
    "env",
    "VLLM_API_KEY=***",
    "HF_TOKEN=***",
    "FOO_SECRET=***",
    "HUGGING_FACE_HUB_TOKEN=***",
    "OPENAI_API_KEY=***",
    "AWS_SECRET_ACCESS_KEY=***",
    "AWS_SESSION_TOKEN=***",
    "WANDB_API_KEY=***",
    "GITHUB_TOKEN=***",
    "hf_token=***",
    "TOKENIZERS_PARALLELISM=false",
    "https://***@h/",
    "--header",
    "Authorization: ***",
    "--header",
    "X-Api-Key: ***",
    "--watermark-config",
    "***",
    "--watermark-config.key=***",
    "--kv-transfer-config",
    '{"kv_role": "kv_both", "kv_connector_extra_config": {"api_token": "***"}}',
    "--env=AWS_SESSION_TOKEN=***",
    "sh",
    "-c",
    "HF_TOKEN=*** exec vllm serve /models/m --api-key *** --port 8000",
    "--model-loader-extra-config",
    "AccountName=a;AccountKey=***;EndpointSuffix=x",
    "--secret",
    "***",
    "--client-secret=***",
    "http://h/x?token=***&api_key=***",
    "--password",
    "***",
    "PGPASSWORD=***",
    "MYSQL_PWD=***",
    "--hf-token",
    "--served-model-name",
    "served-m",
    "--port",
    "8000",
    "--tokenizer",
    "/models/tok",
    "--max-num-batched-tokens",
    "8192",
    "--ssl-keyfile",
    "/etc/tls/key.pem",
    "--allowed-headers",
    "x-request-id",
]


def _hits(where: str, data: str | bytes) -> list[str]:
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    return [f"{canary} in {where}" for canary in CANARIES if canary.encode() in raw]


def _files(root: Path) -> Iterator[tuple[Path, bytes]]:
    for path in sorted(root.rglob("*")):
        if path.is_file():
            yield path, path.read_bytes()


def _argvs(document: object) -> list[list[str]]:
    """Every ``argv`` list in a JSON document."""
    found: list[list[str]] = []
    stack = [document]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found += [v for k, v in item.items() if k == "argv" and isinstance(v, list)]
            stack += item.values()
        elif isinstance(item, list):
            stack += item
    return found


def _launch(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    receipt, log = tmp_path / "launch.receipt", tmp_path / "launch.log"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "vllm_evidence",
            "launch",
            "--receipt",
            str(receipt),
            "--log",
            str(log),
            "--",
            sys.executable,
            "-c",
            CHILD,
            *PLANTED,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "1\n"
    hits = _hits("launch stdout", out.stdout) + _hits("launch stderr", out.stderr)
    return receipt, log, hits


def _render(
    tmp_path: Path, receipt: Path, log: Path, name: str
) -> tuple[list[str], list[list[str]]]:
    """``probe`` (text, JSON, --save) and ``explain`` (text, JSON) with ``receipt``: the
    canaries found, and every argv the JSON documents show."""
    hits: list[str] = []
    argvs: list[list[str]] = []
    joined = ("--startup-log", str(log), "--receipt", str(receipt))
    saved = tmp_path / f"saved-{name}"
    with serve_capture(REAL) as door:
        runs = {
            "probe text": run_cli("probe", door.url, *joined, "--save", str(saved)),
            "probe json": run_cli("probe", door.url, *joined, "--json"),
        }
    runs["explain text"] = run_cli("explain", str(saved), *joined)
    runs["explain json"] = run_cli("explain", str(saved), *joined, "--json")
    for what, out in runs.items():
        assert out.returncode == 0, (what, out.stderr)
        assert "Traceback" not in out.stderr
        hits += _hits(f"{name}: {what} stdout", out.stdout)
        hits += _hits(f"{name}: {what} stderr", out.stderr)
        if what.endswith("json"):
            argvs += _argvs(json.loads(out.stdout))
    for path, data in _files(saved):
        hits += _hits(f"{name}: saved {path.name}", data)
    return hits, argvs


def test_no_planted_secret_reaches_a_receipt_a_log_or_any_output(tmp_path: Path) -> None:
    receipt, log, hits = _launch(tmp_path)
    hits += _hits("receipt", receipt.read_bytes())
    hits += _hits("log", log.read_bytes())
    written = json.loads(receipt.read_text(encoding="utf-8"))["argv"]
    assert written == [sys.executable, "-c", CHILD, *SHOWN]  # the shape, every name kept

    found, argvs = _render(tmp_path, receipt, log, "launched")
    hits += found
    assert argvs, "the JSON shows the receipt's command line"
    assert all(argv == written for argv in argvs)

    # A receipt written by hand (or by an older launcher) with the secrets in it: what
    # is rendered from it is scrubbed as it is read.
    document = json.loads(receipt.read_text(encoding="utf-8"))
    document["argv"] = [sys.executable, "-c", CHILD, *PLANTED]
    by_hand = tmp_path / "by-hand.receipt"
    by_hand.write_text(json.dumps(document), encoding="utf-8")
    assert _hits("by hand", by_hand.read_bytes())  # the canaries are in it
    found, argvs = _render(tmp_path, by_hand, log, "by hand")
    hits += found
    assert argvs
    assert all(argv == written for argv in argvs)

    print(f"canary secrets found: {len({h.split()[0] for h in hits})} of {len(CANARIES)} planted")
    assert hits == []


def test_the_receipt_and_its_documents_in_process_carry_no_canary(tmp_path: Path) -> None:
    from vllm_evidence import StartupLog, assess, probe_sync, read_startup_log, readback_from_batch
    from vllm_evidence._adapters.receipt import read_launch_receipt
    from vllm_evidence._output.assessment import assessment_document
    from vllm_evidence._output.report import render_report
    from vllm_evidence._rederive import dumps

    receipt_path, log_path, hits = _launch(tmp_path)
    receipt = read_launch_receipt(receipt_path)
    with serve_capture(REAL) as door:
        batch = probe_sync(door.url)
    log = read_startup_log(log_path, first_bytes=receipt.log_bytes)
    assert isinstance(log, StartupLog)
    assessment = assess(readback_from_batch(batch), log, receipt=receipt)
    seen: list[str | bytes] = [
        repr(receipt),
        receipt.raw,
        repr(receipt.argv),
        repr(assessment),
        str(assessment),
        render_report(assessment),
        repr(assessment_document(assessment)),
        dumps(assessment),
    ]
    hits += [hit for i, text in enumerate(seen) for hit in _hits(f"object {i}", text)]
    assert hits == []
    assert receipt.argv == (sys.executable, "-c", CHILD, *SHOWN)


@pytest.mark.parametrize("name", ["HF_TOKEN", "hf_token"])
def test_a_command_that_cannot_start_is_named_without_its_value(name: str, tmp_path: Path) -> None:
    # ``env`` forgotten: the first word is an assignment, and the launcher's one line
    # names the command it could not start (as the receipt shows it).
    out = run_cli(
        "launch",
        "--receipt",
        str(tmp_path / "r.json"),
        "--",
        f"{name}={_canary(1)}",
        "vllm",
        "serve",
        "--api-key",
        _canary(2),
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("vllm-evidence launch: ")
    assert lines[0].endswith(f" cannot start '{name}=***': No such file or directory")
    assert _hits("stdout", out.stdout) + _hits("stderr", out.stderr) == []


def test_the_canaries_are_in_the_command_the_child_was_given(tmp_path: Path) -> None:
    """The other direction: the child gets its arguments unchanged (only the receipt
    shows them scrubbed), so a canary not found above was really planted."""
    echo = "import json, sys; print(json.dumps(sys.argv[1:]))"
    out = run_cli(
        "launch",
        "--receipt",
        str(tmp_path / "r.json"),
        "--log",
        str(tmp_path / "l.log"),
        "--",
        sys.executable,
        "-c",
        echo,
        *PLANTED,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == list(PLANTED)
    assert {c for c in CANARIES if c in out.stdout} == set(CANARIES)
