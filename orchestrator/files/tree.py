"""Trees: the one walk, copy and removal csorch uses, none of them recursive (a tree a
case or a build makes 1200 deep is no RecursionError) and none following a link."""

from __future__ import annotations

import contextlib
import fnmatch
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from orchestrator.files.read import open_regular
from orchestrator.files.refusal import MAX_DEPTH, Kind, NotRegularFile, TooDeep, special_kind
from orchestrator.files.write import open_file

#: the deepest tree `remove_tree` takes apart (it holds one descriptor and a name per
#: level, so the bound is only there to make every loop end)
REMOVE_DEPTH = 100_000

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


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


def remove_tree(top: Path, *, ignore_errors: bool = False, max_depth: int = REMOVE_DEPTH) -> None:
    """Remove `top` and everything under it (a link is removed, never followed), without
    recursion and through directory descriptors (one open at a time, so neither the
    recursion limit, the descriptor limit nor PATH_MAX bounds the depth): a tree deeper
    than `max_depth` is TooDeep. A missing `top` is nothing to do. With `ignore_errors`
    what cannot be removed is left, as `shutil.rmtree(..., ignore_errors=True)` leaves it."""
    top = Path(top)
    try:
        _remove(top, max_depth)
    except FileNotFoundError:
        pass
    except OSError:
        if not ignore_errors:
            raise


def _remove(top: Path, max_depth: int) -> None:
    try:
        fd = os.open(top, _DIR)
    except OSError:
        if top.is_symlink() or (top.exists() and not top.is_dir()):
            top.unlink()  # a link or a file: itself is the tree
            return
        raise
    names: list[str] = []  # the directories entered below top, deepest last
    try:
        while True:
            with os.scandir(fd) as it:
                entries = list(it)
            sub = next((e.name for e in entries if e.is_dir(follow_symlinks=False)), None)
            if sub is not None:
                if len(names) >= max_depth:
                    raise TooDeep(top.joinpath(*names, sub), max_depth)
                below = os.open(sub, _DIR, dir_fd=fd)
                os.close(fd)
                fd = below
                names.append(sub)
                continue
            for entry in entries:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.name, dir_fd=fd)
            if not names:
                break
            # up one level (".." is no link), then the emptied directory goes
            parent = os.open("..", _DIR, dir_fd=fd)
            os.close(fd)
            fd = parent
            os.rmdir(names.pop(), dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(top)


def copy_tree(
    src: Path,
    dest: Path,
    *,
    ignore: Callable[[str, list[str]], list[str]] | None = None,
    keep_times: bool = True,
    max_depth: int = MAX_DEPTH,
) -> None:
    """`shutil.copytree(src, dest, symlinks=True, ignore=ignore)` without recursion: links
    are copied as links, files with their mode (and their times with `keep_times`; else
    fresh, as `shutil.copy` gives), `dest` must not exist. A named pipe, socket or device
    is NotRegularFile (copying a pipe would block on it); TooDeep past `max_depth`."""
    src, dest = Path(src), Path(dest)
    copy = shutil.copy2 if keep_times else shutil.copy
    dest.mkdir(parents=True)
    made: list[tuple[str, Path]] = [(os.fspath(src), dest)]
    for here, dirs, names in walk(src, max_depth=max_depth):
        skipped = set(ignore(here, [*dirs, *names])) if ignore else set()
        dirs[:] = [d for d in dirs if d not in skipped]
        target = dest / Path(here).relative_to(src)
        for name in sorted([*dirs, *names]):
            if name in skipped:
                continue
            path, out = Path(here) / name, target / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                os.symlink(os.readlink(path), out)
            elif stat.S_ISDIR(mode):
                out.mkdir()
                made.append((os.fspath(path), out))
            elif stat.S_ISREG(mode):
                copy(path, out, follow_symlinks=False)
            else:
                raise NotRegularFile(path, special_kind(mode))
        dirs[:] = [d for d in dirs if not (Path(here) / d).is_symlink()]
    for original, copied in reversed(made):  # after their files: a copy touches the times
        shutil.copystat(original, copied, follow_symlinks=False)


def copy_file(src: Path, dest: Path, *, root: Path | None = None, kind: Kind | None = None) -> None:
    """`src`'s bytes into `dest` (replaced): read as `read.open_regular` reads (a regular
    file, not a link unless `kind.follow`), written as `write.open_file` writes (no link
    followed below `root`)."""
    with open_regular(src, kind) as f, open_file(dest, "w", root=root, binary=True) as out:
        shutil.copyfileobj(f, out, 1 << 20)


def glob(
    root: Path, pattern: str, *, include_hidden: bool = False, max_depth: int = MAX_DEPTH
) -> list[str]:
    """`glob.glob(pattern, root_dir=root, recursive=True)` over `files.walk` (Python's
    recursive globs recurse, and fail on a deep tree; this one is TooDeep past
    `max_depth`): the paths under `root` that match, relative and sorted. `**` is any
    number of directories; as glob's, a wildcard matches no name that starts with a dot
    (with `include_hidden`, it does, as `Path.glob`'s)."""
    parts = tuple(p for p in pattern.split("/") if p)
    found = []
    for here, dirs, names in walk(root, max_depth=max_depth):
        rel = Path(here).relative_to(root).parts
        for name in (*dirs, *names):
            if _matches((*rel, name), parts, include_hidden):
                found.append("/".join((*rel, name)))
    return sorted(found)


def _matches(path: tuple[str, ...], pattern: tuple[str, ...], include_hidden: bool) -> bool:
    """Whether path components match pattern components (`**`: zero or more of them)."""
    # reachable[i]: the first i components of the pattern can match the path so far
    reachable = [True] + [False] * len(pattern)
    for i, part in enumerate(pattern):  # `**` first may match nothing
        if part == "**" and reachable[i]:
            reachable[i + 1] = True
    for name in path:
        step = [False] * (len(pattern) + 1)
        for i, part in enumerate(pattern):
            if not reachable[i]:
                continue
            hidden = name.startswith(".") and not part.startswith(".") and not include_hidden
            if part == "**":
                if not hidden:
                    step[i] = True  # ** takes this component and may take more
                    step[i + 1] = True
            elif not hidden and fnmatch.fnmatchcase(name, part):
                step[i + 1] = True
        for i, part in enumerate(pattern):  # a `**` reached may also match nothing
            if part == "**" and step[i]:
                step[i + 1] = True
        reachable = step
    return reachable[-1]
