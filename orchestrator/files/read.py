"""The one way csorch reads a file: regular files only, opened without following a link and
without blocking, then checked on the descriptor (no race with a rename); a file read
whole is bounded by its kind; text that is not UTF-8 is named."""

from __future__ import annotations

import errno
import hashlib
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from orchestrator.files.refusal import (
    TEXT,
    Kind,
    LinkRefused,
    NotRegularFile,
    NotText,
    TooLarge,
    special_kind,
)


def _target(path: Path, kind: Kind | None) -> Path:
    """The path to open: the user's own file (`kind.follow`) through its links, resolved
    here so that the open below follows none and the error names what it found."""
    if kind is not None and kind.follow and os.path.islink(path):
        return Path(os.path.realpath(path))
    return Path(path)


def open_regular(path: Path, kind: Kind | None = None) -> IO[bytes]:
    """`path` opened to read, only when it is a regular file and not a symlink (a user's
    input, `kind.follow`, is read at the file its links name). The open does not block (a
    named pipe with no writer would hold `open` forever) and the check is made on the
    opened descriptor. NotRegularFile or LinkRefused otherwise; OSError as `open` raises
    it (FileNotFoundError included)."""
    target = _target(path, kind)
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LinkRefused(path) from None
        raise
    try:
        found = special_kind(os.fstat(fd).st_mode)
        if found:
            raise NotRegularFile(path, found, target=None if target == Path(path) else target)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: Path, kind: Kind = TEXT) -> bytes:
    """A regular file's bytes, at most `kind.limit` of them (TooLarge past it: the size is
    checked before a byte is read, and the read stops one past the bound, for files whose
    size the kernel does not tell, as /proc's)."""
    with open_regular(path, kind) as f:
        size = os.fstat(f.fileno()).st_size
        if size > kind.limit:
            raise TooLarge(path, size, kind)
        data = f.read(kind.limit + 1)
    if len(data) > kind.limit:
        raise TooLarge(path, len(data), kind)
    return data


def read_text(path: Path, kind: Kind = TEXT, *, errors: str = "strict") -> str:
    """A regular file's text (UTF-8), bounded as `read_bytes`; NotText naming the byte and
    its line when it is not UTF-8 (with `errors="replace"`, never)."""
    data = read_bytes(path, kind)
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        raise NotText(path, data, exc) from None


def lines(path: Path) -> Iterator[str]:
    """A log's lines, streamed (never held whole), bytes that are not UTF-8 replaced."""
    with open_regular(path) as f:
        yield from io.TextIOWrapper(f, encoding="utf-8", errors="replace")


def tail(path: Path, lines: int, *, max_bytes: int = 1 << 20) -> list[str]:
    """The last `lines` lines of a log (at most its last `max_bytes`), bytes that are not
    UTF-8 replaced: a log a child wrote is any size and any bytes."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        f.seek(max(0, size - max_bytes))
        text = f.read(max_bytes).decode("utf-8", errors="replace")
    return text.splitlines()[-lines:] if lines else []


def file_digest(path: Path, kind: Kind | None = None) -> str:
    """sha256 of a regular file's bytes, read in 1 MiB blocks (NotRegularFile for a pipe,
    a device or a socket, whose reading may never end; LinkRefused for a link, unless
    `kind.follow`: a user's patch, say)."""
    h = hashlib.sha256()
    with open_regular(path, kind) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
