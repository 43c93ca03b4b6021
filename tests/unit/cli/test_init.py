"""`csorch init` on real git repositories made in a temp dir: the fix commit and its
parent, a control patch, the build kind from the tree's files; then `csorch check`
accepts what it wrote."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator import cli
from orchestrator.config.experiment import load_experiment
from orchestrator.model import BuildKind

pytestmark = pytest.mark.process  # git

runner = CliRunner()


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "ext" / "tests").mkdir(parents=True)
    (root / "ext" / "pyproject.toml").write_text("[project]\nname = 'ext'\n")
    (root / "ext" / "tests" / "test_e.py").write_text("def test_e():\n    pass\n")
    (root / "ext" / "k.c").write_text("int k(void) { return 1; }\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "bug")
    (root / "ext" / "k.c").write_text("int k(void) { return 0; }\n")
    git(root, "commit", "-qam", "k: return 0")
    return root


def test_init_from_a_fix_commit(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "cfg" / "ext.yaml"
    done = runner.invoke(cli.app, ["init", str(repo / "ext"), "--fix", "HEAD", "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert f"next: csorch check {out}" in done.output
    e = load_experiment(out)
    head, parent = git(repo, "rev-parse", "HEAD"), git(repo, "rev-parse", "HEAD^")
    assert (e.source.location, e.source.ref, e.source.subdir) == (str(repo), head, "ext")
    control = e.variant("control")
    assert control.source is not None and control.source.ref == parent
    assert {v.build.kind for v in e.variants} == {BuildKind.WHEEL}  # pyproject.toml
    assert e.cases[0].pytest == (str(repo / "ext" / "tests"),)  # found: tests/
    assert e.description == f"fix {head[:12]}: k: return 0"
    assert "source: {git: ../proj, ref: " in out.read_text()  # relative to the config
    checked = runner.invoke(cli.app, ["check", str(out), "--backend", "asan"])
    assert checked.exit_code == 0, checked.output
    # a second init does not overwrite it
    again = runner.invoke(cli.app, ["init", str(repo / "ext"), "--fix", "HEAD", "--out", str(out)])
    assert again.exit_code == 2 and "exists" in again.output


def test_init_with_a_control_patch_prints_the_config(repo: Path, tmp_path: Path) -> None:
    patch = tmp_path / "undo.patch"
    patch.write_text(git(repo, "diff", "HEAD", "HEAD^"))
    (repo / "ext" / "Makefile").write_text("all:\n\ttrue\n")
    (repo / "ext" / "pyproject.toml").unlink()
    done = runner.invoke(
        cli.app,
        [
            "init",
            str(repo / "ext"),
            "--control",
            str(patch),
            "--tests",
            str(repo / "ext" / "tests" / "test_e.py"),
        ],
    )
    assert done.exit_code == 0, done.output
    assert f"source: {repo / 'ext'}\n" in done.output
    assert f"    patches: [{patch}]\n" in done.output
    assert "    build: {kind: command, command: [make]}\n" in done.output


def test_init_errors(repo: Path, tmp_path: Path) -> None:
    root = git(repo, "rev-list", "--max-parents=0", "HEAD")
    no_parent = runner.invoke(cli.app, ["init", str(repo / "ext"), "--fix", root])
    assert no_parent.exit_code == 2 and "has no parent commit" in no_parent.output
    unknown = runner.invoke(cli.app, ["init", str(repo / "ext"), "--fix", "nope"])
    assert unknown.exit_code == 2 and "unknown ref 'nope'" in unknown.output
    nothing = runner.invoke(cli.app, ["init", str(repo / "ext")])
    assert nothing.exit_code == 2 and "init needs the fix" in nothing.output
    outside = tmp_path / "plain"
    outside.mkdir()
    (outside / "tests").mkdir()
    not_git = runner.invoke(cli.app, ["init", str(outside), "--fix", "HEAD"])
    assert not_git.exit_code == 2 and "not inside a git repository" in not_git.output
