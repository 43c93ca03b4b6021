"""Fault injection with real processes: csorch killed, interrupted, starved of disk; its
children killed, crashing, hanging, writing truncated or empty logs; its build cache
damaged or shared by two runs at once; its checker missing. Each must end inconclusive
(3), or refused with a clear one-line error (2), or resumable, and never PASS (0) or a
traceback. The subject is the cheap C program (tests/fixtures/e2e, ASan backend).

The kill sweep kills `csorch run` at seeded random moments of a run (uniform over the
span an uninterrupted run takes, measured here first), resumes it, and requires the
bundle to equal the uninterrupted run's apart from timings, addresses, pids and scratch
paths. CI runs CSORCH_KILL_POINTS=1 SIGKILL point plus one SIGTERM and one SIGINT
(8 to 25 s a point on 2 cores, by their load); the full sweep (22 points, 279 s here):
`CSORCH_KILL_POINTS=20 [CSORCH_KILL_SEED=N] pytest tests/e2e/test_faults.py -s -k sweep`.
Whole module in CI: 109 s on 2 cores (measured; up to ~4 min when they are busy).
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from orchestrator import backends, bundle, cache
from orchestrator.bundle import verify
from orchestrator.config.experiment import load_experiment
from orchestrator.errors import BundleError
from orchestrator.host import Facts
from orchestrator.model import Verdict
from orchestrator.run import journal, runner
from orchestrator.run.options import Options
from tests import procs

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "e2e"
CONFIG = FIXTURES / "c-oob.yaml"
REPEAT = "3"  # 2 variants x 2 runs x 3 repeats: 12 attempts to be killed among
SEED = int(os.environ.get("CSORCH_KILL_SEED", "20261201"))
POINTS = int(os.environ.get("CSORCH_KILL_POINTS", "1"))

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("gcc") is None, reason="the ASan backend needs gcc"),
]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **extra}


def csorch(*args: str, cwd: Path, env: dict | None = None, timeout: float = 300):
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env or _env(),
    )


def start(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(),
    )


def run_args(out: Path, cache_dir: Path) -> list[str]:
    return [
        "run", str(CONFIG), "--backend", "asan", "--out", str(out),
        "--cache-dir", str(cache_dir), "--repeat", REPEAT, "--jobs", "2",
    ]  # fmt: skip


def no_traceback(done) -> None:
    text = (done.stdout or "") + (done.stderr or "")
    assert "Traceback" not in text, text


# --- what two bundles must share ----------------------------------------------------

# timings; how a build was obtained (cached), not what it is; the pid a report names
TIMINGS = {"started", "finished", "duration", "cpu", "cached", "pid"}
_VOLATILE = [  # in this order: a scratch name may hold "0x1f"
    (re.compile(r"[^\s'\"(]*/csorch-work/run-[a-z0-9_]{8}"), "WORK"),  # a session's scratch
    (re.compile(r"CACHE/work/run-[a-z0-9_]{8}"), "WORK"),  # the same, beside the cache
    # a checker's per-process files are named for the process: logs/...checker.<pid>
    (re.compile(r"\.checker\.(started\.)?\d+"), r".checker.\1PID"),
    (re.compile(r"0x[0-9a-f]+"), "0x?"),  # ASLR
    (re.compile(r"==\d+=="), "==PID=="),
]


def _scrub(value, paths: dict[str, str]):
    if isinstance(value, dict):
        return {k: _scrub(v, paths) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [_scrub(v, paths) for v in value]
    if isinstance(value, str):
        for path, name in paths.items():
            value = value.replace(path, name)
        for pattern, repl in _VOLATILE:
            value = pattern.sub(repl, value)
    return value


def canonical(out: Path, cache_dir: Path, was: Path | None = None) -> dict:
    """A bundle as evidence: results, manifest and every log, less what differs between
    two identical runs (timings, addresses, pids, scratch and output paths; `was`: where
    a copied bundle was first written)."""
    paths = {str(out.resolve()): "OUT", str(cache_dir.resolve()): "CACHE"}
    if was is not None:
        paths[str(was.resolve())] = "OUT"
    results, manifest = bundle.read(out)
    # the journal (its digest under "files") holds the times of a session: it differs
    manifest = {k: v for k, v in manifest.items() if k not in ("logs", "results", "files")}
    logs = {
        _scrub(p.relative_to(out).as_posix(), paths): _scrub(p.read_text(errors="replace"), paths)
        for p in sorted((out / "logs").rglob("*"))
        if p.is_file()
    }
    return {
        "results": _scrub(results, paths),
        "manifest": _scrub(manifest, paths),
        "logs": logs,
    }


def differences(a, b, where: str = "") -> list[str]:
    """Where two canonical bundles differ (a readable failure instead of two dicts)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}/{k}: only in one" for k in sorted(set(a) ^ set(b))]
        for k in sorted(set(a) & set(b)):
            out += differences(a[k], b[k], f"{where}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        pairs = enumerate(zip(a, b, strict=True))
        return [d for i, (x, y) in pairs for d in differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {str(a)[:200]!r} != {str(b)[:200]!r}"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory):
    """An uninterrupted run: its canonical bundle, the span its work took (from the
    journal's first line to the end; the kill points are drawn from it), and its build
    cache, which the killed runs share: a rebuild of the C program differs in its debug
    paths, so only binaries from one cache can compare equal."""
    tmp = tmp_path_factory.mktemp("reference")
    out, cache_dir = tmp / "out", tmp / "cache"
    # warm the cache first, so that the span timed below is the attempts' (the killed
    # runs find their builds cached too); the points would fall after their end otherwise
    warm = csorch(*run_args(tmp / "warm", cache_dir), cwd=tmp)
    assert warm.returncode == 0, warm.stdout + warm.stderr
    proc = start(*run_args(out, cache_dir), cwd=tmp)
    while not (out / journal.JOURNAL).exists() and proc.poll() is None:
        time.sleep(0.01)
    began = time.monotonic()
    output, _ = proc.communicate(timeout=300)
    span = time.monotonic() - began
    assert proc.returncode == 0, output
    return canonical(out, cache_dir), span, cache_dir


def _complete(out: Path) -> bool:
    """Whether a run left a finished bundle (results.json says complete)."""
    try:
        results, _ = bundle.read(out)
    except (BundleError, OSError):
        return False
    return bool(results.get("complete"))


def _points() -> list[tuple[str, float]]:
    rng = random.Random(SEED)
    points = [("KILL", rng.random()) for _ in range(POINTS)]
    return points + [("TERM", rng.random()), ("INT", rng.random())]


@pytest.mark.parametrize("how,at", _points(), ids=[f"{h}-{a:.2f}" for h, a in _points()])
def test_kill_sweep_resume_equals_an_uninterrupted_run(
    tmp_path: Path, reference, how: str, at: float
) -> None:
    expected, span, cache_dir = reference
    out = tmp_path / "out"
    proc = start(*run_args(out, cache_dir), cwd=tmp_path)
    while not (out / journal.JOURNAL).exists():
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.01)
    time.sleep(at * span)
    ran_to_end = proc.poll() is not None
    proc.send_signal(getattr(signal, f"SIG{how}"))
    output, _ = proc.communicate(timeout=120)
    # a signal that lands while csorch is already exiting (its bundle written: exit 0,
    # or -15 once its handler is gone) ended nothing: a short warm run makes that window
    # wide enough to hit
    ran_to_end = ran_to_end or proc.returncode == 0 or _complete(out)
    if not ran_to_end and how != "KILL":
        assert proc.returncode == 3, output
        assert f"interrupted; resume with: csorch run --resume {out}" in output
    assert "Traceback" not in output, output
    before = journal.Journal.read(out)
    done = csorch("run", "--resume", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    no_traceback(done)
    after = journal.Journal.read(out)
    # only what was missing ran again: one new line per attempt not journaled before
    lines = after.path.read_text().splitlines()
    session = max(i for i, text in enumerate(lines) if '"kind":"session"' in text)
    rerun = sum('"kind":"attempt"' in text for text in lines[session:])
    kept = len(before.attempts)
    assert f"resuming: {kept} finished attempt(s) kept" in done.stderr + done.stdout
    assert rerun == 12 - kept
    # one line a point for docs/reliability.md (shown with -s)
    print(
        f"\nPOINT {how} at={at:.3f} span={span:.1f}s exit={proc.returncode} "
        f"finished_before_signal={ran_to_end} kept={kept} rerun={rerun} "
        f"torn_lines={before.dropped}"
    )
    checked = verify.verify(out)
    assert checked.ok, [c for c in checked.checks if c.status in verify.FAILING]
    assert differences(canonical(out, cache_dir), expected) == []


# --- tampering and refusals ---------------------------------------------------------


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("finished")
    out, cache_dir = tmp / "out", tmp / "cache"
    done = csorch(*run_args(out, cache_dir), cwd=tmp)
    assert done.returncode == 0, done.stdout + done.stderr
    return out, cache_dir


def test_a_tampered_log_or_journal_line_is_run_again(tmp_path: Path, finished) -> None:
    src, cache_dir = finished
    out = tmp_path / "out"
    shutil.copytree(src, out)
    expected = canonical(src, cache_dir)
    # the evidence is the checker's own file (its output log holds no report)
    (log,) = (out / "logs" / "control" / "memcheck" / "sum").glob("r1.launch0.checker.[0-9]*")
    assert "heap-buffer-overflow" in log.read_text()
    log.write_text(log.read_text().replace("heap-buffer-overflow", "all is well"))
    lines = (out / journal.JOURNAL).read_text().splitlines()
    fixed_line = next(i for i, t in enumerate(lines) if '"variant":"fixed"' in t and "attempt" in t)
    lines[fixed_line] = lines[fixed_line].replace('"returncode":0', '"returncode":1')
    (out / journal.JOURNAL).write_text("\n".join(lines) + "\n")
    done = csorch("run", "--resume", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resuming: 10 finished attempt(s) kept" in done.stderr + done.stdout
    said = done.stderr + done.stdout
    assert "2 journaled record(s) not trusted (changed, torn or incomplete) run again" in said
    assert differences(canonical(out, cache_dir, was=src), expected) == []
    assert verify.verify(out).ok


def test_a_write_a_sigkill_cut_short_is_cleared_on_resume(tmp_path: Path, finished) -> None:
    """A SIGKILL between an atomic write's open and its rename leaves the temporary file:
    verify calls it unlisted, and the resume removes it (a file of the user's own with a
    like name but not the temporary's form is left to verify)."""
    src, cache_dir = finished
    out = tmp_path / "out"
    shutil.copytree(src, out)
    partial = out / ".results.json.4242-0badc0de.tmp"
    partial.write_text('{"schema": "csorch-results/1", "verdict": "PA')
    assert not verify.verify(out).ok  # before: the leftover is an unlisted file
    done = csorch("run", "--resume", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not partial.exists()
    checked = verify.verify(out)
    assert checked.ok, [c for c in checked.checks if c.status in verify.FAILING]
    assert differences(canonical(out, cache_dir, was=src), canonical(src, cache_dir)) == []


def test_a_resume_of_another_run_is_refused(tmp_path: Path, finished, facts: Facts) -> None:
    src, cache_dir = finished
    out = tmp_path / "out"
    shutil.copytree(src, out)
    before = (out / journal.JOURNAL).read_text()
    options = Options(
        backend="asan", out=out, cache=cache_dir, work=tmp_path / "w", repeat=2, resume=True
    )
    with pytest.raises(journal.ResumeError) as caught:
        runner.run_experiment(load_experiment(CONFIG), options, facts)
    assert f"{out.resolve()} holds another run (experiment " in caught.value.message
    assert (out / journal.JOURNAL).read_text() == before  # nothing was touched
    # through the command line: a clear line, exit 2, and the way to continue
    nothing = csorch("run", "--resume", str(tmp_path / "absent"), cwd=tmp_path)
    assert nothing.returncode == 2 and "holds no run to resume" in nothing.stderr
    no_traceback(nothing)
    again = csorch(*run_args(out, cache_dir), cwd=tmp_path)
    assert again.returncode == 2 and f"csorch run --resume {out}" in again.stderr


def test_a_changed_source_is_refused(tmp_path: Path, facts: Facts) -> None:
    shutil.copytree(FIXTURES, tmp_path / "fx")
    config = tmp_path / "fx" / "c-oob.yaml"

    def run(resume: bool) -> runner.RunResult:
        options = Options(
            backend="asan", out=tmp_path / "out", cache=tmp_path / "cache",
            work=tmp_path / "w", resume=resume,
        )  # fmt: skip
        return runner.run_experiment(load_experiment(config), options, facts)

    assert run(False).judgement.verdict is Verdict.PASS
    pick = tmp_path / "fx" / "cprog" / "pick.c"
    pick.write_text(pick.read_text() + "\n/* edited after the run began */\n")
    with pytest.raises(journal.ResumeError) as caught:
        run(True)
    assert "its source tree or patches changed since the run began" in caught.value.message


def test_gate_resume(tmp_path: Path) -> None:
    out, cache_dir = tmp_path / "gate", tmp_path / "cache"
    args = ["gate", str(FIXTURES / "gate-cprog.yaml"), "--backend", "asan"]
    proc = start(*args, "--out", str(out), "--cache-dir", str(cache_dir), cwd=tmp_path)
    log = out / "c-oob" / journal.JOURNAL
    while not log.exists() or log.read_text().count("\n") < 4:
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 3, output
    assert f"interrupted; resume with: csorch gate --resume {out}" in output
    assert not (out / "gate.json").exists()
    done = csorch("gate", "--resume", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((out / "gate.json").read_text())["verdict"] == "pass"
    assert verify.verify(out / "c-oob").ok


# --- faults in the children: in-process runs (real children, no CLI start-up) -------

FAULTY = """
name: faulty
source: {source}
variants:
  - name: fixed
    patches: [{patch}]
    build: {{kind: command, command: [make], outputs: [pick]}}
  - name: control
    build: {{kind: command, command: [make], outputs: [pick]}}
runs:
  - name: memcheck
    checker: memcheck
cases:
  - {{name: sum, command: {command}}}
timeout: 4s
expect:
  controls: [control]
  fix: fixed
  target: {{checker: asan, kind: heap-buffer-overflow, access: read, function: sum}}
"""

# Each wraps the planted defect's program, so the case is the target's: without the
# fault the control would show the target and the verdict be PASS. The checker's evidence
# is the runtime's own file per process (`log_path`), not the program's output, so a
# pipe or a redirection of the output no longer damages it (tests/hostile/
# test_channels.py): the faults act on that file, or on the options that name it.
FAULTS = {
    # the checker's report cut short (its own file, after the program wrote it), or
    # nothing at all (the runtime told to write nowhere csorch looks)
    # (pick's file, cut after it exited; the shell's own is written at its exit, later)
    "truncated-log": (
        "[sh, -c, './pick; p=${ASAN_OPTIONS##*log_path=}; "
        "for f in $p.[0-9]*; do head -c 150 $f > $f.cut; mv $f.cut $f; done']"
    ),
    # (unsetting ASAN_OPTIONS no longer does it: the shim gives the runtime csorch's
    # options as its defaults; a log_path of the program's own still writes elsewhere)
    "empty-log": '[env, ASAN_OPTIONS=log_path=stderr, sh, -c, "./pick > /dev/null 2>&1"]',
    # ASan lives in the process it watches: the checker dies with it, mid-run
    "checker-crashes": '[sh, -c, "./pick; kill -KILL $$"]',
    "checker-hangs": '[sh, -c, "./pick; exec sleep 60"]',
    # found by its argv (a sandboxed case writes no pid file outside its scratch)
    "child-killed": '[sh, -c, "./pick; exec sleep SECONDS"]',
}


WHY = {
    "truncated-log": "left no exit record",
    "empty-log": "left no log",
    "child-killed": "killed by signal 9",
}


@pytest.fixture(scope="module")
def facts() -> Facts:
    from orchestrator import host

    return host.start(sys.executable, backends.probe_checkers)


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_faulty_child_is_inconclusive(tmp_path: Path, facts: Facts, fault: str) -> None:
    seconds = procs.token()
    command = FAULTS[fault].replace("SECONDS", seconds)
    config = tmp_path / "faulty.yaml"
    config.write_text(
        FAULTY.format(source=FIXTURES / "cprog", patch=FIXTURES / "fix-oob.patch", command=command)
    )
    killer = None
    if fault == "child-killed":

        def kill_when_started() -> None:
            for _ in range(1200):
                for pid in procs.with_argv("sleep", seconds):
                    os.kill(pid, signal.SIGKILL)
                    return
                time.sleep(0.05)

        killer = threading.Thread(target=kill_when_started)
        killer.start()
    options = Options(
        backend="asan", out=tmp_path / "out", cache=tmp_path / "cache",
        work=tmp_path / "work", jobs=1,
    )  # fmt: skip
    result = runner.run_experiment(load_experiment(config), options, facts)
    if killer is not None:
        killer.join()
    assert result.judgement.verdict is Verdict.INCONCLUSIVE, result.judgement.reasons
    assert any(not a.conclusive for a in result.attempts), result.attempts
    if fault in WHY:  # inconclusive for the fault's own reason, not another one
        reasons = [a.inconclusive_reason for a in result.attempts if not a.conclusive]
        assert any(WHY[fault] in r for r in reasons), reasons
    assert verify.verify(result.bundle).ok


def test_faults_through_the_cli_exit_3_without_a_traceback(tmp_path: Path) -> None:
    config = tmp_path / "faulty.yaml"
    config.write_text(
        FAULTY.format(
            source=FIXTURES / "cprog", patch=FIXTURES / "fix-oob.patch",
            command=FAULTS["truncated-log"],
        )
    )  # fmt: skip
    done = csorch(
        "run", str(config), "--backend", "asan", "--out", str(tmp_path / "out"),
        "--cache-dir", str(tmp_path / "cache"), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    no_traceback(done)
    assert "INCONCLUSIVE" in done.stdout


# --- the build cache ----------------------------------------------------------------


def _only_entry(cache_dir: Path, variant: str, out: Path) -> Path:
    results, _ = bundle.read(out)
    key = next(b["cache_key"] for b in results["builds"] if b["variant"] == variant)
    return cache_dir / "entries" / key


@pytest.mark.parametrize("damage", ["half-written", "torn-metadata", "binary-changed"])
def test_a_damaged_cache_entry_is_rebuilt(tmp_path: Path, facts: Facts, damage: str) -> None:
    def run(name: str) -> runner.RunResult:
        options = Options(
            backend="asan", out=tmp_path / name, cache=tmp_path / "cache",
            work=tmp_path / "work", jobs=1,
        )  # fmt: skip
        return runner.run_experiment(load_experiment(CONFIG), options, facts)

    first = run("first")
    entry = _only_entry(tmp_path / "cache", "control", first.bundle)
    if damage == "half-written":  # the metadata is written last: no metadata, no entry
        (entry / cache.META).unlink()
    elif damage == "torn-metadata":
        meta = entry / cache.META
        meta.write_text(meta.read_text()[:40])
    else:
        pick = entry / "tree" / "pick"
        pick.write_bytes(pick.read_bytes() + b"\0")
    second = run("second")
    builds = {b.variant: b for b in second.builds}
    assert builds["control"].ok and not builds["control"].cached
    assert builds["fixed"].cached
    assert second.judgement.verdict is Verdict.PASS
    recorded = {a.path: a.sha256 for a in builds["control"].artifacts}
    from orchestrator.files import file_digest

    assert file_digest(entry / "tree" / "pick") == recorded["tree/pick"]


def test_two_runs_share_one_cold_cache(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    procs = [start(*run_args(tmp_path / f"out{i}", cache_dir), cwd=tmp_path) for i in (1, 2)]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    built = []
    for i in (1, 2):
        results, _ = bundle.read(tmp_path / f"out{i}")
        built += [(b["variant"], b["cached"]) for b in results["builds"]]
        assert verify.verify(tmp_path / f"out{i}").ok
    # each variant built once, by whichever run took its lock first
    assert sorted(built) == [
        ("control", False), ("control", True), ("fixed", False), ("fixed", True)
    ]  # fmt: skip
    entries = list((cache_dir / "entries").iterdir())
    assert len(entries) == 2 and not list((cache_dir / "tmp").iterdir())
    for entry in entries:  # no torn entry: the metadata and every binary agree
        meta = json.loads((entry / cache.META).read_text())
        from orchestrator.files import file_digest

        for art in meta["build"]["artifacts"]:
            assert file_digest(entry / art["path"]) == art["sha256"]


# --- the disk and the checker ---------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 2 MiB tmpfs (root and a container that allows mounts), else skip: a bundle of the
    C program (each attempt's output log, checker files and markers, a page each) fits."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"this machine refuses a tmpfs mount: {made.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_inconclusive_and_resumable(tmp_path: Path, small_disk: Path) -> None:
    (small_disk / "filler").write_bytes(b"\0" * ((2048 - 48) << 10))  # leave ~48 KiB
    out = small_disk / "out"
    done = csorch(*run_args(out, tmp_path / "cache"), cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    no_traceback(done)
    assert "No space left on device" in done.stderr
    assert f"resume with: csorch run --resume {out}" in done.stderr
    (small_disk / "filler").unlink()
    again = csorch("run", "--resume", str(out), cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert verify.verify(out).ok


def test_a_missing_asan_runtime_is_a_clear_usage_error(tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    gcc = fake / "gcc"
    gcc.write_text("#!/bin/sh\necho libasan.so\n")  # what gcc prints when it has none
    gcc.chmod(0o755)
    env = _env(PATH=f"{fake}{os.pathsep}{os.environ['PATH']}")
    done = csorch("run", str(CONFIG), "--backend", "asan", "--out", str(tmp_path / "o"),
                  cwd=tmp_path, env=env)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    no_traceback(done)
    assert "checker asan is unavailable" in done.stderr


@pytest.mark.skipif(
    Path("/usr/local/cuda/bin/compute-sanitizer").exists(),
    reason="the real compute-sanitizer in /usr/local/cuda/bin is found past the fake one on "
    "PATH (the GPU machine)",
)
def test_a_non_executable_compute_sanitizer_is_a_clear_usage_error(tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    tool = fake / "compute-sanitizer"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o644)  # present, not executable
    env = _env(PATH=f"{fake}{os.pathsep}{os.environ['PATH']}")
    done = csorch("run", str(CONFIG), "--backend", "compute-sanitizer", "--out",
                  str(tmp_path / "o"), cwd=tmp_path, env=env)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    no_traceback(done)
    assert "checker compute-sanitizer is unavailable" in done.stderr


def test_children_of_a_killed_csorch_are_stopped_on_resume(tmp_path: Path) -> None:
    """A SIGKILL of csorch orphans its case process (each sits in its own session and
    sandbox); the resume finds it by the session tag in its environment and stops it
    before running. The case is found by its argv (a sandboxed case writes no pid file
    outside its scratch); the mark that makes the resumed case pass is the test's."""
    seconds, mark = procs.token(), tmp_path / "mark"
    sleeper = f'[sh, -c, "[ -e {mark} ] && exec ./pick; exec sleep {seconds}"]'
    config = tmp_path / "orphan.yaml"
    config.write_text(
        FAULTY.format(source=FIXTURES / "cprog", patch=FIXTURES / "fix-oob.patch",
                      command=sleeper).replace("timeout: 4s", "timeout: 5m")
    )  # fmt: skip
    out = tmp_path / "out"
    proc = start("run", str(config), "--backend", "asan", "--out", str(out), "--jobs", "1",
                 "--cache-dir", str(tmp_path / "cache"), cwd=tmp_path)  # fmt: skip
    orphan = procs.wait_for("sleep", seconds, alive=lambda: proc.poll() is None)
    proc.kill()
    proc.communicate(timeout=60)
    os.kill(orphan, 0)  # still running: nobody stopped it
    mark.touch()
    done = csorch("run", "--resume", str(out), cwd=tmp_path)
    no_traceback(done)
    assert done.returncode == 0, done.stdout + done.stderr
    assert procs.gone(orphan)
