"""A gate's directory as evidence: the manifest `csorch gate --out` writes over what it
wrote, and its verification.

    OUT/manifest.json   schema csorch.gate-manifest/1: the sha256 of gate.json and
                        report.md, and of each judged experiment bundle's own manifest
    OUT/gate.json, OUT/report.md, OUT/gate-run.json (a gate that ran: its settings)
    OUT/<experiment>/   the bundles of a gate that ran (each verifies on its own)

`verify` re-hashes the gate's files, checks that each bundle still has the manifest the
gate judged (a bundle swapped for another run is a MISMATCH even if it verifies on its
own), verifies every bundle (`verify.verify`), and reports what appeared afterwards (a
new bundle, a new file) as UNLISTED. A bundle judged by `--from` outside OUT is
checked where it was; gone, it is NOT_CHECKABLE, as a moved config is. Reads and hashes
files; prints nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orchestrator import __version__
from orchestrator.bundle import MANIFEST, RESULTS
from orchestrator.bundle.verify import Check, Kind, Status, Verification, verify
from orchestrator.errors import BundleError
from orchestrator.files import atomic_write, file_digest

SCHEMA = "csorch.gate-manifest/1"
GATE = "gate.json"
REPORT = "report.md"
FILES = (GATE, REPORT)
#: covered when present: the settings a running gate kept for `csorch gate --resume`
OPTIONAL = ("gate-run.json",)


def write_manifest(root: Path, bundles: Sequence[Path]) -> None:
    """Record the digests of the gate's files and of each bundle's manifest (last, once
    gate.json and report.md are written)."""
    root = root.resolve()
    inside: dict[str, str] = {}
    outside: dict[str, str] = {}
    for b in bundles:
        b = Path(b).resolve()
        digest = file_digest(b / MANIFEST) if (b / MANIFEST).is_file() else ""
        if b.is_relative_to(root):
            inside[b.relative_to(root).as_posix()] = digest
        else:
            outside[str(b)] = digest
    doc = {
        "schema": SCHEMA,
        "csorch": __version__,
        "files": {
            name: file_digest(root / name)
            for name in (*FILES, *OPTIONAL)
            if (root / name).is_file()
        },
        "bundles": inside,
        "outside": outside,
    }
    atomic_write(root / MANIFEST, json.dumps(doc, indent=1))


def is_gate_dir(root: Path) -> bool:
    """A directory a gate wrote (its gate.json), whatever its manifest says."""
    return (Path(root) / GATE).is_file() and not (Path(root) / RESULTS).exists()


def _manifest(root: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads((root / MANIFEST).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise BundleError(root, f"{MANIFEST} is not readable JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        schema = doc.get("schema") if isinstance(doc, dict) else None
        raise BundleError(root, f"{MANIFEST} has schema {schema!r}, expected {SCHEMA}")
    return doc


def _bundle(root: Path, shown: str, path: Path, expected: str, outside: bool) -> list[Check]:
    if not (path / MANIFEST).is_file():
        status = Status.NOT_CHECKABLE if outside else Status.MISSING
        why = "no longer at this path (outside the gate directory)" if outside else "deleted"
        return [Check(Kind.BUNDLE, shown, status, expected=expected, detail=why)]
    actual = file_digest(path / MANIFEST)
    if expected and actual != expected:
        head = Check(
            Kind.BUNDLE, shown, Status.MISMATCH, expected=expected, actual=actual,
            detail="not the bundle the gate judged: its manifest changed since the gate",
        )  # fmt: skip
    else:
        head = Check(Kind.BUNDLE, shown, Status.OK, expected=expected, actual=actual)
    try:
        inner = verify(path)
    except BundleError as exc:
        return [head, Check(Kind.BUNDLE, shown, Status.MISMATCH, detail=exc.message)]
    prefix = "" if outside else shown + "/"
    return [head] + [
        Check(
            c.kind,
            c.path if Path(c.path).is_absolute() or outside else prefix + c.path,
            c.status,
            c.subject or shown,
            c.expected,
            c.actual,
            c.detail,
        )
        for c in inner.checks
    ]


def verify_gate(root: Path | str) -> Verification:
    """Re-check a gate directory: its files, and every bundle it judged."""
    root = Path(root)
    doc = _manifest(root)
    if doc is None:
        check = Check(
            Kind.GATE, MANIFEST, Status.MISSING,
            detail="the gate directory has no manifest (written by an older csorch?): "
            "nothing proves gate.json and report.md unchanged",
        )  # fmt: skip
        return Verification(root, True, (check,))
    try:
        files: dict[str, str] = dict(doc.get("files") or {})
        inside: dict[str, str] = dict(doc.get("bundles") or {})
        outside: dict[str, str] = dict(doc.get("outside") or {})
    except (TypeError, ValueError) as exc:
        raise BundleError(root, f"{MANIFEST} is malformed: {exc!r}") from None
    checks = []
    for name in (*FILES, *(n for n in OPTIONAL if n in files)):
        path, expected = root / name, str(files.get(name, ""))
        if not path.is_file():
            checks.append(Check(Kind.GATE, name, Status.MISSING, expected=expected))
        elif not expected:
            checks.append(Check(Kind.GATE, name, Status.UNLISTED, detail="not in the manifest"))
        else:
            actual = file_digest(path)
            ok = actual == expected
            checks.append(
                Check(
                    Kind.GATE, name, Status.OK if ok else Status.MISMATCH, "", expected, actual,
                    "" if ok else "changed since the gate",
                )  # fmt: skip
            )
    for rel, expected in sorted(inside.items()):
        if not (root / rel).resolve().is_relative_to(root.resolve()):
            checks.append(
                Check(Kind.BUNDLE, rel, Status.MISMATCH, detail="the manifest names a path "
                      "outside the gate directory")  # fmt: skip
            )
            continue
        checks += _bundle(root, rel, root / rel, str(expected), outside=False)
    for where, expected in sorted(outside.items()):
        checks += _bundle(root, where, Path(where), str(expected), outside=True)
    listed = set(FILES) | set(files) | {MANIFEST} | {rel.split("/", 1)[0] for rel in inside}
    for extra in sorted(p.name for p in root.iterdir() if p.name not in listed):
        if extra.startswith(".") and extra.endswith(".tmp"):
            continue  # an atomic write in flight
        checks.append(
            Check(Kind.GATE, extra, Status.UNLISTED, detail="not in the manifest: added after "
                  "the gate")  # fmt: skip
        )
    return Verification(root, True, tuple(checks))
