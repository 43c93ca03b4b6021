"""Files, the ways every stage shares: digests, atomic writes, schema-checked JSON reads."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from orchestrator.errors import DocumentError

#: the deepest directory csorch walks into: deeper trees are refused by name (Python's
#: recursive tree tools, copytree, rmtree and rglob among them, fail near 500 levels)
MAX_DEPTH = 200


class TooDeep(OSError):
    """A directory nested deeper than `MAX_DEPTH` (or the bound a walk was given)."""

    def __init__(self, path: Path, limit: int) -> None:
        super().__init__(errno.ELOOP, f"nested more than {limit} directories deep", str(path))
        self.limit = limit


def walk(top: Path, *, max_depth: int = MAX_DEPTH) -> Iterator[tuple[str, list[str], list[str]]]:
    """`os.walk(top)` (top-down, links to directories listed among the directories and not
    entered; a caller may prune the directory list it is given), without recursion, so that
    a hostile tree cannot make it a RecursionError: TooDeep when a directory lies more
    than `max_depth` levels below `top`."""
    stack: list[tuple[str, int]] = [(os.fspath(top), 0)]
    while stack:
        here, depth = stack.pop()
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue  # as os.walk: gone or unreadable
        dirs, names = [], []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirs if is_dir else names).append(entry.name)
        yield here, dirs, names
        below = [d for d in dirs if not os.path.islink(os.path.join(here, d))]
        if below and depth + 1 > max_depth:
            raise TooDeep(Path(here) / below[0], max_depth)
        stack.extend((os.path.join(here, d), depth + 1) for d in reversed(below))


def regular_files(top: Path, *, max_depth: int = MAX_DEPTH) -> list[Path]:
    """Every regular file under `top` (not links, pipes or devices), sorted; TooDeep as
    `walk`."""
    out = []
    for here, _, names in walk(top, max_depth=max_depth):
        for name in names:
            path = Path(here) / name
            with contextlib.suppress(OSError):
                if stat.S_ISREG(path.lstat().st_mode):
                    out.append(path)
    return sorted(out)


_KINDS = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)


def special_kind(mode: int) -> str:
    """What a file that is not a regular one is ("" for a regular file)."""
    if stat.S_ISREG(mode):
        return ""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


class NotRegularFile(OSError):
    """A path csorch reads back (a log, a JSON record, a digest's file) that is a named
    pipe, a device, a socket or a directory: reading it could block forever or never end."""

    def __init__(self, path: Path, kind: str) -> None:
        super().__init__(errno.EINVAL, f"{kind}, not a regular file", str(path))
        self.kind = kind


def open_regular(path: Path) -> IO[bytes]:
    """`path` opened to read, only when it is a regular file: the check is made on the
    opened descriptor (no race with a rename), and the open itself does not block (a named
    pipe with no writer would hold `open` forever). NotRegularFile otherwise; OSError as
    `open` raises it (FileNotFoundError included)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        kind = special_kind(os.fstat(fd).st_mode)
        if kind:
            raise NotRegularFile(Path(path), kind)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def file_digest(path: Path) -> str:
    """sha256 of a regular file's bytes, read in 1 MiB blocks (NotRegularFile for a pipe,
    a device or a socket, whose reading may never end)."""
    h = hashlib.sha256()
    with open_regular(path) as f:
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


def read_text(path: Path) -> str:
    """A regular file's text (UTF-8): FileNotFoundError and OSError as `open` raises them,
    NotRegularFile (an OSError) for a pipe, device or socket, UnicodeDecodeError (a
    ValueError) for bytes that are not UTF-8."""
    with open_regular(Path(path)) as f:
        return f.read().decode("utf-8")


def loads(text: str) -> Any:
    """`json.loads`, with nesting too deep for the parser a ValueError like any other
    damage (it is a RecursionError otherwise: a traceback from a hand-made document)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to be a document csorch wrote") from None


def load_json(path: Path) -> Any:
    """The JSON document in a regular file: OSError (FileNotFoundError, NotRegularFile
    included) when it cannot be read, ValueError when it is no JSON. Every document csorch
    reads back goes through here or `read_json`."""
    return loads(read_text(path))


def read_json(path: Path, schema: str | None = None) -> dict[str, Any]:
    """A JSON object csorch wrote, with its `schema` checked; DocumentError naming the file
    when it is missing, unreadable, not JSON, not an object or of another schema."""
    try:
        text = read_text(path)
    except FileNotFoundError:
        raise DocumentError(path, "", "is missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DocumentError(path, "", f"cannot be read: {exc}") from None
    try:
        doc = loads(text)
    except json.JSONDecodeError as exc:
        raise DocumentError(path, "", f"is not valid JSON (line {exc.lineno}): {exc.msg}") from None
    except ValueError as exc:
        raise DocumentError(path, "", f"is not valid JSON: {exc}") from None
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
