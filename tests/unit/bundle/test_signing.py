"""bundle.signing: `csorch gate --sign KEY` and `csorch run --sign KEY` sign the manifest
with a real SSH key (made here by ssh-keygen); `csorch verify --allowed-signers` accepts
it, and refuses evidence re-hashed after signing, an unsigned gate, another key and
another identity; a resumed gate is signed again; every reader's first line says what
the evidence proves (signed by whom, unsigned, tampered)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator import cli
from orchestrator.bundle import signing
from orchestrator.bundle.layout import SIGNATURE
from orchestrator.cli import ExitCode

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[3]
E2E = ROOT / "tests" / "fixtures" / "e2e"
runner = CliRunner()


def keypair(where: Path, name: str) -> Path:
    key = where / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)], check=True
    )
    return key


def allowed(where: Path, *entries: tuple[str, Path]) -> Path:
    path = where / "allowed_signers"
    lines = [
        f'{who} namespaces="csorch" {Path(str(key) + ".pub").read_text().strip()}'
        for who, key in entries
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    if shutil.which("ssh-keygen") is None:
        pytest.skip("needs OpenSSH's ssh-keygen")
    return keypair(tmp_path, "release"), keypair(tmp_path, "mallory")


def signed_gate(bundle: Path, out: Path, key: Path | None) -> Path:
    args = ["gate", str(E2E / "c-oob.yaml"), "--from", str(bundle), "--out", str(out)]
    done = runner.invoke(cli.app, args + (["--sign", str(key)] if key else []))
    assert done.exit_code == ExitCode.PASS, done.output
    return out


def verify(gate: Path, *args: str):
    return runner.invoke(cli.app, ["verify", str(gate), "--problems-only", *args])


def test_a_signed_gate_verifies_and_a_rehashed_one_does_not(cprog_bundles, keys, tmp_path):
    release, mallory = keys
    signers = allowed(tmp_path, ("release@example.org", release))
    gate = signed_gate(cprog_bundles["pass"], tmp_path / "gate", release)
    assert (gate / SIGNATURE).is_file()
    ok = verify(gate, "--allowed-signers", str(signers))
    assert ok.exit_code == ExitCode.PASS, ok.output
    named = verify(gate, "--allowed-signers", str(signers), "--identity", "release@example.org")
    assert named.exit_code == ExitCode.PASS, named.output
    other = verify(gate, "--allowed-signers", str(signers), "--identity", "mallory@example.org")
    assert other.exit_code == ExitCode.FAIL, other.output

    # gate.json's reasons edited, the manifest re-hashed over it: only the signature knows
    doc = json.loads((gate / "gate.json").read_text())
    doc["reasons"] = ["reviewed by hand"]
    (gate / "gate.json").write_text(json.dumps(doc, indent=1))
    manifest = json.loads((gate / "manifest.json").read_text())
    manifest["files"]["gate.json"] = hashlib.sha256((gate / "gate.json").read_bytes()).hexdigest()
    (gate / "manifest.json").write_text(json.dumps(manifest, indent=1))
    rehashed = verify(gate, "--allowed-signers", str(signers))
    assert rehashed.exit_code == ExitCode.FAIL, rehashed.output
    assert SIGNATURE in rehashed.output
    # without the allowed signers the signature still must be over this manifest
    unchecked = verify(gate)
    assert unchecked.exit_code == ExitCode.FAIL, unchecked.output


def test_an_unsigned_gate_or_another_key_fails_with_allowed_signers(cprog_bundles, keys, tmp_path):
    release, mallory = keys
    signers = allowed(tmp_path, ("release@example.org", release))
    unsigned = signed_gate(cprog_bundles["pass"], tmp_path / "unsigned", None)
    assert verify(unsigned).exit_code == ExitCode.PASS  # no signature asked for
    required = verify(unsigned, "--allowed-signers", str(signers))
    assert required.exit_code == ExitCode.FAIL and "no signature" in required.output
    forged = signed_gate(cprog_bundles["pass"], tmp_path / "forged", mallory)
    assert verify(forged).exit_code == ExitCode.PASS  # a good signature, of an unknown key
    refused = verify(forged, "--allowed-signers", str(signers))
    assert refused.exit_code == ExitCode.FAIL, refused.output
    assert "no key in" in refused.output.replace("\n", " ")


def test_sign_refuses_a_missing_key(cprog_bundles, tmp_path):
    args = ["gate", str(E2E / "c-oob.yaml"), "--from", str(cprog_bundles["pass"])]
    done = runner.invoke(cli.app, [*args, "--out", str(tmp_path / "g"), "--sign", "nokey"])
    assert done.exit_code == ExitCode.USAGE and "--sign nokey" in done.output
    assert not (tmp_path / "g").exists()


def test_check_says_why(tmp_path):
    assert signing.check(tmp_path, None) == f"no signature ({SIGNATURE})"


# --- `csorch run --sign`, `gate --resume` of a signed gate, and what the first line says --


def csorch(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )  # fmt: skip


def rehash(bundle: Path) -> None:
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["results"]["sha256"] = hashlib.sha256(
        (bundle / "results.json").read_bytes()
    ).hexdigest()
    (bundle / "manifest.json").write_text(json.dumps(manifest, indent=1))


def test_run_signs_its_bundle_as_the_gate_does(keys, tmp_path):
    release, mallory = keys
    signers = allowed(tmp_path, ("release@example.org", release))
    out = tmp_path / "signed"
    done = csorch(
        "run", str(E2E / "c-oob.yaml"), "--backend", "asan", "--out", str(out),
        "--cache-dir", str(tmp_path / "cache"), "--sign", str(release), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == ExitCode.PASS, done.stdout[-3000:] + done.stderr[-3000:]
    assert (out / SIGNATURE).is_file()
    ok = csorch("verify", str(out), "--allowed-signers", str(signers), cwd=tmp_path)
    assert ok.returncode == ExitCode.PASS, ok.stdout + ok.stderr
    first = ok.stdout.splitlines()[0]
    assert first.startswith("evidence: signed by release@example.org (ED25519 key SHA256:")
    # every reader says it first: verify without the signers file, compare --from, report
    plain = csorch("verify", str(out), cwd=tmp_path)
    assert plain.returncode == ExitCode.PASS
    assert plain.stdout.splitlines()[0].startswith("evidence: signed by ED25519 key SHA256:")
    compared = csorch("compare", "--from", str(out), cwd=tmp_path)
    assert compared.stdout.splitlines()[0].startswith("evidence: signed by"), compared.stdout
    shown = csorch("report", str(out), "--format", "json", cwd=tmp_path)
    assert shown.returncode == ExitCode.PASS and json.loads(shown.stdout)["verdict"] == "pass"
    assert shown.stderr.splitlines()[0].startswith("evidence: signed by"), shown.stderr
    # results.json edited where nothing re-derives it, every digest recomputed: only the
    # signature knows
    doc = json.loads((out / "results.json").read_text())
    doc["started"] = "2020-01-01T00:00:00+00:00"
    (out / "results.json").write_text(json.dumps(doc, indent=1))
    rehash(out)
    edited = csorch("verify", str(out), cwd=tmp_path)
    assert edited.returncode == ExitCode.FAIL, edited.stdout
    assert edited.stdout.splitlines()[0].startswith("evidence: tampered")
    assert "not over this manifest" in edited.stdout
    # the signature removed as well: consistent, and said to be no more than that
    (out / SIGNATURE).unlink()
    bare = csorch("verify", str(out), cwd=tmp_path)
    assert bare.returncode == ExitCode.PASS, bare.stdout
    assert bare.stdout.splitlines()[0] == (
        "evidence: unsigned: consistent, but anyone who can write could have re-hashed it"
    )
    required = csorch("verify", str(out), "--allowed-signers", str(signers), cwd=tmp_path)
    assert required.returncode == ExitCode.FAIL and "no signature" in required.stdout


def test_run_refuses_a_missing_key_before_it_runs(tmp_path):
    done = csorch(
        "run", str(E2E / "c-oob.yaml"), "--backend", "asan", "--out", str(tmp_path / "b"),
        "--sign", str(tmp_path / "nokey"), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == ExitCode.USAGE and "no such key file" in done.stderr
    assert not (tmp_path / "b").exists()


def test_a_resumed_signed_gate_is_signed_again(keys, tmp_path):
    release, _ = keys
    signers = allowed(tmp_path, ("release@example.org", release))
    gate = tmp_path / "gate"
    done = csorch(
        "gate", str(E2E / "gate-cprog.yaml"), "--backend", "asan", "--out", str(gate),
        "--cache-dir", str(tmp_path / "cache"), "--sign", str(release), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == ExitCode.PASS, done.stdout[-3000:] + done.stderr[-3000:]
    before = (gate / SIGNATURE).read_bytes()
    again = csorch("gate", "--resume", str(gate), cwd=tmp_path)
    assert again.returncode == ExitCode.PASS, again.stdout[-3000:] + again.stderr[-3000:]
    assert (gate / SIGNATURE).is_file() and (gate / SIGNATURE).read_bytes() != before
    ok = csorch("verify", str(gate), "--allowed-signers", str(signers), cwd=tmp_path)
    assert ok.returncode == ExitCode.PASS, ok.stdout
    assert ok.stdout.splitlines()[0].startswith("evidence: signed by release@example.org")


def test_a_resumed_signed_run_is_signed_again(keys, tmp_path):
    # its journal keeps the key; a resume without --sign signs with it again
    release, _ = keys
    signers = allowed(tmp_path, ("release@example.org", release))
    out = tmp_path / "run"
    done = csorch(
        "run", str(E2E / "c-oob.yaml"), "--backend", "asan", "--out", str(out),
        "--cache-dir", str(tmp_path / "cache"), "--sign", str(release), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == ExitCode.PASS, done.stdout[-3000:] + done.stderr[-3000:]
    before = (out / SIGNATURE).read_bytes()
    again = csorch("run", "--resume", str(out), cwd=tmp_path)
    assert again.returncode == ExitCode.PASS, again.stdout[-3000:] + again.stderr[-3000:]
    assert (out / SIGNATURE).is_file() and (out / SIGNATURE).read_bytes() != before
    ok = csorch("verify", str(out), "--allowed-signers", str(signers), cwd=tmp_path)
    assert ok.returncode == ExitCode.PASS, ok.stdout
    assert ok.stdout.splitlines()[0].startswith("evidence: signed by release@example.org")
    # the key gone since: refused by name before anything runs, the signature left alone
    moved = release.rename(tmp_path / "elsewhere")
    refused = csorch("run", "--resume", str(out), cwd=tmp_path)
    assert refused.returncode == ExitCode.USAGE, refused.stdout + refused.stderr
    assert f"--sign {release}: no such key file" in refused.stderr
    assert "a resumed run signs with the key it began with" in refused.stderr
    moved.rename(release)
    ok = csorch("verify", str(out), "--allowed-signers", str(signers), cwd=tmp_path)
    assert ok.returncode == ExitCode.PASS, ok.stdout


def test_signer_options_that_cannot_be_checked_are_usage_errors(cprog_bundles, tmp_path):
    gate = signed_gate(cprog_bundles["pass"], tmp_path / "gate", None)
    for where in (gate, cprog_bundles["pass"]):
        alone = runner.invoke(cli.app, ["verify", str(where), "--identity", "release"])
        assert alone.exit_code == ExitCode.USAGE, alone.output
        assert "--allowed-signers" in alone.output
        missing = verify(where, "--allowed-signers", str(tmp_path / "absent"))
        assert missing.exit_code == ExitCode.USAGE, missing.output
        assert "no such file" in missing.output
