"""gate.signing: `csorch gate --sign KEY` signs the gate's manifest with a real SSH key
(made here by ssh-keygen); `csorch verify --allowed-signers` accepts it, and refuses a
gate re-hashed after signing, an unsigned gate, another key and another identity."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator import cli
from orchestrator.bundle.layout import SIGNATURE
from orchestrator.cli import ExitCode
from orchestrator.gate import signing

pytestmark = pytest.mark.process

E2E = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "e2e"
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
