"""A carried verdict re-derived (`csorch verify` of a bundle whose results.json has
"carried", run/carried.py): nothing of the carry record is taken on its word.

- each tree the verdict was carried from (trees/from/) has the digest the record names,
  and each of this run's trees (trees/) the digest results.json gives its variant;
- the files that differ between the two listings are exactly the ones the record names,
  and each, classified again from the two versions the bundle keeps, does not execute;
- the built files the record names are exactly this run's, executing as recorded;
- where the bundle it was carried from is still at its path: its manifest is the one the
  record names, its attempts are this bundle's and its builds executed the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from orchestrator.bundle import trees
from orchestrator.bundle.layout import MANIFEST, RESULTS
from orchestrator.bundle.read import Records
from orchestrator.carry import classify
from orchestrator.errors import CsorchError
from orchestrator.files import file_digest, read_json
from orchestrator.model import Carried


def problems(root: Path, results: Mapping[str, Any], recs: Records) -> list[tuple[str, str]]:
    """(what, why) of every way the carry record of the bundle at `root` does not hold."""
    carry = recs.carried
    if carry is None:
        return []
    out: list[tuple[str, str]] = []
    ours = {s.variant: s.digest for s in recs.sources}
    named = {(f.tree, f.path): f.kind for f in carry.files}
    for name, digest in carry.trees:
        out += _tree(root, name, digest, ours.get(name), named)
    unknown = {t for t, _ in named} - {n for n, _ in carry.trees}
    out += [(f"{trees.DIR}/{t}", "the carry record names a tree it does not hold") for t in unknown]
    built = {(b.variant, a.path, a.executes) for b in recs.builds if b.ok for a in b.artifacts}
    recorded = {(b.variant, b.path, b.executes) for b in carry.binaries}
    if built != recorded:
        out.append(("builds", "the built files the carry record names are not this run's"))
    out += _source(carry, results, recs)
    return out


def _tree(
    root: Path, name: str, digest: str, ours: str | None, named: Mapping[tuple[str, str], str]
) -> list[tuple[str, str]]:
    where = trees.relpath(name, trees.FROM)
    try:
        before = trees.load(root, name, trees.FROM)
        now = trees.load(root, name)
    except trees.TreeError as exc:
        return [(where, str(exc))]
    out = []
    if trees.digest(before.listing) != digest:
        out.append((where, "not the tree the carry record names"))
    if name != trees.CASES and trees.digest(now.listing) != ours:
        out.append((trees.relpath(name), "not the tree results.json gives its variant"))
    changed = {p for p in set(before.listing) | set(now.listing)
               if before.listing.get(p) != now.listing.get(p)}  # fmt: skip
    mine = {p for t, p in named if t == name}
    for path in sorted(changed ^ mine):
        why = (
            "changed, and the carry record leaves it out"
            if path in changed
            else ("named by the carry record, but not changed")
        )
        out.append((f"{where}: {path}", why))
    for path in sorted(changed & mine):
        try:
            old, new = before.read(path), now.read(path)
        except trees.TreeError as exc:
            out.append((f"{where}: {path}", str(exc)))
            continue
        if old is None or new is None:
            out.append((f"{where}: {path}", "a version of it is not kept: nothing proves it"))
            continue
        change = classify.classify(path, old, new)
        if not change.carries or change.kind != named[(name, path)]:
            out.append((f"{where}: {path}", f"classified again: {change.kind} {change.reason}"))
    return out


def _source(carry: Carried, results: Mapping[str, Any], recs: Records) -> list[tuple[str, str]]:
    """The bundle carried from, where it still is: the one the record names."""
    source = Path(carry.source)
    if not (source / MANIFEST).is_file():
        return []  # moved or removed: what this bundle holds was checked above
    if file_digest(source / MANIFEST) != carry.manifest_sha256:
        return [(str(source), "the bundle carried from has changed since (its manifest)")]
    try:
        theirs = read_json(source / RESULTS)
    except (CsorchError, OSError) as exc:
        return [(str(source), f"cannot be read: {exc}")]
    if theirs.get("attempts") != results.get("attempts"):
        return [(str(source), "its attempts are not this bundle's")]
    was = {
        (b.get("variant"), a.get("path"), a.get("executes"))
        for b in _list(theirs.get("builds"))
        if isinstance(b, dict) and b.get("ok")
        for a in _list(b.get("artifacts"))
        if isinstance(a, dict)
    }
    recorded = {(b.variant, b.path, b.executes) for b in carry.binaries}
    if not recorded <= was:
        return [(str(source), "its builds did not execute what the carry record says")]
    return []


def _list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else []
