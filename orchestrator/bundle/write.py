"""Writing the results bundle (its layout: `bundle.layout`).

Both JSON files are rewritten after every build and attempt: written to a temporary
file in the same directory, flushed to disk, then renamed over the old one, so a reader
(or a Ctrl-C at any moment) finds either the previous or the next complete file, never
half of one. Until the run ends, both say `"complete": false`. Paths in the records are
relative to OUT, so a bundle can be moved and still verified.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator import __version__, files
from orchestrator.bundle.layout import (
    COVERED,
    MANIFEST,
    MANIFEST_SCHEMA,
    RESULTS,
    RESULTS_SCHEMA,
)
from orchestrator.files import CONFIG, atomic_write, file_digest, regular_files
from orchestrator.host import Host
from orchestrator.judge.causality import Judgement
from orchestrator.judge.tallies import CaseResult
from orchestrator.model import Attempt, Build, Carried, Experiment, SourceTree


@dataclass
class Snapshot:
    """What the run knows so far (the pipeline fills it; the bundle serializes it)."""

    experiment: Experiment
    backend: Mapping[str, str]  # name, reason, tool version, tool path
    host: Host
    options: Mapping[str, Any]
    started: str
    sources: list[SourceTree] = field(default_factory=list)
    builds: list[Build] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)
    cases: list[CaseResult] = field(default_factory=list)
    judgement: Judgement | None = None
    finished: str = ""
    complete: bool = False
    interrupted: bool = False
    carried: Carried | None = None  # the verdict carried from a stored bundle (run/carried.py)
    command: list[str] = field(default_factory=lambda: list(sys.argv))  # the run's first


class Bundle:
    """One results directory; `write` may be called from any thread."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        files.make_dirs(self.root / "logs", root=self.root)  # never a link planted there
        self._lock = threading.Lock()
        self._hashes: dict[str, tuple[int, int, str]] = {}
        self._covered: set[str] = set()  # files beside the logs the manifest lists (`cover`)

    def _log_hashes(self) -> dict[str, str]:
        """sha256 of every log, recomputed only for files that changed since last time."""
        return {
            path.relative_to(self.root).as_posix(): self._hashed(path)
            for path in regular_files(self.root / "logs")
        }

    def _hashed(self, path: Path) -> str:
        """sha256 of a file of the bundle, recomputed only when it changed since last time."""
        rel = path.relative_to(self.root).as_posix()
        st = path.stat()
        cached = self._hashes.get(rel)
        if cached is None or cached[:2] != (st.st_size, st.st_mtime_ns):
            cached = (st.st_size, st.st_mtime_ns, file_digest(path))
            self._hashes[rel] = cached
        return cached[2]

    def cover(self, paths: list[str]) -> None:
        """Have the manifest list these files too (bundle-relative: the kept trees,
        bundle/trees.py), from the next write on."""
        with self._lock:
            self._covered.update(paths)

    def _files(self) -> dict[str, str]:
        """sha256 of the bundle's other files (the journal, the kept trees), so that
        nothing in it is unlisted."""
        out = {
            name: file_digest(self.root / name) for name in COVERED if (self.root / name).is_file()
        }
        out.update((rel, self._hashed(self.root / rel)) for rel in sorted(self._covered))
        return out

    def write(self, snap: Snapshot) -> None:
        with self._lock:
            text = json.dumps(results(snap), indent=1)
            atomic_write(self.root / RESULTS, text)
            # the manifest's digest of results.json lets `csorch verify` check it too
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            doc = manifest(snap, self._log_hashes(), results_sha256=digest, files=self._files())
            atomic_write(self.root / MANIFEST, json.dumps(doc, indent=1))


def _dicts(records: list[Any]) -> list[dict[str, Any]]:
    return [r.to_dict() for r in records]


def results(snap: Snapshot) -> dict[str, Any]:
    judgement = snap.judgement
    return {
        "schema": RESULTS_SCHEMA,
        "complete": snap.complete,
        "interrupted": snap.interrupted,
        "csorch": __version__,
        "started": snap.started,
        "finished": snap.finished,
        "verdict": judgement.verdict.value if judgement is not None else None,
        "experiment": snap.experiment.to_dict(),
        "backend": dict(snap.backend),
        "options": dict(snap.options),
        "sources": _dicts(snap.sources),
        "builds": _dicts(snap.builds),
        "attempts": _dicts(snap.attempts),
        "not_run": list(snap.not_run),
        "cases": _dicts(snap.cases),
        "judgement": judgement.to_dict() if judgement is not None else None,
        "carried": snap.carried.to_dict() if snap.carried is not None else None,
    }


def manifest(
    snap: Snapshot,
    logs: Mapping[str, str],
    results_sha256: str = "",
    files: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    config = snap.experiment.config
    return {
        "schema": MANIFEST_SCHEMA,
        "complete": snap.complete,
        "csorch": __version__,
        "command": list(snap.command),
        "config": {
            "path": str(config) if config else "",
            "sha256": file_digest(config, CONFIG) if config and Path(config).is_file() else "",
        },
        "results": {"path": RESULTS, "sha256": results_sha256},
        "host": snap.host.to_dict(),
        "backend": dict(snap.backend),
        "sources": [
            {
                "variant": s.variant,
                "digest": s.digest,
                "source": s.source.to_dict(),
                "commit": s.commit,
                "patches": [{"path": str(p.path), "sha256": p.sha256} for p in s.patches],
            }
            for s in snap.sources
        ],
        "builds": [
            {
                "variant": b.variant,
                "kind": b.kind.value,
                "ok": b.ok,
                "cached": b.cached,
                "cache_key": b.cache_key,
                "entry": str(b.directory) if b.directory else "",
                "binaries": [a.to_dict() for a in b.artifacts],
                "log": str(b.log) if b.log else "",
            }
            for b in snap.builds
        ],
        "attempts": [
            {
                "variant": a.variant,
                "run": a.run,
                "case": a.case,
                "repeat": a.repeat,
                "device": a.device,
                "launches": [
                    {
                        "argv": list(x.argv),
                        "env": dict(x.env),
                        "cwd": x.cwd,
                        "log": str(x.log),
                        "returncode": x.returncode,
                    }
                    for x in a.launches
                ],
            }
            for a in snap.attempts
        ],
        "logs": dict(logs),
        "files": dict(files or {}),
    }
