"""`csorch bisect` and `csorch probe` end to end with the ASan backend, on real git
repositories made in a temp dir.

- qext: a history of `ext/` in which commit 4 does not compile (fixed in 5) and commit 6
  brings in the RNG owner-scope defect (controls/rng-owner-scope.patch); a branch after
  it fixes the defect again at its third commit. `csorch bisect` names commit 6 and skips
  commit 4; `--find-fix` names the fixing commit; `git bisect run csorch probe` agrees,
  with exit codes 0, 1 and 125 in its log. Every other commit only touches NOTES outside
  `ext/`, so the build cache (shared by all of them) holds two real builds in the whole
  module: the clean tree and the defective one (plus two failed builds of commit 4,
  which fail in seconds). The runs dominate: about 13 short ASan runs of one case.
- a C program (seconds a probe): skips that leave the answer ambiguous (exit 3), an end
  that does not re-check (exit 3), Ctrl-C and `--resume`, and probe's exit 128.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import synthetic_history  # noqa: E402  (tools/ is scripts, not a package)

E2E = ROOT / "tests" / "fixtures" / "e2e"
PATCH = synthetic_history.PATCH
TARGET = "kind=heap-use-after-free"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not all(shutil.which(t) for t in ("gcc", "git", "patch", "make")),
        reason="needs gcc, git, patch and make",
    ),
]


def _torch_has_cuda() -> bool:
    import torch

    return torch.version.cuda is not None


# as in test_run_asan.py: the qext ASan experiment runs where torch is a CPU build
cpu_torch_only = pytest.mark.skipif(
    importlib.util.find_spec("torch") is not None and _torch_has_cuda(),
    reason="the qext ASan experiment runs where torch is a CPU build (CI); this torch has CUDA",
)

ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
CSORCH = [sys.executable, "-m", "orchestrator"]


def csorch(*args: str, cwd: Path, timeout: float = 1500) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CSORCH, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=ENV
    )


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=ENV
    )
    return done.stdout.strip()


def init(repo: Path) -> None:
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "csorch@example.invalid")
    git(repo, "config", "user.name", "csorch tests")


def commit(repo: Path, subject: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject)
    return git(repo, "rev-parse", "HEAD")


def note(repo: Path, text: str) -> str:
    """A commit outside the built subdir: its tree digest, and so its build, is unchanged."""
    with open(repo / "NOTES", "a") as f:
        f.write(text + "\n")
    return commit(repo, f"notes: {text}")


def state(out: Path) -> dict:
    return json.loads((out / "bisect.json").read_text())["state"]


def probed(out: Path) -> list[tuple[str, str]]:
    return [(s["commit"]["sha"], s["evaluation"]["mark"]) for s in state(out)["steps"]]


# --- qext -----------------------------------------------------------------------------

QEXT_CONFIG = """\
# modelled on configs/nvfp4-rng-ownership.yaml; bisect builds only `tree` (the variant
# without patches); `control` is there because expect names a control
name: rng-bisect
source: repo/ext
variants:
  - name: tree
    build: {{kind: jit, description: qext/build.py}}
  - name: control
    patches: [{patch}]
    build: {{kind: jit, description: qext/build.py}}
runs:
  - {{name: plain, checker: none}}
  - name: memcheck
    checker: memcheck
    env: {{PYTORCH_NO_CUDA_MEMORY_CACHING: 1}}
cases:
  - name: rng-unfused
    pytest: {tests}/test_rng_ownership.py
    args: [-k, not fused]
    backend_args: {{asan: [--qext-device, cpu]}}
  - name: rng-fused
    pytest: {tests}/test_rng_ownership.py
    args: [-k, fused]
    backend_args: {{asan: [--qext-device, cpu]}}
timeout: 10m
expect:
  controls: [control]
  fix: tree
  target:
    - {{checker: asan, kind: heap-use-after-free, access: read, size: 8, frame: "*nvfp4*",
       case: rng-unfused}}
"""


@pytest.fixture(scope="module")
def qext_repo(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """main: c0..c9, c4 unbuildable (fixed in c5), the defect from c6 on.
    fixed: c9, then d1..d5 with the defect fixed at d3."""
    tmp = tmp_path_factory.mktemp("bisect-qext")
    repo = tmp / "repo"
    # the tool that made the H200's bisection history, at a size CI can afford
    c = synthetic_history.make_history(repo, commits=10, defect_at=6, unbuildable_at=4)
    git(repo, "checkout", "-q", "-b", "fixed")
    d = [c[9]]
    for i in range(1, 6):
        if i == 3:
            synthetic_history.patch(repo, reverse=True)
            d.append(commit(repo, "nvfp4: keep the RNG state owners alive until dispatch"))
        else:
            d.append(note(repo, f"d{i}"))
    git(repo, "checkout", "-q", "main")
    config = tmp / "rng-bisect.yaml"
    config.write_text(QEXT_CONFIG.format(patch=PATCH, tests=ROOT / "tests" / "regression"))
    return {"tmp": tmp, "repo": repo, "config": config, "c": c, "d": d, "cache": tmp / "cache"}


@pytest.fixture(scope="module")
def forward(qext_repo: dict) -> tuple[subprocess.CompletedProcess, Path, float]:
    r = qext_repo
    out = r["tmp"] / "forward"
    start = time.monotonic()
    done = csorch(
        "bisect", str(r["config"]), "--good", r["c"][0], "--bad", "main",
        "--backend", "asan", "--out", str(out), "--cache-dir", str(r["cache"]),
        cwd=r["tmp"],
    )  # fmt: skip
    (r["tmp"] / "forward.txt").write_text(done.stdout + done.stderr)
    return done, out, time.monotonic() - start


@cpu_torch_only
def test_bisect_names_the_commit_that_brought_the_defect(forward, qext_repo) -> None:
    done, out, _ = forward
    c = qext_repo["c"]
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert f"first bad commit: {c[6]} nvfp4: scope the RNG state owners" in done.stdout
    # the ends first (new, old), then the midpoint 4, which does not build: skipped,
    # and the search steps around it
    assert probed(out) == [
        (c[9], "bad"), (c[0], "good"), (c[4], "skip"), (c[5], "good"), (c[7], "bad"),
        (c[6], "bad"),
    ]  # fmt: skip
    steps = state(out)["steps"]
    skip = steps[2]["evaluation"]
    assert skip["build"] == "failed"
    assert skip["reason"].startswith("untestable: the build failed: tensor.cpp:")
    assert "steps: 6 (1 skipped)" in done.stdout
    # identical ext/ trees never rebuild: the clean and the defective tree built once each
    assert [s["evaluation"]["build"] for s in steps] == [
        "built", "built", "failed", "cached", "cached", "cached",
    ]  # fmt: skip
    bad = steps[0]["evaluation"]
    assert bad["hits"][0]["hits"] == 1 and TARGET in bad["hits"][0]["target"]


@cpu_torch_only
def test_every_step_keeps_its_evidence(forward) -> None:
    _, out, _ = forward
    for step in state(out)["steps"]:
        bundle = out / step["evaluation"]["bundle"]
        decision = json.loads((bundle / "probe.json").read_text())
        assert decision["mark"] == step["evaluation"]["mark"]
        results = json.loads((bundle / "results.json").read_text())
        assert results["complete"] and [s["commit"] for s in results["sources"]] == [
            step["commit"]["sha"]
        ]
        # only what the target watches runs: the checker run, the unfused case
        assert {(a["variant"], a["run"], a["case"]) for a in results["attempts"]} <= {
            ("tree", "memcheck", "rng-unfused")
        }
        assert (bundle / "manifest.json").is_file()


@cpu_torch_only
def test_running_the_same_command_again_resumes_and_probes_nothing(forward, qext_repo) -> None:
    _, out, _ = forward
    r = qext_repo
    done = csorch(
        "bisect", str(r["config"]), "--good", r["c"][0], "--bad", "main",
        "--backend", "asan", "--out", str(out), "--cache-dir", str(r["cache"]),
        cwd=r["tmp"],
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resuming after step 6" in done.stderr
    assert f"first bad commit: {r['c'][6]}" in done.stdout
    assert len(state(out)["steps"]) == 6


@cpu_torch_only
def test_find_fix_names_the_commit_that_removed_the_defect(forward, qext_repo) -> None:
    r = qext_repo
    out = r["tmp"] / "find-fix"
    done = csorch(
        "bisect", str(r["config"]), "--good", "main", "--bad", "fixed", "--find-fix",
        "--repo", str(r["repo"]), "--subdir", "ext",
        "--backend", "asan", "--out", str(out), "--cache-dir", str(r["cache"]),
        cwd=r["tmp"],
    )  # fmt: skip
    (r["tmp"] / "find-fix.txt").write_text(done.stdout + done.stderr)
    d = r["d"]
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert f"first fixed commit: {d[3]} nvfp4: keep the RNG state owners alive" in done.stdout
    assert probed(out) == [(d[5], "good"), (d[0], "bad"), (d[2], "bad"), (d[3], "good")]
    assert all(s["evaluation"]["build"] == "cached" for s in state(out)["steps"])


@cpu_torch_only
def test_git_bisect_run_with_csorch_probe(forward, qext_repo) -> None:
    r = qext_repo
    repo, c = r["repo"], r["c"]
    probe = [
        *CSORCH, "probe", str(r["config"]), "--backend", "asan",
        "--out", str(r["tmp"] / "probes"), "--cache-dir", str(r["cache"]),
    ]  # fmt: skip
    git(repo, "bisect", "start", "main", c[0])
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), "bisect", "run", *probe],
            cwd=repo, capture_output=True, text=True, timeout=1500, env=ENV,
        )  # fmt: skip
        log = git(repo, "bisect", "log")
    finally:
        git(repo, "bisect", "reset")
    (r["tmp"] / "git-bisect.txt").write_text(done.stdout + done.stderr + log)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert f"{c[6]} is the first bad commit" in done.stdout
    # git took csorch's 125 for the unbuildable commit, 0 and 1 for the others
    assert f"git bisect skip {c[4]}" in log
    assert "git bisect good" in log and "git bisect bad" in log
    assert "SKIP untestable: the build failed: tensor.cpp:" in done.stdout


# --- a C program: the CLI's other exits, in seconds --------------------------------------

C_CONFIG = f"""\
name: c-bisect
source: repo/sub
variants:
  - name: tree
    build: {{kind: command, command: [make], outputs: [pick]}}
  - name: control
    patches: [{E2E / "comment-only.patch"}]
    build: {{kind: command, command: [make], outputs: [pick]}}
runs:
  - {{name: memcheck, checker: memcheck}}
cases:
  - {{name: sum, command: [./pick]}}
timeout: 2m
expect:
  controls: [control]
  fix: tree
  target: {{checker: asan, kind: heap-buffer-overflow, access: read, function: sum}}
"""


@pytest.fixture(scope="module")
def c_repo(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """c0 fixed, c1 does not compile, c2 fixes that and brings the out-of-bounds read,
    then c3..c5 notes."""
    tmp = tmp_path_factory.mktemp("bisect-c")
    repo = tmp / "repo"
    init(repo)
    shutil.copytree(E2E / "cprog", repo / "sub")
    with open(E2E / "fix-oob.patch") as f:
        subprocess.run(["patch", "-s", "-p1", "-d", "sub"], cwd=repo, stdin=f, check=True)
    c = [commit(repo, "pick: fixed")]
    source = repo / "sub" / "pick.c"
    fixed = source.read_text()
    source.write_text(fixed + "\nnot C\n")
    c.append(commit(repo, "pick: a half-finished edit"))
    source.write_text(fixed.replace("i < n", "i <= n"))
    c.append(commit(repo, "pick: finish the edit (reads one past the end)"))
    c += [note(repo, f"c{i}") for i in range(3, 6)]
    (tmp / "c.yaml").write_text(C_CONFIG)
    return {"tmp": tmp, "repo": repo, "config": tmp / "c.yaml", "c": c, "cache": tmp / "cache"}


def c_bisect(r: dict, out: str, *args: str) -> subprocess.CompletedProcess:
    return csorch(
        "bisect", str(r["config"]), *args, "--backend", "asan",
        "--out", str(r["tmp"] / out), "--cache-dir", str(r["cache"]), cwd=r["tmp"], timeout=300,
    )  # fmt: skip


def test_a_skip_next_to_the_answer_leaves_it_ambiguous(c_repo) -> None:
    c = c_repo["c"]
    done = c_bisect(c_repo, "ambiguous", "--good", c[0], "--bad", "main")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "skipped commits leave 2 candidates" in done.stdout
    assert f"{c[1]} pick: a half-finished edit  (skip)" in done.stdout
    assert f"{c[2]} pick: finish the edit" in done.stdout


def test_an_end_that_does_not_recheck_is_inconclusive(c_repo) -> None:
    c = c_repo["c"]
    done = c_bisect(c_repo, "wrong-end", "--good", c[2], "--bad", "main")
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"--good {c[2][:10]} (pick: finish the edit" in done.stderr
    assert "shows the target, but a search for a regression needs it good" in done.stderr
    assert "--find-fix" in done.stderr
    assert [m for _, m in probed(c_repo["tmp"] / "wrong-end")] == ["bad", "bad"]


def test_usage_errors(c_repo) -> None:
    c = c_repo["c"]
    swapped = c_bisect(c_repo, "swapped", "--good", "main", "--bad", c[0])
    assert swapped.returncode == 2 and "is not an ancestor" in swapped.stderr
    unknown = c_bisect(c_repo, "unknown", "--good", "nope", "--bad", "main")
    assert unknown.returncode == 2 and "unknown ref 'nope'" in unknown.stderr
    # probe: what csorch cannot judge stops git bisect (128), a bad option included
    for args in (["--variant", "nope"], ["--no-such-option"]):
        done = csorch("probe", str(c_repo["config"]), *args, cwd=c_repo["tmp"])
        assert done.returncode == 128, done.stdout + done.stderr


def test_probe_exit_codes(c_repo) -> None:
    r, c = c_repo, c_repo["c"]
    codes = []
    for ref in (c[0], c[1], c[2]):
        done = csorch(
            "probe", str(r["config"]), "--backend", "asan", "--repo", str(r["repo"]),
            "--ref", ref, "--subdir", "sub", "--out", str(r["tmp"] / "probes"),
            "--cache-dir", str(r["cache"]), cwd=r["tmp"], timeout=300,
        )  # fmt: skip
        codes.append(done.returncode)
    assert codes == [0, 125, 1]


def test_ctrl_c_prints_the_resume_command_and_resume_finishes(c_repo) -> None:
    r = c_repo
    out = r["tmp"] / "interrupted"
    # a case that sleeps gives Ctrl-C a step in flight to interrupt
    slow = r["tmp"] / "slow.yaml"
    slow.write_text(
        C_CONFIG.replace("name: c-bisect", "name: c-slow").replace(
            "[./pick]", "[sh, -c, 'sleep 2; ./pick']"
        )
    )
    child = subprocess.Popen(
        [*CSORCH, "bisect", str(slow), "--good", r["c"][0], "--bad", "main",
         "--backend", "asan", "--out", str(out), "--cache-dir", str(r["cache"])],
        cwd=r["tmp"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if (out / "bisect.json").is_file() and len(state(out)["steps"]) >= 1:
            break
        time.sleep(0.2)
    time.sleep(0.5)  # into the second step
    child.send_signal(signal.SIGINT)
    stdout, stderr = child.communicate(timeout=60)
    assert child.returncode == 3, stdout + stderr
    assert f"interrupted; resume with: csorch bisect --resume {out}" in stderr
    kept = len(state(out)["steps"])
    assert kept >= 1
    done = csorch("bisect", "--resume", str(out), cwd=r["tmp"], timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr  # ambiguous, as above
    assert f"resuming after step {kept}" in done.stderr
    assert "skipped commits leave 2 candidates" in done.stdout


def test_probes_side_by_side_give_the_same_answer_in_fewer_rounds(c_repo) -> None:
    c = c_repo["c"]
    one = c_bisect(c_repo, "one-a-round", "--good", c[0], "--bad", "main")
    three = c_bisect(c_repo, "three-a-round", "--good", c[0], "--bad", "main", "--probes", "3")
    assert one.returncode == three.returncode == 3, three.stdout + three.stderr
    for done in (one, three):  # c1 does not build: c1 and c2 stay candidates either way
        assert "skipped commits leave 2 candidates" in done.stdout
        assert f"{c[2]} pick: finish the edit" in done.stdout
    marks = dict(probed(c_repo["tmp"] / "three-a-round"))
    assert marks[c[0]] == "good" and marks[c[1]] == "skip" and marks[c[2]] == "bad"
    # the first round held both ends and a midpoint; six commits need two rounds, not four
    assert len(marks) <= len(probed(c_repo["tmp"] / "one-a-round")) + 2
    saved = state(c_repo["tmp"] / "three-a-round")
    assert saved["settings"]["probes"] == 3


def test_a_resume_does_not_believe_a_mark_edited_in_bisect_json(c_repo) -> None:
    """The marks a resume continues from are re-derived from the step bundles: c2 (bad,
    the edit that reads past the end) edited to good in bisect.json would move the
    answer to c3; the resume judges c2's bundle again and keeps the real answer."""
    c = c_repo["c"]
    out = c_repo["tmp"] / "edited"
    first = c_bisect(c_repo, "edited", "--good", c[0], "--bad", "main")
    assert first.returncode == 3, first.stdout + first.stderr
    assert "skipped commits leave 2 candidates" in first.stdout
    doc = json.loads((out / "bisect.json").read_text())
    assert dict(doc["state"]["bisection"]["marks"])[c[2]] == "bad"
    doc["state"]["bisection"]["marks"] = [
        [sha, "good" if sha == c[2] else mark] for sha, mark in doc["state"]["bisection"]["marks"]
    ]
    for step in doc["state"]["steps"]:
        if step["commit"]["sha"] == c[2]:
            step["evaluation"]["mark"] = "good"
    (out / "bisect.json").write_text(json.dumps(doc, indent=1))
    again = csorch("bisect", "--resume", str(out), cwd=c_repo["tmp"], timeout=300)
    assert again.returncode == 3, again.stdout + again.stderr
    assert "skipped commits leave 2 candidates" in again.stdout
    assert f"first bad commit: {c[3]}" not in again.stdout
    assert "says good, its bundle says bad" in " ".join(again.stderr.split())
    assert dict(state(out)["bisection"]["marks"])[c[2]] == "bad"
