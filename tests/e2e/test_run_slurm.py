"""The Slurm executor against a real slurmctld + slurmd (+ munged), no mock of any
Slurm command: the module's fixture starts a single-node, CPU-only cluster in a temp
directory (slurm_cluster.py says which settings make it run in a container).

The experiment is the C subject (tests/fixtures/e2e/c-oob.yaml) under ASan: a planted
heap-buffer-overflow, its fix as a patch, built by make (a second) and checked by ASan,
so it exercises the whole pipeline through Slurm (build once per variant, one array per
variant, an attempt per task, gather, judge, bundle) in seconds, where qext's ASan
builds take minutes; the executor does not know what the attempts run. Also: a
NODE_FAIL retried once, Ctrl-C's scancel, a refused sbatch, and gate and bisect with
--executor slurm. Cost: about 1.5 s for the cluster, 5 to 25 s per test (about 75 s in
all on 2 idle cores). `make slurm-deps` installs the packages; CSORCH_SLURM_QEXT=1 adds
qext's RNG experiment (its builds take minutes).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from slurm_cluster import NODE, Cluster, missing

from tests import redis_server

ROOT = Path(__file__).resolve().parents[2]
E2E = ROOT / "tests" / "fixtures" / "e2e"
C_OOB = E2E / "c-oob.yaml"
FAST = ("--slurm", "poll=0.5")  # a test cluster answers at once; a real one: 10 s and up


def _why_not() -> str:
    gone = missing()
    if gone:
        return f"Slurm is not installed ({', '.join(gone)} missing): run `make slurm-deps`"
    if os.geteuid() != 0:
        return "the test cluster runs slurmd as root"
    return ""


pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    why = _why_not()
    if why:
        if os.environ.get("CSORCH_REQUIRE_SLURM") == "1":
            pytest.fail(f"CSORCH_REQUIRE_SLURM=1 but {why}")
        pytest.skip(why)
    c = Cluster(tmp_path_factory.mktemp("slurm"))
    try:
        c.start()
        yield c
    finally:
        c.stop()


def csorch(c: Cluster, *args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd, capture_output=True, text=True, timeout=timeout,
        env={**c.env, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )  # fmt: skip


def start_csorch(c: Cluster, *args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**c.env, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )  # fmt: skip


def results(bundle: Path) -> dict:
    return json.loads((bundle / "results.json").read_text())


def slow_config(tmp: Path, command: str, name: str = "slow") -> Path:
    """One variant of the C subject and one case that takes a while."""
    config = tmp / f"{name}.yaml"
    config.write_text(
        f"""name: {name}
source: {E2E / "cprog"}
variants:
  - {{name: v, build: {{kind: command, command: [make], outputs: [pick]}}}}
runs:
  - {{name: plain, checker: none}}
cases:
  - {{name: slow, command: [sh, -c, "{command}"]}}
timeout: 2m
"""
    )
    return config


def wait_running(c: Cluster, name: str, timeout: float = 120.0) -> str:
    """The job id of the first RUNNING task of the job named `name`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = c.client("squeue", "--array", "--noheader", "--format=%i|%T|%j", check=False)
        for line in out.stdout.splitlines():
            job, state, job_name = line.strip().split("|")
            if state == "RUNNING" and job_name.startswith(f"csorch-{name}-"):
                return job
        time.sleep(0.2)
    raise AssertionError(f"no task of {name} ran within {timeout} s:\n{c.logs()}")


def outcome_view(doc: dict) -> list[tuple]:
    """What the two executors must agree on, attempt by attempt."""
    return [
        (a["variant"], a["run"], a["case"], a["repeat"], a["outcome"], a["checker"],
         sorted(f["kind"] for f in a["parse"]["findings"]))
        for a in doc["attempts"]
    ]  # fmt: skip


def test_c_oob_through_slurm_is_the_local_run(cluster: Cluster, tmp_path: Path) -> None:
    common = ("--backend", "asan", "--cache-dir", str(tmp_path / "cache"))
    begun = time.monotonic()
    local = csorch(cluster, "run", str(C_OOB), "--out", str(tmp_path / "local"), *common,
                   cwd=tmp_path)  # fmt: skip
    local_wall = time.monotonic() - begun
    begun = time.monotonic()
    on_slurm = csorch(cluster, "run", str(C_OOB), "--out", str(tmp_path / "slurm"), *common,
                      "--executor", "slurm", *FAST, "--slurm", "gres=gpu:1",
                      cwd=tmp_path)  # fmt: skip
    slurm_wall = time.monotonic() - begun
    assert local.returncode == 0, local.stdout[-3000:] + local.stderr[-3000:]
    assert on_slurm.returncode == 0, on_slurm.stdout[-3000:] + on_slurm.stderr[-3000:]
    assert "verdict: PASS (causal)" in on_slurm.stdout
    here, there = results(tmp_path / "local"), results(tmp_path / "slurm")

    # every attempt ran as an array task on the cluster's node, and says which
    jobs = []
    for a in there["attempts"]:
        p = a["placement"]
        assert (p["executor"], p["node"], p["state"]) == ("slurm", NODE, "COMPLETED"), a
        assert re.fullmatch(r"\d+_\d+", p["job_id"]) and p["tries"] == [
            f"{p['job_id']} on {NODE}: COMPLETED"
        ]
        out = tmp_path / "slurm" / "logs" / "slurm" / a["variant"] / f"{p['job_id']}.out"
        assert f"task {p['job_id']} on {NODE}" in out.read_text()  # the worker's last word
        jobs.append(f"{a['variant']}/{a['run']}: {p['job_id']}")
    assert all(a["placement"] is None for a in here["attempts"])
    # one array per variant: the two variants' tasks have two job ids
    assert len({a["placement"]["job_id"].split("_")[0] for a in there["attempts"]}) == 2
    assert there["options"]["executor"]["name"] == "slurm"

    # the same bundle as a local run's, attempt by attempt
    assert set(here) == set(there)
    assert [set(a) for a in here["attempts"]] == [set(a) for a in there["attempts"]]
    assert outcome_view(here) == outcome_view(there)
    assert here["judgement"] == there["judgement"]
    assert here["cases"] == there["cases"]

    # and every reader of bundles takes it unchanged
    bundle = str(tmp_path / "slurm")
    assert csorch(cluster, "verify", bundle, cwd=tmp_path).returncode == 0
    for fmt in ("markdown", "junit", "sarif", "table"):
        done = csorch(cluster, "report", bundle, "--format", fmt,
                      "--output", str(tmp_path / f"report.{fmt}"), cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
    markdown = (tmp_path / "report.markdown").read_text()
    arrays = sorted({a["placement"]["job_id"].split("_")[0] for a in there["attempts"]}, key=int)
    assert f"4 attempts as array tasks of job {', '.join(arrays)} on {NODE}" in markdown
    gate = csorch(cluster, "gate", str(C_OOB), "--from", bundle, cwd=tmp_path)
    assert gate.returncode == 0 and "gate: PASS" in gate.stdout, gate.stdout + gate.stderr
    compared = csorch(cluster, "compare", str(C_OOB), "--from", bundle, cwd=tmp_path)
    assert compared.returncode == 0, compared.stdout + compared.stderr

    summary = (
        f"slurm: exit {on_slurm.returncode}, verdict {there['verdict']}, {slurm_wall:.1f} s, "
        f"tasks {'; '.join(jobs)}\n"
        f"local: exit {local.returncode}, verdict {here['verdict']}, {local_wall:.1f} s"
    )
    print("\n" + summary)


def test_a_task_slurm_kills_is_retried_once(cluster: Cluster, tmp_path: Path) -> None:
    """The node fails under a running attempt (scontrol sets it DOWN: Slurm ends the
    task with NODE_FAIL); the attempt runs again and its evidence counts."""
    config = slow_config(tmp_path, "sleep 4; ./pick", name="nodefail")
    run = start_csorch(cluster, "run", str(config), "--backend", "asan", "--out",
                       str(tmp_path / "b"), "--cache-dir", str(tmp_path / "cache"),
                       "--executor", "slurm", *FAST, cwd=tmp_path)  # fmt: skip
    try:
        first = wait_running(cluster, "nodefail")
        cluster.client("scontrol", "update", f"NodeName={NODE}", "State=DOWN",
                       "Reason=csorch-test")  # fmt: skip
        # ReturnToService=2 brings the node back by itself; RESUME in case it has not
        cluster.client("scontrol", "update", f"NodeName={NODE}", "State=RESUME", check=False)
        output, _ = run.communicate(timeout=180)
    finally:
        run.kill()
    (a,) = results(tmp_path / "b")["attempts"]
    p = a["placement"]
    assert p["tries"][0].startswith(f"{first} on {NODE}: NODE_FAIL"), (p, output)
    assert len(p["tries"]) == 2 and p["state"] == "COMPLETED" and p["job_id"] != first
    assert a["outcome"] == "passed" and not a["error"], a


def test_ctrl_c_cancels_the_submitted_jobs(cluster: Cluster, tmp_path: Path) -> None:
    config = slow_config(tmp_path, "sleep 120", name="cancelled")
    run = start_csorch(cluster, "run", str(config), "--backend", "asan", "--out",
                       str(tmp_path / "b"), "--cache-dir", str(tmp_path / "cache"),
                       "--executor", "slurm", *FAST, cwd=tmp_path)  # fmt: skip
    try:
        job = wait_running(cluster, "cancelled")
        run.send_signal(signal.SIGINT)
        output, _ = run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == 3, output
    assert f"interrupted; resume with: csorch run --resume {tmp_path / 'b'}" in output
    deadline, states = time.monotonic() + 60, ["COMPLETING"]
    while states == ["COMPLETING"] and time.monotonic() < deadline:  # the kill takes a moment
        time.sleep(0.2)
        answer = cluster.client("squeue", "--array", "--states=all", "--noheader",
                                "--format=%T", f"--jobs={job}", check=False)  # fmt: skip
        states = answer.stdout.split()
    assert states in (["CANCELLED"], []), (states, output)  # [] once slurmctld purged it
    doc = results(tmp_path / "b")
    assert doc["interrupted"] and not doc["complete"]


def test_a_refused_submission_is_inconclusive(cluster: Cluster, tmp_path: Path) -> None:
    done = csorch(cluster, "run", str(C_OOB), "--backend", "asan", "--out",
                  str(tmp_path / "b"), "--cache-dir", str(tmp_path / "cache"),
                  "--executor", "slurm", *FAST, "--slurm", "partition=nosuch",
                  cwd=tmp_path)  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    doc = results(tmp_path / "b")
    assert doc["verdict"] == "inconclusive"
    for a in doc["attempts"]:
        assert "sbatch refused" in a["error"] and "invalid partition" in a["error"], a
        assert "--partition=nosuch" in a["error"]


def test_gate_runs_its_experiments_through_slurm(cluster: Cluster, tmp_path: Path) -> None:
    done = csorch(cluster, "gate", str(E2E / "gate-cprog.yaml"), "--backend", "asan",
                  "--out", str(tmp_path / "g"), "--cache-dir", str(tmp_path / "cache"),
                  "--executor", "slurm", *FAST, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    doc = results(tmp_path / "g" / "c-oob")
    assert all(a["placement"]["node"] == NODE for a in doc["attempts"])


@pytest.mark.skipif(
    os.environ.get("CSORCH_SLURM_QEXT") != "1",
    reason="qext's three ASan builds take about 6 min on 2 cores, too long for CI beside "
    "test_run_asan's; CSORCH_SLURM_QEXT=1 runs the RNG experiment through Slurm",
)
def test_qext_rng_experiment_through_slurm(cluster: Cluster, tmp_path: Path) -> None:
    config = ROOT / "configs" / "nvfp4-rng-ownership.yaml"
    begun = time.monotonic()
    done = csorch(cluster, "run", str(config), "--backend", "asan", "--out",
                  str(tmp_path / "b"), "--cache-dir", str(tmp_path / "cache"), "--jobs", "2",
                  "--executor", "slurm", *FAST, cwd=tmp_path, timeout=1800)  # fmt: skip
    wall = time.monotonic() - begun
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-3000:]
    doc = results(tmp_path / "b")
    assert doc["verdict"] == "pass"
    assert all(a["placement"]["node"] == NODE for a in doc["attempts"])
    tasks = [f"{a['variant']}/{a['run']}/{a['case']}: {a['placement']['job_id']}"
             for a in doc["attempts"]]  # fmt: skip
    print(f"\nqext through slurm: verdict {doc['verdict']}, {wall:.0f} s, {'; '.join(tasks)}")


BISECT_CONFIG = f"""\
name: c-bisect
source: repo/sub
variants:
  - {{name: tree, build: {{kind: command, command: [make], outputs: [pick]}}}}
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


def test_bisect_probes_each_commit_through_slurm(cluster: Cluster, tmp_path: Path) -> None:
    """c0 fixed, c1 a note, c2 reads one past the end, c3 a note: each step is a job
    array, and the bisection names c2."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True,
                              text=True, check=True)  # fmt: skip
        return done.stdout.strip()

    def commit(subject: str) -> str:
        git("add", "-A")
        git("-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-qm", subject)
        return git("rev-parse", "HEAD")

    repo = tmp_path / "repo"
    shutil.copytree(E2E / "cprog", repo / "sub")
    git("init", "-q", "-b", "main")
    with open(E2E / "fix-oob.patch") as f:
        subprocess.run(["patch", "-s", "-p1", "-d", "sub"], cwd=repo, stdin=f, check=True)
    source = repo / "sub" / "pick.c"
    c = [commit("fixed")]
    (repo / "NOTES").write_text("c1\n")
    c.append(commit("notes"))
    source.write_text(source.read_text().replace("i < n", "i <= n"))
    c.append(commit("reads one past the end"))
    (repo / "NOTES").write_text("c3\n")
    c.append(commit("notes again"))
    (tmp_path / "c.yaml").write_text(BISECT_CONFIG)
    done = csorch(cluster, "bisect", str(tmp_path / "c.yaml"), "--good", c[0], "--bad", "main",
                  "--backend", "asan", "--out", str(tmp_path / "b"), "--cache-dir",
                  str(tmp_path / "cache"), "--executor", "slurm", *FAST,
                  cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert c[2] in done.stdout
    steps = json.loads((tmp_path / "b" / "bisect.json").read_text())["state"]["steps"]
    assert len(steps) >= 3  # both ends re-checked, then the middle
    for step in steps:
        doc = results(tmp_path / "b" / step["evaluation"]["bundle"])
        assert doc["attempts"] and all(a["placement"]["node"] == NODE for a in doc["attempts"]), (
            doc["attempts"]
        )


def units_config(tmp: Path) -> Path:
    """A C subject of four units, each compiled on its own (`cc -c`: what ccache caches;
    a compile-and-link in one command it leaves alone), run once by a plain case."""
    src = tmp / "units"
    src.mkdir(parents=True)
    objs = " ".join(f"u{i}.o" for i in range(4))
    (src / "Makefile").write_text(
        f"prog: {objs}\n\t$(CC) -o prog {objs}\n%.o: %.c\n\t$(CC) -g -O1 -c $< -o $@\n"
    )
    for i in range(4):
        body = f"int f{i}(void) {{ return {i}; }}\n"
        if i == 0:
            body += "int main(void) { return f0(); }\n"
        (src / f"u{i}.c").write_text(body)
    config = tmp / "units.yaml"
    config.write_text(
        f"""name: units
source: {src}
variants:
  - {{name: v, build: {{kind: command, command: [make], outputs: [prog]}}}}
runs:
  - {{name: plain, checker: none}}
cases:
  - {{name: runs, command: [./prog]}}
timeout: 2m
"""
    )
    return config


def test_two_login_hosts_share_a_compile_cache_through_redis(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The config's `slurm: compile_cache` (here --slurm compile_cache=...) names a real
    Redis server: two runs with build caches of their own (two login or CI hosts) pay
    each unit once; the second's build is all remote hits, and its attempts the same."""
    why = redis_server.missing()
    if why:
        if os.environ.get("CSORCH_REQUIRE_SLURM") == "1":
            pytest.fail(f"CSORCH_REQUIRE_SLURM=1 but {why}")
        pytest.skip(why)
    config = units_config(tmp_path)
    with redis_server.server(tmp_path / "redis") as port:
        runs = []
        for host in ("login1", "login2"):
            done = csorch(cluster, "run", str(config), "--backend", "asan",
                          "--cache-dir", str(tmp_path / host / "cache"),
                          "--out", str(tmp_path / host / "bundle"),
                          "--executor", "slurm", *FAST,
                          "--slurm", f"compile_cache=redis://127.0.0.1:{port}",
                          cwd=tmp_path)  # fmt: skip
            # no expectations: tabulated, not judged (inconclusive, exit 3)
            assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-3000:]
            runs.append(results(tmp_path / host / "bundle"))
        (first,), (second,) = (r["builds"] for r in runs)
        assert (first["compile_hits"], first["compile_misses"]) == (0, 4), first
        assert not second["cached"] and second["compile_misses"] == 0, second
        assert second["compile_hits"] == second["compile_remote_hits"] == 4, second
        assert all(a["placement"]["executor"] == "slurm" for r in runs for a in r["attempts"])
        assert outcome_view(runs[0]) == outcome_view(runs[1])
        assert redis_server.keys(port) >= 4
