"""The build cache: content-addressed entries, one lock per entry, atomic publish, LRU.

    CACHE/entries/KEY/    a published build (immutable): entry.json, build.log, outputs
    CACHE/locks/KEY.lock  flock'd while an entry is looked up, built or evicted
    CACHE/locks/KEY.pin   flock'd shared by every run that uses the entry
    CACHE/tmp/KEY.*       builds in progress; renamed into entries/ when complete

The key is a sha256 over everything that changes the binaries (`key`): the tree and
patch digests, the build spec, the sanitizer and its flags, and the toolchain (Python,
torch and its CUDA, compilers, GPU architectures). A reader never sees half an entry:
an entry appears by one `rename` of a finished directory, and two csorch processes
building the same key serialize on its lock (the second finds the entry published).
Each hit touches `entries/KEY/.used`; eviction removes the least recently used entries
beyond the limits, never one that is locked or pinned by a run using it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO

from orchestrator import files
from orchestrator.files import load_json

FORMAT = 1  # bump when the entry layout or the build protocol changes
#: names the build cache's directory (over the XDG default; `--cache-dir` wins over both)
ENV = "CSORCH_CACHE_DIR"
DEFAULT_MAX_ENTRIES = 32
DEFAULT_MAX_BYTES = 16 << 30
META = "entry.json"
USED = ".used"


def user_cache_home() -> Path:
    """$XDG_CACHE_HOME when it is an absolute path (the XDG spec ignores a relative one),
    else ~/.cache."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"


def default_dir() -> Path:
    """The build cache when no `--cache-dir` is given: $CSORCH_CACHE_DIR, else
    $XDG_CACHE_HOME/csorch, else ~/.cache/csorch. Never relative to the current
    directory: a run started from another directory finds the same builds."""
    named = os.environ.get(ENV, "")
    return Path(named).expanduser().resolve() if named else user_cache_home() / "csorch"


DEFAULT_DIR = default_dir()


def key(inputs: Mapping[str, object]) -> str:
    """Deterministic key of JSON-able build inputs (dict order does not matter)."""
    text = json.dumps({"format": FORMAT, **inputs}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _size(path: Path) -> int:
    total = 0
    for dirpath, _, names in files.walk(path, max_depth=files.REMOVE_DEPTH):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


class Cache:
    def __init__(
        self,
        root: Path | str = DEFAULT_DIR,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.root = Path(root).resolve()
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._pins: dict[str, IO[str]] = {}
        self._guard = threading.Lock()
        for sub in ("entries", "locks", "tmp"):
            files.make_dirs(self.root / sub, root=self.root)

    def entry(self, k: str) -> Path:
        return self.root / "entries" / k

    @contextlib.contextmanager
    def lock(self, k: str, *, blocking: bool = True, kind: str = "lock") -> Iterator[bool]:
        """Hold the entry's lock exclusively; with `blocking=False`, yields False if it
        is taken. `kind="pin"` takes the pin instead (eviction's test that no run uses it)."""
        with files.open_file(self.root / "locks" / f"{k}.{kind}", "a+", root=self.root) as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def hold(self, k: str) -> None:
        """Pin the entry until `release()`: eviction, in any process, skips it. Take it
        with the entry's lock held, so that nobody evicts it in between."""
        with self._guard:
            if k in self._pins:
                return
            handle = files.open_file(self.root / "locks" / f"{k}.pin", "a+", root=self.root)
            fcntl.flock(handle, fcntl.LOCK_SH)
            self._pins[k] = handle

    def release(self) -> None:
        """Drop every pin this object holds."""
        with self._guard:
            for handle in self._pins.values():
                handle.close()  # closing the file drops its flock
            self._pins.clear()

    def lookup(self, k: str) -> dict | None:
        """The entry's metadata if it is published (and marks it used), else None."""
        meta = self.entry(k) / META
        try:
            data = load_json(meta)
        except (OSError, ValueError):  # absent, unreadable, torn or not UTF-8: a miss
            return None
        if not isinstance(data, dict):
            return None
        (self.entry(k) / USED).touch()
        return data

    def scratch(self, k: str) -> Path:
        """A fresh directory to build `k` in (call with the lock held). Leftovers of a
        killed build of the same key are removed: the lock says nobody else owns them."""
        for old in (self.root / "tmp").glob(f"{k}.*"):
            files.remove_tree(old, ignore_errors=True)
        path = self.root / "tmp" / f"{k}.{os.getpid()}"
        path.mkdir(parents=True)
        return path

    def publish(self, k: str, scratch: Path, meta: Mapping[str, object]) -> Path:
        """Write the metadata last, then rename the finished directory into place."""
        files.atomic_write(
            scratch / META, json.dumps(meta, indent=2, sort_keys=True), root=self.root
        )
        (scratch / USED).touch()
        dest = self.entry(k)
        if dest.exists():  # a stale entry without metadata (a crash mid-eviction)
            self._remove(dest)
        os.rename(scratch, dest)
        return dest

    def _remove(self, entry: Path) -> None:
        # rename first: the entry disappears at once, the slow delete comes after
        doomed = self.root / "tmp" / f"{entry.name}.evicted.{os.getpid()}"
        os.rename(entry, doomed)
        files.remove_tree(doomed, ignore_errors=True)

    def drop(self, k: str) -> bool:
        """Remove one entry now (its key proved wrong), unless a run holds or uses it;
        True when it was removed."""
        with (
            self.lock(k, blocking=False) as held,
            self.lock(k, blocking=False, kind="pin") as unused,
        ):
            if not (held and unused) or not self.entry(k).exists():
                return False
            self._remove(self.entry(k))
        return True

    def entries(self) -> list[tuple[float, str, int]]:
        """(last used, key, bytes) of every published entry, least recent first."""
        out = []
        for entry in (self.root / "entries").iterdir():
            used = entry / USED
            stamp = used.stat().st_mtime if used.exists() else entry.stat().st_mtime
            out.append((stamp, entry.name, _size(entry)))
        return sorted(out)

    def evict(self, keep: Iterable[str] = ()) -> list[str]:
        """Remove least recently used entries beyond the limits; returns their keys."""
        keep = set(keep)
        entries = self.entries()
        count, total = len(entries), sum(size for _, _, size in entries)
        evicted = []
        for _, k, size in entries:
            if count <= self.max_entries and total <= self.max_bytes:
                break
            if k in keep:
                continue
            with (
                self.lock(k, blocking=False) as held,
                self.lock(k, blocking=False, kind="pin") as unused,
            ):
                if not (held and unused) or not self.entry(k).exists():
                    continue
                self._remove(self.entry(k))
            evicted.append(k)
            count, total = count - 1, total - size
        self._sweep()
        return evicted

    def _sweep(self, age: float = 86400.0) -> None:
        """Leftover scratch directories older than `age` (killed builds, other hosts)."""
        now = time.time()
        for path in (self.root / "tmp").iterdir():
            with contextlib.suppress(OSError):
                if now - path.stat().st_mtime > age:
                    files.remove_tree(path, ignore_errors=True)
