"""Re-checking a bundle's evidence: every digest its manifest records, against the files.

One `Check` per digest (plus one per file that appeared under logs/ after the run), each
with a `Status`:
- OK: the file hashes to the recorded sha256;
- MISMATCH: it does not (the file changed since the run);
- MISSING: the file the manifest names is gone, where it should still be (in the bundle,
  or in a cache entry that is still there);
- UNLISTED: a file in the bundle that the manifest does not list (added after the run);
- NOT_CHECKABLE: nothing to compare against, and `detail` says why (no digest recorded;
  a config or patch outside the bundle that has moved; an evicted cache entry, or one
  rebuilt since the run, whose entry.json records the new binary: builds are not
  byte-reproducible; a source tree the run did not keep).
A bundle passes when nothing is MISMATCH, MISSING or UNLISTED: what cannot be checked is
reported, not counted against it (a bundle copied off the machine loses its cache
entries, and that is not tampering). Inside the bundle nothing is taken on the
manifest's word: a symlink anywhere is a MISMATCH (evidence is the bundle's own bytes),
an empty digest of a file in the bundle is a MISMATCH (csorch always records one), and
the findings results.json records are re-derived from the logs (`bundle/rederive.py`),
so that results.json edited with its digest recomputed does not verify.

Paths inside the bundle are relative to it, so a moved bundle verifies the same. The
module reads files and hashes them; it prints nothing and never changes a file.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from orchestrator.bundle import MANIFEST, MANIFEST_SCHEMA, RESULTS, carryproof, rederive, signing
from orchestrator.bundle.layout import COVERED, COVERED_DIRS, LOCK, LOGS, SIGNATURE
from orchestrator.bundle.read import records
from orchestrator.cache import META
from orchestrator.errors import BundleError, CsorchError
from orchestrator.files import file_digest, load_json, read_json, special_kind
from orchestrator.files import walk as files_walk
from orchestrator.model.record import Record


class Status(enum.Enum):
    OK = "ok"
    MISMATCH = "mismatch"
    MISSING = "missing"
    UNLISTED = "unlisted"
    NOT_CHECKABLE = "not checkable"


#: statuses that fail a verification
FAILING = frozenset({Status.MISMATCH, Status.MISSING, Status.UNLISTED})


class Kind(enum.Enum):
    RESULTS = "results"
    LOG = "log"
    CONFIG = "config"
    PATCH = "patch"
    BINARY = "binary"
    SOURCE = "source"
    FILE = "file"  # another file of the bundle the manifest covers (the journal)
    FINDINGS = "findings"  # results.json's record of an attempt against its re-parsed logs
    GATE = "gate"  # a gate directory's own files (gate/manifest.py)
    BUNDLE = "bundle"  # an experiment bundle a gate judged (gate/manifest.py)
    CARRY = "carry"  # a carried verdict's record, re-derived (bundle/carryproof.py)


@dataclass(frozen=True)
class Check(Record):
    """One recorded digest (or one unlisted file) and what the file says now."""

    kind: Kind
    path: str  # relative to the bundle when inside it, else absolute
    status: Status
    subject: str = ""  # the variant it belongs to ("" for the bundle's own files)
    expected: str = ""  # the sha256 the manifest records
    actual: str = ""  # the sha256 of the file now ("" when it could not be read)
    detail: str = ""  # why, for anything but OK


@dataclass(frozen=True)
class Verification(Record):
    root: Path
    complete: bool  # the manifest says the run finished (False: interrupted or running)
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        """Everything checkable matches and nothing was added."""
        return not any(c.status in FAILING for c in self.checks)

    def counts(self) -> dict[Status, int]:
        """Checks per status, every status present (zeros included), in enum order."""
        out = dict.fromkeys(Status, 0)
        for c in self.checks:
            out[c.status] += 1
        return out


def _digest(path: Path) -> tuple[str, str]:
    """(sha256, "") of a readable file, else ("", why not)."""
    try:
        return file_digest(path), ""
    except OSError as exc:
        return "", exc.strerror or str(exc)


def _compare(
    kind: Kind, shown: str, path: Path, expected: str, *, subject: str = "", gone: Check
) -> Check:
    """Hash `path` against `expected`; `gone` is the verdict when the file is not there."""
    if not path.exists():
        return gone
    if not expected:
        if kind in _OWN:  # csorch records a digest for every file it writes in a bundle
            return Check(
                kind, shown, Status.MISMATCH, subject,
                detail="the manifest records an empty digest (edited by hand)",
            )  # fmt: skip
        return Check(kind, shown, Status.NOT_CHECKABLE, subject, detail="no digest recorded")
    actual, error = _digest(path)
    if error and kind in _OWN:
        # the bundle's own file, there but unreadable or no regular file (a named pipe
        # whose reading would block): not the file csorch wrote
        return Check(kind, shown, Status.MISMATCH, subject, expected, detail=error)
    if error:
        return Check(kind, shown, Status.NOT_CHECKABLE, subject, expected, detail=error)
    if actual == expected:
        return Check(kind, shown, Status.OK, subject, expected, actual)
    return Check(
        kind, shown, Status.MISMATCH, subject, expected, actual, detail="changed since the run"
    )


#: kinds whose files are the bundle's own: an empty digest for them is an edit
_OWN = frozenset({Kind.RESULTS, Kind.LOG, Kind.FILE, Kind.GATE})


def _inside(root: Path, rel: str) -> bool:
    return (root / rel).resolve().is_relative_to(root.resolve())


def _results(root: Path, manifest: Mapping[str, Any]) -> Check:
    recorded = manifest.get("results") or {}
    path = root / RESULTS
    missing = Check(Kind.RESULTS, RESULTS, Status.MISSING, detail="the bundle has no results.json")
    return _compare(Kind.RESULTS, RESULTS, path, str(recorded.get("sha256") or ""), gone=missing)


def _logs(root: Path, listed: Mapping[str, str]) -> list[Check]:
    checks = []
    for rel, expected in sorted(listed.items()):
        if not _inside(root, rel):
            # a log is evidence only inside the bundle; a manifest pointing elsewhere
            # has been edited by hand
            checks.append(
                Check(
                    Kind.LOG,
                    rel,
                    Status.MISMATCH,
                    expected=expected,
                    detail="the manifest names a path outside the bundle",
                )
            )
            continue
        gone = Check(Kind.LOG, rel, Status.MISSING, expected=expected, detail="deleted")
        checks.append(_compare(Kind.LOG, rel, root / rel, expected, gone=gone))
    return checks


def _files(root: Path, listed: Mapping[str, str]) -> list[Check]:
    checks = []
    for name, expected in sorted(listed.items()):
        covered = name in COVERED or (
            name.split("/", 1)[0] in COVERED_DIRS and "/" in name and _inside(root, name)
        )
        if not covered:
            checks.append(
                Check(
                    Kind.FILE,
                    name,
                    Status.MISMATCH,
                    expected=str(expected),
                    detail="the manifest lists a file csorch does not write",
                )  # fmt: skip
            )
            continue
        gone = Check(Kind.FILE, name, Status.MISSING, expected=str(expected), detail="deleted")
        checks.append(_compare(Kind.FILE, name, root / name, str(expected), gone=gone))
    return checks


#: deeper than any directory csorch writes in a bundle (logs/VARIANT/RUN/CASE/...)
MAX_BUNDLE_DEPTH = 16


def walk(root: Path) -> tuple[list[str], list[str], list[str]]:
    """(files, symlinks, directories too deep) under `root`, relative, never following a
    link. A directory nested deeper than csorch writes is not entered (`_tree` reports it)."""
    files, links, deep = [], [], []
    for top, dirs, names in files_walk(root):
        here = Path(top)
        if len(here.relative_to(root).parts) >= MAX_BUNDLE_DEPTH and dirs:
            deep += [(here / d).relative_to(root).as_posix() for d in dirs]
            dirs[:] = []  # not entered: nothing csorch wrote lies there
        for name in [*dirs, *names]:
            path = here / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                links.append(rel)
            elif name in names:
                files.append(rel)
    return sorted(files), sorted(links), sorted(deep)


def _kind(rel: str) -> Kind:
    return Kind.LOG if rel.startswith(LOGS + "/") else Kind.FILE


def _tree(root: Path, known: set[str]) -> list[Check]:
    """Every symlink in the bundle, every directory nested deeper than csorch writes, and
    every file the manifest does not cover."""
    files, links, deep = walk(root)
    checks = [
        Check(_kind(rel), rel, Status.MISMATCH,
              detail="a symlink: a bundle's evidence is its own files, not links to others")
        for rel in links
    ]  # fmt: skip
    checks += [
        Check(_kind(rel), rel, Status.MISMATCH,
              detail=f"nested more than {MAX_BUNDLE_DEPTH} directories deep: csorch writes "
              "nothing there")
        for rel in deep
    ]  # fmt: skip
    for rel in files:
        kind = special_kind((root / rel).lstat().st_mode)
        if kind:  # a named pipe, a device, a socket: a reader would block on it
            checks.append(
                Check(
                    _kind(rel),
                    rel,
                    Status.MISMATCH,
                    detail=f"{kind}: a bundle holds regular files only",
                )
            )
            continue
        # the lock is no evidence; the signature cannot be listed in the manifest it signs
        if rel not in known and rel not in (LOCK, SIGNATURE):
            actual, _ = _digest(root / rel)
            checks.append(
                Check(
                    _kind(rel),
                    rel,
                    Status.UNLISTED,
                    actual=actual,
                    detail="not in the manifest: added after the run",
                )
            )
    return checks


def _outside(kind: Kind, recorded: Mapping[str, Any], subject: str = "") -> Check:
    """A file outside the bundle (the config, a patch): it may have moved since the run,
    which makes it uncheckable rather than missing."""
    where, expected = str(recorded.get("path") or ""), str(recorded.get("sha256") or "")
    if not where:
        return Check(kind, "", Status.NOT_CHECKABLE, subject, detail="no path recorded")
    gone = Check(
        kind,
        where,
        Status.NOT_CHECKABLE,
        subject,
        expected,
        detail="no longer at this path (outside the bundle; moved or removed)",
    )
    return _compare(kind, where, Path(where), expected, subject=subject, gone=gone)


def _entry_digests(entry: Path) -> dict[str, str]:
    """path -> sha256 of the artifacts the cache entry's own metadata records ({} if none)."""
    try:
        # the entry's own record of its build, written when it was published
        meta = load_json(entry / META)
        return {a["path"]: a["sha256"] for a in meta["build"]["artifacts"]}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _binaries(build: Mapping[str, Any]) -> list[Check]:
    variant, entry = str(build.get("variant", "")), str(build.get("entry") or "")
    binaries = build.get("binaries") or []
    if binaries and not entry:
        return [
            Check(
                Kind.BINARY,
                b["path"],
                Status.NOT_CHECKABLE,
                variant,
                b["sha256"],
                detail="the manifest records no cache entry",
            )
            for b in binaries
        ]
    root = Path(entry)
    if binaries and not root.is_dir():
        # eviction, or a bundle copied to another machine: not evidence of tampering
        return [
            Check(
                Kind.BINARY,
                str(root / b["path"]),
                Status.NOT_CHECKABLE,
                variant,
                b["sha256"],
                detail="the cache entry is gone (evicted, or the bundle moved machines)",
            )
            for b in binaries
        ]
    published = _entry_digests(root) if binaries else {}
    checks = []
    for b in binaries:
        path, expected = root / b["path"], b["sha256"]
        gone = Check(
            Kind.BINARY,
            str(path),
            Status.MISSING,
            variant,
            expected,
            detail="deleted from its cache entry",
        )
        check = _compare(Kind.BINARY, str(path), path, expected, subject=variant, gone=gone)
        if check.status is Status.MISMATCH:
            # the entry's own metadata tells a rebuilt entry from an edited binary
            rebuilt = published.get(b["path"], expected) != expected
            if rebuilt:  # builds are not byte-reproducible: nothing left to compare with
                check = replace(
                    check,
                    status=Status.NOT_CHECKABLE,
                    detail="the cache entry was rebuilt since the run (its entry.json records "
                    "the new binary, and builds are not byte-reproducible)",
                )
            else:
                check = replace(
                    check,
                    detail="changed after the build (its cache entry records the same sha256 "
                    "as the bundle)",
                )
        checks.append(check)
    return checks


def _sources(manifest: Mapping[str, Any]) -> list[Check]:
    checks = []
    for source in manifest.get("sources") or []:
        variant = str(source.get("variant", ""))
        for patch in source.get("patches") or []:
            checks.append(_outside(Kind.PATCH, patch, variant))
        # a tree digest is over the materialized, patched tree; the run removes it (and
        # a kept one has build outputs in it), so it can only be re-derived by re-running
        checks.append(
            Check(
                Kind.SOURCE,
                str(source.get("source", {}).get("location", "")),
                Status.NOT_CHECKABLE,
                variant,
                str(source.get("digest", "")),
                detail="the materialized tree is not kept; re-run to re-derive it",
            )
        )
    return checks


def read_manifest(root: Path) -> dict[str, Any]:
    """The bundle's manifest; BundleError when `root` is not a bundle."""
    if not root.is_dir():
        raise BundleError(root, "not a directory")
    try:
        doc = load_json(root / MANIFEST)
    except FileNotFoundError:
        raise BundleError(
            root, f"no {MANIFEST}", hint="give a directory written by `csorch run --out`"
        ) from None
    except (OSError, ValueError) as exc:
        raise BundleError(root, f"{MANIFEST} is not readable JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != MANIFEST_SCHEMA:
        schema = doc.get("schema") if isinstance(doc, dict) else None
        raise BundleError(root, f"{MANIFEST} has schema {schema!r}, expected {MANIFEST_SCHEMA}")
    return doc


def signature(
    root: Path, kind: Kind, allowed: Path | None = None, identity: str | None = None
) -> list[Check]:
    """The check of the signature beside `root`'s manifest (`signing`): none when there is
    no signature and none is required (`allowed` not given); OK with who signed in its
    detail; MISMATCH when one present is not over this manifest, or `allowed` is given and
    no key in it (as `identity`) made it."""
    if not signing.present(root) and allowed is None:
        return []
    signed = signing.examine(root, allowed, identity)
    if not signed.ok:
        return [Check(kind, SIGNATURE, Status.MISMATCH, detail=signed.why)]
    return [Check(kind, SIGNATURE, Status.OK, detail=f"signed by {signed.signer}")]


def verify(
    root: Path | str, allowed: Path | None = None, identity: str | None = None
) -> Verification:
    """Re-check every digest in the bundle at `root`, look for links and files the manifest
    does not cover, re-derive results.json's findings from the logs, and check the
    manifest's signature (`csorch run --sign`; required with `allowed`, an allowed-signers
    file, as `identity` when given); BundleError if `root` is not a bundle."""
    root = Path(root)
    manifest = read_manifest(root)
    try:
        logs = dict(manifest.get("logs") or {})
        files = dict(manifest.get("files") or {})
        checks = [
            _results(root, manifest),
            *_logs(root, logs),
            *_files(root, files),
            *_tree(root, {RESULTS, MANIFEST, *logs, *files}),
            _outside(Kind.CONFIG, manifest.get("config") or {}),
            *_sources(manifest),
            *(c for b in manifest.get("builds") or [] for c in _binaries(b)),
        ]
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise BundleError(root, f"{MANIFEST} is malformed: {exc!r}") from None
    checks += [
        Check(Kind.FINDINGS, p.path, Status.MISMATCH, p.subject, detail=p.detail)
        for p in rederive.problems(root, set(logs))
    ]
    checks += [Check(Kind.CARRY, what, Status.MISMATCH, detail=why) for what, why in _carried(root)]
    checks = signature(root, Kind.FILE, allowed, identity) + checks
    return Verification(root, bool(manifest.get("complete")), tuple(checks))


def _carried(root: Path) -> list[tuple[str, str]]:
    """A carried verdict's record re-derived (none where the verdict was not carried;
    a results.json that cannot be read is rederive's to report)."""
    try:
        results = read_json(root / RESULTS)
        recs = records(results, root / RESULTS)
    except CsorchError:
        return []
    return carryproof.problems(root, results, recs)
