"""`csorch gate` (the release gate) and `csorch compare` (pinned-release controls)."""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from orchestrator import backends, bundle, cache, gate, host, judge
from orchestrator.bundle import verify
from orchestrator.cli.common import (
    VERDICT_EXIT,
    ExitCode,
    app,
    check_backend,
    check_out,
    choose_backend,
    err,
    fail,
    out,
    resolve_devices,
)
from orchestrator.cli.run import cannot_write, default_out, run_one
from orchestrator.cli.slurm import ExecutorOpt, SlurmOpt, check_local_only, executor_for
from orchestrator.config.experiment import load_experiment
from orchestrator.errors import BundleError, CsorchError
from orchestrator.executors.base import Executor
from orchestrator.files import atomic_write
from orchestrator.gate import allowances
from orchestrator.gate import manifest as gatedir
from orchestrator.gate.allowances import Allowance
from orchestrator.judge import compare
from orchestrator.model import Verdict
from orchestrator.model.job import Fanout
from orchestrator.report import markdown, verdicts
from orchestrator.run import journal
from orchestrator.run.options import Options

GATE_SCHEMA = "csorch.gate/1"
REPORT = gatedir.REPORT
#: what `csorch gate --resume OUT` starts again from: the configs and settings of the gate
GATE_RUN = "gate-run.json"
GATE_RUN_SCHEMA = "csorch.gate-run/1"

Backend = Annotated[
    str,
    typer.Option(
        help="auto | compute-sanitizer | asan (auto: compute-sanitizer where a "
        "GPU and the tool exist, else ASan)"
    ),
]
Jobs = Annotated[int | None, typer.Option(min=1, help="child processes at once")]
CacheDir = Annotated[Path, typer.Option(help="the build cache")]


def _check_backend(name: str) -> None:
    try:
        check_backend(name)
    except CsorchError as exc:
        raise fail(exc) from None


def _new_dir(path: Path) -> None:
    try:
        check_out(path)
    except CsorchError as exc:
        # a bundle's manifest hashes every log in it: old files would pass as evidence
        if (path / GATE_RUN).is_file():
            exc.hint += f", or continue that gate: {journal.resume_command('gate', path)}"
        raise fail(exc) from None


def _start(backend: str, out_dir: Path) -> tuple[backends.Choice, host.Facts]:
    """The backend to run with (announced), for results going to a new `out_dir`."""
    try:
        choice, facts = choose_backend(backend)
    except CsorchError as exc:
        raise fail(exc) from None
    _new_dir(out_dir)
    out.print(f"backend: [bold]{choice.backend}[/] ({choice.reason})", highlight=False)
    return choice, facts


def _options(
    choice: backends.Choice,
    out_dir: Path,
    cache_dir: Path,
    jobs: int | None,
    repeat: int | None = None,
    devices: tuple[str, ...] = (),
    fanout: Fanout = Fanout.SHARD,
    executor: Executor | None = None,
    resume: bool = False,
) -> Options:
    return Options(
        backend=choice.backend,
        reason=choice.reason,
        out=out_dir,
        cache=cache_dir,
        jobs=jobs or min(os.cpu_count() or 1, 8),
        repeat=repeat,
        devices=devices,
        fanout=fanout,
        executor=executor,
        resume=resume,
    )


def _saved_gate(resume: Path) -> dict:
    """The gate run kept in `resume` (its configs and settings); CsorchError if none."""
    path = resume / GATE_RUN
    try:
        doc = json.loads(path.read_text())
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


def _fresh(path: Path) -> bool:
    """Whether an experiment's directory can start from nothing: absent, or holding no
    file (a gate killed before the experiment's journal was written)."""
    return not path.exists() or not any(p.is_file() for p in path.rglob("*"))


def _bundles(paths: list[Path]) -> list[Path]:
    """Experiment bundles: each path is one, or a gate's directory holding several."""
    found = []
    for p in paths:
        if (p / bundle.RESULTS).exists():
            found.append(p)
        elif p.is_dir() and (
            subs := sorted(d for d in p.iterdir() if (d / bundle.RESULTS).exists())
        ):
            found += subs
        else:
            raise fail(
                CsorchError(
                    f"{p} is not a results bundle (no {bundle.RESULTS}) nor a gate's directory",
                    hint="give what `csorch run --out` or `csorch gate --out` wrote",
                )
            )
    return found


def stored(path: Path) -> gate.Judged:
    """A bundle's records, judged again from its attempts (nothing runs); BundleError if
    it cannot be read."""
    results, _ = bundle.read(path)
    try:
        records = bundle.records(results)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        # of the right schema but damaged: the user's evidence, not a bug of csorch
        raise BundleError(path, f"{bundle.RESULTS} cannot be read back: {exc!r}") from None
    failed = judge.failed_builds(records.builds)
    problems = []
    if not results.get("complete"):
        why = "interrupted" if results.get("interrupted") else "it never finished"
        problems.append(f"bundle {path} is incomplete ({why})")
    checked = verify.verify(path)
    if not checked.ok:  # evidence changed since the run: judge nothing from it
        bad = [c for c in checked.checks if c.status in verify.FAILING]
        first = bad[0]
        problems.append(
            f"bundle {path} does not verify ({len(bad)} problem(s)), first: {first.kind.value} "
            f"{first.path} {first.status.value}" + (f": {first.detail}" if first.detail else "")
        )
    return gate.Judged(
        records.experiment,
        records.attempts,
        judge.causality(records.experiment, records.attempts, failed),
        str(path),
        tuple(problems),
    )


def _sections(judged: list[gate.Judged], allow: Sequence[Allowance] = ()) -> list[str]:
    """Each experiment's Markdown section, from its bundle, the findings the policy's
    allowances tolerate marked `allowed: <reason>` (expired ones tolerate nothing)."""
    sections = []
    for j in judged:
        if j.bundle and (Path(j.bundle) / bundle.RESULTS).exists():
            results, manifest = bundle.read(j.bundle)
            sections.append(markdown.render(allowances.mark_results(results, allow), manifest))
    return sections


@app.command("gate")
def gate_command(
    configs: Annotated[
        list[Path] | None,
        typer.Argument(
            help="a gate config (configs/release-gate.yaml) and/or experiment configs "
            "(with --resume: none)"
        ),
    ] = None,
    from_: Annotated[
        list[Path] | None,
        typer.Option(
            "--from", help="judge these stored bundles (or a gate's directory) again; run nothing"
        ),
    ] = None,
    backend: Backend = "auto",
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="where the bundles, gate.json and report.md go")
    ] = None,
    repeat: Annotated[int | None, typer.Option(min=1, help="N for every run")] = None,
    devices: Annotated[
        str | None,
        typer.Option(help="GPUs to fan out over, e.g. 0,1, or all (every GPU, when two or more)"),
    ] = None,
    fanout: Annotated[
        Fanout, typer.Option(help="shard: split the attempts over the devices; replicate: all")
    ] = Fanout.SHARD,
    jobs: Jobs = None,
    cache_dir: CacheDir = cache.DEFAULT_DIR,
    executor: ExecutorOpt = None,
    slurm: SlurmOpt = None,
    resume: Annotated[
        Path | None,
        typer.Option(help="continue the gate kept in this --out directory (killed or interrupted)"),
    ] = None,
) -> None:
    """The release gate: every fix causal, no unexpected signature, every checker live.
    Exit 0 pass, 1 fail, 3 inconclusive, 2 usage error."""
    if resume is not None:
        try:
            saved = _saved_gate(resume)
        except CsorchError as exc:
            raise fail(exc) from None
        configs = configs or [Path(c) for c in saved["configs"]]
        backend = saved["backend"] if backend == "auto" else backend
        repeat = repeat or saved.get("repeat")
        jobs = jobs or saved.get("jobs")
        devices = devices or saved.get("devices")
        fanout = Fanout(saved.get("fanout") or fanout.value)
        executor = executor or saved.get("executor")
        slurm = slurm or saved.get("slurm")
        if cache_dir == cache.DEFAULT_DIR and saved.get("cache"):
            cache_dir = Path(saved["cache"])
        out_dir = resume
    elif not configs:
        raise fail(CsorchError("give a gate config or experiment configs (or --resume OUT)"))
    _check_backend(backend)
    try:
        policies = [c for c in configs if gate.is_gate_config(c)]
        if len(policies) > 1:
            raise CsorchError(
                "give at most one gate config", hint=f"got {', '.join(map(str, policies))}"
            )
        extra = [c.resolve() for c in configs if c not in policies]
        policy = gate.load_policy(policies[0]) if policies else gate.default_policy(extra)
        listed = list(dict.fromkeys([*policy.experiments, *extra]))
        experiments = [load_experiment(c) for c in listed]
        # each experiment's own executor: and slurm: block, the flags over them
        runners = [executor_for(e, executor, slurm) for e in experiments]
        for runner in runners:
            check_local_only(runner, devices)
    except CsorchError as exc:
        raise fail(exc) from None
    judged: list[gate.Judged] = []
    broken: list[str] = []
    if from_:
        for path in _bundles(from_):
            try:
                judged.append(stored(path))
            except BundleError as exc:  # a truncated results.json: judge nothing from it
                broken.append(f"bundle {path} cannot be read: {exc.message}")
        seen = {j.experiment.name for j in judged}
        missing = [e.name for e in experiments if e.name not in seen] if not broken else []
    else:
        out_dir = out_dir or default_out(policy.name)
        if resume is None:
            choice, facts = _start(backend, out_dir)
            out_dir.mkdir(parents=True, exist_ok=True)
            record = {
                "schema": GATE_RUN_SCHEMA,
                "configs": [str(c.resolve()) for c in configs],
                "backend": choice.backend,
                "repeat": repeat,
                "jobs": jobs,
                "devices": devices,
                "fanout": fanout.value,
                "executor": executor,
                "slurm": slurm,
                "cache": str(cache_dir.resolve()),
                "resume": journal.resume_command("gate", out_dir),
            }
            try:
                atomic_write(out_dir / GATE_RUN, json.dumps(record, indent=1))
            except OSError as exc:
                raise cannot_write(exc, journal.resume_command("gate", out_dir), out_dir) from None
        else:
            try:
                choice, facts = choose_backend(backend)
            except CsorchError as exc:
                raise fail(exc) from None
            out.print(f"backend: [bold]{choice.backend}[/] ({choice.reason})", highlight=False)
        try:
            device_list = resolve_devices(devices, choice.backend, facts.fast)
        except CsorchError as exc:
            raise fail(exc) from None
        if device_list:
            out.print(f"devices: {','.join(device_list)} ({fanout.value})", highlight=False)
        again = journal.resume_command("gate", out_dir)
        for experiment, runner in zip(experiments, runners, strict=True):
            target = out_dir / experiment.name
            # each experiment resumes from its journal; one never begun starts afresh
            resumed = resume is not None and not _fresh(target)
            # under Slurm each attempt gets its GPU from the scheduler (--gres)
            local = device_list if runner is None else ()
            options = _options(
                choice, target, cache_dir, jobs, repeat, local, fanout, runner, resume=resumed
            )
            result = run_one(experiment, options, facts, resume=again)
            judged.append(
                gate.Judged(experiment, result.attempts, result.judgement, str(result.bundle))
            )
        missing = []
    result = gate.decide(policy, judged, missing, broken)
    out.print(verdicts.gate(result))
    if out_dir is not None:
        doc = {"schema": GATE_SCHEMA, **result.to_dict()}
        live = [a for a in policy.allow if not a.expired(datetime.date.today())]
        report = "\n".join([verdicts.gate_markdown(result), *_sections(judged, live)])
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            atomic_write(out_dir / gatedir.GATE, json.dumps(doc, indent=1))
            atomic_write(out_dir / REPORT, report)
            # last: the manifest covers gate.json, report.md and each bundle judged
            gatedir.write_manifest(out_dir, [Path(j.bundle) for j in judged if j.bundle])
        except OSError as exc:  # --out under a file, a full disk
            if from_:  # nothing ran: there is nothing to resume, only the --out to fix
                err.print(f"error: --out {out_dir}: {exc}", highlight=False, soft_wrap=True)
                stop = typer.Exit(ExitCode.INCONCLUSIVE)
            else:
                stop = cannot_write(exc, journal.resume_command("gate", out_dir), out_dir)
            # a pass whose evidence was not written is no pass; a fail stays a fail
            if result.verdict is Verdict.FAIL:
                raise typer.Exit(ExitCode.FAIL) from None
            raise stop from None
        out.print(f"gate: {out_dir / 'gate.json'}; report: {out_dir / REPORT}", highlight=False)
    raise typer.Exit(VERDICT_EXIT[result.verdict])


@app.command("compare")
def compare_command(
    config: Annotated[Path, typer.Argument(help="the experiment config (YAML)")],
    from_: Annotated[
        Path | None, typer.Option("--from", help="compare a stored bundle; run nothing")
    ] = None,
    backend: Backend = "auto",
    out_dir: Annotated[Path | None, typer.Option("--out", help="the results bundle")] = None,
    jobs: Jobs = None,
    cache_dir: CacheDir = cache.DEFAULT_DIR,
) -> None:
    """Pinned-release controls side by side (installed wheel, rebuilt, patched): binary
    identities, outcomes per case, signature sets, and whether the controls agree and the
    patch removes what they share. Exit 0 yes, 1 the patch does not, 3 undecided."""
    _check_backend(backend)
    try:
        experiment = load_experiment(config)
    except CsorchError as exc:
        raise fail(exc) from None
    if from_ is not None:
        try:
            records = bundle.records(bundle.read(from_)[0])
        except BundleError as exc:
            raise fail(exc) from None
        sources, builds, attempts = records.sources, records.builds, records.attempts
        experiment = records.experiment
    else:
        target = out_dir or default_out(experiment.name)
        choice, facts = _start(backend, target)
        options = _options(choice, target, cache_dir, jobs)
        result = run_one(experiment, options, facts)
        sources, builds, attempts = result.sources, result.builds, result.attempts
    c = compare.compare(experiment, sources, builds, attempts)
    out.print(verdicts.comparison(c))
    if c.inconclusive or not c.agree or not c.shared:
        err.print("controls undecided: see the statements above", highlight=False)
        raise typer.Exit(ExitCode.INCONCLUSIVE)
    raise typer.Exit(VERDICT_EXIT[Verdict.PASS if c.removes else Verdict.FAIL])
