"""Files csorch reads or writes outside a bundle's own checks: a config that is a named
pipe or a link to /dev/zero (every verb that reads one), a symlink planted in a bundle
in place of its lock, journal or logs/ before a resume, a tree 1200 deep made by a case
or a build, a cache inside the source tree, a `csorch probe` run in the user's work tree
(as `git bisect run` runs it), an --out that holds the cache, and a manifest of 3 GB.
Each try runs csorch as a child with a deadline: a hang fails by its timeout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from harness import ROOT, csorch, experiment, git, said

from orchestrator import files

E2E = ROOT / "tests" / "fixtures" / "e2e"
DEADLINE = 60  # seconds: a refusal takes one or two


def not_a_file(place: Path, kind: str, name: str = "config.yaml") -> Path:
    """`place/name`: a named pipe with no writer, or a symlink to /dev/zero."""
    path = place / name
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    return path


VERBS = {
    "check": lambda cfg, place, bundles: ["check", cfg],
    "run": lambda cfg, place, bundles: ["run", cfg, "--backend", "asan", "--out", place / "b"],
    "compare": lambda cfg, place, bundles: ["compare", cfg, "--backend", "asan"],
    "gate": lambda cfg, place, bundles: ["gate", cfg, "--backend", "asan", "--out", place / "g"],
    "bisect": lambda cfg, place, bundles: ["bisect", cfg, "--good", "HEAD~1", "--bad", "HEAD"],
    "report --policy": lambda cfg, place, bundles: ["report", bundles["pass"], "--policy", cfg],
}


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero"])
@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_config_that_is_no_file_is_refused_by_name(tmp_path, cprog_bundles, verb, kind):
    config = not_a_file(tmp_path, kind)
    done = csorch(tmp_path, *VERBS[verb](config, tmp_path, cprog_bundles), timeout=DEADLINE)
    assert done.returncode == 2, said(done)[-3000:]
    # named as given, or where its link leads (a verb that resolves the path first)
    named = (
        [f"{config}: a named pipe, not a regular file"]
        if kind == "fifo"
        else [
            f"{config}: links to /dev/zero, a character device, not a regular file",
            "/dev/zero: a character device, not a regular file",
        ]
    )
    assert any(n in said(done) for n in named), said(done)[-3000:]
    assert "Traceback" not in said(done)


def _snapshot(top: Path) -> dict[str, bytes]:
    return {
        p.relative_to(top).as_posix(): p.read_bytes() if p.is_file() else b"<dir>"
        for p in sorted(top.rglob("*"))
    }


@pytest.mark.parametrize("planted", ["lock", "journal", "logs"])
def test_a_resume_does_not_write_through_a_link_planted_in_the_bundle(
    cprog_bundles, tmp_path, planted
):
    bundle = tmp_path / "bundle"
    shutil.copytree(cprog_bundles["pass"], bundle, symlinks=True)
    journal = bundle / "journal.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(lines[:-1]))  # the last attempt to run again on the resume
    outside = tmp_path / "outside"
    outside.mkdir()
    name = {"lock": ".csorch.lock", "journal": "journal.jsonl", "logs": "logs"}[planted]
    target = outside / name
    if planted == "lock":
        target.write_text("the user's file\n")
        (bundle / name).unlink(missing_ok=True)
    else:
        shutil.move(bundle / name, target)
    (bundle / name).symlink_to(target)
    before = _snapshot(outside)
    done = csorch(tmp_path, "run", "--resume", bundle, timeout=120)
    assert _snapshot(outside) == before, said(done)[-3000:]
    # refused: a usage error (the journal: no resume), or a directory csorch cannot write
    # (inconclusive, the resume command named)
    assert done.returncode in (2, 3), said(done)[-3000:]
    assert f"{bundle / name}: is a symlink" in said(done), said(done)[-3000:]
    assert "Traceback" not in said(done)


@pytest.mark.parametrize("planted", ["journal", "log"])
def test_a_resume_does_not_write_into_a_hard_link_planted_in_the_bundle(
    cprog_bundles, tmp_path, planted
):
    """A hard link is no symlink: O_NOFOLLOW opens it, and the resume's appends to the
    journal (or its rewrite of the attempt's log) landed in the file outside, under its
    other name. A file csorch writes in place that has other names is refused."""
    bundle = tmp_path / "bundle"
    shutil.copytree(cprog_bundles["pass"], bundle, symlinks=True)
    journal = bundle / "journal.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(lines[:-1]))  # the last attempt to run again on the resume
    outside = tmp_path / "outside"
    outside.mkdir()
    # the log of the attempt the resume runs again: the journal's last line's
    log = json.loads(lines[-1])["attempt"]["log"]
    name = "journal.jsonl" if planted == "journal" else log
    target = outside / "the-users-file"
    shutil.copy(bundle / name, target)
    (bundle / name).unlink()
    os.link(target, bundle / name)
    before = _snapshot(outside)
    done = csorch(tmp_path, "run", "--resume", bundle, timeout=120)
    assert _snapshot(outside) == before, said(done)[-3000:]
    assert "Traceback" not in said(done)
    if planted == "journal":  # appended to in place: refused
        assert done.returncode in (2, 3), said(done)[-3000:]
        assert "hard links" in said(done), said(done)[-3000:]
    else:  # the attempt's log is written anew, never through the other name
        assert not os.path.samefile(bundle / name, target), said(done)[-3000:]


DEEP = """\
import os
for _ in range(1200):
    os.mkdir("d")
    os.chdir("d")
open("bottom.txt", "w").write("x")
"""


@pytest.fixture
def tidy(place: Path):
    """`place` removed after the test with csorch's own removal: a deep tree left behind
    (by a csorch that failed to remove it) breaks pytest's clean-up of old temp dirs,
    which recurses."""
    yield place
    files.remove_tree(place, ignore_errors=True)


def _deep_config(place: Path, *, build: str, case: str) -> Path:
    (place / "subject" / "deep.py").write_text(DEEP)
    config = place / "deep.yaml"
    config.write_text(f"""\
name: deep
source: subject
variants:
  - name: fixed
    patches: [fix.patch]
    build: {{kind: command, command: {build}, outputs: [pick]}}
  - name: control
    build: {{kind: command, command: {build}, outputs: [pick]}}
runs: [{{name: plain, checker: none}}]
cases: [{{name: deep, command: {case}}}]
timeout: 1m
""")
    return config


def test_a_tree_1200_deep_made_by_a_case_is_removed(tidy: Path) -> None:
    place = tidy
    config = _deep_config(place, build="[make]", case=f"[{sys.executable}, deep.py]")
    done = csorch(place, "run", config, "--backend", "asan", "--out", place / "b", timeout=240)
    assert "Traceback" not in said(done) and "RecursionError" not in said(done), said(done)[-3000:]
    assert done.returncode == 3 and "states no expectations" in said(done), said(done)[-3000:]
    work = place / "build" / "csorch-cache" / "work"
    deep = [p for p in work.rglob("bottom.txt")] if work.exists() else []
    assert deep == []  # each attempt's copy of the built tree is removed, depth and all


def test_a_tree_1200_deep_made_by_a_build_is_refused_by_name(tidy: Path) -> None:
    place = tidy
    build = f"[sh, -c, 'make && {sys.executable} deep.py']"
    config = _deep_config(place, build=build, case="[./pick]")
    done = csorch(place, "run", config, "--backend", "asan", "--out", place / "b", timeout=240)
    assert "Traceback" not in said(done) and "RecursionError" not in said(done), said(done)[-3000:]
    assert done.returncode == 3, said(done)[-3000:]
    assert "nested more than 200 directories deep" in said(done), said(done)[-3000:]


def test_a_cache_inside_the_source_tree_is_refused_before_it_is_made(place: Path) -> None:
    cache = place / "subject" / "cache"
    done = csorch(place, "run", experiment(place), "--backend", "asan", "--out", place / "b",
                  "--cache-dir", cache, timeout=DEADLINE)  # fmt: skip
    assert done.returncode == 2, said(done)
    assert f"--cache-dir {cache} is inside the source tree" in said(done), said(done)
    assert not cache.exists() and not (place / "b").exists()


def test_an_out_that_holds_the_cache_is_refused(place: Path) -> None:
    out = place / "results"
    done = csorch(place, "run", experiment(place), "--backend", "asan", "--out", out,
                  "--cache-dir", out / "cache", timeout=DEADLINE)  # fmt: skip
    assert done.returncode == 2, said(done)
    assert f"--out {out} holds the build cache" in said(done), said(done)


def test_probe_writes_nothing_in_the_work_tree_git_bisect_runs_it_in(place: Path) -> None:
    tree = place / "subject"
    git(tree, "init", "-q")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "subject")
    config = experiment(place, source=str(tree))
    home = place / "results-home"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CSORCH_RESULTS_DIR": str(home),
           "CSORCH_CACHE_DIR": str(place / "build" / "csorch-cache")}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "probe", str(config), "--backend", "asan",
         "--repeat", "1"],
        cwd=tree, capture_output=True, text=True, timeout=240, env=env,
    )  # fmt: skip
    assert done.returncode in (0, 1, 125), said(done)[-3000:]
    assert git(tree, "status", "--porcelain", "--ignored") == "", said(done)[-3000:]
    assert any((home / "probe").iterdir()), said(done)[-3000:]


def test_a_manifest_of_3_gb_is_refused_by_its_bound(cprog_bundles, tmp_path) -> None:
    bundle = tmp_path / "bundle"
    shutil.copytree(cprog_bundles["pass"], bundle, symlinks=True)
    os.truncate(bundle / "manifest.json", 3 << 30)  # sparse: no disk, no memory
    for verb in (("verify", bundle), ("compare", "--from", bundle), ("report", bundle)):
        done = csorch(tmp_path, *verb, timeout=DEADLINE)
        assert "Traceback" not in said(done) and "MemoryError" not in said(done), verb
        assert done.returncode != 0 or verb[0] == "report", (verb, said(done)[-3000:])
        assert "manifest.json" in said(done) and "is at most" in said(done), (verb, said(done))


def _with(config: Path, old: str, new: str) -> Path:
    config.write_text(config.read_text().replace(old, new, 1))
    return config


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero"])
def test_a_pytest_case_that_is_no_file_is_refused_at_load(place: Path, kind: str) -> None:
    # before: `check` passed it, and `run` said "cannot write" the user's case (exit 3)
    not_a_file(place, kind, "test_pipe.py")
    config = _with(experiment(place), "[{name: sum, command: [./pick]}]", "[test_pipe.py]")
    done = csorch(place, "check", config, timeout=DEADLINE)
    assert done.returncode == 2, said(done)
    found = "a named pipe" if kind == "fifo" else "a character device"
    assert "cases[0]" in done.stderr and f"is {found}, not a test file" in done.stderr
    assert "Traceback" not in said(done)


def test_a_pipe_among_a_pytest_cases_files_is_named_as_input(place: Path) -> None:
    # before: "error: cannot write .../tests/pipe: a named pipe ...; the run is
    # inconclusive; once fixed, resume with: ..." (exit 3): csorch writes no case file
    (place / "tests").mkdir()
    (place / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    os.mkfifo(place / "tests" / "pipe")
    config = _with(experiment(place), "[{name: sum, command: [./pick]}]", "[tests/test_a.py]")
    done = csorch(place, "run", config, "--backend", "asan", "--out", place / "o")
    assert done.returncode == 2, said(done)
    assert f"case file {place / 'tests' / 'pipe'}: a named pipe" in done.stderr, said(done)
    assert "cannot write" not in said(done) and "Traceback" not in said(done)


@pytest.mark.parametrize(
    ("key", "old", "new"),
    [
        ("variants[0].build.outputs[0]", "outputs: [pick]", "outputs: [../../../etc/passwd]"),
        ("variants[0].build.outputs[0]", "outputs: [pick]", "outputs: [/etc/passwd]"),
        (
            "variants[0].build.description",
            "{kind: command, command: [make], outputs: [pick]}",
            "{kind: jit, description: /tmp/build.py}",
        ),
    ],
)
def test_a_build_file_outside_the_tree_is_refused_at_load(place, key, old, new):
    # before: `check` passed; the run hashed (outputs) or ran (description) a file
    # outside the variant's tree, or failed the build (exit 3)
    done = csorch(place, "check", _with(experiment(place), old, new), timeout=DEADLINE)
    assert done.returncode == 2, said(done)
    assert key in done.stderr, said(done)
    assert "outside the built tree" in done.stderr or "inside the tree" in done.stderr
    assert "config ok" not in said(done)


def test_a_patch_past_its_bound_is_refused_at_load(place: Path) -> None:
    # before: `check` passed, and the run failed the variant's build (exit 3)
    with open(place / "fix.patch", "r+b") as f:  # sparse: 70 MiB that take no disk
        f.truncate(70 << 20)
    done = csorch(place, "check", experiment(place), timeout=DEADLINE)
    assert done.returncode == 2, said(done)
    assert "variants[0].patches[0]" in done.stderr and "at most 67108864" in done.stderr
    assert "config ok" not in said(done)


def test_a_patch_that_is_a_pipe_is_named_as_one(place: Path) -> None:
    # before: "no such file: .../fix.patch", of a file that is there
    (place / "fix.patch").unlink()
    os.mkfifo(place / "fix.patch")
    done = csorch(place, "check", experiment(place), timeout=DEADLINE)
    assert done.returncode == 2, said(done)
    assert "variants[0].patches[0]" in done.stderr and "(a named pipe is there)" in done.stderr
