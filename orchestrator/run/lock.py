"""The lock on a bundle directory: one csorch session at a time writes in it.

A `fcntl.flock` on `.csorch.lock` in the directory, held for the session and let go by
the kernel when the process ends (however it ends: a SIGKILL leaves no stale lock). A
second run, or a second `--resume` of the same directory, is refused with the pid that
holds it, before it reads the journal or stops anyone's children."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import IO

from orchestrator import files
from orchestrator.bundle.layout import LOCK
from orchestrator.errors import CsorchError


class Busy(CsorchError):
    """Another csorch session holds the directory."""


class Held:
    """A held lock on one directory; `release()` lets it go."""

    def __init__(self, directory: Path, handle: IO[str]) -> None:
        self.directory, self._handle = directory, handle

    def release(self) -> None:
        with contextlib.suppress(OSError):
            self._handle.close()  # closing the descriptor drops the flock


def hold(directory: Path) -> Held:
    """Take the lock on `directory` (made if missing); Busy when another session has it."""
    files.make_dirs(directory, root=directory)
    # never through a link planted in its place: the lock is csorch's own file
    handle = files.open_file(directory / LOCK, "a+", root=directory)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        if holder == str(os.getpid()):  # flock is per open file: this process holds it
            raise Busy(
                f"{directory} is already being written by this csorch session: two "
                "experiments (or runs) of one session write into one directory",
                hint="give each experiment its own name (its bundle is OUT/<name>)",
            ) from None
        raise Busy(
            f"{directory} is in use by another csorch session (pid {holder})",
            hint="wait for it to finish (or stop it), then run the same command again",
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return Held(directory, handle)
