"""The gate run, callable from Python: load the gate's plan, run (or resume) each
experiment into its own bundle, or judge stored bundles again, then decide, and write the
gate directory: gate.json, report.md and the manifest over them and every bundle.

`run(Request(...))` does all of it and returns a `GateRun`. The experiments run together,
one plan over one pool of jobs (one experiment is a case of it); what a caller shows is
its own: a `Listener` (run/events.py) hears the backend, the devices and each
experiment's builds and attempts, `render` makes report.md from the records (the report
layer sits above this one).
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

from orchestrator import backends, host
from orchestrator.bundle import signing
from orchestrator.bundle.layout import SIGNATURE
from orchestrator.config.experiment import load_experiment
from orchestrator.errors import CsorchError
from orchestrator.executors.base import Executor
from orchestrator.executors.choice import check_local_only, executor_for
from orchestrator.files import TooDeep, atomic_write, remove_partial_writes
from orchestrator.files import walk as files_walk
from orchestrator.gate import manifest, stored
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
from orchestrator.model import Experiment, Verdict
from orchestrator.run import carried, journal, options, places, runner
from orchestrator.run.events import QUIET, Listener
from orchestrator.run.options import Options
from orchestrator.run.request import (  # noqa: F401 (GATE_RUN: where a gate is kept)
    GATE_RUN,
    GATE_RUN_SCHEMA,
    Settings,
    check_new,
    resumed,
    save_gate,
)
from orchestrator.run.request import Request as RunRequest

GATE_SCHEMA = "csorch.gate/1"


@dataclass(frozen=True)
class Request(RunRequest):
    """A gate as asked: a run request (its configs: a gate config and/or experiment
    configs, settings, and either a new `out` or a `resume` of an interrupted gate), or
    stored bundles to judge again (`stored`: run nothing)."""

    stored: tuple[Path, ...] = ()
    sign: Path | None = None  # an SSH private key: sign the gate's manifest (bundle/signing)


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
    runs: tuple[runner.RunResult, ...] = ()  # the experiments run together, in order


class NotWritten(journal.NotWritten):
    """The gate directory could not be written (`error`); `result` is the decision when it
    was reached (a pass whose evidence was not written is no pass; a fail stays one)."""

    def __init__(self, error: OSError, out: Path, result: GateResult | None, ran: bool) -> None:
        super().__init__(error, "gate", out, ran)
        self.result = result
        self.failed = result is not None and result.verdict is Verdict.FAIL


class Interrupted(journal.Interrupted):
    """Ctrl-C (or SIGTERM) while the experiments ran: `out` holds the gate to resume
    (each journal keeps what finished)."""

    def __init__(self, out: Path) -> None:
        super().__init__("gate", out)


#: report.md from the decision, the judged experiments and the allowances in force
Render = Callable[[GateResult, Sequence[Judged], Sequence[Allowance]], str]


def plain(result: GateResult, judged: Sequence[Judged], allow: Sequence[Allowance]) -> str:
    """The default report.md of a gate run from Python: its verdict and reasons."""
    return f"# csorch gate: {result.verdict.value}\n"


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
    _one_name_each(experiments)
    # each experiment's own executor: and slurm: block, the flags over them
    pairs = list(settings.slurm) if settings.slurm else None
    for e in experiments:
        options.check_repeat(e, settings.repeat)
    runners = tuple(executor_for(e, settings.executor, pairs) for e in experiments)
    for executor in runners:
        check_local_only(executor, settings.devices)
    return Plan(policy, experiments, runners)


def _one_name_each(experiments: Sequence[Experiment]) -> None:
    """CsorchError (usage) naming both configs when two experiments share a name: each
    experiment's bundle is OUT/<name>, and a gate judges experiments by name."""
    seen: dict[str, Experiment] = {}
    for e in experiments:
        if e.name in seen:
            raise CsorchError(
                f"two experiments of the gate are named {e.name!r}: {seen[e.name].config} "
                f"and {e.config}",
                hint="give each experiment config its own `name:`",
            )
        seen[e.name] = e


def fresh(path: Path) -> bool:
    """Whether an experiment's directory can start from nothing: absent, or holding no
    file (a gate killed before the experiment's journal was written)."""
    if not path.exists():
        return True
    try:
        return not any(names for _, _, names in files_walk(path))
    except TooDeep:
        return False  # not nothing: whatever lies that deep is not csorch's to remove


def _judged(result: runner.RunResult) -> Judged:
    return Judged(result.experiment, result.attempts, result.judgement, str(result.bundle))


def run_experiments(
    plan: Plan,
    settings: Settings,
    choice: backends.Choice,
    facts: host.Facts,
    out: Path,
    devices: tuple[str, ...],
    resume: bool,
    listener: Listener = QUIET,
) -> list[runner.RunResult]:
    """Each experiment into its own bundle `out/<name>` (resumed from its journal when
    `resume`; one never begun starts afresh), all at once as one plan: every build starts
    at second 0 (a build two experiments share, one cache key, is built once: the second
    waits on its lock and finds it), and their builds and attempts share one pool of
    `jobs` slots (`settings.together` False: one experiment at a time). Each bundle is
    what it would be alone; an experiment under Slurm waits on its queue in its own
    thread. Ctrl-C (KeyboardInterrupt here) stops them all; each journal keeps what
    finished."""
    stop = threading.Event()
    slots = threading.BoundedSemaphore(settings.jobs or options.default_jobs())
    runs = [
        dataclasses.replace(opts, stop=stop, slots=slots)
        for opts in _options(plan, settings, choice, out, devices, resume)
    ]
    at_once = len(runs) if settings.together else 1
    with cf.ThreadPoolExecutor(max_workers=max(1, at_once)) as pool:
        futures = [
            pool.submit(runner.run_experiment, e, opts, facts, listener.experiment(e))
            for e, opts in zip(plan.experiments, runs, strict=True)
        ]
        try:
            return [f.result() for f in futures]
        except BaseException:
            stop.set()  # the others stop their children; their bundles say incomplete
            for f in futures:
                f.cancel()  # one at a time: those not begun do not begin
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
    for experiment, executor in zip(plan.experiments, plan.runners, strict=True):
        target = out / experiment.name
        made.append(
            options.make(
                choice,
                target,
                cache=settings.cache,
                jobs=settings.jobs,
                repeat=settings.repeat,
                # under Slurm each attempt gets its GPU from the scheduler (--gres)
                devices=devices if executor is None else (),
                fanout=settings.fanout,
                executor=executor,
                resume=resume and not fresh(target),
                carry_from=carried.source_for(settings.carry_from, experiment.name),
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
    listener: Listener = QUIET,
    render: Render | None = None,
    today: datetime.date | None = None,
) -> GateRun:
    """The whole gate. CsorchError for bad input or a resume refused (nothing run);
    NotWritten when the gate directory or a bundle cannot be written; Interrupted on
    Ctrl-C or SIGTERM (each experiment's journal keeps what finished). `listener` hears
    the choices and each experiment's progress; `render` makes report.md (default:
    `plain`, the verdict alone)."""
    if request.resume is not None and request.stored:
        raise CsorchError(
            "--from judges stored bundles and --resume continues a gate: give one of them",
            hint=f"csorch gate --resume {request.resume}, or csorch gate --from ... --out NEW",
        )
    if request.resume is not None:
        request = resumed(request, "gate")
    elif not request.configs:
        raise CsorchError("give a gate config or experiment configs (or --resume OUT)")
    # the key given, else the one the gate being resumed was started with
    sign = request.sign or request.settings.sign
    settings = dataclasses.replace(request.settings, sign=sign.resolve() if sign else None)
    if sign is not None and not sign.is_file():
        raise CsorchError(
            f"--sign {sign}: no such key file",
            hint="an SSH private key (a resumed gate signs with the key it began with; "
            "--sign KEY gives another)",
        )
    plan = load(request.configs, settings)
    carried.check_source(settings.carry_from, request.out, request.resume is not None)
    places.check_directory(settings.cache, "--cache-dir")
    places.check_cache(settings.cache, places.sources(plan.experiments))
    runs: list[runner.RunResult] = []
    sandbox_fact = ""  # how this host sandboxed what the gate ran ("": it ran nothing)
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
            check_new(out, "gate")
        listener.backend(choice)
        if request.resume is None:
            try:
                save_gate(
                    out, request.configs, dataclasses.replace(settings, backend=choice.backend)
                )
            except OSError as exc:
                raise NotWritten(exc, out, None, True) from None
        sandbox_fact = facts.fast.sandbox
        devices = options.resolve_devices(settings.devices, choice.backend, facts.fast)
        if devices:
            listener.devices(devices, settings.fanout)
        resuming = request.resume is not None
        try:
            runs = run_experiments(plan, settings, choice, facts, out, devices, resuming, listener)
        except KeyboardInterrupt:
            raise Interrupted(out) from None
        except OSError as exc:  # the disk is full, a bundle directory went away
            raise NotWritten(exc, out, None, True) from None
        judged = [_judged(r) for r in runs]
        judged = stored.read_back(judged, plan.experiments, settings.repeat)
        missing, broken, ran = [], [], True
    result = unsandboxed(
        decide(plan.policy, judged, missing, broken), sandbox_fact, settings.allow_unsandboxed
    )
    if out is not None:
        live = [a for a in plan.policy.allow if not a.expired(today or datetime.date.today())]
        text = (render or plain)(result, judged, live)
        try:
            finish(out, result, judged, text, sign)
        except OSError as exc:  # --out under a file, a full disk
            raise NotWritten(exc, out, result, ran) from None
    return GateRun(result, tuple(judged), plan, out, tuple(runs))


def unsandboxed(result: GateResult, fact: str, allowed: bool) -> GateResult:
    """A passing gate whose builds and attempts ran unsandboxed (`fact`, the host's
    `sandbox`, says "none: why", or "off" where the user turned it off) is inconclusive,
    unless the user accepts it (`allowed`)."""
    if not fact.startswith(("none", "off")) or allowed or result.verdict is not Verdict.PASS:
        return result
    why = (
        f"this host cannot sandbox builds and attempts ({fact}): a child could have hidden "
        "from csorch; --allow-unsandboxed accepts that"
    )
    return dataclasses.replace(result, verdict=Verdict.INCONCLUSIVE, reasons=(*result.reasons, why))
