"""Item 7 of issue 15: a capture directory that was edited is refused, not explained.

Every tamper the issue tried, on a capture saved with a signing key (Ed25519, issue 31):
each is refused when read with the signer's public key.  Those that do not recompute the
(unkeyed) seal are refused without the key too; those that do are exactly what only a
signature can tell apart.  A capture signed before, with an HMAC key
(``capture-manifest/2``), is still read and verified with that key.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests._cli import run_cli
from tests._paths import REAL
from tests._reseal import reseal
from tests._signing import (
    CAPTURE_KEY,
    HMAC_KEY,
    OTHER_CAPTURE_KEY,
    key_files,
    legacy_hmac_capture,
    pem_text,
)
from vllm_evidence._capture.batch import CaptureBatch, CaptureOrigin
from vllm_evidence._capture.directory import (
    MANIFEST,
    ProvenanceKind,
    read_capture,
    save,
)
from vllm_evidence._capture.http import probe_sync
from vllm_evidence.errors import CaptureIntegrityError, InputError
from vllm_evidence.testing._stub import serve_capture

KEY = CAPTURE_KEY
PUBLIC = CAPTURE_KEY.verification_key


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with serve_capture(REAL) as door:
        batch = probe_sync(door.url)
    return save(
        batch,
        tmp_path_factory.mktemp("signed") / "capture",
        startup_log=REAL / "startup.log",
        sign_key=KEY,
    )


def _copy(signed: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "capture"
    shutil.copytree(signed, copy, symlinks=True)
    return copy


def _entry(manifest: dict[str, Any], route: str) -> dict[str, Any]:
    entry: dict[str, Any] = next(r for r in manifest["requests"] if r["route"] == route)
    return entry


def _edit_manifest(edit: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def apply(directory: Path) -> None:
        path = directory / MANIFEST
        document = json.loads(path.read_text(encoding="utf-8"))
        edit(document)
        path.write_text(json.dumps(document, indent=2), encoding="utf-8")

    return apply


def _resealed(edit: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    return lambda directory: reseal(directory, edit)


def _status_404(m: dict[str, Any]) -> None:
    _entry(m, "server_info__config_format_json")["status"] = 404


def _timed_out(m: dict[str, Any]) -> None:
    _entry(m, "server_info")["transport"] = "timed_out"


def _no_body(m: dict[str, Any]) -> None:
    entry = _entry(m, "server_info__config_format_json")
    entry.update(body_file=None, sha256=None, size=None)


def _drop_entry(m: dict[str, Any]) -> None:
    m["requests"] = [r for r in m["requests"] if r["route"] != "server_info"]


def _unlist_log(m: dict[str, Any]) -> None:
    m["startup_log"] = None


def _body_with_new_digest(directory: Path) -> None:
    body = directory / "version.body"
    body.write_bytes(b'{"version":"0.20.0"}')

    def edit(m: dict[str, Any]) -> None:
        _entry(m, "version").update(
            sha256=hashlib.sha256(body.read_bytes()).hexdigest(), size=len(body.read_bytes())
        )

    reseal(directory, edit)


def _add_file(name: str, data: bytes = b"x") -> Callable[[Path], None]:
    def add(directory: Path) -> None:
        (directory / name).write_bytes(data)

    return add


def _remove(name: str) -> Callable[[Path], None]:
    return lambda directory: (directory / name).unlink()


def _symlink_to_dev_zero(directory: Path) -> None:
    (directory / "metrics.body").unlink()
    (directory / "metrics.body").symlink_to("/dev/zero")


def _fifo(directory: Path) -> None:
    (directory / "metrics.body").unlink()
    os.mkfifo(directory / "metrics.body")


def _two_gigabytes(directory: Path) -> None:
    with (directory / "metrics.body").open("r+b") as handle:
        handle.truncate(2 * 1024**3)  # sparse: no disk, but fstat says 2 GB


def _manifest_symlink(directory: Path) -> None:
    real = directory.parent / "elsewhere.json"
    (directory / MANIFEST).rename(real)
    (directory / MANIFEST).symlink_to(real)


def _headers_edited(directory: Path) -> None:
    path = directory / "version.headers"
    path.write_text(path.read_text().replace("200 OK", "404 Not Found"))


def _log_edited(directory: Path) -> None:
    path = directory / "startup.log"
    path.write_bytes(path.read_bytes().replace(b"tensor_parallel_size", b"tensor_parallel_sizE"))


def _schema_1(m: dict[str, Any]) -> None:
    m["schema"] = "vllm-evidence/capture-manifest/1"


def _no_seal(m: dict[str, Any]) -> None:
    del m["seal"]


def _duplicate_key(directory: Path) -> None:
    path = directory / MANIFEST
    text = path.read_text()
    path.write_text(text.replace('"batch_id":', '"batch_id": "x", "batch_id":', 1))


def _signature_dropped(m: dict[str, Any]) -> None:
    m["seal"]["signature"] = None


#: (name, tamper, refused without the key too)
TAMPERS: list[tuple[str, Callable[[Path], None], bool]] = [
    ("status edited", _edit_manifest(_status_404), True),
    ("status edited, seal recomputed", _resealed(_status_404), False),
    ("transport edited", _edit_manifest(_timed_out), True),
    ("transport edited, seal recomputed", _resealed(_timed_out), False),
    ("body_file null, seal recomputed", _resealed(_no_body), True),  # the body is unlisted
    ("entry dropped, seal recomputed", _resealed(_drop_entry), True),  # its files unlisted
    ("startup log unlisted, seal recomputed", _resealed(_unlist_log), True),
    ("body and digest replaced, seal recomputed", _body_with_new_digest, False),
    ("unlisted startup.log added", _add_file("startup.log2"), True),
    ("unlisted file added", _add_file("notes.txt"), True),
    ("hidden file added", _add_file(".version.body.swp"), True),
    ("headers file removed", _remove("version.headers"), True),
    ("body removed", _remove("metrics.body"), True),
    ("startup log removed", _remove("startup.log"), True),
    ("body symlinked to /dev/zero", _symlink_to_dev_zero, True),
    ("body replaced by a FIFO", _fifo, True),
    ("body grown to 2 GB", _two_gigabytes, True),
    ("manifest is a symlink", _manifest_symlink, True),
    ("headers file edited", _headers_edited, True),
    ("startup log edited", _log_edited, True),
    ("schema set to /1", _edit_manifest(_schema_1), True),
    ("seal removed", _edit_manifest(_no_seal), True),
    ("duplicate key in the manifest", _duplicate_key, True),
    ("signature dropped, seal recomputed", _resealed(_signature_dropped), False),
]


@pytest.mark.parametrize(
    ("tamper", "without_key"), [(t, w) for _, t, w in TAMPERS], ids=[n for n, _, _ in TAMPERS]
)
def test_every_tamper_is_refused_under_the_key(
    signed: Path, tmp_path: Path, tamper: Callable[[Path], None], without_key: bool
) -> None:
    copy = _copy(signed, tmp_path)
    tamper(copy)
    with pytest.raises(InputError):
        read_capture(copy, verify_key=PUBLIC)
    if without_key:
        with pytest.raises(InputError):
            read_capture(copy)
    else:  # what an unsigned capture cannot stop: the provenance says so, and its bytes
        # are loaded ones that no log can be joined to (log_join: capture_unverified)
        read = read_capture(copy)
        assert read.provenance.kind in {
            ProvenanceKind.UNSIGNED,
            ProvenanceKind.SIGNATURE_UNVERIFIED,
        }
        assert isinstance(read.capture, CaptureBatch)
        assert read.capture.origin is CaptureOrigin.LOADED


def _raw_public(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    public = serialization.load_pem_public_key(key.pem())
    raw: bytes = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return raw


def test_the_untouched_capture_verifies(signed: Path) -> None:
    read = read_capture(signed, verify_key=PUBLIC)
    assert read.provenance.kind is ProvenanceKind.SIGNED
    assert read.provenance.key_id == hashlib.sha256(_raw_public(PUBLIC)).hexdigest()[:16]
    assert read.provenance.startup_log == str(signed / "startup.log")
    assert f"signed by key id {KEY.key_id} (verified)" in read.provenance.describe()
    assert isinstance(read.capture, CaptureBatch)
    assert read.capture.origin is CaptureOrigin.LOADED_SIGNED
    unverified = read_capture(signed).provenance
    assert unverified.kind is ProvenanceKind.SIGNATURE_UNVERIFIED
    assert "not verified" in unverified.describe()


def test_the_manifest_is_ed25519_signed_over_its_canonical_form(signed: Path) -> None:
    """Checked here with ``cryptography`` alone: the signature is the signer's Ed25519
    signature of the manifest without its seal, compact, keys sorted."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    document = json.loads((signed / MANIFEST).read_text(encoding="utf-8"))
    assert document["schema"] == "vllm-evidence/capture-manifest/3"
    signature = document["seal"]["signature"]
    assert set(signature) == {"algorithm", "key_id", "ed25519"}
    assert signature["algorithm"] == "ed25519"
    rest = {name: value for name, value in document.items() if name != "seal"}
    covered = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    public = Ed25519PublicKey.from_public_bytes(_raw_public(PUBLIC))
    public.verify(bytes.fromhex(signature["ed25519"]), covered.encode())  # raises if not
    assert document["seal"]["canonical_sha256"] == hashlib.sha256(covered.encode()).hexdigest()


def test_another_key_is_refused_naming_both_ids(signed: Path) -> None:
    other = OTHER_CAPTURE_KEY.verification_key
    with pytest.raises(
        CaptureIntegrityError,
        match=f"signed by key id {KEY.key_id}, not by the key given [(]{other.key_id}[)]",
    ):
        read_capture(signed, verify_key=other)


def test_a_bad_signature_is_refused(signed: Path, tmp_path: Path) -> None:
    copy = _copy(signed, tmp_path)

    def flip(m: dict[str, Any]) -> None:
        value = m["seal"]["signature"]["ed25519"]
        m["seal"]["signature"]["ed25519"] = ("0" if value[0] != "0" else "1") + value[1:]

    reseal(copy, flip)
    with pytest.raises(CaptureIntegrityError, match="does not verify"):
        read_capture(copy, verify_key=PUBLIC)


def test_a_signature_made_again_by_another_key_is_refused(signed: Path, tmp_path: Path) -> None:
    """An edit signed again by whoever edited it names another key: refused under the
    signer's public key (the public key cannot sign, so no holder of it could do this)."""
    copy = _copy(signed, tmp_path)

    def edit_and_sign(m: dict[str, Any]) -> None:
        _status_404(m)
        rest = {name: value for name, value in m.items() if name != "seal"}
        covered = json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        m["seal"]["signature"] = {
            "algorithm": "ed25519",
            "key_id": OTHER_CAPTURE_KEY.key_id,
            "ed25519": OTHER_CAPTURE_KEY.sign(covered.encode()),
        }

    reseal(copy, edit_and_sign)
    with pytest.raises(CaptureIntegrityError, match=f"signed by key id {OTHER_CAPTURE_KEY.key_id}"):
        read_capture(copy, verify_key=PUBLIC)
    forged = json.loads((copy / MANIFEST).read_text(encoding="utf-8"))
    forged["seal"]["signature"]["key_id"] = KEY.key_id  # naming the signer's key
    (copy / MANIFEST).write_text(json.dumps(forged), encoding="utf-8")
    with pytest.raises(CaptureIntegrityError, match="does not verify"):
        read_capture(copy, verify_key=PUBLIC)


def test_a_signing_key_or_an_hmac_key_does_not_verify_an_ed25519_capture(signed: Path) -> None:
    with pytest.raises(InputError, match=r"verify_key is a SigningKey: .* public half only"):
        read_capture(signed, verify_key=KEY)  # type: ignore[arg-type]  # the misuse tried
    with pytest.raises(InputError, match=r"signed with Ed25519 .* not an HMAC key"):
        read_capture(signed, verify_key=HMAC_KEY)


def test_a_capture_is_never_signed_with_an_hmac_key_again(tmp_path: Path) -> None:
    with serve_capture(REAL) as door:
        batch = probe_sync(door.url)
    with pytest.raises(InputError, match="no longer with an HMAC key"):
        save(batch, tmp_path / "c", sign_key=HMAC_KEY)  # type: ignore[arg-type]  # bytes refused
    assert not (tmp_path / "c").exists()


# --- captures saved before: HMAC-SHA256, manifest /2 ------------------------------------


@pytest.fixture(scope="module")
def legacy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with serve_capture(REAL) as door:
        batch = probe_sync(door.url)
    saved = save(batch, tmp_path_factory.mktemp("legacy") / "capture")
    return legacy_hmac_capture(saved)


def test_an_hmac_signed_capture_saved_before_is_read_and_verified(legacy: Path) -> None:
    read = read_capture(legacy, verify_key=HMAC_KEY)
    assert read.provenance.kind is ProvenanceKind.SIGNED
    assert read.provenance.key_id == hashlib.sha256(HMAC_KEY).hexdigest()[:8]
    assert isinstance(read.capture, CaptureBatch)
    assert read.capture.origin is CaptureOrigin.LOADED_SIGNED
    unverified = read_capture(legacy)
    assert unverified.provenance.kind is ProvenanceKind.SIGNATURE_UNVERIFIED
    assert isinstance(unverified.capture, CaptureBatch)
    assert unverified.capture.origin is CaptureOrigin.LOADED


def test_an_hmac_signed_capture_is_refused_under_another_key_or_a_public_key(
    legacy: Path, tmp_path: Path
) -> None:
    with pytest.raises(CaptureIntegrityError, match="not by the key given"):
        read_capture(legacy, verify_key=b"another-key-of-thirty-two-bytes!")
    with pytest.raises(InputError, match="signed with an HMAC-SHA256 key"):
        read_capture(legacy, verify_key=PUBLIC)
    copy = _copy(legacy, tmp_path)
    reseal(copy, _status_404)
    with pytest.raises(CaptureIntegrityError, match="does not verify"):
        read_capture(copy, verify_key=HMAC_KEY)


def test_the_recorded_captures_saved_before_still_read() -> None:
    """The real captures the recorder saved (``capture-manifest/2``, unsigned)."""
    recorded = sorted((REAL.parents[1] / "real").glob("*/*/capture/manifest.json"))
    assert recorded
    for manifest in recorded:
        assert json.loads(manifest.read_text(encoding="utf-8"))["schema"].endswith("/2")
        assert read_capture(manifest.parent).provenance.kind is ProvenanceKind.UNSIGNED


def test_a_directory_without_a_manifest_needs_bodies(tmp_path: Path) -> None:
    """Also the hidden ``.NAME.xxxx`` a kill -9 mid-save leaves: bodies, no manifest."""
    staging = tmp_path / ".capture.k3y9"
    staging.mkdir()
    shutil.copy(REAL / "version.body", staging)
    with pytest.raises(InputError, match=r"no manifest\.json.*--bodies"):
        read_capture(staging)
    bare = read_capture(staging, bodies=True)
    assert bare.provenance.kind is ProvenanceKind.BARE
    with pytest.raises(CaptureIntegrityError, match="nothing here is signed"):
        read_capture(staging, bodies=True, verify_key=PUBLIC)


def test_a_bare_body_symlinked_to_dev_zero_is_refused(tmp_path: Path) -> None:
    (tmp_path / "metrics.body").symlink_to("/dev/zero")
    with pytest.raises(CaptureIntegrityError, match="symbolic link"):
        read_capture(tmp_path, bodies=True)


# --- through the command line ---------------------------------------------------------


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env=env, timeout=120)


def test_probe_signs_and_explain_verifies(tmp_path: Path) -> None:
    env = {"SIGN": pem_text(KEY), "PUBLIC": pem_text(KEY, public=True)}
    private, public = key_files(tmp_path, KEY)
    with serve_capture(REAL) as door:
        saved, from_file = tmp_path / "capture", tmp_path / "from-file"
        out = _cli("probe", door.url, "--save", str(saved), "--sign-key-env", "SIGN", env=env)
        assert out.returncode == 0, out.stderr
        out = _cli("probe", door.url, "--save", str(from_file), "--sign-key", str(private))
        assert out.returncode == 0, out.stderr
    for directory in (saved, from_file):
        for how in (["--verify-key-env", "PUBLIC"], ["--verify-key", str(public)]):
            verified = _cli("explain", str(directory), *how, env=env)
            assert verified.returncode == 0, verified.stderr
            assert f"signed by key id {KEY.key_id} (verified)" in verified.stdout
    reseal(saved, _status_404)
    refused = _cli("explain", str(saved), "--verify-key", str(public))
    assert refused.returncode == 2
    assert "does not verify" in refused.stderr
    assert refused.stdout == ""
    for text in (pem_text(KEY), pem_text(KEY, public=True)):
        assert text.splitlines()[1] not in out.stdout + out.stderr  # no key is printed


def test_explain_reads_an_hmac_capture_saved_before_with_its_key(legacy: Path) -> None:
    env = {"SIGN": HMAC_KEY.decode()}
    verified = _cli("explain", str(legacy), "--verify-key-env", "SIGN", env=env)
    assert verified.returncode == 0, verified.stderr
    assert f"signed by key id {hashlib.sha256(HMAC_KEY).hexdigest()[:8]} (verified)" in (
        verified.stdout
    )


def test_an_unsigned_capture_says_so_and_is_refused_under_a_key(tmp_path: Path) -> None:
    with serve_capture(REAL) as door:
        saved = tmp_path / "capture"
        assert _cli("probe", door.url, "--save", str(saved)).returncode == 0
    out = _cli("explain", str(saved))
    # The report's head: the title, the answer (wrapped), the subject, then provenance.
    words = " ".join(out.stdout.split())
    assert (
        " subject: serving (the process behind the front door) provenance: capture directory "
        in words
    )
    assert "unsigned" in words.split("provenance:", 1)[1].split("parallel layout", 1)[0]
    document = json.loads(_cli("explain", str(saved), "--json").stdout)
    source = document["front_door"]["source"]
    assert source["origin"] == "loaded"
    assert source["provenance"]["kind"] == "unsigned"
    assert "unsigned" in source["provenance"]["description"]
    env = {"SIGN": pem_text(KEY, public=True)}
    refused = _cli("explain", str(saved), "--verify-key-env", "SIGN", env=env)
    assert refused.returncode == 2
    assert f"unsigned, but a signature by key id {KEY.key_id} is required" in refused.stderr


def test_an_unlisted_startup_log_is_not_read(tmp_path: Path) -> None:
    with serve_capture(REAL) as door:
        saved = tmp_path / "capture"
        assert _cli("probe", door.url, "--save", str(saved)).returncode == 0
    shutil.copy(REAL / "startup.log", saved / "startup.log")
    out = _cli("explain", str(saved))
    assert out.returncode == 2
    assert "does not list: 'startup.log'" in out.stderr


def test_a_listed_startup_log_is_read_from_the_capture(tmp_path: Path) -> None:
    with serve_capture(REAL) as door:
        saved = tmp_path / "capture"
        argv = ["probe", door.url, "--save", str(saved), "--startup-log", str(REAL / "startup.log")]
        assert _cli(*argv).returncode == 0
    out = _cli("explain", str(saved))
    assert out.returncode == 0, out.stderr
    assert f"startup log {saved / 'startup.log'}" in out.stdout


def test_a_bare_directory_needs_bodies_and_is_marked(tmp_path: Path) -> None:
    refused = _cli("explain", str(REAL))
    assert refused.returncode == 2
    assert "--bodies" in refused.stderr
    out = _cli("explain", str(REAL), "--bodies")
    assert out.returncode == 0
    assert "bare bodies read with --bodies" in out.stdout.splitlines()[-1]
    # the directory's startup.log is not read without --startup-log
    assert not [line for line in out.stdout.splitlines() if line.startswith("  startup log ")]


def test_a_failed_save_keeps_the_report(tmp_path: Path) -> None:
    (tmp_path / "exists").mkdir()
    with serve_capture(REAL) as door:
        out = _cli("probe", door.url, "--save", str(tmp_path / "exists"))
    assert out.returncode == 2
    assert out.stdout.startswith("http://127.0.0.1:")  # the report is printed
    assert "already exists" in out.stderr
    assert len(out.stderr.splitlines()) == 1


def test_fleet_urls_mapping_to_one_folder_get_distinct_names(tmp_path: Path) -> None:
    with serve_capture(REAL) as door:
        out = _cli("probe", door.url, door.url + "/", "--save", str(tmp_path / "fleet"))
    assert out.returncode == 0, out.stderr
    names = sorted(p.name for p in (tmp_path / "fleet").iterdir())
    assert len(names) == 2
    assert names[1] == names[0] + "-2"
    for name in names:
        assert read_capture(tmp_path / "fleet" / name).provenance.kind is ProvenanceKind.UNSIGNED


def test_sign_key_without_save_is_one_line(tmp_path: Path) -> None:
    out = _cli("probe", "http://127.0.0.1:1", "--sign-key-env", "SIGN", env={"SIGN": "k"})
    assert out.returncode == 2
    assert "--sign-key-env signs a saved capture: give --save DIR" in out.stderr
    private, _ = key_files(tmp_path, KEY)
    out = _cli("probe", "http://127.0.0.1:1", "--sign-key", str(private))
    assert out.returncode == 2
    assert "--sign-key signs a saved capture: give --save DIR" in out.stderr
