"""The options of one run: what the command line (or a Python caller) decides beyond the
experiment config."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from orchestrator import cache
from orchestrator.executors.base import Executor
from orchestrator.model.job import Fanout

DEFAULT_WORK = Path("build") / "csorch-work"


@dataclass(frozen=True)
class Options:
    backend: str  # "asan" or "compute-sanitizer" (auto is resolved by the caller)
    out: Path
    reason: str = ""  # why this backend (for the record)
    cache: Path = cache.DEFAULT_DIR
    work: Path = DEFAULT_WORK
    jobs: int = 1
    devices: tuple[str, ...] = ()
    fanout: Fanout = Fanout.SHARD
    repeat: int | None = None  # overrides every run's repeats
    python: str = sys.executable
    keep_work: bool = False
    executor: Executor | None = None  # None: local child processes
    resume: bool = False  # continue the run journaled in `out`
    selected: tuple[str, ...] = ()  # the --case names (kept for a resume)
