"""Files, the ways every stage shares: digests, atomic writes, schema-checked JSON reads."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_umask() -> int:
    # the only way to read it is to set it; done once, before any worker thread exists
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def atomic_write(path: Path, text: str) -> None:
    """Replace `path` with `text` in one rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    replaced = False
    try:
        # mkstemp creates 0600; a bundle is shared (CI artifacts): the usual umask applies
        os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        replaced = True
    finally:
        if not replaced:
            Path(tmp).unlink(missing_ok=True)
