"""execute: real child pytest processes on a tiny suite: outcomes from the markers, a
crash and a lost CUDA context continued in a fresh process, a timeout, a build shadowed
by another copy of its package, command cases, and an ASan-wrapped run."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.backends import Asan
from orchestrator.backends.compute_sanitizer.backend import ComputeSanitizer
from orchestrator.errors import CheckerUnavailable
from orchestrator.executors import execute
from orchestrator.model import (
    Build,
    BuildKind,
    BuildSpec,
    Case,
    CaseKind,
    Checker,
    Experiment,
    Outcome,
    Run,
    SourceKind,
    SourceSpec,
    Suppression,
    Variant,
)
from orchestrator.model.job import Job

pytestmark = pytest.mark.process  # builds, runs a checker, git or a child process

SUITE = """\
import os, sys, time
import subjmod

def test_pass():
    assert subjmod.WHERE == "build"

def test_fail():
    assert False, "planted"

def test_skip():
    import pytest
    pytest.skip("not here")

def test_crash():
    if os.environ.get("CRASH"):
        os._exit(7)

def test_cuda():
    if os.environ.get("LOSE_CONTEXT"):
        print("RuntimeError: CUDA error: unspecified launch failure", file=sys.stderr)
        raise RuntimeError("CUDA error: unspecified launch failure")

def test_sleep():
    if os.environ.get("SLEEP"):
        time.sleep(60)

def test_zlast():
    pass
"""


GPU_LINE = "[csorch-device] GPU-aaaa pci=0000:19:00.0 index=0 name=NVIDIA H200"


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    d = tmp_path / "suite"
    d.mkdir()
    (d / "test_suite.py").write_text(SUITE)
    return d / "test_suite.py"


@pytest.fixture
def built(tmp_path: Path) -> Build:
    pkg = tmp_path / "entry" / "pkg"
    (pkg / "subjmod").mkdir(parents=True)
    (pkg / "subjmod" / "__init__.py").write_text('WHERE = "build"\n')
    (pkg / "subjmod-1.0.dist-info").mkdir()
    tree = tmp_path / "entry" / "tree"
    tree.mkdir()
    (tree / "prog.py").write_text("import sys; print('ran'); sys.exit(int(sys.argv[1]))\n")
    return Build(
        "v", BuildKind.JIT, ok=True, directory=tmp_path / "entry", import_path=pkg, workdir=tree
    )


def context(
    tmp_path: Path,
    suite: Path,
    *,
    timeout: float = 120,
    env=(),
    args=(),
    backend: str = "asan",
    checker=None,
    gpu_uuids=(),
) -> execute.Context:
    experiment = Experiment(
        name="e",
        source=SourceSpec(SourceKind.PATH, str(tmp_path)),
        variants=(Variant("v", BuildSpec(BuildKind.JIT)),),
        runs=(
            Run("plain", Checker.NONE, env=tuple(env), timeout=timeout),
            Run("memcheck", Checker.MEMCHECK),
        ),
        cases=(
            Case("suite", CaseKind.PYTEST, (str(suite),), args=tuple(args)),
            Case("ok", CaseKind.COMMAND, command=(sys.executable, "prog.py", "0")),
            Case("bad", CaseKind.COMMAND, command=(sys.executable, "prog.py", "3")),
            # a program that names its GPU the way the pytest plugin does
            Case("gpu", CaseKind.COMMAND, command=(sys.executable, "-c", f"print({GPU_LINE!r})")),
        ),
    )
    (tmp_path / "bundle" / "logs").mkdir(parents=True, exist_ok=True)
    return execute.Context(
        experiment,
        backend,
        checker or Asan("/nonexistent/libasan.so"),
        sys.executable,
        tmp_path / "bundle",
        tmp_path / "cwd",
        gpu_uuids=tuple(gpu_uuids),
    )


def outcomes(attempt) -> dict[str, Outcome]:
    return {n.nodeid.rsplit("::", 1)[-1]: n.outcome for n in attempt.nodes}


def test_outcomes_come_from_the_markers(tmp_path: Path, suite: Path, built: Build) -> None:
    a = execute.execute(Job("v", "plain", "suite", 0), built, context(tmp_path, suite))
    assert a.conclusive and len(a.launches) == 1 and a.launches[0].ended == ""
    assert outcomes(a) == {
        "test_pass": Outcome.PASSED,
        "test_fail": Outcome.FAILED,
        "test_skip": Outcome.SKIPPED,
        "test_crash": Outcome.PASSED,
        "test_cuda": Outcome.PASSED,
        "test_sleep": Outcome.PASSED,
        "test_zlast": Outcome.PASSED,
    }
    assert a.outcome is Outcome.FAILED and a.checker is Checker.NONE
    env = dict(a.env)
    assert env["PYTHONPATH"].startswith(str(built.import_path))
    assert env["CSORCH_PACKAGES"] == "subjmod"
    assert a.log == Path("logs/v/plain/suite/r0.log")
    assert (tmp_path / "bundle" / a.log).exists()


def test_clock_marks_place_a_launchs_phases(tmp_path: Path, suite: Path, built: Build):
    from orchestrator.markers import reader as nodes

    a = execute.execute(Job("v", "plain", "suite", 0), built, context(tmp_path, suite))
    launch = a.launches[0]
    lines = (tmp_path / "bundle" / launch.log).read_text().splitlines()
    p = nodes.phases(lines, launch.started, launch.duration)
    assert launch.started > 0 and None not in (p.startup, p.interpreter, p.collection, p.exit)
    assert len(p.other_cases) == 6  # seven cases ran
    phases = (p.startup, p.interpreter, p.collection, p.cases, p.exit)
    # the phases lie inside the launch, in order (10 ms process-start ticks); how much
    # of it they cover depends on the machine's load, so no bound on the rest (on a
    # loaded H200 host 1 s of a 3.8 s launch fell between collection and the first case)
    assert all(x >= -0.02 for x in phases)
    assert sum(phases) <= launch.duration + 0.02


def test_a_crash_continues_in_a_fresh_process(tmp_path: Path, suite: Path, built: Build):
    a = execute.execute(
        Job("v", "plain", "suite", 0), built, context(tmp_path, suite, env=[("CRASH", "1")])
    )
    assert [launch.ended for launch in a.launches] == ["died", ""]
    assert a.launches[1].skipped == 4  # pass, fail, skip and the crashed case
    got = outcomes(a)
    assert got["test_crash"] is Outcome.ERROR and got["test_zlast"] is Outcome.PASSED
    assert len(got) == 7 and a.outcome is Outcome.ERROR
    crashed = next(n for n in a.nodes if n.nodeid.endswith("test_crash"))
    assert "died" in crashed.detail


def test_a_crash_in_the_last_case_starts_no_empty_process(
    tmp_path: Path, suite: Path, built: Build
):
    # as memcheck on the H200 does to every RNG control case: each one kills its process;
    # after the last, a fresh process would run nothing (compute-sanitizer then fails it
    # for never reaching CUDA, and the attempt became inconclusive)
    ctx = context(tmp_path, suite, env=[("CRASH", "1")], args=["-k", "crash"])
    a = execute.execute(Job("v", "plain", "suite", 0), built, ctx)
    assert [launch.ended for launch in a.launches] == ["died"]
    assert outcomes(a) == {"test_crash": Outcome.ERROR}
    assert a.error == "" and a.outcome is Outcome.ERROR


def test_cases_after_a_lost_context_run_again(tmp_path: Path, suite: Path, built: Build):
    a = execute.execute(
        Job("v", "plain", "suite", 0), built, context(tmp_path, suite, env=[("LOSE_CONTEXT", "1")])
    )
    assert [launch.ended for launch in a.launches] == ["context lost", ""]
    got = outcomes(a)
    assert got["test_cuda"] is Outcome.FAILED and got["test_zlast"] is Outcome.PASSED
    assert [n.nodeid.rsplit("::")[-1] for n in a.nodes].count("test_sleep") == 1


def test_a_timeout_kills_the_attempt(tmp_path: Path, suite: Path, built: Build) -> None:
    a = execute.execute(
        Job("v", "plain", "suite", 0),
        built,
        context(tmp_path, suite, env=[("SLEEP", "1")], timeout=3),
    )
    assert a.timed_out and not a.conclusive and a.inconclusive_reason == "timed out"
    assert a.duration < 30


def test_a_shadowed_build_is_an_error(tmp_path: Path, suite: Path, built: Build) -> None:
    (suite.parent / "subjmod").mkdir()
    (suite.parent / "subjmod" / "__init__.py").write_text('WHERE = "dev tree"\n')
    a = execute.execute(Job("v", "plain", "suite", 0), built, context(tmp_path, suite))
    assert not a.conclusive and "subjmod comes from" in a.error
    assert str(suite.parent / "subjmod") in a.error and a.nodes == ()


def test_no_tests_is_an_error(tmp_path: Path, suite: Path, built: Build) -> None:
    a = execute.execute(
        Job("v", "plain", "suite", 0),
        built,
        context(tmp_path, suite, args=["-k", "nothing_matches"]),
    )
    assert "pytest ran no case (no tests were collected)" in a.error and not a.conclusive


def test_command_cases_run_in_the_built_tree(tmp_path: Path, suite: Path, built: Build) -> None:
    ctx = context(tmp_path, suite)
    ok = execute.execute(Job("v", "plain", "ok", 0), built, ctx)
    bad = execute.execute(Job("v", "plain", "bad", 0), built, ctx)
    assert (ok.outcome, bad.outcome) == (Outcome.PASSED, Outcome.FAILED)
    assert ok.launches[0].cwd == str(built.workdir) and ok.nodes[0].nodeid == "ok"
    assert "ran" in (tmp_path / "bundle" / ok.log).read_text()


def test_an_attempt_records_the_gpu_it_used_and_checks_its_rank(
    tmp_path: Path, suite: Path, built: Build
) -> None:
    ok = execute.execute(
        Job("v", "plain", "gpu", 0, device="1", rank=1),
        built,
        context(tmp_path, suite, gpu_uuids=["GPU-0000", "GPU-aaaa"]),
    )
    assert ok.gpu == "GPU-aaaa" and ok.conclusive
    by_uuid = execute.execute(
        Job("v", "plain", "gpu", 0, device="GPU-aaaa", rank=0),
        built,
        context(tmp_path, suite),
    )
    assert by_uuid.conclusive
    elsewhere = execute.execute(
        Job("v", "plain", "gpu", 0, device="0", rank=0),
        built,
        context(tmp_path, suite, gpu_uuids=["GPU-0000", "GPU-aaaa"]),
    )
    assert elsewhere.inconclusive_reason == "given GPU 0 (GPU-0000), the cases ran on GPU-aaaa"
    # without the host's UUIDs (csorch itself under CUDA_VISIBLE_DEVICES) nothing can tell
    unknown = execute.execute(
        Job("v", "plain", "gpu", 0, device="0", rank=0), built, context(tmp_path, suite)
    )
    assert unknown.conclusive and unknown.gpu == "GPU-aaaa"


def test_an_asan_run_is_wrapped_and_parsed(tmp_path: Path, suite: Path, built: Build) -> None:
    try:
        asan = Asan()
        asan.probe()
    except CheckerUnavailable as exc:
        pytest.skip(str(exc))
    ctx = context(tmp_path, suite, checker=asan)
    a = execute.execute(Job("v", "memcheck", "ok", 0), built, ctx)
    assert a.checker is Checker.ASAN and a.conclusive and a.findings == ()
    assert "LD_PRELOAD" in dict(a.env) and a.parse.complete
    # an instrumented build also needs the runtime in a plain run; nothing is parsed there
    plain = execute.execute(
        Job("v", "plain", "ok", 0), dataclasses.replace(built, sanitizer="address"), ctx
    )
    assert "LD_PRELOAD" in dict(plain.env) and plain.checker is Checker.NONE and plain.conclusive


def _flood_context(tmp_path: Path, asan: Asan, memcheck_env=()) -> execute.Context:
    """case_flood.py over src/flood.c built with ASan: 3000 bad reads in each of two cases,
    none in the case between them."""
    lib = tmp_path / "libflood.so"
    src = Path(__file__).resolve().parents[2] / "fixtures" / "asan" / "src"
    cc = ["gcc", *asan.build_flags().cflags, "-shared", "-fPIC", str(src / "flood.c")]
    subprocess.run([*cc, "-o", str(lib)], check=True)
    env = (("CSORCH_FIXTURE_LIB", str(lib)), ("FLOOD_N", "3000"))
    ctx = context(tmp_path, src / "case_flood.py", env=env, checker=asan)
    memcheck = Run("memcheck", Checker.MEMCHECK, env=(*env, *memcheck_env))
    experiment = dataclasses.replace(ctx.experiment, runs=(*ctx.experiment.runs[:1], memcheck))
    return dataclasses.replace(ctx, experiment=experiment, asan_fold=asan.fold)


def _asan() -> Asan:
    try:
        asan = Asan()
        asan.probe()
    except CheckerUnavailable as exc:
        pytest.skip(str(exc))
    return asan


def test_a_report_flood_is_counted_not_printed(tmp_path: Path, built: Build) -> None:
    """Issue #14: a use-after-free in a loop printed every read (minutes, ~88 MB of log for
    2 x 5000). With the fold shim each flooding case prints its first report and counts
    the rest, in one process: the true count per case, a log of kilobytes; the plain run
    too. About 3 s: two gcc, 2 processes."""
    asan = _asan()
    asan.build_fold(tmp_path / "fold")
    ctx = _flood_context(tmp_path, asan)
    instrumented = dataclasses.replace(built, sanitizer="address")
    a = execute.execute(Job("v", "memcheck", "suite", 0), instrumented, ctx)
    assert a.conclusive and len(a.launches) == 1
    per_case = {f.case.rsplit("::", 1)[-1]: (f.kind, f.count) for f in a.findings}
    assert per_case == {
        "test_flood_first": ("heap-use-after-free", 3000),
        "test_flood_again": ("heap-use-after-free", 3000),
    }
    assert a.parse.summary_count == a.parse.records == 6000 and len(a.findings) == 2
    assert set(outcomes(a).values()) == {Outcome.PASSED}  # recover mode: it goes on
    assert (tmp_path / "bundle" / a.log).stat().st_size < 100_000  # not 6000 x ~9 KB
    plain = execute.execute(Job("v", "plain", "suite", 0), instrumented, ctx)
    assert len(plain.launches) == 1 and set(outcomes(plain).values()) == {Outcome.PASSED}
    plain_log = (tmp_path / "bundle" / plain.log).read_text()
    assert plain_log.count("ERROR: AddressSanitizer") == 2  # one per case, each counted
    assert plain_log.count("csorch-asan-fold: 2999 more READ of size 8") == 2


def test_a_report_flood_halts_each_case_at_its_first_report(tmp_path: Path, built: Build):
    """A run that sets `ASAN_OPTIONS: halt_on_error=1` stops each case at its first report
    and continues the rest in a fresh process (later reads not counted), shim or not.
    About 5 s: one gcc, 3 processes."""
    asan = _asan()
    ctx = _flood_context(tmp_path, asan, (("ASAN_OPTIONS", "halt_on_error=1"),))
    instrumented = dataclasses.replace(built, sanitizer="address")
    a = execute.execute(Job("v", "memcheck", "suite", 0), instrumented, ctx)
    assert a.conclusive and len(a.launches) == 2  # the last case's halt needs no third
    assert [f.case.rsplit("::", 1)[-1] for f in a.findings] == [
        "test_flood_first",
        "test_flood_again",
    ]
    assert {f.kind for f in a.findings} == {"heap-use-after-free"}
    assert outcomes(a) == {
        "test_flood_first": Outcome.ERROR,  # the process ended inside it
        "test_clean": Outcome.PASSED,
        "test_flood_again": Outcome.ERROR,
    }
    assert all("halted at the first" in line for line in a.parse.summary_lines)
    logs = [tmp_path / "bundle" / launch.log for launch in a.launches]
    assert sum(log.stat().st_size for log in logs) < 100_000  # not 3000 reports of ~9 KB


def test_packages_lists_what_must_come_from_the_build(tmp_path: Path) -> None:
    for name in (
        "pkg/__init__.py",
        "mod.py",
        "_ext.cpython-311-x86_64-linux-gnu.so",
        "x-1.0.dist-info/RECORD",
        "bin/tool",
        "data/readme",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert execute.packages(tmp_path) == ("_ext", "mod", "pkg")


FAKE_TOOL = """#!{python}
# stands in for compute-sanitizer on a host without a GPU: prints the tool's records
# around the real child it runs (argv after --tool T --print-limit N)
import subprocess, sys
args = sys.argv[1:]
argv = args[args.index("--print-limit") + 2:]
print("========= COMPUTE-SANITIZER", flush=True)
code = subprocess.call(argv)
print('========= Program hit cudaErrorInvalidValue (error 1) due to "invalid argument" on '
      'CUDA API call to cudaFree.')
print("=========")
print("========= Program hit cudaErrorMemoryAllocation (error 2) due to \\"out of memory\\" on "
      "CUDA API call to cudaMalloc.")
print("=========")
print("========= ERROR SUMMARY: 2 errors", flush=True)
sys.exit(code)
"""


def test_a_runs_suppressions_mark_its_findings_and_drop_none(
    tmp_path: Path, suite: Path, built: Build
) -> None:
    tool = tmp_path / "compute-sanitizer"
    tool.write_text(FAKE_TOOL.replace("{python}", sys.executable))
    tool.chmod(0o755)
    ctx = context(tmp_path, suite, backend="compute-sanitizer", checker=ComputeSanitizer(tool))
    supp = Suppression("supp.xml#1", "Api", (("api", "cudaFree"), ("result", "1")))
    runs = tuple(
        dataclasses.replace(r, suppressions=(supp,)) if r.name == "memcheck" else r
        for r in ctx.experiment.runs
    )
    ctx = dataclasses.replace(ctx, experiment=dataclasses.replace(ctx.experiment, runs=runs))
    a = execute.execute(Job("v", "memcheck", "ok", 0), built, ctx)
    assert a.conclusive, a.inconclusive_reason
    assert [(f.code, f.suppressed) for f in a.findings] == [
        ("cudaErrorInvalidValue", "supp.xml#1"),
        ("cudaErrorMemoryAllocation", ""),
    ]
    assert a.parse.summary_count == len(a.findings) == 2  # nothing was dropped


def test_the_project_s_environment_runs_the_cases(tmp_path: Path, built: Build) -> None:
    """The build's python runs the case, its test requirements come second on the path,
    and under cases_from: variant the case's path is in the variant's tree."""
    wrapper = tmp_path / "venv" / "bin" / "python"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text(f'#!/bin/sh\necho "$0" > {tmp_path}/ran-by\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    deps = tmp_path / "entry" / "deps"
    (deps / "reqmod").mkdir(parents=True)
    (deps / "reqmod" / "__init__.py").write_text("OK = True\n")
    tree = tmp_path / "checkout"
    (tree / "test").mkdir(parents=True)
    (tree / "test" / "test_ref.py").write_text(
        "import reqmod, subjmod\n\ndef test_ref():\n    assert reqmod.OK\n"
    )
    ctx = context(tmp_path, tmp_path / "unused.py")
    case = Case("suite", CaseKind.PYTEST, ("test/test_ref.py",))
    ctx = dataclasses.replace(ctx, experiment=dataclasses.replace(ctx.experiment, cases=(case,)))
    mine = dataclasses.replace(built, python=str(wrapper), requirements_path=deps, cases_root=tree)
    a = execute.execute(Job("v", "plain", "suite", 0), mine, ctx)
    assert outcomes(a) == {"test_ref": Outcome.PASSED}, a.error
    assert [n.nodeid for n in a.nodes] == ["test/test_ref.py::test_ref"]  # as in every variant
    assert a.argv[0] == str(wrapper) and a.argv[3] == str(tree / "test" / "test_ref.py")
    assert (tmp_path / "ran-by").read_text().strip() == str(wrapper)
    path = dict(a.env)["PYTHONPATH"].split(":")
    assert path[:2] == [str(built.import_path), str(deps)]
