"""Processes a test looks for from outside the sandbox: a sandboxed child cannot write a
pid file outside its scratch (the tree is read-only) and `$$` inside is its namespace's
pid, so a test names its process by a unique argv and finds it in the host's /proc."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable


def token() -> str:
    """A `sleep` duration no other process on the host uses: `sleep {token()}`."""
    return f"{300 + uuid.uuid4().int % 10_000}.{uuid.uuid4().int % 10**6:06d}"


def with_argv(*argv: str) -> list[int]:
    """The pids of the host's processes whose argv is exactly `argv`."""
    want = b"\0".join(a.encode() for a in argv) + b"\0"
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if f.read() == want:
                        found.append(int(name))
            except OSError:
                continue  # gone meanwhile
    return found


def wait_for(*argv: str, alive: Callable[[], bool], timeout: float = 120) -> int:
    """The pid of the one process running `argv`, waiting while `alive()` (the csorch that
    should start it) holds; AssertionError when it never appears."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = with_argv(*argv)
        if pids:
            return pids[0]
        assert alive(), f"csorch ended before {' '.join(argv)!r} started"
        time.sleep(0.05)
    raise AssertionError(f"{' '.join(argv)!r} did not start in {timeout} s")


def gone(pid: int, timeout: float = 5) -> bool:
    """Whether `pid` has ended (or is a zombie) within `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False
