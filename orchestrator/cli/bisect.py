"""`csorch bisect`: the commit that brought (or removed) a target signature, searched by
`bisect.driver` over the commits `bisect.session` prepares; this module prints.

Exit codes: 0 the commit was found; 3 inconclusive (skips leave several candidates, an
end did not re-check as the search assumes, or the run was interrupted: the command that
resumes it is printed); 2 usage (arguments, config, missing checker).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from orchestrator.bisect import driver, session
from orchestrator.bisect.state import status
from orchestrator.cli import steps
from orchestrator.cli.common import (
    CompileCacheRemote,
    ExecutorOpt,
    ExitCode,
    Jobs,
    NoCompileCache,
    Repeat,
    SlurmOpt,
    app,
    compile_cache_off,
    err,
    out,
)
from orchestrator.errors import BisectError, CsorchError
from orchestrator.executors.choice import executor_for


@app.command("bisect")
def bisect_command(
    config: Annotated[Path | None, typer.Argument(help="the experiment config (YAML)")] = None,
    good: Annotated[
        str | None,
        typer.Option(help="the older end (with --find-fix: it still shows the target)"),
    ] = None,
    bad: Annotated[str | None, typer.Option(help="the newer end")] = None,
    repo: Annotated[
        Path | None, typer.Option(help="the git repository (default: the config's source's)")
    ] = None,
    subdir: Annotated[
        str | None, typer.Option(help="the subject's directory in the repository, e.g. ext")
    ] = None,
    find_fix: Annotated[
        bool, typer.Option("--find-fix", help="find the first commit without the target")
    ] = False,
    backend: Annotated[str, typer.Option(help="auto | compute-sanitizer | asan")] = "auto",
    variant: Annotated[
        str | None,
        typer.Option(help="the variant built at each commit (default: the one without patches)"),
    ] = None,
    repeat: Repeat = None,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out", help="state and step bundles (default: results/bisect-<name>-<time>)"
        ),
    ] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="the build cache")] = None,
    no_compile_cache: NoCompileCache = False,
    compile_cache_remote: CompileCacheRemote = None,
    jobs: Jobs = None,
    resume: Annotated[
        Path | None, typer.Option(help="continue the bisection kept in this --out directory")
    ] = None,
    executor: ExecutorOpt = None,
    slurm: SlurmOpt = None,
    probes: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="commits probed side by side each round (J): the range is cut into J+1 "
            "parts a round; same answer, fewer rounds (default 1)",
        ),
    ] = None,
) -> None:
    """Find the first commit that shows the config's target signature (or, with
    --find-fix, the first that no longer does)."""
    compile_cache_off(no_compile_cache, compile_cache_remote)
    start = time.monotonic()
    if resume is not None:
        asked, cache_dir, jobs, probes = session.resumed(resume, cache_dir, jobs, probes, out_dir)
        out_dir = resume
    elif config is None or not good or not bad:
        raise CsorchError(
            "give CONFIG, --good and --bad (or --resume OUT)",
            hint="csorch bisect CONFIG --good REF --bad REF [--find-fix]",
        )
    else:
        asked = session.Asked(config, good, bad, repo, subdir, find_fix, backend, variant, repeat)
    # a BisectError here is a range that is not one: a usage error (the boundary's)
    ready = session.prepare(asked, out_dir, cache_dir, jobs, probes or 1)
    out_path, state, subj, facts = ready.out, ready.state, ready.subject, ready.facts
    runner = executor_for(subj.experiment, executor, slurm)
    out.print(
        f"backend: [bold]{state.search.backend}[/] ({state.settings.reason})", highlight=False
    )
    out.print(f"state: {out_path / driver.STATE}", highlight=False)
    for note in ready.notes:  # a resume's marks are its step bundles', not bisect.json's
        err.print(f"[yellow]re-derived:[/] {escape(note)}", highlight=False, soft_wrap=True)
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    try:
        with Progress(*columns, console=err, transient=True) as progress:
            reporter = steps.Reporter(progress, subj.targets)
            state = driver.drive(out_path, state, subj, facts, reporter, runner)
    except BisectError as exc:  # an end did not re-check as the search assumes
        err.print(f"evidence: {out_path / driver.STEPS}", highlight=False, soft_wrap=True)
        raise _inconclusive(exc) from None
    answer = status(state.bisection)
    raise typer.Exit(steps.answer(state, answer, out_path, time.monotonic() - start))


def _inconclusive(exc: CsorchError) -> typer.Exit:
    err.print(
        f"[bold yellow]inconclusive:[/] {escape(exc.message)}", highlight=False, soft_wrap=True
    )
    if exc.hint:
        err.print(f"[dim]hint:[/] {escape(exc.hint)}", highlight=False, soft_wrap=True)
    return typer.Exit(ExitCode.INCONCLUSIVE)
