"""Execution: one planned job (variant x run x case x repeat x device) -> one Attempt.

A pytest case runs as a child `python -m pytest TARGETS -p orchestrator.markers.plugin -s
-q -p no:cacheprovider -p no:xdist [PYTEST_ARGS] [ARGS]` under the build's interpreter (the
config's `python:`, else csorch's), with the variant's build first on PYTHONPATH and its test
requirements second (`-p no:xdist` unless the arguments ask for xdist: its workers would hide
the case markers from the checker's log); with a `case_timeout`, `-p
orchestrator.markers.timeout` ends a hung test as one ERROR case. A command case runs its
argv in a copy of the variant's built tree, with the build and its test requirements
first on PYTHONPATH as for a pytest case. Both see CSORCH_CHECKER, the tool watching them
(memcheck, initcheck, racecheck, synccheck, asan or none), to adapt to it; a pytest case
with none also gets CSORCH_FAST_EXIT=1 (the plugin leaves without the interpreter's
teardown once the session's end is marked: nothing reads it; a run's `env` that sets
CSORCH_FAST_EXIT to anything else keeps the teardown, for tests whose atexit work
matters). Either is
wrapped by the run's checker: compute-sanitizer prefixes the argv, ASan preloads its
runtime. A run with no checker
still preloads the ASan runtime when the build is instrumented (it cannot load
otherwise); its findings are not parsed, only outcomes count.

When a process dies before its session ends, or a case loses the CUDA context, the
cases it did not get to run continue in a fresh process (a second `Launch`), with the
nodes already run deselected; the nodes run after a lost context are discarded and run
again. One timeout covers all launches of an attempt; past it the process group is
killed and the attempt is inconclusive. Processes start only through `proc`; their logs
are read through `attempt_log`.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import orchestrator
from orchestrator import files, proc
from orchestrator.backends import Backend, NoChecker
from orchestrator.errors import ProcessStartError
from orchestrator.executors import attempt_log
from orchestrator.findings import suppressions
from orchestrator.markers import reader
from orchestrator.markers import timeout as case_timeout
from orchestrator.model import (
    Attempt,
    Build,
    Case,
    CaseKind,
    Checker,
    Experiment,
    Launch,
    NodeResult,
    Outcome,
    ParseResult,
    Run,
)
from orchestrator.model.job import Job
from orchestrator.model.kinds import aggregate
from orchestrator.sandbox import Sandbox

CSORCH_ROOT = Path(orchestrator.__file__).resolve().parents[1]
MAX_LAUNCHES = 64
#: sizes a child's thread pool: OpenMP's, which torch's intra-op pool follows
THREADS_VAR = "OMP_NUM_THREADS"
#: pytest's own exit statuses that mean it could not run the cases at all
PYTEST_BROKEN = {
    2: "interrupted (collection errors?)",
    3: "internal error",
    4: "usage error",
    5: "no tests were collected",
}


@dataclass(frozen=True)
class Context:
    """What every job of one run shares."""

    experiment: Experiment
    backend: Backend  # the sanitizing backend: wraps and reads every checker run
    python: str
    root: Path  # the bundle: logs go under root/logs, records hold paths relative to it
    scratch: Path  # an empty directory the pytest children start in
    cancel: threading.Event | None = None
    #: CUDA's GPU UUIDs by index, to check that a job given GPU k ran there; empty where
    #: csorch itself runs under CUDA_VISIBLE_DEVICES (its indices are then not the child's)
    gpu_uuids: tuple[str, ...] = ()
    #: OMP_NUM_THREADS for every child (`run.options.child_threads`); 0: the host's default
    threads: int = 0


def packages(import_path: Path) -> tuple[str, ...]:
    """Top-level importable names in a package directory (what must come from it)."""
    names = set()
    for entry in import_path.iterdir():
        if entry.name.endswith((".dist-info", ".egg-info", ".data")) or entry.name in (
            "__pycache__",
            "bin",
        ):
            continue
        if entry.is_dir() and (entry / "__init__.py").exists():
            names.add(entry.name)
        elif entry.suffix in (".py", ".so"):
            names.add(entry.name.split(".")[0])
    return tuple(sorted(names))


def wants_xdist(args: Sequence[str]) -> bool:
    """Whether pytest arguments ask for pytest-xdist (-n N, --numprocesses, --dist, -p
    xdist...): then csorch does not block it."""
    return any(
        a.startswith(("-n", "--numprocesses", "--dist", "--tx")) or "xdist" in a for a in args
    )


def checker_for(run: Run, backend: Backend) -> Checker:
    """The tool that actually watches a run under `backend`."""
    return backend.watcher(run.checker)


#: reads one launch's checker evidence: (its output log) -> the parse
Reader = Callable[[Path], ParseResult]


def _wrap(
    argv: list[str],
    env: dict[str, str],
    run: Run,
    build: Build,
    ctx: Context,
    channel: Path,
) -> tuple[list[str], dict[str, str], Reader]:
    """(argv, environment, reader of the evidence) for the run's checker. `channel`: the
    prefix of the checker's own per-process logs for this launch (`backends.channel`);
    the command's output log is never parsed for a checker's findings."""
    if run.checker is Checker.NONE:
        runtime = ctx.backend.wrap_plain(argv, env, build.sanitizer)
        return list(runtime.argv), {**env, **dict(runtime.env)}, _plain
    wrapped = ctx.backend.wrap(
        argv,
        checker=run.checker,
        options=run.options,
        env=env,
        log_path=ctx.backend.log_target(channel),
        preset=run.preset,
        target_processes=run.target_processes,
    )

    def read(log: Path) -> ParseResult:
        return _suppress(ctx.backend.read(channel, run.checker, dict(wrapped.env)), run)

    return list(wrapped.argv), {**env, **dict(wrapped.env)}, read


def _threads(env: dict[str, str], run: Run, ctx: Context) -> None:
    """Bound the child's OpenMP threads to its share of the CPUs (`ctx.threads`), unless
    the run's `env` or csorch's own environment names OMP_NUM_THREADS: then theirs."""
    if ctx.threads and THREADS_VAR not in dict(run.env) and THREADS_VAR not in os.environ:
        env[THREADS_VAR] = str(ctx.threads)


def _plain(log: Path) -> ParseResult:
    # a run without a checker: its findings are not parsed, only its outcomes count
    return NoChecker().read(log, Checker.NONE)


def _suppress(parsed: ParseResult, run: Run) -> ParseResult:
    # csorch applies the run's suppressions itself: the tool would drop the records
    return suppressions.apply(parsed, run.suppressions) if run.suppressions else parsed


def _launch(
    job: Job, k: int, argv: list[str], env: dict[str, str], cwd: Path, timeout: float, ctx: Context
) -> tuple[proc.ProcResult, Path]:
    rel = Path("logs") / (job.stem() + (f".launch{k}" if k else "") + ".log")
    # the bundle's logs/ and the directories below it are csorch's: none may be a link
    files.make_dirs((ctx.root / rel).parent, root=ctx.root)
    result = proc.run(
        argv,
        log_path=ctx.root / rel,
        env=env,
        cwd=cwd,
        timeout=max(timeout, 1.0),
        cancel=ctx.cancel,
        # writable: its cwd and the logs it and its checker write; the rest is read-only
        sandbox=Sandbox.of(cwd, (ctx.root / rel).parent),
    )
    return result, rel


def _outlived(result: proc.ProcResult) -> str:
    """Why a launch that left processes alive proves nothing ("" when it left none)."""
    if not result.stragglers:
        return ""
    return "processes outlived the launch's main process: " + "; ".join(result.stragglers)


def _record(job: Job, result: proc.ProcResult, rel: Path, skipped: int, ended: str) -> Launch:
    return Launch(
        result.argv,
        tuple((k, v or "") for k, v in result.env_delta),
        result.cwd,
        rel,
        result.returncode,
        result.timed_out,
        result.duration,
        result.cpu,
        skipped,
        ended,
        result.started,
    )


def targets(case: Case, build: Build) -> tuple[str, ...]:
    """The case's pytest targets; under `cases_from: variant` they lie in the variant's tree."""
    if build.cases_root is None:
        return case.pytest
    return tuple(t if t.startswith("/") else str(build.cases_root / t) for t in case.pytest)


def _pytest(job: Job, case: Case, run: Run, build: Build, ctx: Context) -> Attempt:
    argv = [
        build.python or ctx.python,  # the project's environment, where the config names one
        "-m",
        "pytest",
        *targets(case, build),
        "-p",
        "orchestrator.markers.plugin",
        "-s",
        "-q",
        "-p",
        "no:cacheprovider",
    ]
    extra = [*ctx.experiment.pytest_args, *case.args_for(ctx.backend.name)]
    if not wants_xdist(extra):
        argv += ["-p", "no:xdist"]
    limit = ctx.experiment.case_timeout_for(run)
    if limit is not None:
        argv += ["-p", "orchestrator.markers.timeout"]
    if build.cases_root is not None:
        # node ids relative to the tree, the same in every variant's checkout (the rows
        # line up); the tree itself stays off sys.path, so its sources shadow no build
        argv += ["--rootdir", str(build.cases_root)]
    if case.marker:
        argv += ["-m", case.marker]
    argv += extra
    path = [str(p) for p in (build.import_path, build.requirements_path) if p]
    path += [str(CSORCH_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {
        **dict(run.env),
        "PYTHONPATH": os.pathsep.join(path),
        "PYTHONDONTWRITEBYTECODE": "1",
        "CSORCH_CHECKER": checker_for(run, ctx.backend).value,
    }
    _threads(env, run, ctx)
    if checker_for(run, ctx.backend) is Checker.NONE and "CSORCH_FAST_EXIT" not in dict(run.env):
        env["CSORCH_FAST_EXIT"] = "1"  # nothing reads a plain run's teardown: skip it
    if limit is not None:
        env[case_timeout.ENV] = f"{limit:g}"
    if build.import_path:
        env |= {
            "CSORCH_PACKAGE_DIR": str(build.import_path),
            "CSORCH_PACKAGES": ",".join(packages(build.import_path)),
        }
    if job.device:
        env["CUDA_VISIBLE_DEVICES"] = job.device
    deadline = time.monotonic() + ctx.experiment.timeout_for(run)
    done: list[str] = []
    results: list[NodeResult] = []
    launches: list[Launch] = []
    parses: list[ParseResult] = []
    gpus: list[str] = []
    timed_out, error, status = False, "", None
    files.make_dirs(ctx.scratch)
    for k in range(MAX_LAUNCHES):
        stem = ctx.root / "logs" / (job.stem() + f".launch{k}")
        launch_argv, launch_env, read = _wrap(argv, env, run, build, ctx, _channel(stem))
        # the plugin's case markers go to a file of their own, not the case's output
        markers = stem.with_name(stem.name + ".markers")
        launch_env[reader.MARKERS_VAR] = str(markers)
        if ctx.backend.frames_name_case:  # the tool's file has no markers
            launch_env["CSORCH_CASE_FRAMES"] = "1"
        if done:
            done_file = ctx.root / "logs" / (job.stem() + f".launch{k}.done")
            files.make_dirs(done_file.parent, root=ctx.root)
            files.atomic_write(done_file, "\n".join(done) + "\n", root=ctx.root)
            launch_env["CSORCH_DONE_FILE"] = str(done_file)
        if deadline - time.monotonic() <= 0:
            timed_out = True
            break
        result, rel = _launch(
            job, k, launch_argv, launch_env, ctx.scratch, deadline - time.monotonic(), ctx
        )
        error = error or _outlived(result)
        log = ctx.root / rel
        report = reader.read(attempt_log.lines(markers))
        gpus.append(report.gpu)
        parsed = read(log)
        if run.checker is not Checker.NONE:
            # where the checker's file has no case markers, its Python frames name the case
            parsed = ctx.backend.attribute(parsed, report.began)
        parses.append(parsed)
        kept = [_signalled(n, result.returncode) for n in report.nodes]
        if result.returncode < 0 and report.finished and not error:
            # its own end markers, then a signal: whatever it reported is not its whole story
            error = (
                f"pytest was killed by {signal_name(-result.returncode)} after its session "
                "ended: its outcomes are not trusted"
            )
        if report.context_lost:  # what ran after the context died proves nothing
            kept = kept[: report.began.index(report.context_lost) + 1]
        hung = limit is not None and not report.finished and _hung(kept, log)
        if hung:
            kept[-1] = dataclasses.replace(
                kept[-1],
                detail=f"hung past case_timeout ({limit:g} s); faulthandler ended the "
                "process (the tracebacks are in the log)",
            )
        results += kept
        done += [n.nodeid for n in kept]
        status = report.session_status
        ended = (
            "timeout"
            if result.timed_out
            else "case timeout"
            if hung
            else "context lost"
            if report.context_lost
            else "died"
            if status is None
            else ""
        )
        launches.append(_record(job, result, rel, len(done) - len(kept), ended))
        if result.timed_out:
            timed_out = True
            break
        if report.import_error:
            error = report.import_error
            break
        if report.unrun == 0 and not report.finished:
            # the crash came at the last case: a fresh process would run nothing (and
            # compute-sanitizer would fail it for never reaching CUDA)
            break
        if report.finished or not kept:
            # pytest's own reason (a collection error) before the output's last line
            cause = "; ".join(report.collect_errors) or attempt_log.last_words(log)
            if not results and not error:
                why = PYTEST_BROKEN.get(status, f"exit status {result.returncode}")  # type: ignore[arg-type]
                error = f"pytest ran no case ({why}): {cause}"
            elif status in (3, 4):
                error = f"pytest {PYTEST_BROKEN[status]}: {cause}"
            elif report.collect_errors and not error:
                error = f"pytest could not collect: {cause}"
            break
    return _attempt(job, run, ctx, launches, results, parses, timed_out, error, gpus)


def _hung(kept: list[NodeResult], log: Path) -> bool:
    """Whether the launch's last case was ended by the case timeout (faulthandler's
    "Timeout (...)!" in the log, after a case that began and never ended)."""
    return (
        bool(kept)
        and kept[-1].outcome is Outcome.ERROR
        and (case_timeout.fired(attempt_log.lines(log)) is not None)
    )


def _channel(stem: Path) -> Path:
    """The prefix of a launch's checker logs (`backends.channel`): beside its output log,
    under a name the journal counts as the attempt's (`run.journal.attempt_logs`)."""
    return stem.with_name(stem.name + ".checker")


def signal_name(number: int) -> str:
    """ "signal 9 (SIGKILL)" """
    try:
        return f"signal {number} ({signal.Signals(number).name})"
    except ValueError:
        return f"signal {number}"


def _signalled(node: NodeResult, returncode: int | None) -> NodeResult:
    """A node the process died in, with the signal that ended it named."""
    if returncode is None or returncode >= 0 or node.outcome is not Outcome.ERROR:
        return node
    if node.detail == reader.DIED:
        return dataclasses.replace(
            node, detail=f"killed by {signal_name(-returncode)} during this case"
        )
    return node


def _command(job: Job, case: Case, run: Run, build: Build, ctx: Context) -> Attempt:
    env = {**dict(run.env), "CSORCH_CHECKER": checker_for(run, ctx.backend).value}
    # a Python program the case runs imports the build under test, as a pytest case does
    path = [str(p) for p in (build.import_path, build.requirements_path) if p]
    if path:
        env["PYTHONPATH"] = os.pathsep.join(
            [*path, *filter(None, [dict(run.env).get("PYTHONPATH", os.environ.get("PYTHONPATH"))])]
        )
    _threads(env, run, ctx)
    if job.device:
        env["CUDA_VISIBLE_DEVICES"] = job.device
    stem = ctx.root / "logs" / (job.stem() + ".launch0")
    argv, env, read = _wrap(list(case.command), env, run, build, ctx, _channel(stem))
    built = build.workdir or build.directory
    # each attempt dirties its own copy of the built tree, never the cache entry: a
    # scratch file one attempt leaves must not change the next one's outcome. Under Slurm
    # a task the cluster killed (NODE_FAIL) is retried as another job, which may start on
    # the same shared disk while the first one's teardown still removes its copy: each
    # job gets a copy of its own
    job_id = os.environ.get("SLURM_JOB_ID", "")
    mine = job.stem() + (f".job{job_id}" if job_id.isdigit() else "")
    cwd = ctx.scratch.parent / "attempts" / mine if built else ctx.scratch
    if built:
        files.remove_tree(cwd, ignore_errors=True)
        files.copy_tree(built, cwd)
    try:
        result, rel = _launch(job, 0, argv, env, cwd, ctx.experiment.timeout_for(run), ctx)
    finally:
        if built:
            files.remove_tree(cwd, ignore_errors=True)
    rc = result.returncode
    outcome = (
        Outcome.ERROR
        if result.timed_out or rc < 0
        else Outcome.PASSED
        if rc == 0
        else Outcome.FAILED
    )
    detail = "timed out" if result.timed_out else f"killed by {signal_name(-rc)}" if rc < 0 else ""
    parsed = read(ctx.root / rel)
    # a command has no case markers: everything it reports is this case's
    parsed = dataclasses.replace(
        parsed,
        findings=tuple(
            f if f.case else dataclasses.replace(f, case=case.name) for f in parsed.findings
        ),
    )
    launch = _record(job, result, rel, 0, "timeout" if result.timed_out else "")
    return _attempt(
        job,
        run,
        ctx,
        [launch],
        [NodeResult(case.name, outcome, detail)],
        [parsed],
        result.timed_out,
        _outlived(result),
        # a program may name its GPU with the plugin's line
        [reader.read(attempt_log.lines(ctx.root / rel)).gpu],
    )


def _attempt(
    job: Job,
    run: Run,
    ctx: Context,
    launches: list[Launch],
    results: list[NodeResult],
    parses: list[ParseResult],
    timed_out: bool,
    error: str,
    gpus: Sequence[str] = (),
) -> Attempt:
    first = launches[0]
    seen = tuple(dict.fromkeys(g for g in gpus if g))
    wrong = _wrong_gpu(job, seen, ctx.gpu_uuids)
    return Attempt(
        variant=job.variant,
        run=job.run,
        case=job.case,
        repeat=job.repeat,
        checker=checker_for(run, ctx.backend),
        device=job.device,
        gpu=",".join(seen),
        argv=first.argv,
        env=first.env,
        returncode=launches[-1].returncode,
        timed_out=timed_out,
        duration=sum(launch.duration for launch in launches),
        outcome=aggregate(n.outcome for n in results) if results else Outcome.ERROR,
        log=first.log,
        parse=attempt_log.merge(parses),
        error=error or wrong,
        nodes=tuple(results),
        launches=tuple(launches),
    )


def _wrong_gpu(job: Job, seen: Sequence[str], uuids: Sequence[str]) -> str:
    """Why the evidence is not the rank's ("" when it is, or when nothing can tell): a
    child that used another GPU than the one its job was given, or several."""
    if len(seen) > 1:
        return f"the attempt's processes used different GPUs: {', '.join(seen)}"
    if not seen or not job.device:
        return ""
    if job.device.isdigit():
        index = int(job.device)
        expected = uuids[index] if index < len(uuids) else ""
    else:  # given by UUID
        expected = job.device
    if expected and seen[0] != expected:
        return f"given GPU {job.device} ({expected}), the cases ran on {seen[0]}"
    return ""


def execute(job: Job, build: Build, ctx: Context) -> Attempt:
    """Run one job against a built variant. A program that cannot start is an
    inconclusive attempt, not an exception, and so is a file of the attempt that csorch
    refuses to write or copy (a link planted where its log goes, a built tree too deep)."""
    run = ctx.experiment.run(job.run)
    case = next(c for c in ctx.experiment.cases if c.name == job.case)
    try:
        if case.kind is CaseKind.COMMAND:
            return _command(job, case, run, build, ctx)
        return _pytest(job, case, run, build, ctx)
    except (ProcessStartError, files.FileRefused) as exc:
        return not_run(job, run, ctx.backend, str(exc))


def not_run(job: Job, run: Run, backend: Backend, why: str) -> Attempt:
    """The record of a job that could not run (its variant did not build, say)."""
    return Attempt(
        job.variant,
        job.run,
        job.case,
        job.repeat,
        checker_for(run, backend),
        device=job.device,
        error=why,
    )
