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

from orchestrator import __version__, judge
from orchestrator.bundle import MANIFEST, RESULTS, records
from orchestrator.bundle.layout import SIGNATURE
from orchestrator.bundle.verify import Check, Kind, Status, Verification, signature, verify
from orchestrator.errors import BundleError, CsorchError
from orchestrator.files import atomic_write, field, file_digest, load_json, read_json

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
        doc = load_json(root / MANIFEST)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise BundleError(root, f"{MANIFEST} is not readable JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        schema = doc.get("schema") if isinstance(doc, dict) else None
        raise BundleError(root, f"{MANIFEST} has schema {schema!r}, expected {SCHEMA}")
    return doc


def _bundle(
    root: Path, shown: str, path: Path, expected: str, outside: bool, said: str
) -> list[Check]:
    if path.is_symlink():
        return [
            Check(Kind.BUNDLE, shown, Status.MISMATCH, expected=expected,
                  detail="a symlink: the gate's bundles are its own directories")
        ]  # fmt: skip
    if not expected:
        return [
            Check(Kind.BUNDLE, shown, Status.MISMATCH,
                  detail="the manifest records an empty digest (edited by hand)")
        ]  # fmt: skip
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
    extra = []
    if not inner.complete:
        extra.append(
            Check(Kind.BUNDLE, shown, Status.MISMATCH,
                  detail="the bundle is incomplete (interrupted, or it never finished)")
        )  # fmt: skip
    again = _rejudged(path)
    # the gate may judge worse than the bundle alone (its policy, problems), never better
    if _RANK.get(said, 0) < _RANK.get(again, 0):
        extra.append(
            Check(Kind.GATE, GATE, Status.MISMATCH, shown,
                  detail=f"gate.json says this experiment is {said}; its bundle, judged "
                  f"again, is {again}")
        )  # fmt: skip
    return [head, *extra] + [
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


_RANK = {"pass": 0, "inconclusive": 1, "fail": 2}


def _rejudged(path: Path) -> str:
    """The verdict of the bundle at `path` judged again from its records ("" unreadable)."""
    try:
        recs = records(read_json(path / RESULTS), path / RESULTS)
    except CsorchError:
        return ""
    return judge.judged(recs.experiment, recs.attempts, recs.builds).verdict.value


def _said(root: Path) -> tuple[str, dict[str, str]]:
    """gate.json's verdict and each bundle's verdict in it (by its path) ("", {} unreadable)."""
    try:
        doc = read_json(root / GATE)
        rows = field(doc, "experiments", list, root / GATE)
        return str(doc.get("verdict", "")), {
            str(Path(r["bundle"]).resolve()): str(r["verdict"])
            for r in rows
            if isinstance(r, dict) and r.get("bundle")
        }
    except (CsorchError, KeyError, TypeError):
        return "", {}


def verify_gate(
    root: Path | str, allowed_signers: Path | None = None, identity: str | None = None
) -> Verification:
    """Re-check a gate directory: its files, every bundle it judged (complete, and of the
    verdict gate.json gives it), and its signature (`signing`): one is required when
    `allowed_signers` is given, and one present must be over this manifest."""
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
    checks = signature(root, Kind.GATE, allowed_signers, identity)
    verdict, said = _said(root)
    for name in (*FILES, *(n for n in OPTIONAL if n in files)):
        path, expected = root / name, str(files.get(name, ""))
        if path.is_symlink():
            checks.append(
                Check(Kind.GATE, name, Status.MISMATCH, expected=expected,
                      detail="a symlink: the gate's files are its own")
            )  # fmt: skip
        elif not path.is_file():
            checks.append(Check(Kind.GATE, name, Status.MISSING, expected=expected))
        elif not expected:
            checks.append(Check(Kind.GATE, name, Status.UNLISTED, detail="not in the manifest"))
        else:
            actual = file_digest(path)
            ok = actual == expected
            checks.append(
                Check(
                    Kind.GATE,
                    name,
                    Status.OK if ok else Status.MISMATCH,
                    "",
                    expected,
                    actual,
                    "" if ok else "changed since the gate",
                )  # fmt: skip
            )
    for rel, expected in sorted(inside.items()):
        if not (root / rel).resolve().is_relative_to(root.resolve()):
            checks.append(
                Check(
                    Kind.BUNDLE,
                    rel,
                    Status.MISMATCH,
                    detail="the manifest names a path outside the gate directory",
                )  # fmt: skip
            )
            continue
        path = root / rel
        checks += _bundle(root, rel, path, str(expected), False, said.get(str(path.resolve()), ""))
    for where, expected in sorted(outside.items()):
        checks += _bundle(
            root, where, Path(where), str(expected), True, said.get(str(Path(where).resolve()), "")
        )
    rank = _RANK
    worst = max((rank.get(v, 0) for v in said.values()), default=0)
    if verdict in rank and any(rank.get(v, 0) > rank[verdict] for v in said.values()):
        checks.append(
            Check(Kind.GATE, GATE, Status.MISMATCH,
                  detail=f"gate.json's verdict {verdict} is better than one of its "
                  f"experiments' ({[k for k, r in rank.items() if r == worst][0]})")
        )  # fmt: skip
    listed = set(FILES) | set(files) | {MANIFEST, SIGNATURE}
    listed |= {rel.split("/", 1)[0] for rel in inside}
    for extra in sorted(p.name for p in root.iterdir() if p.name not in listed):
        checks.append(
            Check(
                Kind.GATE,
                extra,
                Status.UNLISTED,
                detail="not in the manifest: added after the gate",
            )  # fmt: skip
        )
    return Verification(root, True, tuple(checks))
