"""`csorch run --carry-from` and `csorch gate --carry-from` on the C program under ASan,
with each new head a real git commit of the subject's history (made in a temp dir):
a comment-only head carries the stored verdict (no attempt runs, every report's first
line says so, `csorch verify` re-derives the carry); a one-token change, a space inside
a string literal, a new data file, a changed experiment, a tampered stored bundle do
not (the run goes on and the reason names the file); a carry record edited, re-pointed
at another bundle or with a tree record changed, then re-hashed, does not verify."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.bundle import verify

pytestmark = [
    pytest.mark.process,
    pytest.mark.skipif(
        shutil.which("gcc") is None or shutil.which("make") is None or shutil.which("git") is None,
        reason="needs gcc, make and git",
    ),
]

ROOT = Path(__file__).resolve().parents[2]
E2E = ROOT / "tests" / "fixtures" / "e2e"
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, env={**os.environ, **GIT_ENV}
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _csorch(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(work dir, bundle): the C program's history (a git repository: config, patch and
    subject) and the bundle of its first commit's run."""
    tmp = tmp_path_factory.mktemp("carry")
    repo = tmp / "repo"
    repo.mkdir()
    for name in ("c-oob.yaml", "fix-oob.patch", "gate-cprog.yaml"):
        shutil.copy(E2E / name, repo / name)
    shutil.copytree(E2E / "cprog", repo / "cprog")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    done = _csorch(tmp, "run", str(repo / "c-oob.yaml"), "--backend", "asan", "--out",
                   str(tmp / "base"), "--cache-dir", str(tmp / "cache"))  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return tmp, tmp / "base"


def _head(stored: tuple[Path, Path], name: str, edit) -> Path:  # type: ignore[no-untyped-def]
    """A worktree of a new commit on the base: `edit(tree)` applied and committed."""
    tmp, _ = stored
    tree = tmp / name
    _git(tmp / "repo", "worktree", "add", "-q", "-b", name, str(tree), "main")
    edit(tree)
    _git(tree, "add", "-A")
    _git(tree, "commit", "-q", "--allow-empty", "-m", name)
    return tree


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def _carry(
    stored: tuple[Path, Path], tree: Path, out: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    tmp, base = stored
    done = _csorch(tmp, "run", str(tree / "c-oob.yaml"), "--backend", "asan", "--out",
                   str(tmp / out), "--cache-dir", str(tmp / "cache"),
                   "--carry-from", str(base))  # fmt: skip
    return done, tmp / out


def _results(bundle: Path) -> dict:
    return json.loads((bundle / "results.json").read_text())


def test_a_comment_only_head_carries_the_verdict(stored: tuple[Path, Path]) -> None:
    tree = _head(stored, "comment", lambda t: _replace(
        t / "cprog" / "pick.c", "sums an 8-element table", "sums a table of eight"))  # fmt: skip
    done, out = _carry(stored, tree, "comment-out")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "carried: evidence carried from" in done.stdout + done.stderr
    assert "] carried: fixed/plain/sum r0: passed" in done.stderr  # not as if it ran now
    results = _results(out)
    assert results["verdict"] == "pass"
    first = results["judgement"]["reasons"][0]
    assert first.startswith("evidence carried from") and "pick.c in fixed, control" in first
    # how far the stored bundle can be believed, said where the carry is: an unsigned
    # one could have been re-hashed by anyone who can write
    assert "(unsigned, no attempt ran)" in first and results["carried"]["evidence"] == "unsigned"
    assert [f["path"] for f in results["carried"]["files"]] == ["pick.c", "pick.c"]
    # the attempts are the stored ones, their logs copied: none ran
    assert results["attempts"] == _results(stored[1])["attempts"]
    assert verify.verify(out).ok
    md = _csorch(stored[0], "report", str(out), "-f", "markdown").stdout
    assert md.splitlines()[0].endswith("PASS (carried: no attempt ran)")


@pytest.mark.parametrize(
    ("name", "path", "old", "new"),
    [
        ("token", "cprog/pick.c", "i = 0; i < n; ++i)", "i = 0; i <= n - 1; ++i)"),
        ("literal", "cprog/pick.c", '"sum %d\\n"', '"sum  %d\\n"'),
    ],
)
def test_an_executable_change_runs_every_attempt_naming_the_file(
    stored: tuple[Path, Path], name: str, path: str, old: str, new: str
) -> None:
    tree = _head(stored, name, lambda t: _replace(t / path, old, new))
    done, out = _carry(stored, tree, f"{name}-out")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "not carried, running every attempt: variant fixed: pick.c" in done.stderr
    results = _results(out)
    assert results["carried"] is None
    assert not results["judgement"]["reasons"][0].startswith("evidence carried")
    assert results["attempts"] != _results(stored[1])["attempts"]  # they ran again


def test_a_new_data_file_is_executable(stored: tuple[Path, Path]) -> None:
    tree = _head(stored, "data", lambda t: (t / "cprog" / "table.csv").write_text("1,2\n"))
    done, out = _carry(stored, tree, "data-out")
    assert "not carried" in done.stderr and "table.csv: added" in done.stderr


def test_a_changed_experiment_does_not_carry(stored: tuple[Path, Path]) -> None:
    tree = _head(
        stored, "config", lambda t: _replace(t / "c-oob.yaml", "timeout: 2m", "timeout: 3m")
    )
    done, _ = _carry(stored, tree, "config-out")
    assert "not carried, running every attempt: the experiment's 'timeout' differs" in done.stderr


def test_a_tampered_stored_bundle_does_not_carry(stored: tuple[Path, Path]) -> None:
    tmp, base = stored
    copy = tmp / "tampered"
    shutil.copytree(base, copy)
    log = next(p for p in (copy / "logs").rglob("*.log") if "build" not in p.parts)
    log.write_text(log.read_text() + "x")
    tree = _head(stored, "tampered-head", lambda t: None)
    done = _csorch(tmp, "run", str(tree / "c-oob.yaml"), "--backend", "asan", "--out",
                   str(tmp / "tampered-out"), "--cache-dir", str(tmp / "cache"),
                   "--carry-from", str(copy))  # fmt: skip
    assert "not carried, running every attempt:" in done.stderr and "is not trusted" in done.stderr


def _rehash(bundle: Path) -> None:
    """What anyone who can write may do: make the manifest agree with edited files."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    text = (bundle / "results.json").read_bytes()
    manifest["results"]["sha256"] = hashlib.sha256(text).hexdigest()
    for rel in list(manifest["files"]):
        if (bundle / rel).is_file():
            manifest["files"][rel] = hashlib.sha256((bundle / rel).read_bytes()).hexdigest()
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def _edit_results(bundle: Path, change) -> None:  # type: ignore[no-untyped-def]
    results = _results(bundle)
    change(results)
    (bundle / "results.json").write_text(json.dumps(results))
    _rehash(bundle)


def test_a_carry_record_edited_or_repointed_does_not_verify(
    stored: tuple[Path, Path], tmp_path: Path
) -> None:
    tmp, base = stored
    tree = _head(stored, "hostile", lambda t: _replace(
        t / "cprog" / "pick.c", "sums an 8-element table", "sums eight numbers"))  # fmt: skip
    done, out = _carry(stored, tree, "hostile-out")
    assert done.returncode == 0 and verify.verify(out).ok

    def failing(bundle: Path) -> list[str]:
        return [f"{c.path}: {c.detail}" for c in verify.verify(bundle).checks
                if c.status in verify.FAILING]  # fmt: skip

    # a changed file left out of the record
    one = tmp_path / "one"
    shutil.copytree(out, one)
    _edit_results(one, lambda r: r["carried"].update(files=r["carried"]["files"][:1]))
    assert any("leaves it out" in f for f in failing(one))
    # pointed at another bundle (one of another run of the same config)
    other = tmp_path / "other"
    shutil.copytree(out, other)
    again = _csorch(tmp, "run", str(tmp / "repo" / "c-oob.yaml"), "--backend", "asan", "--out",
                    str(tmp_path / "elsewhere"), "--cache-dir", str(tmp / "cache"))  # fmt: skip
    assert again.returncode == 0
    _edit_results(other, lambda r: r["carried"].update(source=str(tmp_path / "elsewhere")))
    assert any("has changed since" in f for f in failing(other))
    # the stored tree's listing changed to hide the file's change (and re-hashed)
    hidden = tmp_path / "hidden"
    shutil.copytree(out, hidden)
    now = json.loads((hidden / "trees" / "variants" / "fixed.json").read_text())
    was = hidden / "trees" / "from" / "variants" / "fixed.json"
    old = json.loads(was.read_text())
    old["listing"]["pick.c"] = now["listing"]["pick.c"]
    was.write_text(json.dumps(old))
    _rehash(hidden)
    assert any("not the tree the carry record names" in f for f in failing(hidden))
    # a binary that executes differently, its digest swapped in the record
    swapped = tmp_path / "swapped"
    shutil.copytree(out, swapped)
    _edit_results(swapped, lambda r: r["carried"]["binaries"][0].update(executes="0" * 64))
    assert any("not this run's" in f for f in failing(swapped))


def test_the_gate_carries_and_says_so_first(stored: tuple[Path, Path]) -> None:
    tmp, _ = stored
    repo = tmp / "repo"
    first = _csorch(tmp, "gate", str(repo / "gate-cprog.yaml"), "--backend", "asan", "--out",
                    str(tmp / "g1"), "--cache-dir", str(tmp / "cache"))  # fmt: skip
    assert first.returncode == 0, first.stdout[-3000:]
    tree = _head(stored, "gate-comment", lambda t: _replace(
        t / "cprog" / "pick.c", "sums an 8-element table", "sums the table"))  # fmt: skip
    done = _csorch(tmp, "gate", str(tree / "gate-cprog.yaml"), "--backend", "asan", "--out",
                   str(tmp / "g2"), "--cache-dir", str(tmp / "cache"), "--carry-from",
                   str(tmp / "g1"))  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    gate = json.loads((tmp / "g2" / "gate.json").read_text())
    assert gate["verdict"] == "pass"
    assert gate["reasons"][0].startswith("evidence carried from stored bundles for 1 of 1")
    assert gate["experiments"][0]["reasons"][0].startswith("evidence carried from")
    # judged again from its stored bundles, the gate still says so first
    again = _csorch(tmp, "gate", str(tree / "gate-cprog.yaml"), "--from",
                    str(tmp / "g2" / "c-oob"), "--out", str(tmp / "g3"))  # fmt: skip
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    rejudged = json.loads((tmp / "g3" / "gate.json").read_text())
    assert rejudged["reasons"][0].startswith("evidence carried from stored bundles for 1 of 1")


def test_carry_from_with_resume_or_into_itself_is_a_usage_error(stored: tuple[Path, Path]) -> None:
    tmp, base = stored
    into = _csorch(tmp, "run", str(tmp / "repo" / "c-oob.yaml"), "--out", str(base / "x"),
                   "--carry-from", str(base))  # fmt: skip
    assert into.returncode == 2 and "overlap" in into.stdout + into.stderr
    both = _csorch(tmp, "run", "--resume", str(base), "--carry-from", str(base))
    assert both.returncode == 2
    nowhere = _csorch(tmp, "run", str(tmp / "repo" / "c-oob.yaml"), "--carry-from",
                      str(tmp / "nowhere"))  # fmt: skip
    assert nowhere.returncode == 2 and "not a directory" in nowhere.stdout + nowhere.stderr
