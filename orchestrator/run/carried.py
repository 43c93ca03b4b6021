"""Whether a stored bundle's verdict carries to this run (`csorch run --carry-from`).

Once every variant is built, this run's trees and builds are compared with the ones the
stored evidence came from; the verdict carries only where all of these hold, and the
first that does not is named (the run then goes on as any other):
- the stored bundle verifies (every digest, its findings re-derived), is complete, and
  was made by the same experiment (the config's every key), backend, checker tool,
  torch, Python and GPUs, with the same attempts planned;
- every file that differs between a stored tree (the bundle's trees/, bundle/trees.py)
  and this run's, each variant's and the case files', is proven not to execute
  (carry/classify: Python's AST without docstrings, C-family tokens without comments;
  anything else, or a file whose stored version was not kept, is executable);
- every variant built (or failed) as before, and each built file executes the same as
  the stored build's (`Artifact.executes`, carry/sections).

The attempts are then the stored bundle's, their logs copied, judged again.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator import files
from orchestrator.bundle import trees, trust
from orchestrator.bundle.layout import LOGS, MANIFEST
from orchestrator.carry import classify, sections
from orchestrator.errors import CsorchError
from orchestrator.judge import Judgement
from orchestrator.model import (
    Attempt,
    Build,
    Carried,
    CarriedBinary,
    CarriedFile,
    CaseKind,
    CasesFrom,
    Experiment,
    SourceKind,
    SourceTree,
    Verdict,
)
from orchestrator.model.job import Job, slot
from orchestrator.run.cases import PYTEST_FILES
from orchestrator.run.sources import entry, walk_source

#: the files above a case's directory that pytest reads before the case: they count
#: what of the host a stored verdict depends on besides the trees and the binaries
HOST_KEYS = ("python", "torch", "torch_cuda", "gpus", "driver", "compute_sanitizer", "asan_runtime")


@dataclass(frozen=True)
class Decision:
    """A carried verdict's record and its attempts."""

    carried: Carried
    attempts: tuple[Attempt, ...] = ()
    #: the stored trees (name -> listing, and the old bytes of each changed file), for the
    #: new bundle's trees/from/ (what `csorch verify` re-derives the carry from)
    old: Mapping[str, tuple[Mapping[str, str], Mapping[str, bytes]]] = field(default_factory=dict)


def case_files(experiment: Experiment) -> dict[str, Path]:
    """The case files outside every variant's tree, by their path relative to the config's
    directory: each pytest case's directory, all of it (helpers, data, conftest.py), and
    pytest's configuration files and conftest.py of every directory above it."""
    if experiment.cases_from is CasesFrom.VARIANT:
        return {}
    base = Path(experiment.config).parent if experiment.config else Path.cwd()
    found: dict[str, Path] = {}
    for case in experiment.cases:
        if case.kind is not CaseKind.PYTEST:
            continue
        for target in case.pytest:
            path = Path(os.path.abspath(base / target.partition("::")[0]))
            directory = path if path.is_dir() else path.parent
            if not directory.is_dir():
                continue
            for rel in walk_source(directory):
                found[_key(directory / rel, base)] = directory / rel
            for up in directory.parents:
                for name in PYTEST_FILES:
                    if (up / name).is_file():
                        found[_key(up / name, base)] = up / name
    return found


def _key(path: Path, base: Path) -> str:
    return Path(os.path.relpath(path, base)).as_posix()


def case_listing(found: Mapping[str, Path]) -> dict[str, str]:
    """The listing (path -> "mode:sha256") of `case_files`; CsorchError naming a case file
    that cannot be read as one (a named pipe or a device among the tests): the user's
    input, refused as such, never taken for a bundle that cannot be written."""
    listing = {}
    for key, path in sorted(found.items()):
        if not (path.exists() or path.is_symlink()):
            continue
        try:
            listing[key] = entry(path)
        except OSError as exc:  # files.FileRefused included: an OSError too
            raise CsorchError(
                f"case file {path}: {getattr(exc, 'problem', None) or exc.strerror or exc}",
                hint="csorch keeps every file of a pytest case's directory with the bundle: "
                "move what is not a regular file, directory or link out of it",
            ) from None
    return listing


class NotCarried(Exception):
    """The first thing that keeps the verdict from carrying (its message says what)."""


def decide(
    source: Path,
    bundle: Path,
    experiment: Experiment,
    jobs: Sequence[Job],
    sources: Sequence[SourceTree],
    builds: Sequence[Build],
    backend: Mapping[str, Any],
    host: Mapping[str, Any],
) -> Decision:
    """The carry of the verdict of the bundle at `source` to this run, whose own bundle
    (its trees already stored) is `bundle`; NotCarried naming why not."""
    source = Path(source)
    if source.is_symlink():  # a gate directory's bundle as well as the one given
        raise NotCarried(f"{source} is a symlink: the evidence carried is a bundle's own files")
    try:  # the one way a stored bundle is read: verified, complete, its config's own
        stored = trust.load_trusted(source)
    except CsorchError as exc:
        raise NotCarried(f"{source} cannot be read as a bundle: {exc}") from None
    if not stored.ok:
        raise NotCarried(f"{source} is not trusted: {stored.reasons[0]}")
    results, manifest, recs = stored.results, stored.manifest, stored.records
    assert results is not None and manifest is not None and recs is not None
    if not results.get("complete") or results.get("interrupted"):
        raise NotCarried(f"{source} is not a complete run")
    _same_experiment(recs.experiment, experiment)
    _same_setting("backend", (results.get("backend") or {}), backend, ("name", "tool_version"))
    _same_setting("host", manifest.get("host") or {}, host, HOST_KEYS)
    planned = {slot(j) for j in jobs}
    if planned != {slot(a) for a in recs.attempts}:
        raise NotCarried("the stored bundle's attempts are not the ones this run plans")
    files_changed: list[CarriedFile] = []
    old: dict[str, tuple[Mapping[str, str], Mapping[str, bytes]]] = {}
    stored_trees = {s.variant: s.digest for s in recs.sources}
    digests = []
    for tree in sources:
        if tree.variant not in stored_trees:
            raise NotCarried(f"variant {tree.variant}: the stored bundle has no tree of it")
        changed, kept = _tree(source, bundle, tree.variant, stored_trees[tree.variant])
        files_changed += changed
        old[tree.variant] = kept
        digests.append((tree.variant, stored_trees[tree.variant]))
    if {s.variant for s in sources} != set(stored_trees):
        raise NotCarried("the stored bundle's variants with a tree are not this run's")
    changed, kept = _tree(source, bundle, trees.CASES, None)
    files_changed += changed
    old[trees.CASES] = kept
    digests.append((trees.CASES, trees.digest(kept[0])))
    binaries = _binaries(recs.builds, builds)
    carried = Carried(
        source=os.path.abspath(source),
        manifest_sha256=files.file_digest(source / MANIFEST),
        verdict=str(results.get("verdict") or ""),
        trees=tuple(digests),
        files=tuple(files_changed),
        binaries=tuple(binaries),
        evidence=_authenticity(stored.statement),
    )
    return Decision(carried, recs.attempts, old)


def _authenticity(statement: str) -> str:
    """`trust.stated`'s line, short: "signed by WHO ..." or "unsigned" (a tampered
    bundle is never carried from)."""
    said = statement.removeprefix("evidence: ")
    return "unsigned" if said.startswith("unsigned") else said


def _same_experiment(stored: Experiment, new: Experiment) -> None:
    """NotCarried naming the first key where the two differ. A head checked out in
    another directory (a CI clone, a worktree) moved its config and everything beside
    it: the stored experiment's paths are read as moved with it."""
    before, now = _refless(stored.to_dict()), _refless(new.to_dict())
    if stored.config and new.config:
        old_root, new_root = _moved(Path(stored.config), Path(new.config))
        before = _rebased(before, old_root, new_root)
    for k in sorted(set(before) | set(now)):
        if before.get(k) != now.get(k):
            raise NotCarried(f"the experiment's {k!r} differs from the stored bundle's")


def _refless(value: Any) -> Any:
    """A record's dict with each git source's ref left out: a new head is named by a new
    ref, and what it holds is compared file by file (the trees), not by its name."""
    if isinstance(value, dict):
        out = {k: _refless(v) for k, v in value.items()}
        if out.get("kind") == SourceKind.GIT.value and "ref" in out and "location" in out:
            out["ref"] = ""
        return out
    if isinstance(value, list):
        return [_refless(v) for v in value]
    return value


def _moved(old: Path, new: Path) -> tuple[str, str]:
    """(old root, new root): the two configs' paths without their common trailing parts
    (the checkout each lies in, as far as the configs tell)."""
    a, b = list(old.parts), list(new.parts)
    while len(a) > 1 and len(b) > 1 and a[-1] == b[-1]:
        a.pop()
        b.pop()
    return str(Path(*a)), str(Path(*b))


def _rebased(value: Any, old: str, new: str) -> Any:
    """`value` (a record's dict) with every string under `old` named under `new`."""
    if isinstance(value, dict):
        return {k: _rebased(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_rebased(v, old, new) for v in value]
    if isinstance(value, str) and old != new and (value == old or value.startswith(old + "/")):
        return new + value[len(old) :]
    return value


def _same_setting(what: str, before: Mapping, now: Mapping, keys: Sequence[str]) -> None:
    for k in keys:
        if before.get(k) != now.get(k):
            raise NotCarried(f"the {what}'s {k} differs ({before.get(k)!r}, now {now.get(k)!r})")


def _tree(
    source: Path, bundle: Path, name: str, digest: str | None
) -> tuple[list[CarriedFile], tuple[Mapping[str, str], Mapping[str, bytes]]]:
    """The changed files of tree `name` (stored in `source`, this run's in `bundle`), each
    proven not to execute, and (the stored listing, the old bytes of the changed files)."""
    what = "the case files" if name == trees.CASES else f"variant {name}"
    try:
        before = trees.load(source, name)
        now = trees.load(bundle, name)
    except trees.TreeError as exc:
        raise NotCarried(f"{what}: {exc}") from None
    if digest is not None and trees.digest(before.listing) != digest:
        raise NotCarried(f"{what}: the stored tree is not the one its results.json names")
    out, kept = [], {}
    for path in sorted(set(before.listing) | set(now.listing)):
        a, b = before.listing.get(path), now.listing.get(path)
        if a == b:
            continue
        if a is not None and b is not None and a.partition(":")[2] == b.partition(":")[2]:
            raise NotCarried(f"{what}: {path}: its mode changed")
        try:
            old_bytes = before.read(path) if a is not None else None
            new_bytes = now.read(path) if b is not None else None
        except trees.TreeError as exc:
            raise NotCarried(f"{what}: {exc}") from None
        if a is None or b is None:
            raise NotCarried(f"{what}: {path}: {'added' if a is None else 'removed'}")
        if old_bytes is None or new_bytes is None:
            if not trees.keepable(path):  # data, a build file: executable, no proof reads it
                raise NotCarried(f"{what}: {path}: {classify.NOT_SOURCE}")
            raise NotCarried(f"{what}: {path}: changed, and a version of it was not kept")
        change = classify.classify(path, old_bytes, new_bytes)
        if not change.carries:
            raise NotCarried(f"{what}: {path}: {change.reason}")
        out.append(CarriedFile(name, path, change.kind))
        if old_bytes is not None:
            kept[path] = old_bytes
    return out, (before.listing, kept)


def _binaries(stored: Sequence[Build], new: Sequence[Build]) -> list[CarriedBinary]:
    """Each built file of `new` that executes as the stored build's; NotCarried at the
    first that does not (or a build that did not end as before)."""
    before = {b.variant: b for b in stored}
    out = []
    for build in new:
        old = before.get(build.variant)
        if old is None or old.ok != build.ok:
            raise NotCarried(f"variant {build.variant}: did not build as in the stored bundle")
        was = {a.path: a.executes for a in old.artifacts}
        now = {a.path: _executes(build, a.path, a.executes, a.sha256) for a in build.artifacts}
        if set(was) != set(now):
            gone = sorted(set(was) ^ set(now))[0]
            raise NotCarried(f"variant {build.variant}: {gone} is built on one side only")
        for path in sorted(now):
            if not was[path]:
                raise NotCarried(
                    f"variant {build.variant}: the stored build recorded no digest of what "
                    f"{path} executes (a bundle of an older csorch)"
                )
            if was[path] != now[path]:
                raise NotCarried(f"variant {build.variant}: {path} executes differently")
            out.append(CarriedBinary(build.variant, path, now[path]))
    return out


def _executes(build: Build, path: str, recorded: str, sha256: str) -> str:
    """What `path` executes: as recorded, else (an entry an older csorch made) from the
    cache entry's file, when it is still the one recorded."""
    if recorded or build.directory is None:
        return recorded
    built = Path(build.directory) / path
    try:
        if files.file_digest(built, files.BINARY) != sha256:
            return ""
        return sections.executes_file(built)
    except OSError:
        return ""


def copy_evidence(source: Path, bundle: Path, decision: Decision) -> list[str]:
    """Into `bundle`: the stored attempts' logs (every log of the stored bundle but its
    builds': this run's builds have their own), and the stored trees under trees/from/,
    with the old bytes of each changed file (what `csorch verify` re-derives it from).
    The trees' files written, bundle-relative (the logs are the manifest's anyway)."""
    logs = source / LOGS
    for path in files.regular_files(logs):
        rel = path.relative_to(source)
        if rel.parts[1] == "build":
            continue
        files.make_dirs((bundle / rel).parent, root=bundle)
        files.copy_file(path, bundle / rel, root=bundle)
    written = []
    for name, (listing, old) in decision.old.items():
        written += trees.store(
            bundle, name, listing, old, [trees.MAX_KEPT_BYTES], prefix=trees.FROM
        )
    return written


def judged(carry: Carried, judgement: Judgement) -> Judgement:
    """The judgement of the carried attempts, judged again: its first reason says the
    evidence was carried. Never stronger than the stored verdict: where the two differ
    (a judge that changed since), INCONCLUSIVE, naming both."""
    reasons = list(judgement.reasons)
    verdict = judgement.verdict
    if carry.verdict != verdict.value:
        reasons.insert(0, f"the stored verdict was {carry.verdict}, its attempts judged again "
                       f"give {verdict.value}: nothing is carried beyond the weaker")  # fmt: skip
        verdict = Verdict.INCONCLUSIVE
    return dataclasses.replace(judgement, verdict=verdict, reasons=(carry.headline(), *reasons))


def check_source(source: Path | None, out: Path | None, resuming: bool) -> None:
    """CsorchError (before any work) for a --carry-from that cannot be one: not a
    directory, the run's own --out (or around it), or given with --resume."""
    if source is None:
        return
    if resuming:
        raise CsorchError(
            "--carry-from starts a new run; --resume continues one: give one of them",
            hint="csorch run CONFIG --carry-from BUNDLE --out NEW",
        )
    if not source.is_dir() or source.is_symlink():
        raise CsorchError(
            f"--carry-from {source}: not a directory",
            hint="a bundle csorch run wrote, or a gate directory csorch gate wrote",
        )
    if out is not None:
        a, b = source.resolve(), Path(os.path.abspath(out))
        if a == b or a.is_relative_to(b) or b.is_relative_to(a):
            raise CsorchError(
                f"--carry-from {source} and --out {out} overlap: a run never writes into the "
                "evidence it carries",
                hint="give a new --out",
            )


def source_for(source: Path | None, name: str) -> Path | None:
    """The bundle of experiment `name` in `source`: a gate directory's `name/`, else
    `source` itself (a bundle)."""
    if source is None:
        return None
    inside = source / name
    return inside if (inside / MANIFEST).is_file() else source
