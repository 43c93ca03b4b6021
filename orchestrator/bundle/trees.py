"""The trees a bundle's evidence was built from, kept in the bundle: what a later run
compares its own trees with to carry the verdict (`csorch run --carry-from`).

OUT/trees/variants/VARIANT.json   {"schema": "csorch.tree/1", "listing": {path: entry},
                                   "kept": [path, ...]} of the variant's materialized tree
OUT/trees/cases.json              the same of the case files outside every variant's tree
OUT/trees/objects/SHA256          the contents of each kept file, by its sha256
OUT/trees/from/...                in a carried bundle, the same of the trees its verdict
                                  was carried from (`csorch verify` re-derives the carry)

`listing` is the tree's whole listing (run/sources.listing: "mode:sha256" per file), so
every changed file is found, kept or not. Only the files whose change can be proven
not to execute are kept (Python, C, C++, CUDA sources; carry/classify), each at most
classify.MAX_BYTES and all of one bundle at most MAX_KEPT_BYTES: another file that
changed counts as executable whether or not its old bytes are at hand. An object is
read back only when its sha256 is its name, and a listing only within its bounds.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from orchestrator import files
from orchestrator.carry import classify
from orchestrator.errors import CsorchError

DIR = "trees"
OBJECTS = f"{DIR}/objects"
SCHEMA = "csorch.tree/1"
CASES = "cases"
MAX_KEPT_BYTES = 256 << 20  # of one bundle's kept sources together
LISTING = files.Kind("a bundle's tree listing", 256 << 20)
OBJECT = files.Kind("a bundle's kept source file", classify.MAX_BYTES)


class TreeError(CsorchError):
    """A stored tree that cannot be read back as csorch wrote it."""


FROM = "from"  # the prefix of the trees a carried verdict was carried from


def relpath(name: str, prefix: str = "") -> str:
    """The bundle-relative path of the tree record `name` (a variant's, or CASES), under
    `prefix` (FROM) where given."""
    top = f"{DIR}/{prefix}" if prefix else DIR
    return f"{top}/{name}.json" if name == CASES else f"{top}/variants/{name}.json"


def keepable(path: str) -> bool:
    """Whether a file's old version can prove anything (a source carry/classify reads)."""
    suffix = PurePosixPath(path).suffix.lower()
    return suffix in classify.PYTHON or suffix in classify.C_FAMILY


@dataclass(frozen=True)
class Stored:
    """A tree as a bundle keeps it."""

    root: Path  # the bundle
    listing: Mapping[str, str]  # path -> "mode:sha256" ("l:sha256" for a link)
    kept: frozenset[str]

    def read(self, path: str) -> bytes | None:
        """The kept bytes of `path` (None: not kept); TreeError if they are not the ones
        the listing names."""
        if path not in self.kept:
            return None
        entry = self.listing.get(path, "")
        digest = entry.partition(":")[2]
        try:
            data = files.read_bytes(self.root / OBJECTS / digest, OBJECT)
        except OSError as exc:
            raise TreeError(f"{self.root / OBJECTS / digest}: {exc}") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise TreeError(f"{OBJECTS}/{digest} in {self.root}: not the file it names")
        return data


def store(
    bundle: Path,
    name: str,
    listing: Mapping[str, str],
    source: Mapping[str, Path | bytes],
    budget: list[int],
    prefix: str = "",
) -> list[str]:
    """Write the tree record `name` (under `prefix`) into `bundle`: `listing`, and the kept
    files (from `source`: listing path -> the file, or its bytes) within `budget` (bytes
    left, shared by the bundle's trees). The bundle-relative paths written."""
    written = []
    kept = []
    for path, entry in sorted(listing.items()):
        if not keepable(path) or entry.startswith("l:") or path not in source:
            continue
        digest = entry.partition(":")[2]
        object_path = bundle / OBJECTS / digest
        if not object_path.exists():
            given = source[path]
            try:
                data = given if isinstance(given, bytes) else files.read_bytes(given, OBJECT)
            except OSError:
                continue  # too large or gone: not kept, a change to it is executable
            if hashlib.sha256(data).hexdigest() != digest or len(data) > budget[0]:
                continue
            budget[0] -= len(data)
            files.make_dirs(object_path.parent, root=bundle)
            files.atomic_write(object_path, data, root=bundle)
        kept.append(path)
        written.append(f"{OBJECTS}/{digest}")
    record = {"schema": SCHEMA, "listing": dict(sorted(listing.items())), "kept": kept}
    where = bundle / relpath(name, prefix)
    files.make_dirs(where.parent, root=bundle)
    files.atomic_write(where, _json(record), root=bundle)
    return [relpath(name, prefix), *dict.fromkeys(written)]


def _json(doc: object) -> str:
    return json.dumps(doc, indent=0, sort_keys=True, ensure_ascii=True)


def load(bundle: Path, name: str, prefix: str = "") -> Stored:
    """The tree record `name` (under `prefix`) of `bundle`; TreeError naming the file
    where it is absent or not one csorch wrote."""
    where = bundle / relpath(name, prefix)
    try:
        doc = files.load_json(where, LISTING)
    except FileNotFoundError:
        raise TreeError(f"{where}: absent (a bundle of a csorch that kept no trees)") from None
    except (OSError, ValueError) as exc:
        raise TreeError(f"{where}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise TreeError(f"{where}: not a tree record ({SCHEMA})")
    listing, kept = doc.get("listing"), doc.get("kept")
    if not isinstance(listing, dict) or not isinstance(kept, list):
        raise TreeError(f"{where}: no listing or kept list")
    for path, entry in listing.items():
        if not isinstance(entry, str) or not _entry_ok(entry) or not _path_ok(path):
            raise TreeError(f"{where}: a malformed entry for {path!r}")
    if not all(isinstance(p, str) and p in listing for p in kept):
        raise TreeError(f"{where}: keeps a file its listing does not name")
    return Stored(bundle, listing, frozenset(kept))


def _entry_ok(entry: str) -> bool:
    mode, _, digest = entry.partition(":")
    hexdigits = "0123456789abcdef"
    return mode in ("x", "-", "l") and len(digest) == 64 and all(c in hexdigits for c in digest)


def _path_ok(path: str) -> bool:
    # a name only (never joined to a path of the bundle's): a case file above the
    # config's directory is named "../tests/..."
    return bool(path) and not path.startswith("/") and "\0" not in path


def digest(listing: Mapping[str, str]) -> str:
    """The tree digest of a listing (run/sources.tree_digest's, from the listing alone)."""
    h = hashlib.sha256()
    for rel, entry in sorted(listing.items()):
        # a name need not be UTF-8 (Linux names are bytes): its own bytes, as read
        h.update(os.fsencode(f"{rel}\0{entry}\n"))
    return h.hexdigest()
