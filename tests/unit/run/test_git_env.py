"""csorch's own git commands run without the caller's GIT_* variables: git sets GIT_DIR,
GIT_INDEX_FILE and GIT_WORK_TREE for a hook, and a csorch started from the user's
pre-commit hook once checked its clone out into the user's index. A real repository, a
real pre-commit hook that runs csorch's sources and bisection code, and the user's index
compared byte for byte around it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.run import sources

pytestmark = pytest.mark.process  # git, a hook, a child Python

ROOT = Path(__file__).resolve().parents[3]
FIX = """\
--- a/main.c
+++ b/main.c
@@ -1 +1 @@
-int main(void) { return 1; }
+int main(void) { return 0; }
"""

# what the hook runs: a variant of this very repository materialized (clone, checkout,
# patch), and its history read the bisection's way, with the hook's environment
HOOK = """\
import hashlib, json, os, sys
from pathlib import Path
sys.path.insert(0, {root!r})
from orchestrator.bisect import history
from orchestrator.model import BuildKind, BuildSpec, SourceKind, SourceSpec, Variant
from orchestrator.run import sources

index = Path(os.environ["GIT_INDEX_FILE"]).resolve()
before = hashlib.sha256(index.read_bytes()).hexdigest()
repo = os.getcwd()
spec = SourceSpec(SourceKind.GIT, repo, "HEAD")
work = sources.Workspace(Path({work!r}))
variant = Variant("fixed", BuildSpec(BuildKind.COMMAND, ("make",)), (Path({patch!r}),))
tree = work.materialize(variant, spec)
fixed = (tree.root / "main.c").read_text()
head = history.resolve(repo, "HEAD")
chain = history.chain(repo, head, head)
work.close()
after = hashlib.sha256(index.read_bytes()).hexdigest()
Path({report!r}).write_text(json.dumps({{
    "before": before, "after": after, "git_vars": sorted(k for k in os.environ
    if k.startswith("GIT_")), "fixed": fixed, "chain": len(chain),
}}))
"""


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_a_pre_commit_hook_run_leaves_the_users_index_as_it_was(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    assert git(repo, "init", "-q").returncode == 0
    (repo / "main.c").write_text("int main(void) { return 1; }\n")
    (repo / "other.c").write_text("int x;\n")
    git(repo, "add", "main.c", "other.c")
    assert git(repo, "commit", "-q", "-m", "first").returncode == 0
    # the user's change, staged: the commit the hook guards
    (repo / "other.c").write_text("int x = 2;\n")
    (repo / "new.c").write_text("int y;\n")
    git(repo, "add", "other.c", "new.c")
    patch = tmp_path / "fix.patch"
    patch.write_text(FIX)
    report = tmp_path / "report.json"
    script = tmp_path / "hook.py"
    script.write_text(
        HOOK.format(
            root=str(ROOT), work=str(tmp_path / "work"), patch=str(patch), report=str(report)
        )
    )
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\nexec {sys.executable} {script}\n")
    hook.chmod(0o755)

    done = git(repo, "commit", "-q", "-m", "second")

    assert report.exists(), done.stdout + done.stderr
    said = json.loads(report.read_text())
    assert "GIT_INDEX_FILE" in said["git_vars"]  # git did set it for the hook
    assert said["fixed"] == "int main(void) { return 0; }\n"  # the clone was patched
    assert said["chain"] == 1
    assert said["before"] == said["after"], "csorch's git rewrote the user's index"
    assert done.returncode == 0, done.stderr
    # the commit holds exactly what the user staged: nothing of csorch's checkout
    assert git(repo, "show", "--name-only", "--format=", "HEAD").stdout.split() == [
        "new.c",
        "other.c",
    ]
    assert git(repo, "status", "--porcelain").stdout == ""


def test_git_env_removes_every_git_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_INDEX_FILE", "/elsewhere/index")
    monkeypatch.setenv("GIT_DIR", "/elsewhere/.git")
    monkeypatch.setenv("GIT_WORK_TREE", "/elsewhere")
    env = sources.git_env(GIT_CEILING_DIRECTORIES="/x")
    assert env["GIT_INDEX_FILE"] is None and env["GIT_DIR"] is None
    assert env["GIT_WORK_TREE"] is None
    assert env["GIT_CEILING_DIRECTORIES"] == "/x"
    assert all(k.startswith("GIT_") for k in env)
