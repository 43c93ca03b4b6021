"""Places: where csorch may write. Every verb checks the directory (or file) it was told
to write in here, after the path is resolved, against csorch's rule that it writes only
in its own directories: a results directory may not lie inside a source tree (the
bundle would land in the user's tree and be copied into the variants), a build cache (an
eviction would delete it), a work directory (closing the run deletes it), an existing
bundle, gate or bisect directory (its manifest would be overwritten or hash strangers),
nor be `/` or the home directory itself; a report file may not land inside a bundle.

A directory csorch passes on to its children must also survive the way it is passed
(`passable`): paths under the build cache go into PYTHONPATH and, under ASan, LD_PRELOAD
(lists split on `:` and whitespace, with no quoting), so `--cache-dir` may hold neither;
an attempt's log path under `--out` goes into ASAN_OPTIONS, quoted with `"` or `'`, so
`--out` may not hold both."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from orchestrator.bundle.layout import MANIFEST, RESULTS
from orchestrator.config import sanitizer_options
from orchestrator.errors import CsorchError
from orchestrator.model import Experiment
from orchestrator.run.journal import JOURNAL
from orchestrator.run.sources import git_dirs, skipped_by_copy

#: a directory holding one of these is csorch's record of something (a bundle, a gate,
#: a bisection, a cache entry): nothing else may be written into it
MARKS = (MANIFEST, RESULTS, JOURNAL, "gate.json", "gate-run.json", "bisect.json", "entry.json")


def resolved(path: Path) -> Path:
    """`path` made absolute with every link resolved (as far as it exists)."""
    return Path(path).expanduser().resolve()


def record_dir(path: Path) -> Path | None:
    """The nearest directory at or above `path` that is a csorch record (a bundle, a gate,
    a bisection, a cache entry), else None."""
    for p in (path, *path.parents):
        if p.is_dir() and any((p / m).is_file() for m in MARKS):
            return p
    return None


def sources(experiments: Iterable[Experiment]) -> tuple[Path, ...]:
    """The user's trees the experiments read: each variant's source directory (a local
    repository's too), where csorch writes nothing."""
    found = []
    for experiment in experiments:
        for variant in experiment.variants:
            location = Path(experiment.source_for(variant).location)
            if location.is_dir():
                found.append(location)
    return tuple(dict.fromkeys(found))


def repositories(trees: Iterable[Path]) -> tuple[Path, ...]:
    """The git directories of the repositories `trees` lie in (each one's own and its
    common one), which need not lie inside the tree: a worktree's or a submodule's .git
    is a file naming a directory elsewhere, in the main repository's .git."""
    found: list[Path] = []
    for tree in trees:
        found.extend(git_dirs(tree))
    return tuple(dict.fromkeys(found))


def _check_repositories(path: Path, what: str, repos: Iterable[Path]) -> None:
    real = resolved(path)
    for repo in repos:
        if _within(real, resolved(repo)):
            raise CsorchError(
                f"{what} {path} is inside the git directory {resolved(repo)} of a source: "
                "csorch never writes into the user's repository",
                hint="give a directory outside the sources and their repositories",
            )


def check_out(
    path: Path,
    *,
    what: str = "--out",
    sources: Iterable[Path] = (),
    cache: Path | None = None,
    work: Path | None = None,
    resuming: bool = False,
) -> None:
    """CsorchError unless `path` may hold csorch's results: not `/` or $HOME, not inside a
    source tree, the cache or the work directory, not inside a bundle or gate (a resume
    may continue the one it names, nothing under it)."""
    check_directory(path, what)
    if cache is not None:
        check_directory(cache, "--cache-dir")
    real = resolved(path)
    hint = "give a new directory outside the sources, the cache and the work directory"
    if real == Path(real.anchor) or real == resolved(Path.home()):
        raise CsorchError(f"{what} {path} is {real}: csorch does not write there", hint=hint)
    for label, root in (("the build cache", cache), ("the work directory", work)):
        if root is not None and _within(real, resolved(root)):
            raise CsorchError(f"{what} {path} is inside {label} {resolved(root)}", hint=hint)
        if root is not None and _within(resolved(root), real):
            # the bundle's manifest would hash the cache, and a new --out's removal take it
            raise CsorchError(f"{what} {path} holds {label} {resolved(root)}", hint=hint)
    sources = tuple(sources)
    for source in sources:
        if _within(real, resolved(source)):
            raise CsorchError(
                f"{what} {path} is inside the source tree {resolved(source)}: the bundle would "
                "land in the user's tree and be copied into the variants",
                hint=hint,
            )
    _check_repositories(path, what, repositories(sources))
    record = record_dir(real.parent if resuming else real)
    if record is not None:
        raise CsorchError(
            f"{what} {path} is inside {record}, which holds csorch's results already",
            hint="give a new directory (a resume takes the directory itself)",
        )


def check_cache(cache: Path, sources: Iterable[Path]) -> None:
    """CsorchError when the build cache (and so the work directory, its work/) lies inside
    a source tree, checked before the cache is made: csorch would write into the user's
    tree, and copy its own copies. A cache under a directory the copy skips (the
    source's build/, say) is csorch's alone."""
    real = resolved(cache)
    sources = tuple(sources)
    _check_repositories(cache, "--cache-dir", repositories(sources))
    for source in sources:
        top = resolved(source)
        if _within(real, top) and not skipped_by_copy(real.relative_to(top).parts):
            raise CsorchError(
                f"--cache-dir {cache} is inside the source tree {top}: csorch would write "
                "its builds into the user's tree",
                hint="give a --cache-dir outside the sources (or under the source's build/)",
            )


def check_directory(path: Path, what: str) -> None:
    """CsorchError when `path` cannot be a directory csorch makes or uses: a file, or
    under one, or a path that cannot be passed on (`passable`)."""
    passable(path, what)
    if path.exists() and not path.is_dir():
        raise CsorchError(f"{what} {path} is a file", hint="give a directory")
    parent = next((p for p in path.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise CsorchError(f"{what} {path} is under {parent}, a file", hint="give a directory")


#: what splits a path list (PYTHONPATH: ':'; LD_PRELOAD: ':' and whitespace)
LIST_SEPARATORS = frozenset(": \t\n\r\v\f")


#: the longest path and file name Linux opens (PATH_MAX, NAME_MAX), in bytes
PATH_MAX, NAME_MAX = 4095, 255


def nameable(path: Path, what: str) -> None:
    """CsorchError naming `what` when the system cannot name the directory (a file name
    past NAME_MAX bytes, a path past PATH_MAX: every `stat` of it fails) or its name is
    not UTF-8 text (it reaches ASAN_OPTIONS, PYTHONPATH, JSON and the console, all UTF-8:
    the run went on and its checker's log was never found)."""
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CsorchError(
            f"{what} {text.encode('utf-8', 'backslashreplace').decode()}: the path is not "
            f"UTF-8 text (byte 0x{ord(text[exc.start]) & 0xFF:02x})",
            hint=f"give a {what} whose name is UTF-8 text",
        ) from None
    whole = len(os.fsencode(os.path.abspath(path)))
    longest = max((len(os.fsencode(part)) for part in path.parts), default=0)
    if whole > PATH_MAX or longest > NAME_MAX:
        raise CsorchError(
            f"{what} {text[:80]}...: the path is {whole:,} bytes long, a name in it "
            f"{longest:,}; the system names at most {PATH_MAX:,} and {NAME_MAX}",
            hint=f"give a shorter {what}",
        )


def passable(path: Path, what: str) -> None:
    """CsorchError naming `what` when the directory (as given, or resolved) cannot reach a
    child intact: a name the system cannot open or that is not UTF-8 (`nameable`); the
    build cache (`--cache-dir`, `CSORCH_CACHE_DIR`) holding a `:` or whitespace, which
    PYTHONPATH and LD_PRELOAD would split; an output directory holding both quotes, which
    ASAN_OPTIONS cannot carry."""
    nameable(path, what)
    for text in dict.fromkeys((str(path), str(resolved(path)))):
        if what == "--cache-dir":
            bad = sorted(set(text) & LIST_SEPARATORS)
            if bad:
                raise CsorchError(
                    f"--cache-dir {path}: the path holds {_named(bad)}; csorch passes paths "
                    "under the build cache in PYTHONPATH and LD_PRELOAD, lists that split on "
                    "':' and whitespace and cannot quote",
                    hint="give a --cache-dir (or CSORCH_CACHE_DIR) whose path has no ':' "
                    "and no whitespace",
                )
        else:
            try:
                sanitizer_options.pair("log_path", text)
            except sanitizer_options.OptionsError:
                raise CsorchError(
                    f"{what} {path}: the path holds both ' and \"; the checker's log path "
                    "under it goes into ASAN_OPTIONS, whose values are quoted with one or "
                    "the other and have no escape",
                    hint=f"give a {what} without one of the two quotes",
                ) from None


def _named(chars: list[str]) -> str:
    return " and ".join("a space" if c == " " else repr(c) for c in chars)


def check_report(path: Path, what: str = "--output") -> None:
    """CsorchError when a report file would land inside a bundle (its manifest hashes
    every file there) or be one of its files."""
    real = resolved(path)
    record = record_dir(real.parent)
    if record is not None:
        raise CsorchError(
            f"{what} {path} is inside {record}: a bundle holds only what its manifest lists",
            hint="write the report outside the bundle",
        )


def _within(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)
