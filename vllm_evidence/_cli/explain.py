"""``vllm-evidence explain DIRECTORY``: decide from a saved (or bare) capture directory."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from vllm_evidence._cli._fleet import add_receipt_key_argument, receipt_public_key
from vllm_evidence._cli._output import fail
from vllm_evidence._cli._report import add_report_arguments, gate_one, print_report
from vllm_evidence._scrub import scrub

if TYPE_CHECKING:
    from vllm_evidence._capture.signing import VerificationKey

PROG = "vllm-evidence explain"

EPILOG = """\
examples:
  vllm-evidence explain capture/                  a directory saved by `probe --save`
  vllm-evidence explain capture/ --verify-key capture-public.pem
  vllm-evidence explain bodies/ --bodies --startup-log vllm.log --json
  vllm-evidence explain capture/ --require parallel

A saved directory's manifest is checked against its seal (and, with --verify-key, its
Ed25519 signature under that public key), the directory must hold exactly the files it
lists, and every file's size and digest is verified; every observation is re-derived
from the raw bytes and a decision is never read back from JSON.  A capture saved before
Ed25519 signatures (capture-manifest/2) is read as it was: with --verify-key-env VAR
holding the HMAC key it was signed with.  A startup.log is used only when the manifest
lists it (probe --save --startup-log) or --startup-log names a log.  A directory of bare
<route>.body files is read only with --bodies, as a historical bundle (never joined).
The report's provenance line says whether the capture was signed.  --receipt joins the
log to the saved front door only when the capture's signature verified (an unsigned
capture's start time is asserted by a file, not observed: log_join capture_unverified)
and the receipt's verified under --receipt-public-key (or the PEM text in
VLLM_EVIDENCE_RECEIPT_PUBLIC_KEY).
A capture of a front door that answered nothing (or only errors) is assessed like any
other: every claim about the serving process refused (front_door_unreachable or
front_door_not_answering), and one line on stderr says so.
exit status: 0 assessed, 2 unreadable or tampered input, 3 a --require'd claim refused.
"""


def register(subparsers: Any) -> None:
    """Add the ``explain`` subcommand."""
    parser = subparsers.add_parser(
        "explain",
        help="decide from a saved capture directory (or a directory of bodies)",
        description=(
            "Load a capture directory (verifying its digests) or a directory of bare "
            "bodies, re-derive every observation from the bytes, and report what the "
            "evidence does and does not establish."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("directory", help="a directory saved by `probe`, or of <route>.body files")
    parser.add_argument("--startup-log", metavar="FILE", help="the server's startup log")
    parser.add_argument(
        "--launch", type=int, metavar="N", help="which launch of the log (default: the last)"
    )
    parser.add_argument(
        "--bodies",
        action="store_true",
        help="read a directory without manifest.json as bare bodies (proves nothing about "
        "one batch; marked so in the provenance)",
    )
    verify = parser.add_mutually_exclusive_group()
    verify.add_argument(
        "--verify-key",
        metavar="FILE",
        help="refuse the directory unless its manifest is signed by this Ed25519 public key (PEM)",
    )
    verify.add_argument(
        "--verify-key-env",
        metavar="VAR",
        help="the same, the key in $VAR: a PEM public key, or the HMAC key a capture "
        "saved before Ed25519 signatures was signed with",
    )
    parser.add_argument(
        "--receipt",
        metavar="FILE",
        help="the launch receipt `vllm-evidence launch` wrote for the log (joins the log "
        "only to a capture whose signature verified, with a receipt that verifies under "
        "--receipt-public-key)",
    )
    add_receipt_key_argument(parser)
    add_report_arguments(parser)
    parser.set_defaults(handler=run)


def _verify_key(args: argparse.Namespace) -> VerificationKey | bytes | None:
    """The capture's verification key: a PEM public key (a file, or the variable's
    text), or the HMAC key bytes in the variable for a capture saved before."""
    import os

    from vllm_evidence._capture.signing import (
        environment_hmac_key,
        environment_verification_key,
        read_verification_key,
    )

    if args.verify_key is not None:
        return read_verification_key(args.verify_key, what="--verify-key")
    if args.verify_key_env is None:
        return None
    if "-----BEGIN " in os.environ.get(args.verify_key_env, ""):
        return environment_verification_key("--verify-key-env", args.verify_key_env)
    return environment_hmac_key("--verify-key-env", args.verify_key_env)


def run(args: argparse.Namespace) -> int:
    """Load the directory (and log), assess, print, and gate on ``--require``."""
    from vllm_evidence._adapters.startup_log import LogReadFailure, read_startup_log
    from vllm_evidence._assessment import assess
    from vllm_evidence._capture.directory import BareBodies, read_capture
    from vllm_evidence._readback import historical_bundle, readback_from_batch
    from vllm_evidence.errors import CaptureIntegrityError, InputError

    try:
        read = read_capture(args.directory, bodies=args.bodies, verify_key=_verify_key(args))
        receipt_key = receipt_public_key(args.receipt_public_key, receipts=bool(args.receipt))
    except InputError as exc:
        return fail(PROG, str(exc))
    provenance = read.provenance
    readback = (
        historical_bundle(read.capture.bodies, statuses=read.capture.statuses)
        if isinstance(read.capture, BareBodies)
        else readback_from_batch(read.capture)
    )
    log_path = args.startup_log or provenance.startup_log
    if args.receipt and log_path is None:
        return fail(PROG, "--receipt goes with a startup log: a receipt witnesses a log")
    receipt = None
    if args.receipt:
        from vllm_evidence._adapters.receipt import read_launch_receipt

        try:
            receipt = read_launch_receipt(args.receipt, verification_key=receipt_key)
        except InputError as exc:
            return fail(PROG, str(exc))
    log = None
    if log_path is not None:
        # A log named here is read, with a receipt, to the length the receipt digested
        # (it keeps growing after the receipt is written); a saved copy is read whole.
        first_bytes = receipt.log_bytes if receipt is not None and args.startup_log else None
        log_read = read_startup_log(log_path, first_bytes=first_bytes)
        if isinstance(log_read, LogReadFailure):
            return fail(PROG, log_read.describe())
        log = log_read
        if args.startup_log is None and log.sha256 != provenance.startup_log_sha256:
            error = CaptureIntegrityError(
                f"{log_path}: changed while it was read; nothing is derived from it"
            )
            return fail(PROG, str(error))
    try:
        assessment = assess(readback, log, launch=args.launch, receipt=receipt)
    except InputError as exc:
        return fail(PROG, str(exc))
    print_report(assessment, json_out=args.json)
    if isinstance(read.capture, BareBodies):
        # A captured batch carries its provenance into the report and the document; bare
        # bodies are a caller's bundle, so the line is said here (stderr beside --json).
        note = scrub(f"provenance: {provenance.describe()}") + "\n"
        (sys.stderr if args.json else sys.stdout).write(note)
    # A capture of a front door that answered nothing is evidence like any other.
    return gate_one(PROG, assessment, args.require, "the saved front door")
