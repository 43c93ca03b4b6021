"""The promises of docs/threat-model.md as checks over one end-to-end try, shared by
the generative tests: csorch run as a user runs it (a child process, its own cache),
the places it must not write snapshotted before and after, and the answers it may give.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from orchestrator import sandbox

ROOT = Path(__file__).resolve().parents[3]
#: what csorch may exit with: pass, fail, usage, inconclusive
EXITS = {0, 1, 2, 3}
#: csorch's own bound for one try here; a hang fails the example by this timeout
DEADLINE = 120


def profile() -> settings:
    """This suite's settings: the long profile under `make fuzz` (which loads the
    parsers' `fuzz`), else the quick one."""
    current = settings.get_current_profile_name()
    if current.startswith("hostile-"):
        return settings.get_profile(current)
    return settings.get_profile("hostile-fuzz" if current == "fuzz" else "hostile-ci")


def csorch(cwd: Path, *args: str | os.PathLike[str], home: Path, cache: Path,
           timeout: float = DEADLINE) -> subprocess.CompletedProcess:  # fmt: skip
    """`python -m orchestrator ARGS` in `cwd`, to its end, with `home` as $HOME (a decoy
    whose snapshot must not change) and `cache` as its build cache."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", "HOME": str(home),
           "CSORCH_CACHE_DIR": str(cache)}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *map(os.fsdecode, args)],
        cwd=cwd, capture_output=True, timeout=timeout, env=env,
        text=True, errors="replace",
    )  # fmt: skip


def said(done: subprocess.CompletedProcess) -> str:
    return f"exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"


def answered(done: subprocess.CompletedProcess) -> None:
    """Every answer is an exit code csorch documents, never a traceback."""
    assert "Traceback (most recent call last)" not in done.stdout + done.stderr, said(done)
    assert done.returncode in EXITS, said(done)


def snapshot(root: Path) -> dict[bytes, str]:
    """Every entry under `root` (bytes names: a name need not be UTF-8) with what it is:
    a link's target, a file's sha256, a directory, a pipe or socket (never opened).
    Walked without recursion, so a tree hundreds deep is no RecursionError."""
    out: dict[bytes, str] = {}
    base = os.fsencode(root)
    todo = [base]
    while todo:
        here = todo.pop()
        with os.scandir(here) as entries:
            for e in entries:
                rel = os.path.relpath(e.path, base)
                st = e.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    out[rel] = "l:" + os.fsdecode(os.readlink(e.path))
                elif stat.S_ISDIR(st.st_mode):
                    out[rel] = "d"
                    todo.append(e.path)
                elif stat.S_ISREG(st.st_mode):
                    with open(e.path, "rb") as f:
                        out[rel] = hashlib.sha256(f.read()).hexdigest()
                else:
                    out[rel] = f"special:{stat.S_IFMT(st.st_mode):o}"
    return out


def alive_with(token: str) -> list[str]:
    """Processes of this host whose command line holds `token` (a try's own): none may
    outlive csorch."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:  # it ended meanwhile, or is not ours to read
            continue
        if token.encode() in cmdline:
            shown = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{pid}: {shown}")
    return found


def needs_sandbox() -> None:
    """Skip where this host cannot sandbox (the promises about processes and writes are
    the sandbox's)."""
    sandbox.probe.cache_clear()
    support = sandbox.probe()
    if not support.works:
        pytest.skip(f"this host cannot sandbox: {support.fact}")
