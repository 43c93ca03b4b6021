"""`csorch gate` (the release gate) and `csorch compare` (pinned-release controls)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer

from orchestrator import (
    backends,
    bundle,
    cache,
    compare,
    gate,
    gatedir,
    host,
    judge,
    verify,
    workflow,
)
from orchestrator.bundle import atomic_write
from orchestrator.cli import (
    VERDICT_EXIT,
    ExitCode,
    app,
    check_backend,
    check_out,
    choose_backend,
    err,
    fail,
    out,
)
from orchestrator.cli.run import default_out, run_one
from orchestrator.config import load_experiment
from orchestrator.errors import BundleError, CsorchError
from orchestrator.model import Verdict
from orchestrator.report import markdown, verdicts

GATE_SCHEMA = "csorch.gate/1"
REPORT = gatedir.REPORT

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
        raise fail(exc) from None


def _start(backend: str, out_dir: Path) -> tuple[backends.Choice, host.Host]:
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
) -> workflow.Options:
    return workflow.Options(
        backend=choice.backend,
        reason=choice.reason,
        out=out_dir,
        cache=cache_dir,
        jobs=jobs or min(os.cpu_count() or 1, 8),
        repeat=repeat,
    )


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


def _sections(judged: list[gate.Judged]) -> list[str]:
    """Each experiment's Markdown section, from its bundle."""
    sections = []
    for j in judged:
        if j.bundle and (Path(j.bundle) / bundle.RESULTS).exists():
            results, manifest = bundle.read(j.bundle)
            sections.append(markdown.render(results, manifest))
    return sections


@app.command("gate")
def gate_command(
    configs: Annotated[
        list[Path],
        typer.Argument(help="a gate config (configs/release-gate.yaml) and/or experiment configs"),
    ],
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
    jobs: Jobs = None,
    cache_dir: CacheDir = cache.DEFAULT_DIR,
) -> None:
    """The release gate: every fix causal, no unexpected signature, every checker live.
    Exit 0 pass, 1 fail, 3 inconclusive, 2 usage error."""
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
        choice, facts = _start(backend, out_dir)
        for experiment in experiments:
            options = _options(choice, out_dir / experiment.name, cache_dir, jobs, repeat)
            result = run_one(experiment, options, facts)
            judged.append(
                gate.Judged(experiment, result.attempts, result.judgement, str(result.bundle))
            )
        missing = []
    result = gate.decide(policy, judged, missing, broken)
    out.print(verdicts.gate(result))
    if out_dir is not None:
        doc = {"schema": GATE_SCHEMA, **result.to_dict()}
        report = "\n".join([verdicts.gate_markdown(result), *_sections(judged)])
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            atomic_write(out_dir / gatedir.GATE, json.dumps(doc, indent=1))
            atomic_write(out_dir / REPORT, report)
            # last: the manifest covers gate.json, report.md and each bundle judged
            gatedir.write_manifest(out_dir, [Path(j.bundle) for j in judged if j.bundle])
        except OSError as exc:  # --out under a file, a full disk
            err.print(f"error: --out {out_dir}: {exc}", highlight=False, soft_wrap=True)
            # a pass whose evidence was not written is no pass; a fail stays a fail
            failed = result.verdict is Verdict.FAIL
            raise typer.Exit(ExitCode.FAIL if failed else ExitCode.INCONCLUSIVE) from None
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
