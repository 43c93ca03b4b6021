"""Files, the ways every stage shares: digests, atomic writes, schema-checked JSON reads."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from orchestrator.errors import DocumentError


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


def read_json(path: Path, schema: str | None = None) -> dict[str, Any]:
    """A JSON object csorch wrote, with its `schema` checked; DocumentError naming the file
    when it is missing, unreadable, not JSON, not an object or of another schema."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DocumentError(path, "", "is missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DocumentError(path, "", f"cannot be read: {exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DocumentError(path, "", f"is not valid JSON (line {exc.lineno}): {exc.msg}") from None
    if not isinstance(doc, dict):
        raise DocumentError(path, "", f"is {type(doc).__name__} JSON, not an object")
    if schema is not None and doc.get("schema") != schema:
        raise DocumentError(path, "", f"has schema {doc.get('schema')!r}, expected {schema}")
    return doc


def field(doc: Any, key: str, kind: type | tuple[type, ...], where: Path) -> Any:
    """`doc[key]` when it is of `kind`; DocumentError naming `where` and the key if not."""
    if not isinstance(doc, dict) or key not in doc:
        raise DocumentError(where, key, "missing")
    value = doc[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise DocumentError(where, key, f"is {type(value).__name__}, expected {names}")
    return value
