"""Signing a manifest with an SSH key, as git signs commits (`ssh-keygen -Y`).

A manifest proves only that the files are the ones it lists: someone who can edit the
files can re-hash them and rewrite it. `csorch run --sign KEY` signs the bundle's
manifest.json (which covers results.json, the journal and every log), `csorch gate
--sign KEY` the gate's (which covers gate.json, report.md and each bundle's manifest, and
so every results.json and log), with `ssh-keygen -Y sign -n csorch -f KEY`, into
manifest.json.sig beside it. `csorch verify DIR --allowed-signers FILE [--identity NAME]`
checks it with `ssh-keygen -Y verify` against an allowed-signers file (the format of
git's gpg.ssh.allowedSignersFile); without one, `-Y check-novalidate` still proves the
signature is over this manifest (not who made it). The processes start through proc.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from orchestrator import proc
from orchestrator.bundle.layout import MANIFEST, SIGNATURE
from orchestrator.errors import CsorchError, ProcessStartError

#: the namespace of csorch's signatures (`ssh-keygen -Y ... -n`): a signature made for
#: git or for a file elsewhere does not verify here
NAMESPACE = "csorch"
_TIMEOUT = 60.0
# `ssh-keygen -Y verify` reads the signed data from its stdin only: a shell redirects it,
# the paths passed as positional parameters (never spliced into the script)
_FROM_FILE = 'f="$1"; shift; exec ssh-keygen "$@" < "$f"'


def _keygen(argv: list[str], data: Path | None = None) -> proc.Captured:
    try:
        if data is None:
            return proc.capture(["ssh-keygen", *argv], timeout=_TIMEOUT)
        return proc.capture(["sh", "-c", _FROM_FILE, "sh", str(data), *argv], timeout=_TIMEOUT)
    except ProcessStartError as exc:
        raise CsorchError(
            f"ssh-keygen cannot be started: {exc}", hint="install OpenSSH's ssh-keygen (8.1+)"
        ) from None


def sign(root: Path, key: Path) -> Path:
    """Sign `root`/manifest.json with the SSH private key `key`; the signature's path.
    CsorchError when the key is missing or ssh-keygen refuses (a passphrase cannot be
    asked for: use an agent-less unencrypted key, or sign later by hand)."""
    manifest, sig = root / MANIFEST, root / SIGNATURE
    if not Path(key).is_file():
        raise CsorchError(f"--sign {key}: no such key file", hint="give an SSH private key")
    sig.unlink(missing_ok=True)  # ssh-keygen would ask before replacing it
    done = _keygen(["-Y", "sign", "-n", NAMESPACE, "-f", str(key), str(manifest)])
    if done.returncode != 0 or not sig.is_file():
        raise CsorchError(
            f"ssh-keygen could not sign {manifest} with {key}: {done.output.strip()[-300:]}",
            hint="the key must be an SSH private key readable without a passphrase",
        )
    return sig


def principals(root: Path, allowed: Path) -> list[str]:
    """The identities of `allowed` whose key made the signature in `root`."""
    done = _keygen(["-Y", "find-principals", "-s", str(root / SIGNATURE), "-f", str(allowed)])
    if done.returncode != 0:
        return []
    return [line.strip() for line in done.output.splitlines() if line.strip()]


def present(root: Path) -> bool:
    """Whether `root` holds a signature file (a link or any other kind counts: it is there
    to be checked, and refused)."""
    sig = root / SIGNATURE
    return sig.exists() or sig.is_symlink()


@dataclass(frozen=True)
class Signed:
    """What the signature beside a manifest proves: `why` is "" when it is good, and then
    `signer` says who made it (an identity of the allowed-signers file when one was given,
    else only the key's fingerprint)."""

    why: str
    signer: str = ""

    @property
    def ok(self) -> bool:
        return not self.why


# Good "csorch" signature for rel@x with ED25519 key SHA256:f62RDus0...
_KEY_RE = re.compile(r"with (?P<key>\S+ key \S+)")


def _key(output: str) -> str:
    found = _KEY_RE.search(output)
    return found["key"] if found else "an SSH key"


def examine(root: Path, allowed: Path | None, identity: str | None = None) -> Signed:
    """The signature of `root`'s manifest, checked. With `allowed` (an allowed-signers
    file) the signer must be in it (as `identity` when given); without, the signature need
    only be over this very manifest, and who made it is not known."""
    sig, manifest = root / SIGNATURE, root / MANIFEST
    if sig.is_symlink() or not sig.is_file():
        return Signed(f"no signature ({SIGNATURE})")
    if allowed is None:
        done = _keygen(["-Y", "check-novalidate", "-n", NAMESPACE, "-s", str(sig)], manifest)
        if done.returncode != 0:
            return Signed(f"the signature is not over this manifest: {done.output.strip()[-200:]}")
        return Signed("", f"{_key(done.output)} (whose key: not checked, no --allowed-signers)")
    if not allowed.is_file():
        return Signed(f"--allowed-signers {allowed}: no such file")
    names = [identity] if identity else principals(root, allowed)
    if not names:
        return Signed(f"no key in {allowed} made this signature")
    why = ""
    for name in names:
        argv = ["-Y", "verify", "-f", str(allowed), "-I", name, "-n", NAMESPACE, "-s", str(sig)]
        done = _keygen(argv, manifest)
        if done.returncode == 0:
            return Signed("", f"{name} ({_key(done.output)}, in {allowed})")
        why = done.output.strip()[-200:]
    return Signed(f"the signature does not verify as {', '.join(names)} against {allowed}: {why}")


def check(root: Path, allowed: Path | None, identity: str | None = None) -> str:
    """ "" when `root`'s manifest carries a good signature, else why not (`examine`)."""
    return examine(root, allowed, identity).why
