"""execute: real child pytest processes on a tiny suite: outcomes from the markers, a
crash and a lost CUDA context continued in a fresh process, a timeout, a build shadowed
by another copy of its package, command cases, and an ASan-wrapped run."""

from __future__ import annotations

import dataclasses
import os
import shutil
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

ROOT = Path(__file__).resolve().parents[3]
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
    # pytest's own reason rides on the failing case's marker (issue 22 item 5)
    failed = next(n for n in a.nodes if n.nodeid.endswith("test_fail"))
    assert "AssertionError: planted" in failed.detail
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
    assert "--import-mode=importlib" in a.error  # the way out, where the tests' tree is it


def test_a_projects_pythonpath_setting_that_shadows_the_build_names_the_way_out(
    tmp_path: Path, built: Build
) -> None:
    """A project whose pytest configuration puts its source tree on sys.path (`pythonpath`
    in pyproject.toml, as megablocks does): the case stops naming the setting; with `-o
    pythonpath=` in its args the same tests run against the build."""
    project = tmp_path / "project"
    (project / "src" / "subjmod").mkdir(parents=True)
    (project / "src" / "subjmod" / "__init__.py").write_text('WHERE = "source"\n')
    (project / "tests").mkdir()
    (project / "tests" / "test_where.py").write_text(
        "import subjmod\ndef test_where():\n    assert subjmod.WHERE == 'build'\n"
    )
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n')
    target = (str(project / "tests" / "test_where.py"),)
    for args, shadowed in (((), True), (("-o", "pythonpath="), False)):
        cases = (Case("where", CaseKind.PYTEST, target, args=args),)
        ctx = _with(context(tmp_path, project / "tests" / "test_where.py"), cases=cases)
        a = execute.execute(Job("v", "plain", "where", int(not shadowed)), built, ctx)
        if shadowed:
            assert not a.conclusive and "subjmod comes from" in a.error
            assert str(project / "src" / "subjmod") in a.error
            assert "-o pythonpath=" in a.error
        else:
            assert a.conclusive and outcomes(a) == {"test_where": Outcome.PASSED}, a.error


def test_no_tests_is_an_error(tmp_path: Path, suite: Path, built: Build) -> None:
    a = execute.execute(
        Job("v", "plain", "suite", 0),
        built,
        context(tmp_path, suite, args=["-k", "nothing_matches"]),
    )
    assert "pytest ran no case (no tests were collected)" in a.error and not a.conclusive


def test_command_cases_run_in_the_built_tree(tmp_path: Path, suite: Path, built: Build) -> None:
    ctx = context(tmp_path, suite)
    before = sorted(p.name for p in built.workdir.iterdir())
    ok = execute.execute(Job("v", "plain", "ok", 0), built, ctx)
    bad = execute.execute(Job("v", "plain", "bad", 0), built, ctx)
    assert (ok.outcome, bad.outcome) == (Outcome.PASSED, Outcome.FAILED)
    # in a copy of the built tree of its own, removed after it: the entry stays as built
    own = ctx.scratch.parent / "attempts" / "v" / "plain" / "ok" / "r0"
    assert ok.launches[0].cwd == str(own) and ok.nodes[0].nodeid == "ok"
    assert not own.exists() and sorted(p.name for p in built.workdir.iterdir()) == before
    assert "ran" in (tmp_path / "bundle" / ok.log).read_text()


def test_a_command_case_imports_the_build_under_test(
    tmp_path: Path, suite: Path, built: Build
) -> None:
    """A Python program run as a command case (a repro script, `python -c`) sees the
    variant's build first on its path, not whatever the environment has."""
    probe = "import subjmod, sys; sys.exit(0 if subjmod.WHERE == 'build' else 5)"
    cases = (Case("py", CaseKind.COMMAND, command=(sys.executable, "-c", probe)),)
    ctx = _with(context(tmp_path, suite), cases=cases)
    a = execute.execute(Job("v", "plain", "py", 0), built, ctx)
    assert a.outcome is Outcome.PASSED, (tmp_path / "bundle" / a.log).read_text()
    assert dict(a.env)["PYTHONPATH"].split(os.pathsep)[0] == str(built.import_path)


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
    return dataclasses.replace(ctx, experiment=experiment)


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


def test_a_collection_error_is_the_attempts_reason(tmp_path: Path, built: Build) -> None:
    """Issue 22 item 5: the reason was the output's last line (under ASan a statistics
    line), not pytest's: the module that did not import and why."""
    suite = tmp_path / "broken" / "test_broken.py"
    suite.parent.mkdir()
    suite.write_text("import no_such_module_for_csorch\n\ndef test_x():\n    pass\n")
    a = execute.execute(Job("v", "plain", "suite", 0), built, context(tmp_path, suite))
    assert not a.conclusive
    assert "ModuleNotFoundError: No module named 'no_such_module_for_csorch'" in a.error
    assert "test_broken.py" in a.error


THROWING_SUITE = """\
import ctypes, os

def test_a_check_inside_raises():
    # the library throws and catches a C++ exception, as a TORCH_CHECK in pytest.raises
    assert ctypes.CDLL(os.environ["CSORCH_FIXTURE_LIB"]).checked(-1) == -1
"""


def test_a_cxx_throw_runs_under_asan_with_libstdcxx_preloaded(tmp_path: Path, built: Build):
    """Issue 22 item 4: with only the ASan runtime preloaded into a Python that does not
    link libstdc++, a C++ throw aborts the process in ASan's interceptor (the CHECK line
    is the reason); with the C++ runtime preloaded after it, the case runs and passes."""
    asan = _asan()
    if shutil.which("g++") is None:
        pytest.skip("needs g++")
    asan.build_fold(tmp_path / "fold")
    lib = tmp_path / "libthrow.so"
    src = Path(__file__).resolve().parents[2] / "fixtures" / "asan" / "src" / "throw.cpp"
    cc = ["g++", *asan.build_flags().cflags, "-shared", "-fPIC", str(src), "-o", str(lib)]
    subprocess.run(cc, check=True)
    suite = tmp_path / "throwing" / "test_throwing.py"
    suite.parent.mkdir()
    suite.write_text(THROWING_SUITE)
    env = (("CSORCH_FIXTURE_LIB", str(lib)),)
    ctx = context(tmp_path, suite, env=env, checker=asan)
    memcheck = Run("memcheck", Checker.MEMCHECK, env=env)
    experiment = dataclasses.replace(ctx.experiment, runs=(*ctx.experiment.runs[:1], memcheck))
    ctx = dataclasses.replace(ctx, experiment=experiment)
    instrumented = dataclasses.replace(built, sanitizer="address")
    bare = execute.execute(Job("v", "memcheck", "suite", 0), instrumented, ctx)
    assert not bare.conclusive
    assert "CHECK failed: asan_interceptors.cpp" in bare.inconclusive_reason
    assert asan.find_cxx(sys.executable) is not None  # this Python does not link it
    a = execute.execute(Job("v", "memcheck", "suite", 1), instrumented, ctx)
    assert a.conclusive, a.inconclusive_reason
    assert a.outcome is Outcome.PASSED and a.findings == ()
    assert str(asan.cxx) in dict(a.env)["LD_PRELOAD"]


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
# stands in for compute-sanitizer on a host without a GPU: writes the tool's records to
# its --log-file (%p: its pid) around the real child it runs (argv after
# --tool T --print-limit N --log-file F)
import os, subprocess, sys
args = sys.argv[1:]
at = args.index("--log-file")
argv = args[at + 2:]
log = open(args[at + 1].replace("%p", str(os.getpid())), "w")
print("========= COMPUTE-SANITIZER", file=log, flush=True)
code = subprocess.call(argv)
print('========= Program hit cudaErrorInvalidValue (error 1) due to "invalid argument" on '
      'CUDA API call to cudaFree.', file=log)
print("=========", file=log)
print("========= Program hit cudaErrorMemoryAllocation (error 2) due to \\"out of memory\\" on "
      "CUDA API call to cudaMalloc.", file=log)
print("=========", file=log)
print("========= ERROR SUMMARY: 2 errors", file=log, flush=True)
sys.exit(code)
"""


def test_a_runs_suppressions_mark_its_findings_and_drop_none(
    tmp_path: Path, suite: Path, built: Build
) -> None:
    tool = tmp_path / "compute-sanitizer"
    tool.write_text(FAKE_TOOL.replace("{python}", sys.executable))
    tool.chmod(0o755)
    ctx = context(tmp_path, suite, checker=ComputeSanitizer(tool))
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


def _with(ctx: execute.Context, **changes) -> execute.Context:
    return dataclasses.replace(ctx, experiment=dataclasses.replace(ctx.experiment, **changes))


def test_a_hung_case_past_case_timeout_is_one_error_case(
    tmp_path: Path, suite: Path, built: Build
) -> None:
    # test_sleep sleeps 60 s; the attempt's timeout (120 s) would end the whole attempt
    ctx = _with(context(tmp_path, suite, env=[("SLEEP", "1")]), case_timeout=2.0)
    a = execute.execute(Job("v", "plain", "suite", 0), built, ctx)
    assert not a.timed_out and a.duration < 60
    assert [launch.ended for launch in a.launches] == ["case timeout", ""]
    got = outcomes(a)
    assert got["test_sleep"] is Outcome.ERROR and got["test_zlast"] is Outcome.PASSED
    assert got["test_pass"] is Outcome.PASSED and len(got) == 7
    hung = next(n for n in a.nodes if n.nodeid.endswith("test_sleep"))
    assert "hung past case_timeout (2 s)" in hung.detail
    log = (tmp_path / "bundle" / a.launches[0].log).read_text()
    assert "Timeout (0:00:02)!" in log and " in test_sleep\n" in log  # faulthandler's dump
    assert dict(a.env)["CSORCH_CASE_TIMEOUT"] == "2"


def test_a_run_case_timeout_overrides_the_experiments(
    tmp_path: Path, suite: Path, built: Build
) -> None:
    ctx = _with(context(tmp_path, suite, env=[("SLEEP", "1")]), case_timeout=600.0)
    runs = (dataclasses.replace(ctx.experiment.runs[0], case_timeout=1.5), *ctx.experiment.runs[1:])
    ctx = _with(ctx, runs=runs)
    a = execute.execute(Job("v", "plain", "suite", 0), built, ctx)
    assert outcomes(a)["test_sleep"] is Outcome.ERROR and a.duration < 60


def test_the_child_is_told_its_checker_and_xdist_is_off_unless_asked(
    tmp_path: Path, suite: Path, built: Build
) -> None:
    (suite.parent / "test_env.py").write_text(
        "import os\ndef test_checker():\n    print('CHECKER=' + os.environ['CSORCH_CHECKER'])\n"
    )
    ctx = _with(context(tmp_path, suite, args=["-k", "checker"]), pytest_args=("-v",))
    ctx = dataclasses.replace(
        ctx,
        experiment=dataclasses.replace(
            ctx.experiment,
            cases=(Case("env", CaseKind.PYTEST, (str(suite.parent / "test_env.py"),)),),
        ),
    )
    a = execute.execute(Job("v", "plain", "env", 0), built, ctx)
    argv = a.launches[0].argv
    assert argv[argv.index("no:xdist") - 1] == "-p" and argv[-1] == "-v"
    assert "CHECKER=none" in (tmp_path / "bundle" / a.log).read_text()
    assert dict(a.env)["CSORCH_CHECKER"] == "none"
    assert execute.wants_xdist(["-n", "4"]) and execute.wants_xdist(["-p", "xdist"])
    assert not execute.wants_xdist(["-k", "not slow", "-x"])
    asked = _with(ctx, pytest_args=("-n0",))
    b = execute.execute(Job("v", "plain", "env", 0), built, asked)
    assert "no:xdist" not in b.launches[0].argv


def test_a_command_case_is_told_its_checker(tmp_path: Path, suite: Path, built: Build) -> None:
    (built.workdir / "show.py").write_text(
        "import os; print('CHECKER=' + os.environ['CSORCH_CHECKER'])\n"
    )
    ctx = context(tmp_path, suite)
    cases = (Case("show", CaseKind.COMMAND, command=(sys.executable, "show.py")),)
    ctx = _with(ctx, cases=cases)
    a = execute.execute(Job("v", "plain", "show", 0), built, ctx)
    assert "CHECKER=none" in (tmp_path / "bundle" / a.log).read_text()


def test_the_project_s_environment_runs_the_cases(tmp_path: Path, built: Build) -> None:
    """The build's python runs the case, its test requirements come second on the path,
    and under cases_from: variant the case's path is in the variant's tree."""
    wrapper = tmp_path / "venv" / "bin" / "python"
    wrapper.parent.mkdir(parents=True)
    # it says who ran it in the launch's log: the sandbox lets it write nowhere else
    wrapper.write_text(f'#!/bin/sh\necho "ran-by $0"\nexec {sys.executable} "$@"\n')
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
    assert f"ran-by {wrapper}\n" in (tmp_path / "bundle" / a.log).read_text()
    path = dict(a.env)["PYTHONPATH"].split(":")
    assert path[:2] == [str(built.import_path), str(deps)]


def test_a_plain_run_skips_the_teardown_nobody_reads_and_keeps_its_status(
    tmp_path: Path, suite: Path, built: Build
) -> None:
    """With no checker the child leaves once its session's end is marked (the subject's
    atexit work is not waited for) and still says how the session went; a test that
    clears the flag from the environment changes nothing. Under a checker the teardown
    runs: ASan's leak check and compute-sanitizer's summary come from it."""
    marker = tmp_path / "cwd" / "teardown-ran"  # the child's scratch: all it may write
    (suite.parent / "test_exit.py").write_text(
        "import atexit, os, pathlib\n"
        f"atexit.register(lambda: pathlib.Path({str(marker)!r}).write_text('ran'))\n"
        "def test_clears_the_flag():\n"
        "    os.environ.pop('CSORCH_FAST_EXIT', None)\n"
        "def test_fails():\n"
        "    assert False\n"
    )
    cases = (Case("exit", CaseKind.PYTEST, (str(suite.parent / "test_exit.py"),)),)
    ctx = _with(context(tmp_path, suite), cases=cases)
    a = execute.execute(Job("v", "plain", "exit", 0), built, ctx)
    assert dict(a.env)["CSORCH_FAST_EXIT"] == "1" and a.conclusive
    assert outcomes(a) == {"test_clears_the_flag": Outcome.PASSED, "test_fails": Outcome.FAILED}
    assert a.launches[0].returncode == 1  # pytest's own status: a test failed
    assert not marker.exists()

    # a run that asks for the teardown (its env sets the flag otherwise) keeps it
    ctx = _with(context(tmp_path, suite, env=[("CSORCH_FAST_EXIT", "0")]), cases=cases)
    a = execute.execute(Job("v", "plain", "exit", 1), built, ctx)
    assert dict(a.env)["CSORCH_FAST_EXIT"] == "0" and a.launches[0].returncode == 1
    assert marker.read_text() == "ran"
    marker.unlink()

    # the plugin's choice is the executor's: without the flag the interpreter tears down
    direct = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "orchestrator.markers.plugin", "-s",
         "-p", "no:cacheprovider", str(suite.parent / "test_exit.py")],
        capture_output=True, text=True,
        env={**os.environ, "CSORCH_CHECKER": "none", "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
    )  # fmt: skip
    assert direct.returncode == 1 and marker.read_text() == "ran"


def _said(log: str) -> str:
    return next(line[5:] for line in log.splitlines() if line.startswith("seen="))


def test_a_child_gets_its_share_of_the_threads_unless_the_run_or_the_user_names_them(
    tmp_path: Path, suite: Path, built: Build, monkeypatch
) -> None:
    """ctx.threads reaches a pytest child and a command child as OMP_NUM_THREADS; a run's
    env that names it, or csorch's own environment, is kept instead; 0 sets nothing."""
    # each child says what it saw in its log: the sandbox lets it write nowhere else
    (suite.parent / "test_threads.py").write_text(
        "import os\n"
        "def test_threads():\n"
        "    print('seen=' + os.environ.get('OMP_NUM_THREADS', '-'))\n"
    )
    (built.workdir / "threads.py").write_text(
        "import os\nprint('seen=' + os.environ.get('OMP_NUM_THREADS', '-'))\n"
    )
    cases = (
        Case("threads", CaseKind.PYTEST, (str(suite.parent / "test_threads.py"),)),
        Case("cmd", CaseKind.COMMAND, command=(sys.executable, "threads.py")),
    )
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)

    def seen_by(ctx: execute.Context, k: int) -> tuple[str, str, execute.Attempt]:
        a = execute.execute(Job("v", "plain", "threads", k), built, ctx)
        b = execute.execute(Job("v", "plain", "cmd", k), built, ctx)
        assert a.conclusive and b.conclusive, (a.error, b.error)
        said = [_said((tmp_path / "bundle" / x.log).read_text()) for x in (a, b)]
        return said[0], said[1], a

    ctx = dataclasses.replace(_with(context(tmp_path, suite), cases=cases), threads=3)
    pytest_child, command_child, a = seen_by(ctx, 0)
    assert (pytest_child, command_child) == ("3", "3") and dict(a.env)["OMP_NUM_THREADS"] == "3"

    ctx = dataclasses.replace(
        _with(context(tmp_path, suite, env=[("OMP_NUM_THREADS", "5")]), cases=cases), threads=3
    )
    assert seen_by(ctx, 1)[:2] == ("5", "5")  # the run's own env wins

    monkeypatch.setenv("OMP_NUM_THREADS", "7")  # the user's environment wins too
    ctx = dataclasses.replace(_with(context(tmp_path, suite), cases=cases), threads=3)
    assert seen_by(ctx, 2)[:2] == ("7", "7")

    monkeypatch.delenv("OMP_NUM_THREADS")
    ctx = dataclasses.replace(_with(context(tmp_path, suite), cases=cases), threads=0)
    assert seen_by(ctx, 3)[:2] == ("-", "-")
