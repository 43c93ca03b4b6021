"""Nothing outside csorch's own directories is touched: the user's tree and repository,
files outside the subject, an existing bundle, the cache entry a case runs in.

Each test drives a real csorch (or its workspace) over real files and git repositories
in a temp dir, and asserts on what is on disk afterwards."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from harness import csorch, experiment, git, said

from orchestrator.errors import SourceError
from orchestrator.model import BuildKind, BuildSpec, SourceKind, SourceSpec, Variant
from orchestrator.run import sources


def snapshot(root: Path) -> dict[str, str]:
    """Every path under `root` (links and directories included) with its content hash."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = "l:" + str(path.readlink())
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[rel] = "d"
    return out


@pytest.fixture
def repo(place: Path) -> Path:
    """The user's repository: the C subject committed, with a worktree of the user's own
    whose directory is away for now (a removable disk), and uncommitted work."""
    repo = place / "repo"
    (repo / "ext").mkdir(parents=True)
    for f in (place / "subject").iterdir():
        (repo / "ext" / f.name).write_bytes(f.read_bytes())
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "subject")
    git(repo, "worktree", "add", "-q", str(place / "users-wt"), "-b", "feature")
    (place / "users-wt").rename(place / "users-wt.away")
    (repo / "ext" / "notes.txt").write_text("the user's work in progress\n")
    return repo


def test_a_git_source_writes_nothing_in_the_users_repository(place: Path, repo: Path) -> None:
    config = experiment(place, source=f"{{git: {repo}, ref: HEAD, subdir: ext}}")
    before = snapshot(repo / ".git")
    listed = git(repo, "worktree", "list", "--porcelain")
    done = csorch(place, "run", config, "--backend", "asan", "--out", "out")
    assert done.returncode == 0, said(done)[-3000:]
    # the user's own worktree registration survives (no `git worktree prune` in their repo)
    assert git(repo, "worktree", "list", "--porcelain") == listed
    assert "users-wt" in listed
    assert snapshot(repo / ".git") == before
    assert (repo / "ext" / "notes.txt").read_text() == "the user's work in progress\n"


def test_a_killed_run_leaves_no_worktree_in_the_users_repository(place: Path, repo: Path) -> None:
    # materialized and never closed: what a SIGKILL of csorch leaves behind
    ws = sources.Workspace(place / "work")
    spec = SourceSpec(SourceKind.GIT, str(repo), "HEAD", "ext")
    build = BuildSpec(BuildKind.COMMAND, command=("make",))
    for name in ("fixed", "control"):
        ws.materialize(Variant(name, build), spec)
    assert len(git(repo, "worktree", "list").splitlines()) == 2  # main + the user's own


def test_bisect_subdir_cannot_leave_the_checkout(place: Path, repo: Path) -> None:
    ws = sources.Workspace(place / "work")
    spec = SourceSpec(SourceKind.GIT, str(repo), "HEAD", "../../..")
    patch = place / "fix.patch"
    build = BuildSpec(BuildKind.COMMAND, command=("make",))
    with pytest.raises(SourceError, match="outside the checkout"):
        ws.materialize(Variant("v", build, (patch,)), spec)


LINK_PATCH = """\
diff --git a/evil b/evil
new file mode 120000
--- /dev/null
+++ b/evil
@@ -0,0 +1 @@
+{target}
\\ No newline at end of file
"""


def test_a_patch_cannot_plant_a_link_out_of_the_tree(place: Path) -> None:
    outside = place / "outside"
    outside.mkdir()
    patch = place / "link.patch"
    patch.write_text(LINK_PATCH.format(target=outside))
    ws = sources.Workspace(place / "work")
    spec = SourceSpec(SourceKind.PATH, str(place / "subject"))
    build = BuildSpec(BuildKind.COMMAND, command=("make",))
    with pytest.raises(SourceError, match="points outside the source tree"):
        ws.materialize(Variant("v", build, (patch,)), spec)


def test_outputs_globs_cannot_reach_out_of_the_tree(place: Path) -> None:
    secret = place / "secret.bin"
    secret.write_bytes(b"not the build's")
    escape = "../" * 30 + str(secret).lstrip("/")
    config = experiment(place, outputs=f"[pick, '{escape}']")
    done = csorch(place, "run", config, "--backend", "asan", "--out", "out")
    # refused at load, by key, before anything is built or written
    assert done.returncode == 2, said(done)[-3000:]
    assert "outputs[1]" in done.stderr and "outside the built tree" in done.stderr
    assert not (place / "out" / "results.json").exists()


def test_each_attempt_of_a_command_case_gets_its_own_tree(place: Path) -> None:
    # a case that leaves a scratch file fails when it finds one: in the cache entry, the
    # second attempt (and the next run) would find the first's
    case = "[{name: scratch, command: [sh, -c, 'test ! -e scratch && touch scratch']}]"
    config = experiment(place, cases=case, repeats=3, runs="[{name: plain, checker: none}]",
                        expect=False)  # fmt: skip
    for out in ("one", "two"):
        done = csorch(place, "run", config, "--backend", "asan", "--out", out)
        doc = json.loads((place / out / "results.json").read_text())
        outcomes = [a["nodes"][0]["outcome"] for a in doc["attempts"]]
        assert outcomes == ["passed"] * 6, said(done)[-3000:]
    cache = place / "build" / "csorch-cache"
    assert not list(cache.rglob("scratch"))


@pytest.mark.parametrize(
    "where",
    ["subject/results", "build/csorch-cache/inside", "build/csorch-cache/work/inside", "/"],
)
def test_out_may_not_be_a_place_csorch_does_not_own(place: Path, where: str) -> None:
    config = experiment(place)
    (place / "build" / "csorch-cache").mkdir(parents=True)
    (place / "build" / "csorch-cache" / "work").mkdir(parents=True)
    before = snapshot(place / "subject")
    done = csorch(place, "run", config, "--backend", "asan", "--out", where)
    assert done.returncode == 2, said(done)[-3000:]
    assert "--out" in done.stderr
    assert snapshot(place / "subject") == before
    assert not (place / where / "journal.jsonl").exists()


@pytest.fixture
def bundle(place: Path) -> Path:
    done = csorch(place, "run", experiment(place), "--backend", "asan", "--out", "b")
    assert done.returncode == 0, said(done)[-3000:]
    return place / "b"


def test_gate_from_a_bundle_does_not_overwrite_it(place: Path, bundle: Path) -> None:
    before = snapshot(bundle)
    done = csorch(place, "gate", "exp.yaml", "--from", bundle, "--out", bundle)
    assert done.returncode == 2, said(done)[-3000:]
    assert snapshot(bundle) == before
    assert csorch(place, "verify", bundle).returncode == 0


def test_gate_from_with_resume_leaves_the_gate_alone(place: Path, bundle: Path) -> None:
    gate = place / "g"
    done = csorch(place, "gate", "exp.yaml", "--backend", "asan", "--out", gate)
    assert done.returncode == 0, said(done)[-3000:]
    before = snapshot(gate)
    done = csorch(place, "gate", "--from", bundle, "--resume", gate)
    assert done.returncode == 2, said(done)[-3000:]
    assert snapshot(gate) == before


def test_report_output_cannot_land_in_a_bundle(place: Path, bundle: Path) -> None:
    before = snapshot(bundle)
    done = csorch(place, "report", bundle, "-f", "markdown", "-o", bundle / "manifest.json")
    assert done.returncode == 2, said(done)[-3000:]
    assert snapshot(bundle) == before
    assert csorch(place, "verify", bundle).returncode == 0


@pytest.mark.parametrize("flag", ["--out", "--cache-dir"])
def test_scan_writes_nothing_into_the_tree_it_scans(place: Path, flag: str) -> None:
    # scan's tree is the current directory by default: the user's own
    before = snapshot(place / "subject")
    inside = place / "subject" / "results"
    done = csorch(place, "scan", "--backend", "asan", "--source", "subject", flag, inside,
                  "--", "./pick")  # fmt: skip
    assert done.returncode == 2, said(done)[-3000:]
    assert f"{flag} {inside} is inside the source tree" in done.stderr, said(done)
    assert snapshot(place / "subject") == before
