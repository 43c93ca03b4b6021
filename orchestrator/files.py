"""Files, the ways every stage shares: digests, atomic writes, schema-checked JSON reads."""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
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


#: the temporary name an `atomic_write` of NAME uses: .NAME.<pid>-<8 hex>.tmp
PARTIAL_RE = re.compile(r"^\.(?P<name>.+)\.[0-9]+-[0-9a-f]{8}\.tmp$")


def atomic_write(path: Path, text: str) -> None:
    """Replace `path` with `text` in one rename. The temporary file is named before it is
    created, so an interrupt at any point (KeyboardInterrupt from a signal handler) leaves
    none behind; only a SIGKILL can, and `remove_partial_writes` clears that debris."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    replaced = False
    try:
        # the usual umask applies: a bundle is shared (CI artifacts)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 & ~_UMASK)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        replaced = True
    finally:
        if not replaced:
            tmp.unlink(missing_ok=True)


def remove_partial_writes(directory: Path) -> list[Path]:
    """Remove the temporary files of `atomic_write`s in `directory` that a killed process
    never renamed (a resume starts from what the renames published); the ones removed."""
    removed = []
    for path in sorted(Path(directory).glob(".*.tmp")):
        if PARTIAL_RE.match(path.name) and path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


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
