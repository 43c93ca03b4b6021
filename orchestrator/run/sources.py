"""Sources: each variant's tree, materialized in a scratch directory, patches applied.

A path source is copied with fresh modification times (`files.copy_tree(keep_times=False)`): a
file that a patch changed back must look newer than any object built from it, or an
incremental build keeps the old object. A git source is cloned once per
workspace into csorch's scratch directory (`git clone --shared` for a local repository,
whose refs are resolved read-only) and each variant checked out from that clone with
`git worktree add --detach`; the variant's tree is its `subdir`, which must resolve
inside the checkout. Nothing is written in the user's tree or .git; closing the
workspace removes the clone and its worktrees together.

Patches are applied with `git apply` (all or nothing per patch). A patch that does not
apply raises `PatchError` naming the patch, the file and the hunk. The tree digest is a
sha256 over the sorted relative paths, the executable bit and the contents, excluding
build outputs (`EXCLUDE_*`), so that the same source gives the same digest wherever it
was materialized; the build cache keys on it.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import stat
import threading
from pathlib import Path

from orchestrator import files, proc
from orchestrator.bundle import trees
from orchestrator.errors import PatchError, ProcessStartError, SourceError
from orchestrator.files import MAX_DEPTH, PATCH, TooDeep, file_digest, special_kind, walk
from orchestrator.model import PatchRecord, SourceKind, SourceSpec, SourceTree, Variant

#: names skipped at any depth: VCS data, caches and compiled objects
EXCLUDE_ANYWHERE = (
    ".git",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    ".mypy_cache",
    "*.pyc",
    "*.o",
    "*.so",
    "*.a",
    "*.whl",
)
#: names skipped at the top of the tree only: where builds put their outputs
EXCLUDE_TOP = ("build", "dist", "*.egg-info")

# error: patch failed: csrc/torch/quantize_nvfp4.cpp:93
PATCH_FAILED_RE = re.compile(r"^error: patch failed: (?P<file>.+):(?P<line>\d+)$")
# error: csrc/x.cpp: No such file or directory   (also: already exists in working directory)
FILE_PROBLEM_RE = re.compile(
    r"^error: (?P<file>.+?): (?P<problem>No such file or directory|does not exist in index"
    r"|already exists in working directory)$"
)
# error: corrupt patch at line 7     /    error: No valid patches in input ...
OTHER_ERROR_RE = re.compile(r"^error: (?P<problem>corrupt patch at line \d+|No valid patches.*)$")
# @@ -93,10 +93,9 @@ optional context
HUNK_RE = re.compile(r"^@@ -(?P<old>\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")
# --- a/csrc/torch/quantize_nvfp4.cpp     (the old side names the file a hunk belongs to)
OLD_FILE_RE = re.compile(r"^--- (?:a/)?(?P<file>\S+)")


def _excluded(name: str, top: bool) -> bool:
    patterns = EXCLUDE_ANYWHERE + (EXCLUDE_TOP if top else ())
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def skipped_by_copy(parts: tuple[str, ...]) -> bool:
    """Whether a path below a source tree (its components) lies in what the copy skips."""
    return any(_excluded(p, i == 0) for i, p in enumerate(parts))


def _walk(root: Path):
    """Relative paths of the files under `root` that belong to the source, and of its
    symlinks to directories (`files.walk`, as os.walk, lists those among the directories
    and does not enter them: the link itself is the entry, so re-pointing it changes the digest)."""
    for dirpath, dirnames, filenames in walk(root):
        top = Path(dirpath) == root
        kept = sorted(d for d in dirnames if not _excluded(d, top))
        links = [d for d in kept if (Path(dirpath) / d).is_symlink()]
        dirnames[:] = [d for d in kept if d not in links]
        for name in sorted((*filenames, *links)):
            if not _excluded(name, top):
                yield (Path(dirpath) / name).relative_to(root)


def walk_source(root: Path):
    """The relative paths of the files under `root` that a source tree's listing names."""
    return _walk(root)


def entry(path: Path) -> str:
    """A file's listing entry: "mode:sha256" (a symlink: "l:" and its target name's)."""
    if path.is_symlink():
        return "l:" + hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()
    mode = "x" if path.stat().st_mode & stat.S_IXUSR else "-"
    return f"{mode}:{file_digest(path)}"


def listing(root: Path) -> dict[str, str]:
    """relative path -> "mode:sha256" (a symlink hashes its target's name)."""
    return {rel.as_posix(): entry(root / rel) for rel in _walk(root)}


def tree_digest(root: Path) -> str:
    """sha256 over the sorted relative paths, modes and contents of a tree."""
    return trees.digest(listing(root))


def check_links(tree: Path, source: str) -> None:
    """SourceError for a symlink in `tree` whose target lies outside it: the build (or a
    patch) would write through it into the user's files, outside the scratch copy."""
    root = tree.resolve()
    for dirpath, dirnames, filenames in walk(tree):
        for name in (*dirnames, *filenames):
            path = Path(dirpath) / name
            if not path.is_symlink():
                continue
            target = Path(dirpath, os.readlink(path))
            try:
                resolved = target.resolve()
            except (OSError, RuntimeError):  # a loop of links
                resolved = target
            if not resolved.is_relative_to(root):
                rel = path.relative_to(tree).as_posix()
                raise SourceError(
                    source,
                    f"the symlink {rel} points outside the source tree (to {os.readlink(path)}): "
                    "a build or patch could write through it into files csorch must not touch",
                    hint="replace the link with the files it points to, or remove it",
                )


def _copy(src: Path, dest: Path) -> None:
    """`src` copied to `dest`: regular files, directories and links. A named pipe, socket or
    device in the tree is a SourceError naming it (copying a pipe would block on it, and
    none is a source a build can read as one)."""
    special: list[str] = []

    def ignore(directory: str, names: list[str]) -> list[str]:
        top = Path(directory) == src
        if len(Path(directory).relative_to(src).parts) >= MAX_DEPTH:
            raise TooDeep(Path(directory), MAX_DEPTH)  # before copytree's recursion runs out
        skipped = [n for n in names if _excluded(n, top)]
        for name in names:
            if name in skipped:
                continue
            path = Path(directory) / name
            try:
                mode = path.lstat().st_mode
            except OSError:
                continue  # gone meanwhile: copytree says so
            if stat.S_ISLNK(mode) or stat.S_ISDIR(mode):
                continue  # links are checked (check_links), directories walked
            kind = special_kind(mode)
            if kind:
                special.append(f"{path.relative_to(src).as_posix()} ({kind})")
                skipped.append(name)
        return skipped

    # fresh mtimes: see the module docstring
    files.copy_tree(src, dest, ignore=ignore, keep_times=False)
    if special:
        more = f" and {len(special) - 5} more" if len(special) > 5 else ""
        raise SourceError(
            str(src),
            f"holds what is not a file, directory or link: {', '.join(special[:5])}{more}",
            hint="move it out of the source tree (csorch copies the tree; a pipe blocks a copy)",
        )


def _hunk(patch: Path, file: str, line: int) -> str:
    """`#k (@@ ... @@)` for the hunk of `file` that starts at old line `line`."""
    current, k = "", 0
    for text in files.read_text(patch, PATCH, errors="replace").splitlines():
        if m := OLD_FILE_RE.match(text):
            current, k = m["file"], 0
        elif (m := HUNK_RE.match(text)) and current == file:
            k += 1
            if int(m["old"]) == line:
                return f"#{k} ({text.split(' @@')[0]} @@)"
    return f"at line {line}"


#: configuration every git command of csorch's runs with (given on its command line, which
#: wins over the user's ~/.gitconfig, /etc/gitconfig and the repository's .git/config): no
#: program the user or the repository configured runs when csorch reads objects or checks
#: out a tree. No hook (a post-checkout or reference-transaction hook, init.templateDir's
#: hooks), no fsmonitor, no automatic gc or maintenance. Filter drivers, end-of-line and
#: ident conversion are turned off by the clone's info/attributes (`NO_CONVERSION`).
GIT_SAFE_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.autocrlf=false",
    "gc.auto=0",
    "maintenance.auto=false",
)

#: the attributes of every path of csorch's clone ($GIT_DIR/info/attributes wins over any
#: .gitattributes in the tree): no filter driver (smudge would run a configured program),
#: no text or eol conversion, no ident, no working-tree-encoding, so a checkout holds the
#: commit's blobs byte for byte, whatever the user's configuration says
NO_CONVERSION = "* -filter -text -eol -ident -working-tree-encoding\n"


def git_argv(*argv: str) -> list[str]:
    """The argv of a git command csorch runs: `git`, `GIT_SAFE_CONFIG`, then `argv`.
    Every git command of csorch's is made here."""
    safe = [arg for item in GIT_SAFE_CONFIG for arg in ("-c", item)]
    return ["git", *safe, *argv]


def git_env(**extra: str) -> dict[str, str | None]:
    """The environment delta of every git command csorch runs: each `GIT_*` variable of
    csorch's own environment removed (then `extra` set). git sets GIT_DIR, GIT_INDEX_FILE
    and GIT_WORK_TREE for a hook: a csorch started from the user's pre-commit hook would
    otherwise clone, check out and apply patches into the user's index and tree."""
    delta: dict[str, str | None] = {k: None for k in os.environ if k.startswith("GIT_")}
    return {**delta, **extra}


def apply_patch(tree: Path, patch: Path) -> None:
    """`git apply` one patch inside `tree`; PatchError names the file and hunk."""
    # The ceiling keeps git from finding an enclosing repository (the scratch directory
    # may sit inside the user's checkout): inside one, git apply silently skips paths
    # outside the current directory.
    env = git_env(GIT_CEILING_DIRECTORIES=str(tree.parent))
    # `--`: a patch's name is never read as an option
    argv = git_argv("apply", "--verbose", "--whitespace=nowarn", "--", str(patch))
    try:
        out = proc.capture(argv, cwd=tree, env=env, timeout=120)
    except ProcessStartError as exc:
        raise PatchError(patch, detail=f"cannot run git: {exc.reason}") from None
    if out.returncode == 0:
        return
    lines = [line.strip() for line in out.output.splitlines()]
    for line in lines:
        if m := PATCH_FAILED_RE.match(line):
            hunk = _hunk(patch, m["file"], int(m["line"]))
            raise PatchError(patch, m["file"], hunk, "the hunk's context is not in the file")
    for line in lines:
        if m := FILE_PROBLEM_RE.match(line):
            raise PatchError(patch, m["file"], detail=m["problem"].lower())
        if m := OTHER_ERROR_RE.match(line):
            raise PatchError(patch, detail=m["problem"])
    tail = "; ".join(line for line in lines if line.startswith("error:"))[-400:]
    raise PatchError(patch, detail=tail or f"git apply exited {out.returncode}")


def _git(argv: list[str], source: str, what: str, timeout: float = 600) -> str:
    try:
        out = proc.capture(git_argv(*argv), timeout=timeout, env=git_env())
    except ProcessStartError as exc:
        raise SourceError(source, f"cannot run git: {exc.reason}") from None
    if out.returncode != 0 or out.timed_out:
        detail = out.output.strip().splitlines()[-1:] or [f"exit {out.returncode}"]
        raise SourceError(source, f"{what}: {detail[0]}")
    return out.output.strip()


def git_dirs(path: Path) -> tuple[Path, ...]:
    """The git directory of the repository `path` lies in and its common directory (the
    main repository's .git, for a worktree), and for a submodule its superproject's
    too; () outside a repository or where git cannot say."""
    found: list[Path] = []
    where: str | None = str(path)
    for _ in range(8):  # submodules nested deeper than this are not followed
        if where is None:
            break
        argv = git_argv("-C", where, "rev-parse", "--path-format=absolute")
        try:
            out = proc.capture(
                [*argv, "--git-dir", "--git-common-dir", "--show-superproject-working-tree"],
                timeout=60,
                env=git_env(),
            )
        except ProcessStartError:
            break
        if out.returncode != 0 or out.timed_out:
            break
        lines = [line for line in out.output.splitlines() if line.strip()]
        found.extend(Path(line) for line in lines[:2])
        where = lines[2] if len(lines) > 2 else None
    return tuple(dict.fromkeys(found))


class Workspace:
    """Scratch trees of one csorch run, under `root`; `close()` removes them."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()  # the build runs in the tree: no relative paths
        self._lock = threading.Lock()  # git worktree add is not safe in parallel
        self._clones: dict[str, Path] = {}

    def _repository(self, spec: SourceSpec) -> str:
        """csorch's own clone of the source's repository (once per workspace): a local
        one is cloned `--shared` (its objects are borrowed, nothing is written in it), so
        that the worktrees are registered in csorch's clone, never in the user's .git."""
        local = Path(spec.location).is_dir()
        with self._lock:
            if spec.location not in self._clones:
                key = hashlib.sha256(spec.location.encode()).hexdigest()[:16]
                dest = self.root / "_repos" / key
                if dest.exists():
                    files.remove_tree(dest)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shared = ["--shared"] if local else []
                _git(
                    # `--template=`: no hooks or other files copied from init.templateDir;
                    # `--`: a location is never read as an option (`--upload-pack=...`)
                    ["clone", "--quiet", "--no-checkout", "--template=", *shared]
                    + ["--", spec.location, str(dest)],
                    spec.location,
                    "clone failed",
                    timeout=3600,
                )
                # shared by every worktree of the clone: checkouts hold the blobs as they are
                info = dest / ".git" / "info"
                info.mkdir(parents=True, exist_ok=True)
                files.atomic_write(info / "attributes", NO_CONVERSION, root=dest)
                self._clones[spec.location] = dest
            return str(self._clones[spec.location])

    def _checkout(self, spec: SourceSpec, dest: Path) -> tuple[Path, str]:
        # a local repository's refs are the user's own (its branches, its HEAD): resolved
        # there, read only; the clone has every object through its alternates
        repo = self._repository(spec)
        where = spec.location if Path(spec.location).is_dir() else repo
        # --end-of-options: a ref that starts with "-" is a ref, never an option
        verify = ["rev-parse", "--verify", "--quiet", "--end-of-options"]
        commit = _git(
            ["-C", where, *verify, f"{spec.ref}^{{commit}}"],
            spec.location,
            f"unknown ref {spec.ref!r}",
        )
        with self._lock:
            _git(
                ["-C", repo, "worktree", "add", "--detach", "--force", str(dest), commit],
                spec.location,
                "git worktree add failed",
            )
        tree = dest / spec.subdir if spec.subdir else dest
        if not tree.resolve().is_relative_to(dest.resolve()):
            raise SourceError(
                spec.location,
                f"subdir {spec.subdir!r} leads outside the checkout",
                hint="give a directory inside the repository",
            )
        if not tree.is_dir():
            raise SourceError(spec.location, f"no directory {spec.subdir!r} at {spec.ref}")
        return tree, commit

    def _check_contains(self, source: Path) -> None:
        """SourceError when the work directory sits inside the source (and is not among
        what the copy skips): copying the source would copy its own copy, without end."""
        src = source.resolve()
        if not self.root.is_relative_to(src):
            return
        if skipped_by_copy(self.root.relative_to(src).parts):
            return
        raise SourceError(
            str(source),
            f"the work directory {self.root} is inside it: copying the source would copy the copy",
            hint="give a --work-dir outside the source (or under its build/ directory)",
        )

    def materialize(self, variant: Variant, spec: SourceSpec) -> SourceTree:
        """A fresh tree for `variant` with its patches applied, and its digests."""
        dest = self.root / variant.name
        if dest.exists():
            files.remove_tree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            return self._materialize(variant, spec, dest)
        except TooDeep as exc:
            raise SourceError(
                spec.location,
                f"{exc.filename} is {exc.strerror}",
                hint="no source is that deep: give the project's own directory",
            ) from None

    def _materialize(self, variant: Variant, spec: SourceSpec, dest: Path) -> SourceTree:
        commit = ""
        if spec.kind is SourceKind.PATH:
            if not Path(spec.location).is_dir():
                raise SourceError(spec.location, "no such directory")
            self._check_contains(Path(spec.location))
            tree = dest / "tree"
            _copy(Path(spec.location), tree)
        else:
            tree, commit = self._checkout(spec, dest / "checkout")
        check_links(tree, spec.location)
        patches = []
        for patch in variant.patches:
            if not patch.is_file():
                raise PatchError(patch, detail="no such file")
            patches.append(PatchRecord(patch, file_digest(patch, PATCH)))
            apply_patch(tree, patch)
        if patches:  # a patch can create a link, too
            check_links(tree, spec.location)
        return SourceTree(variant.name, tree, tree_digest(tree), spec, commit, tuple(patches))

    def close(self, *, keep: bool = False) -> None:
        """Remove the scratch directory (csorch's clones and their worktrees with it),
        unless `keep`."""
        self._clones.clear()
        if not keep and self.root.exists():
            files.remove_tree(self.root, ignore_errors=True)
