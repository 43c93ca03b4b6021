"""Git history for bisection: refs resolved, and the first-parent chain between two.

Only reads the repository (rev-parse, merge-base, log); every git call goes through
`proc`. Errors are `SourceError`s naming the repository and what git said.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator import proc
from orchestrator.bisect.state import Commit
from orchestrator.errors import ProcessStartError, SourceError
from orchestrator.run.sources import git_argv, git_env

_SEP = "\x1f"  # between sha and subject: a subject may hold any printable character


def _git(repo: str, argv: list[str], what: str, *, check: bool = True) -> proc.Captured:
    try:
        # no GIT_* of csorch's own (a hook's GIT_DIR would point it at another repository)
        out = proc.capture(git_argv("-C", repo, *argv), timeout=120, env=git_env())
    except ProcessStartError as exc:
        raise SourceError(repo, f"cannot run git: {exc.reason}") from None
    if check and (out.returncode != 0 or out.timed_out):
        detail = out.output.strip().splitlines()[-1:] or [f"exit {out.returncode}"]
        raise SourceError(repo, f"{what}: {detail[0]}")
    return out


def resolve(repo: str, ref: str) -> str:
    """The full sha of `ref`'s commit in `repo`; SourceError when `repo` is not a git
    repository at all (not an unknown ref), or the ref is unknown."""
    if not Path(repo).is_dir():
        raise SourceError(repo, "no such directory", hint="give --repo a git repository")
    if _git(repo, ["rev-parse", "--git-dir"], "", check=False).returncode != 0:
        raise SourceError(
            repo, "not a git repository", hint="give --repo the repository that holds the commits"
        )
    # --end-of-options: a ref that starts with "-" is a ref, never an option
    out = _git(
        repo,
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
        "",
        check=False,
    )
    if out.returncode != 0:
        raise SourceError(repo, f"unknown ref {ref!r}", hint="give a commit, branch or tag")
    return out.output.strip()


def head(path: Path) -> str:
    """The commit checked out where `path` lives ("" outside a repository)."""
    out = _git(str(path), ["rev-parse", "--verify", "--quiet", "HEAD"], "", check=False)
    return out.output.strip() if out.returncode == 0 else ""


def toplevel(path: Path) -> tuple[str, str]:
    """(repository root, `path` relative to it) for a directory inside a work tree."""
    out = _git(str(path), ["rev-parse", "--show-toplevel"], "not inside a git repository")
    root = Path(out.output.strip()).resolve()
    rel = Path(path).resolve().relative_to(root).as_posix()
    return str(root), "" if rel == "." else rel


def subject(repo: str, sha: str) -> str:
    return _git(repo, ["log", "-1", "--format=%s", sha], "git log failed").output.strip()


def chain(repo: str, good: str, bad: str) -> tuple[Commit, ...]:
    """`good`, then the first-parent commits after it up to `bad`, oldest first.
    SourceError when `good` is not an ancestor of `bad`."""
    if _git(repo, ["merge-base", "--is-ancestor", good, bad], "", check=False).returncode:
        raise SourceError(
            repo,
            f"{good[:10]} (--good) is not an ancestor of {bad[:10]} (--bad)",
            hint="--good is the older end, also with --find-fix (there it still shows the "
            "target); swap them if they are the wrong way round",
        )
    out = _git(
        repo,
        ["log", "--first-parent", "--reverse", f"--format=%H{_SEP}%s", f"{good}..{bad}"],
        "git log failed",
    )
    later = [Commit(*line.split(_SEP, 1)) for line in out.output.splitlines() if _SEP in line]
    return (Commit(good, subject(repo, good)), *later)
