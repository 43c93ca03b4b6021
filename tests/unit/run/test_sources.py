"""sources: scratch copies and git worktrees, patches, digests; real git repositories
made in a temp dir, and the user's tree left as it was."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from orchestrator.errors import PatchError, SourceError
from orchestrator.model import BuildKind, BuildSpec, SourceKind, SourceSpec, Variant
from orchestrator.run import sources

pytestmark = pytest.mark.process  # builds, runs a checker, git or a child process

MAIN = "int main(void) {\n    int x = 1;\n    return x - 1;\n}\n"
FIX = """\
--- a/src/main.c
+++ b/src/main.c
@@ -1,4 +1,4 @@
 int main(void) {
-    int x = 1;
+    int x = 2;
     return x - 1;
 }
"""


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def variant(name: str = "v", patches: tuple[Path, ...] = ()) -> Variant:
    return Variant(name, BuildSpec(BuildKind.COMMAND, command=("make",)), patches)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "subject"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.c").write_text(MAIN)
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    # build outputs: neither copied nor digested
    for junk in ("build/x.o", "src/__pycache__/m.pyc", "src/lib.so", "dist/a.whl"):
        (root / junk).parent.mkdir(parents=True, exist_ok=True)
        (root / junk).write_text("junk")
    old = 1_000_000_000
    for path in root.rglob("*"):
        os.utime(path, (old, old))
    return root


def test_a_copy_is_fresh_digested_and_leaves_the_user_tree_alone(tree: Path, tmp_path: Path):
    before = {p: p.stat().st_mtime for p in tree.rglob("*")}
    ws = sources.Workspace(tmp_path / "scratch")
    st = ws.materialize(variant(), SourceSpec(SourceKind.PATH, str(tree)))
    copied = sorted(p.relative_to(st.root).as_posix() for p in st.root.rglob("*") if p.is_file())
    assert copied == ["run.sh", "src/main.c"]
    # fresh mtimes: an incremental build must see a restored file as new
    assert (st.root / "src" / "main.c").stat().st_mtime > 1_000_000_000 + 1
    assert os.access(st.root / "run.sh", os.X_OK)
    assert len(st.digest) == 64 and st.patches == () and st.commit == ""
    # the same source gives the same digest wherever it is materialized
    other = sources.Workspace(tmp_path / "elsewhere").materialize(
        variant("w"), SourceSpec(SourceKind.PATH, str(tree))
    )
    assert other.digest == st.digest
    assert {p: p.stat().st_mtime for p in tree.rglob("*")} == before
    ws.close()
    assert not (tmp_path / "scratch").exists()


def test_digest_sees_content_and_mode(tree: Path) -> None:
    first = sources.tree_digest(tree)
    (tree / "run.sh").chmod(0o644)
    assert sources.tree_digest(tree) != first
    (tree / "run.sh").chmod(0o755)
    assert sources.tree_digest(tree) == first
    (tree / "src" / "lib.so").write_text("other junk")  # an excluded output
    assert sources.tree_digest(tree) == first
    (tree / "src" / "main.c").write_text(MAIN + "\n")
    assert sources.tree_digest(tree) != first


def test_a_patch_applies_and_is_recorded(tree: Path, tmp_path: Path) -> None:
    patch = tmp_path / "fix.patch"
    patch.write_text(FIX)
    ws = sources.Workspace(tmp_path / "scratch")
    plain = ws.materialize(variant("a"), SourceSpec(SourceKind.PATH, str(tree)))
    fixed = ws.materialize(variant("b", (patch,)), SourceSpec(SourceKind.PATH, str(tree)))
    assert "int x = 2;" in (fixed.root / "src" / "main.c").read_text()
    assert fixed.digest != plain.digest
    assert fixed.patches[0].path == patch and fixed.patches[0].sha256 == sources.file_digest(patch)
    assert (tree / "src" / "main.c").read_text() == MAIN


def test_a_patch_that_does_not_apply_names_the_file_and_hunk(tree: Path, tmp_path: Path):
    patch = tmp_path / "stale.patch"
    # two hunks; the second one's context is not in the file
    patch.write_text(FIX + "@@ -3,2 +3,2 @@\n-    return y - 1;\n+    return y - 2;\n }\n")
    ws = sources.Workspace(tmp_path / "scratch")
    with pytest.raises(PatchError) as info:
        ws.materialize(variant("v", (patch,)), SourceSpec(SourceKind.PATH, str(tree)))
    err = info.value
    assert err.patch == patch and err.file == "src/main.c" and err.hunk.startswith("#2 (@@ -3,2")
    assert "stale.patch" in str(err) and "src/main.c" in str(err) and "hunk #2" in str(err)


def test_a_patch_for_a_missing_file(tree: Path, tmp_path: Path) -> None:
    patch = tmp_path / "other.patch"
    patch.write_text(FIX.replace("src/main.c", "src/gone.c"))
    with pytest.raises(PatchError) as info:
        sources.Workspace(tmp_path / "s").materialize(
            variant("v", (patch,)), SourceSpec(SourceKind.PATH, str(tree))
        )
    assert info.value.file == "src/gone.c" and "no such file" in str(info.value)


def test_patches_apply_inside_an_enclosing_repository(tree: Path, tmp_path: Path) -> None:
    # the scratch directory inside someone's checkout: git must not treat the patch's
    # paths as relative to that repository (it would skip them silently)
    outer = tmp_path / "checkout"
    outer.mkdir()
    git(outer, "init", "-q")
    patch = tmp_path / "fix.patch"
    patch.write_text(FIX)
    st = sources.Workspace(outer / "build" / "work").materialize(
        variant("v", (patch,)), SourceSpec(SourceKind.PATH, str(tree))
    )
    assert "int x = 2;" in (st.root / "src" / "main.c").read_text()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "ext").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "ext" / "main.c").write_text(MAIN)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    git(repo, "tag", "v1")
    (repo / "ext" / "main.c").write_text(MAIN.replace("1;", "3;"))
    git(repo, "commit", "-q", "-am", "two")
    (repo / "ext" / "main.c").write_text("uncommitted\n")  # the user's work in progress
    return repo


def test_a_git_ref_and_subdir(repo: Path, tmp_path: Path) -> None:
    ws = sources.Workspace(tmp_path / "scratch")
    spec = SourceSpec(SourceKind.GIT, str(repo), "v1", "ext")
    st = ws.materialize(variant(), spec)
    assert st.commit == git(repo, "rev-parse", "v1") and st.root.name == "ext"
    assert (st.root / "main.c").read_text() == MAIN
    head = ws.materialize(variant("h"), SourceSpec(SourceKind.GIT, str(repo), "HEAD", "ext"))
    assert head.digest != st.digest and "3;" in (head.root / "main.c").read_text()
    # the checkouts are csorch's own clone's: the user's repository registers none
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    ws.close()
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert (repo / "ext" / "main.c").read_text() == "uncommitted\n"
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"


def test_a_git_patch_in_a_subdir(repo: Path, tmp_path: Path) -> None:
    patch = tmp_path / "fix.patch"
    patch.write_text(FIX.replace("src/main.c", "main.c"))
    ws = sources.Workspace(tmp_path / "scratch")
    st = ws.materialize(variant("v", (patch,)), SourceSpec(SourceKind.GIT, str(repo), "v1", "ext"))
    assert "int x = 2;" in (st.root / "main.c").read_text()
    ws.close()


@pytest.mark.parametrize(
    ("ref", "subdir", "problem"),
    [("nope", "", "unknown ref 'nope'"), ("v1", "lib", "no directory 'lib'")],
)
def test_bad_git_sources(repo: Path, tmp_path: Path, ref: str, subdir: str, problem: str):
    ws = sources.Workspace(tmp_path / "scratch")
    with pytest.raises(SourceError, match=problem):
        ws.materialize(variant(), SourceSpec(SourceKind.GIT, str(repo), ref, subdir))
    ws.close()


def test_a_missing_path_source(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such directory"):
        sources.Workspace(tmp_path / "s").materialize(
            variant(), SourceSpec(SourceKind.PATH, str(tmp_path / "gone"))
        )


# --- hostile trees and patches (issue 11 item 5): nothing written outside the scratch ---


def test_a_symlink_out_of_the_source_tree_is_refused(tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tree / "src" / "out").symlink_to(outside)
    ws = sources.Workspace(tmp_path / "scratch")
    with pytest.raises(SourceError, match=r"the symlink src/out points outside the source tree"):
        ws.materialize(variant(), SourceSpec(SourceKind.PATH, str(tree)))
    (tree / "src" / "out").unlink()
    (tree / "abs").symlink_to("/etc/passwd")
    with pytest.raises(SourceError, match=r"the symlink abs points outside"):
        ws.materialize(variant(), SourceSpec(SourceKind.PATH, str(tree)))


def test_a_symlink_inside_the_tree_is_kept(tree: Path, tmp_path: Path) -> None:
    (tree / "main-link.c").symlink_to("src/main.c")
    ws = sources.Workspace(tmp_path / "scratch")
    got = ws.materialize(variant(), SourceSpec(SourceKind.PATH, str(tree)))
    assert (got.root / "main-link.c").is_symlink()


@pytest.mark.parametrize(
    "target", ["../escaped.c", "/tmp/csorch-escaped.c", "src/../../escaped.c"]
)
def test_a_patch_cannot_write_outside_the_tree(tree: Path, tmp_path: Path, target: str) -> None:
    patch = tmp_path / "evil.patch"
    patch.write_text(
        f"--- /dev/null\n+++ b/{target.lstrip('/')}\n@@ -0,0 +1 @@\n+pwned\n"
        if not target.startswith("/")
        else f"--- /dev/null\n+++ {target}\n@@ -0,0 +1 @@\n+pwned\n"
    )
    ws = sources.Workspace(tmp_path / "scratch")
    try:  # git apply refuses `..`; an absolute name loses its first part (-p1), inside
        got = ws.materialize(variant(patches=(patch,)), SourceSpec(SourceKind.PATH, str(tree)))
    except PatchError:
        got = None
    assert (got is None) == (not target.startswith("/"))  # `..`: refused
    scratch = tmp_path / "scratch"
    escaped = [p for p in tmp_path.rglob("*escaped.c") if not p.is_relative_to(scratch)]
    assert not escaped and not Path("/tmp/csorch-escaped.c").exists()


def test_a_patch_cannot_write_through_a_symlink_inside_the_tree(tree: Path, tmp_path: Path):
    # an inward link is allowed; git apply still refuses to write "beyond" it
    (tree / "alias").symlink_to("src")
    patch = tmp_path / "via-link.patch"
    patch.write_text(FIX.replace("src/main.c", "alias/main.c"))
    ws = sources.Workspace(tmp_path / "scratch")
    with pytest.raises(PatchError):
        ws.materialize(variant(patches=(patch,)), SourceSpec(SourceKind.PATH, str(tree)))
    assert (tree / "src" / "main.c").read_text() == MAIN
