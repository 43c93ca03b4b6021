"""The one way csorch writes a file: through its directory's descriptor, opened component
by component below the directory csorch owns (`root`) without following a link, so that a
symlink planted as a lock, a journal, a log or a directory such as logs/ is refused by
name instead of written through; documents are replaced in one rename."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
from pathlib import Path
from typing import IO, Any

from orchestrator.files.refusal import (
    FileRefused,
    HardLinked,
    LinkRefused,
    NotRegularFile,
    special_kind,
)

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def _read_umask() -> int:
    # the only way to read it is to set it; done once, before any worker thread exists
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()

#: the temporary name an `atomic_write` of NAME uses: .NAME.<pid>-<8 hex>.tmp
PARTIAL_RE = re.compile(r"^\.(?P<name>.+)\.[0-9]+-[0-9a-f]{8}\.tmp$")


def _below(directory: Path, root: Path | None) -> tuple[Path, tuple[str, ...]]:
    """`root` (default: `directory` itself) and the components of `directory` below it."""
    directory = Path(directory)
    if root is None:
        return directory, ()
    root = Path(root)
    try:
        return root, directory.relative_to(root).parts
    except ValueError:
        raise ValueError(f"{directory} is not under {root}") from None


def _kind_of(path: Path) -> str:
    try:
        return special_kind(path.lstat().st_mode)
    except OSError:
        return ""


def _refusal(path: Path, exc: OSError) -> OSError:
    """What an open of `path` without following a link failed with, named."""
    if os.path.islink(path):
        return LinkRefused(path)
    if exc.errno == errno.ENOTDIR:
        return FileRefused(path, f"is {_kind_of(path) or 'a file'}, not a directory")
    return exc


def open_dir(directory: Path, *, root: Path | None = None, create: bool = False) -> int:
    """A descriptor of `directory`, opened from `root` (which the user or csorch named, and
    which is taken as it is) one component at a time without following a link: LinkRefused
    naming the first component below `root` that is a symlink. `create` makes what is
    missing (as `mkdir -p`). The caller closes the descriptor."""
    top, parts = _below(directory, root)
    if create:
        os.makedirs(top, exist_ok=True)
    fd = os.open(top, _DIR)
    here = top
    try:
        for part in parts:
            here = here / part
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
            try:
                below = os.open(part, _DIR | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                raise _refusal(here, exc) from None
            os.close(fd)
            fd = below
    except BaseException:
        os.close(fd)
        raise
    return fd


def make_dirs(directory: Path, *, root: Path | None = None) -> Path:
    """`mkdir -p directory`, refusing a symlink at any component below `root` (default:
    the directory itself must not be a link); the directory."""
    directory = Path(directory)
    if root is None:
        root = directory.parent
    os.close(open_dir(directory, root=root, create=True))
    return directory


#: modes of `open_file`: the flags of each (every one with O_NOFOLLOW and O_NONBLOCK)
_MODES = {
    "w": os.O_WRONLY | os.O_CREAT,  # truncated once checked (a hard link's data kept)
    "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    "a+": os.O_RDWR | os.O_CREAT | os.O_APPEND,
    "r+": os.O_RDWR,
    "x": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
}


def open_file(path: Path, mode: str, *, root: Path | None = None, binary: bool = False) -> IO[Any]:
    """`path` opened to write (`mode`: w, a, a+, r+ or x; `binary` for bytes), never through
    a link: the final component is opened with O_NOFOLLOW, the directories below `root` as
    `open_dir` opens them, and what is found must be a regular file (a named pipe in place
    of a log would block the open, a device swallow the write): LinkRefused or
    NotRegularFile otherwise; a file that has other names (hard links) is not written in
    place (HardLinked): the write would reach them too. Text is UTF-8."""
    path = Path(path)
    flags = _MODES[mode] | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    dfd = open_dir(path.parent, root=root)
    try:
        fd = os.open(path.name, flags, 0o666 & ~_UMASK, dir_fd=dfd)
    except OSError as exc:
        if os.path.islink(path):
            raise LinkRefused(path) from None
        if exc.errno == errno.ENXIO:  # a pipe with no reader, a socket
            raise NotRegularFile(path, _kind_of(path) or "not a regular file") from None
        raise
    finally:
        os.close(dfd)
    try:
        st = os.fstat(fd)
        found = special_kind(st.st_mode)
        if found:
            raise NotRegularFile(path, found)
        if st.st_nlink > 1:
            raise HardLinked(path, st.st_nlink)
        if mode == "w":
            os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
        py_mode = {"w": "w", "a": "a", "a+": "a+", "r+": "r+", "x": "w"}[mode]
        if binary:
            return os.fdopen(fd, py_mode + "b")
        return os.fdopen(fd, py_mode, encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def atomic_write(path: Path, data: str | bytes, *, root: Path | None = None) -> None:
    """Replace `path` with `data` (text as UTF-8) in one rename, in its directory opened as
    `open_dir` opens it (no link followed below `root`; the rename replaces a link at the
    final component rather than writing through it). The temporary file is named before
    it is created, so an interrupt at any point (KeyboardInterrupt from a signal handler)
    leaves none behind; only a SIGKILL can, and `remove_partial_writes` clears that debris."""
    path = Path(path)
    tmp = f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
    dfd = open_dir(path.parent, root=root)
    replaced = False
    try:
        # the usual umask applies: a bundle is shared (CI artifacts)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, 0o666 & ~_UMASK, dir_fd=dfd)
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        replaced = True
    finally:
        if not replaced:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dfd)
        os.close(dfd)


def remove_partial_writes(directory: Path) -> list[Path]:
    """Remove the temporary files of `atomic_write`s in `directory` that a killed process
    never renamed (a resume starts from what the renames published); the ones removed."""
    removed = []
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except FileNotFoundError:
        return []
    for entry in entries:
        if PARTIAL_RE.match(entry.name) and entry.is_file(follow_symlinks=False):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed
