"""The gate run, callable from Python: load the gate's plan, run (or resume) each
experiment into its own bundle, or judge stored bundles again, then decide, and write the
gate directory: gate.json, report.md and the manifest over them and every bundle.

`run(Request(...))` does all of it and returns a `GateRun`. What it prints and how one
experiment is run are the caller's: `Reporter` hears the backend and the devices,
`run_one` runs an experiment (default: the pipeline, silently), `render` makes report.md
from the records (the report layer sits above this one).
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import datetime
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator import backends, cache, host
from orchestrator.bundle.layout import SIGNATURE
from orchestrator.config.experiment import load_experiment
from orchestrator.errors import CsorchError
from orchestrator.executors.base import Executor
from orchestrator.executors.choice import check_local_only, executor_for
from orchestrator.files import TooDeep, atomic_write, load_json, remove_partial_writes
from orchestrator.files import walk as files_walk
from orchestrator.gate import manifest, signing, stored
from orchestrator.gate.allowances import Allowance
from orchestrator.gate.policy import (
    GateResult,
    Judged,
    Policy,
    decide,
    default_policy,
    is_gate_config,
    load_policy,
)
from orchestrator.model import Experiment
from orchestrator.model.job import Fanout
from orchestrator.run import journal, options, pipeline, places
from orchestrator.run.options import Options

GATE_SCHEMA = "csorch.gate/1"
#: what `csorch gate --resume OUT` starts again from: the configs and settings of the gate
GATE_RUN = "gate-run.json"
GATE_RUN_SCHEMA = "csorch.gate-run/1"


@dataclass(frozen=True)
class Settings:
    """How a gate runs beyond its configs (kept in gate-run.json for a resume)."""

    backend: str = "auto"  # auto | compute-sanitizer | asan
    repeat: int | None = None  # N for every run
    jobs: int | None = None  # child processes at once (default: options.default_jobs())
    devices: str | None = None  # --devices as given: "0,1", "all"
    fanout: Fanout = Fanout.SHARD
    executor: str | None = None  # local | slurm (default: each experiment's own)
    slurm: tuple[str, ...] | None = None  # KEY=VALUE over the configs' slurm: blocks
    cache: Path = cache.DEFAULT_DIR
    # every experiment at once, one pool of jobs (`run_together`); False: one by one
    together: bool = True


@dataclass(frozen=True)
class Request:
    """A gate as asked: its configs (a gate config and/or experiment configs), settings,
    and either a new `out`, a `resume` of an interrupted gate, or stored bundles to judge
    again (`stored`: run nothing)."""

    configs: tuple[Path, ...] = ()
    settings: Settings = Settings()
    out: Path | None = None
    resume: Path | None = None
    stored: tuple[Path, ...] = ()
    sign: Path | None = None  # an SSH private key: sign the gate's manifest (gate/signing)


@dataclass(frozen=True)
class Plan:
    """A loaded gate: the policy, its experiments, and where each one runs."""

    policy: Policy
    experiments: tuple[Experiment, ...]
    runners: tuple[Executor | None, ...]


@dataclass(frozen=True)
class GateRun:
    """What a gate decided, from what, and where it is written (None: nowhere)."""

    result: GateResult
    judged: tuple[Judged, ...]
    plan: Plan
    out: Path | None
    runs: tuple[pipeline.RunResult, ...] = ()  # the experiments run together, in order


class NotWritten(Exception):
    """The gate directory could not be written (`error`); `result` is the decision when it
    was reached (a pass whose evidence was not written is no pass)."""

    def __init__(self, error: OSError, out: Path, result: GateResult | None, ran: bool) -> None:
        super().__init__(str(error))
        self.error, self.out, self.result, self.ran = error, out, result, ran


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) while the experiments ran together: `out` holds the gate to
    resume (each journal keeps what finished)."""

    def __init__(self, out: Path) -> None:
        super().__init__(str(out))
        self.out = out


class Reporter:
    """What a gate says while it runs (the CLI prints it)."""

    def backend(self, choice: backends.Choice) -> None: ...
    def devices(self, devices: tuple[str, ...], fanout: Fanout) -> None: ...


#: runs one experiment: (experiment, options, facts, the command that resumes the gate)
RunOne = Callable[[Experiment, Options, host.Facts, str], pipeline.RunResult]
#: report.md from the decision, the judged experiments and the allowances in force
Render = Callable[[GateResult, Sequence[Judged], Sequence[Allowance]], str]


def quietly(
    experiment: Experiment, opts: Options, facts: host.Facts, resume: str
) -> pipeline.RunResult:
    """The default `run_one`: the pipeline with no progress shown."""
    return pipeline.run_experiment(experiment, opts, facts, pipeline.Events())


def plain(result: GateResult, judged: Sequence[Judged], allow: Sequence[Allowance]) -> str:
    """The default report.md of a gate run from Python: its verdict and reasons."""
    return f"# csorch gate: {result.verdict.value}\n"


def saved(resume: Path) -> dict:
    """The gate run kept in `resume` (its configs and settings); CsorchError if none."""
    path = resume / GATE_RUN
    try:
        doc = load_json(path)
    except FileNotFoundError:
        raise journal.ResumeError(
            f"{resume} holds no gate to resume (no {GATE_RUN})",
            hint="give the --out of a `csorch gate` that was interrupted",
        ) from None
    except (OSError, ValueError) as exc:
        raise journal.ResumeError(f"{path} cannot be read: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != GATE_RUN_SCHEMA:
        raise journal.ResumeError(f"{path} is not a {GATE_RUN_SCHEMA} record")
    return doc


def resumed(request: Request) -> Request:
    """`request` with the configs and settings of the gate it resumes, the ones given
    again over them (the fanout stays the saved one)."""
    assert request.resume is not None
    doc = saved(request.resume)
    given = request.settings
    slurm = given.slurm or doc.get("slurm")
    settings = Settings(
        backend=doc["backend"] if given.backend == "auto" else given.backend,
        repeat=given.repeat or doc.get("repeat"),
        jobs=given.jobs or doc.get("jobs"),
        devices=given.devices or doc.get("devices"),
        fanout=Fanout(doc.get("fanout") or given.fanout.value),
        executor=given.executor or doc.get("executor"),
        slurm=tuple(slurm) if slurm else None,
        cache=Path(doc["cache"])
        if given.cache == cache.DEFAULT_DIR and doc.get("cache")
        else given.cache,
    )
    if request.out is not None and places.resolved(request.out) != places.resolved(request.resume):
        raise CsorchError(
            f"--out {request.out} with --resume {request.resume}: a resume continues the gate "
            "in its own directory",
            hint=f"drop --out: csorch gate --resume {request.resume}",
        )
    configs = request.configs or tuple(Path(c) for c in doc["configs"])
    return dataclasses.replace(request, configs=configs, settings=settings, out=request.resume)


def load(configs: Sequence[Path], settings: Settings) -> Plan:
    """The policy (the gate config given, else a default one over the experiment
    configs), its experiments and their executors; CsorchError on bad input."""
    options.check_backend(settings.backend)
    policies = [c for c in configs if is_gate_config(c)]
    if len(policies) > 1:
        raise CsorchError(
            "give at most one gate config", hint=f"got {', '.join(map(str, policies))}"
        )
    extra = [c.resolve() for c in configs if c not in policies]
    policy = load_policy(policies[0]) if policies else default_policy(extra)
    listed = list(dict.fromkeys([*policy.experiments, *extra]))
    experiments = tuple(load_experiment(c) for c in listed)
    # each experiment's own executor: and slurm: block, the flags over them
    pairs = list(settings.slurm) if settings.slurm else None
    for e in experiments:
        options.check_repeat(e, settings.repeat)
    runners = tuple(executor_for(e, settings.executor, pairs) for e in experiments)
    for runner in runners:
        check_local_only(runner, settings.devices)
    return Plan(policy, experiments, runners)


def fresh(path: Path) -> bool:
    """Whether an experiment's directory can start from nothing: absent, or holding no
    file (a gate killed before the experiment's journal was written)."""
    if not path.exists():
        return True
    try:
        return not any(names for _, _, names in files_walk(path))
    except TooDeep:
        return False  # not nothing: whatever lies that deep is not csorch's to remove


def begin(out: Path, configs: Sequence[Path], settings: Settings, backend: str) -> None:
    """Keep what `csorch gate --resume OUT` needs in `out` (OSError if it cannot)."""
    out.mkdir(parents=True, exist_ok=True)
    record = {
        "schema": GATE_RUN_SCHEMA,
        "configs": [str(c.resolve()) for c in configs],
        "backend": backend,
        "repeat": settings.repeat,
        "jobs": settings.jobs,
        "devices": settings.devices,
        "fanout": settings.fanout.value,
        "executor": settings.executor,
        "slurm": list(settings.slurm) if settings.slurm else None,
        "cache": str(settings.cache.resolve()),
        "resume": journal.resume_command("gate", out),
    }
    atomic_write(out / GATE_RUN, json.dumps(record, indent=1))


def run_experiments(
    plan: Plan,
    settings: Settings,
    choice: backends.Choice,
    facts: host.Facts,
    out: Path,
    devices: tuple[str, ...],
    resume: bool,
    run_one: RunOne = quietly,
) -> list[Judged]:
    """Each experiment into its own bundle `out/<name>` (resumed from its journal when
    `resume`; one never begun starts afresh), judged, one after another."""
    again = journal.resume_command("gate", out)
    judged = []
    for experiment, opts in zip(
        plan.experiments, _options(plan, settings, choice, out, devices, resume), strict=True
    ):
        judged.append(_judged(run_one(experiment, opts, facts, again)))
    return judged


def _judged(result: pipeline.RunResult) -> Judged:
    return Judged(result.experiment, result.attempts, result.judgement, str(result.bundle))


def run_together(
    plan: Plan,
    settings: Settings,
    choice: backends.Choice,
    facts: host.Facts,
    out: Path,
    devices: tuple[str, ...],
    resume: bool,
    events_for: Callable[[Experiment], pipeline.Events] | None = None,
) -> list[pipeline.RunResult]:
    """Every experiment at once, as one plan: all builds start at second 0 (a build two
    experiments share, one cache key, is built once: the second waits on its lock and
    finds it), and their builds and attempts share one pool of `jobs` slots. Each
    experiment's bundle is what it would be alone. Ctrl-C (KeyboardInterrupt here)
    stops them all; each journal keeps what finished."""
    stop = threading.Event()
    slots = threading.BoundedSemaphore(settings.jobs or options.default_jobs())
    runs = [
        dataclasses.replace(opts, stop=stop, slots=slots)
        for opts in _options(plan, settings, choice, out, devices, resume)
    ]
    events = [events_for(e) if events_for else None for e in plan.experiments]
    with cf.ThreadPoolExecutor(max_workers=max(1, len(runs))) as pool:
        futures = [
            pool.submit(pipeline.run_experiment, e, opts, facts, ev)
            for e, opts, ev in zip(plan.experiments, runs, events, strict=True)
        ]
        try:
            return [f.result() for f in futures]
        except BaseException:
            stop.set()  # the others stop their children; their bundles say incomplete
            cf.wait(futures)
            raise


def _options(
    plan: Plan,
    settings: Settings,
    choice: backends.Choice,
    out: Path,
    devices: tuple[str, ...],
    resume: bool,
) -> list[Options]:
    """Each experiment's options: its bundle `out/<name>`, resumed when `resume` and its
    directory holds a journal (one never begun starts afresh)."""
    made = []
    for experiment, runner in zip(plan.experiments, plan.runners, strict=True):
        target = out / experiment.name
        made.append(
            options.make(
                choice,
                target,
                cache=settings.cache,
                jobs=settings.jobs,
                repeat=settings.repeat,
                # under Slurm each attempt gets its GPU from the scheduler (--gres)
                devices=devices if runner is None else (),
                fanout=settings.fanout,
                executor=runner,
                resume=resume and not fresh(target),
            )
        )
    return made


def finish(
    out: Path,
    result: GateResult,
    judged: Sequence[Judged],
    report: str,
    sign: Path | None = None,
) -> None:
    """Write gate.json and report.md, then the manifest over them and every bundle
    judged, signed with the SSH key `sign` when given (OSError if they cannot be
    written; CsorchError if the key cannot sign)."""
    doc = {"schema": GATE_SCHEMA, **result.to_dict()}
    out.mkdir(parents=True, exist_ok=True)
    remove_partial_writes(out)  # a write a SIGKILL cut short: no file goes unlisted
    atomic_write(out / manifest.GATE, json.dumps(doc, indent=1))
    atomic_write(out / manifest.REPORT, report)
    # last: the manifest covers gate.json, report.md and each bundle judged
    manifest.write_manifest(out, [Path(j.bundle) for j in judged if j.bundle])
    if sign is not None:
        signing.sign(out, sign)
    else:  # a signature from before is over another manifest
        (out / SIGNATURE).unlink(missing_ok=True)


def run(
    request: Request,
    *,
    reporter: Reporter | None = None,
    run_one: RunOne = quietly,
    render: Render | None = None,
    today: datetime.date | None = None,
    events_for: Callable[[Experiment], pipeline.Events] | None = None,
) -> GateRun:
    """The whole gate. CsorchError for bad input (nothing run); NotWritten when the gate
    directory cannot be written; a KeyboardInterrupt from `run_one` passes through (each
    experiment's journal keeps what finished). `render` makes report.md (default:
    `plain`, the verdict alone). Experiments run together (`Settings.together`, local
    executors, two or more) report through `events_for`, one by one through `run_one`."""
    reporter = reporter or Reporter()
    if request.resume is not None and request.stored:
        raise CsorchError(
            "--from judges stored bundles and --resume continues a gate: give one of them",
            hint=f"csorch gate --resume {request.resume}, or csorch gate --from ... --out NEW",
        )
    if request.resume is not None:
        request = resumed(request)
    elif not request.configs:
        raise CsorchError("give a gate config or experiment configs (or --resume OUT)")
    settings = request.settings
    if request.sign is not None and not request.sign.is_file():
        raise CsorchError(f"--sign {request.sign}: no such key file", hint="an SSH private key")
    plan = load(request.configs, settings)
    places.check_directory(settings.cache, "--cache-dir")
    runs: list[pipeline.RunResult] = []
    out = request.out
    if out is not None:
        places.check_out(
            out,
            sources=places.sources(plan.experiments),
            cache=settings.cache,
            resuming=request.resume is not None,
        )
    if request.stored:
        judged, missing, broken = stored.judge_stored(plan.experiments, request.stored)
        ran = False
    else:
        out = out or options.default_out(plan.policy.name)
        choice, facts = options.choose_backend(
            settings.backend, options.interpreter_of(plan.experiments)
        )
        if request.resume is None:
            check_new(out)
        reporter.backend(choice)
        if request.resume is None:
            try:
                begin(out, request.configs, settings, choice.backend)
            except OSError as exc:
                raise NotWritten(exc, out, None, True) from None
        devices = options.resolve_devices(settings.devices, choice.backend, facts.fast)
        if devices:
            reporter.devices(devices, settings.fanout)
        resuming = request.resume is not None
        local = all(r is None for r in plan.runners)
        if settings.together and local and len(plan.experiments) > 1:
            try:
                runs = run_together(
                    plan, settings, choice, facts, out, devices, resuming, events_for
                )
            except KeyboardInterrupt:
                raise Interrupted(out) from None
            judged = [_judged(r) for r in runs]
        else:
            judged = run_experiments(plan, settings, choice, facts, out, devices, resuming, run_one)
        judged = stored.checked(judged, plan.experiments, settings.repeat)
        missing, broken, ran = [], [], True
    result = decide(plan.policy, judged, missing, broken)
    if out is not None:
        live = [a for a in plan.policy.allow if not a.expired(today or datetime.date.today())]
        text = (render or plain)(result, judged, live)
        try:
            finish(out, result, judged, text, request.sign)
        except OSError as exc:  # --out under a file, a full disk
            raise NotWritten(exc, out, result, ran) from None
    return GateRun(result, tuple(judged), plan, out, tuple(runs))


def check_new(out: Path) -> None:
    """CsorchError unless `out` can take a new gate (an interrupted one's is named)."""
    try:
        options.check_out(out)
    except CsorchError as exc:
        # a bundle's manifest hashes every log in it: old files would pass as evidence
        if (out / GATE_RUN).is_file():
            exc.hint += f", or continue that gate: {journal.resume_command('gate', out)}"
        raise
