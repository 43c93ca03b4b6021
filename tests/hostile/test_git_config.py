"""The user's git configuration runs no program of theirs when csorch reads a repository.

csorch's git commands read objects and check out trees in its own clone; the user's
~/.gitconfig (core.hooksPath, core.fsmonitor, a filter driver that a .gitattributes of
the repository names, init.templateDir) must not make them start a program, and the
tree a variant builds holds the commit's blobs, not what a smudge filter made of them.

Each test runs the real CLI in a child process over a real repository, with HOME set to
a directory whose .gitconfig configures programs that leave a mark when they run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from harness import ROOT, csorch, experiment, git, said

MARKER = """\
#!/bin/sh
echo "$0 $*" >> {marks}
cat
"""

GITCONFIG = """\
[user]
    name = u
    email = u@u
[core]
    hooksPath = {home}/hooks
    fsmonitor = {home}/mark.sh fsmonitor
[init]
    templateDir = {home}/template
[filter "evil"]
    smudge = {home}/mark.sh smudge
    clean = cat
    required = true
"""

HOOKS = ("post-checkout", "reference-transaction", "post-index-change", "pre-auto-gc")


def _program(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


@pytest.fixture
def home(place: Path) -> Path:
    """A HOME whose .gitconfig configures hooks, an fsmonitor, a template with hooks and a
    filter driver, each of which appends to place/marks when it runs."""
    home = place / "home"
    marks = place / "marks"
    _program(home / "mark.sh", MARKER.format(marks=marks))
    for hook in HOOKS:
        for where in ("hooks", "template/hooks"):
            _program(home / where / hook, f'#!/bin/sh\necho "{where} $0" >> {marks}\n')
    (home / ".gitconfig").write_text(GITCONFIG.format(home=home))
    return home


def _env(place: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "XDG_CONFIG"))}
    cache = str(place / "build" / "csorch-cache")
    return {**env, "HOME": str(home), "PYTHONPATH": str(ROOT), "CSORCH_CACHE_DIR": cache}


def test_the_users_git_configuration_starts_no_program_of_theirs(place: Path, home: Path):
    repo = place / "repo"
    (repo / "ext").mkdir(parents=True)
    for f in (place / "subject").iterdir():
        (repo / "ext" / f.name).write_bytes(f.read_bytes())
    (repo / ".gitattributes").write_text("* filter=evil\n*.c text eol=crlf\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "subject")
    config = experiment(place, source=f"{{git: {repo}, ref: HEAD, subdir: ext}}")
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", str(config), "--backend", "asan",
         "--out", "out", "--keep-work"],
        cwd=place, capture_output=True, text=True, timeout=240, env=_env(place, home),
    )  # fmt: skip
    assert done.returncode == 0, said(done)[-3000:]
    marks = place / "marks"
    assert not marks.exists(), marks.read_text()
    # the checkout holds the blob: no eol conversion made of it by the user's attributes
    checkouts = list((place / "build" / "csorch-cache").rglob("control/checkout/ext/pick.c"))
    assert checkouts, said(done)[-3000:]
    assert checkouts[0].read_bytes() == (place / "subject" / "pick.c").read_bytes()


def test_every_git_command_of_csorch_is_made_by_git_argv() -> None:
    """The one way to a git command: an argv that starts with "git" anywhere else would run
    without the configuration that keeps the user's programs from starting."""
    found = []
    for path in sorted((ROOT / "orchestrator").rglob("*.py")):
        text = path.read_text()
        for m in re.finditer(r"""\[\s*["']git["']\s*[,\]]""", text):
            line = text.count("\n", 0, m.start()) + 1
            found.append(f"{path.relative_to(ROOT)}:{line}")
    assert found == ["orchestrator/run/sources.py:" + str(_git_argv_line())], found


def _git_argv_line() -> int:
    text = (ROOT / "orchestrator" / "run" / "sources.py").read_text()
    start = text.index("def git_argv(")
    m = re.search(r"""\[\s*["']git["']""", text[start:])
    assert m is not None
    return text.count("\n", 0, start + m.start()) + 1


@pytest.fixture(params=["worktree", "submodule"])
def nested(place: Path, request: pytest.FixtureRequest) -> tuple[Path, Path]:
    """(a checkout whose .git is a file naming a directory elsewhere, that directory's
    main repository's .git): a worktree of the user's repository, or a submodule of it."""
    repo = place / "repo"
    (repo / "ext").mkdir(parents=True)
    for f in (place / "subject").iterdir():
        (repo / "ext" / f.name).write_bytes(f.read_bytes())
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "subject")
    if request.param == "worktree":
        git(repo, "worktree", "add", "-q", str(place / "wt"), "-b", "feature")
        return place / "wt", repo / ".git"
    top = place / "super"
    top.mkdir()
    git(top, "init", "-q", "-b", "main")
    git(top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(repo), "sub")
    git(top, "commit", "-q", "-m", "submodule")
    return top / "sub", top / ".git"


@pytest.mark.parametrize("flag", ["--out", "--cache-dir"])
def test_no_output_goes_into_the_git_directory_of_a_nested_checkout(
    place: Path, nested: tuple[Path, Path], flag: str
) -> None:
    checkout, dotgit = nested
    config = experiment(place, source=f"{{git: {checkout}, ref: HEAD, subdir: ext}}")
    inside = dotgit / "csorch"
    args = ("--out", inside) if flag == "--out" else ("--out", "out", "--cache-dir", inside)
    done = csorch(place, "run", config, "--backend", "asan", *args)
    assert done.returncode == 2, said(done)[-3000:]
    assert f"{flag} {inside} is inside the git directory" in done.stderr, said(done)
    assert not inside.exists()
