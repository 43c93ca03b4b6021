"""`csorch compare`: pinned-release controls side by side (installed wheel, rebuilt,
patched), from a fresh run or a stored bundle."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from orchestrator.bundle import trust
from orchestrator.cli.common import (
    DEFAULT_CACHE,
    VERDICT_EXIT,
    Backend,
    CacheDir,
    ExitCode,
    Jobs,
    app,
    err,
    out,
)
from orchestrator.cli.progress import shown, table_of
from orchestrator.cli.verify import styled
from orchestrator.config.experiment import load_experiment
from orchestrator.errors import CsorchError
from orchestrator.judge import compare
from orchestrator.model import Verdict
from orchestrator.report import verdicts
from orchestrator.run import options, places, request


@app.command("compare")
def compare_command(
    config: Annotated[
        Path | None,
        typer.Argument(
            help="the experiment config (YAML); with --from, optional: checked "
            "against the bundle when given"
        ),
    ] = None,
    from_: Annotated[
        Path | None, typer.Option("--from", help="compare a stored bundle; run nothing")
    ] = None,
    backend: Backend = "auto",
    out_dir: Annotated[Path | None, typer.Option("--out", help="the results bundle")] = None,
    jobs: Jobs = None,
    cache_dir: CacheDir = DEFAULT_CACHE,
) -> None:
    """Pinned-release controls side by side (installed wheel, rebuilt, patched): binary
    identities, outcomes per case, signature sets, and whether the controls agree and the
    patch removes what they share. A stored bundle (--from) is compared only once it
    verifies, is complete and is CONFIG's (without CONFIG: the config file its manifest
    names, when that is there); the first line says whether it is signed (by whom),
    unsigned or tampered. Exit 0 yes, 1 the patch
    does not, 3 undecided."""
    options.check_backend(backend)
    if config is None and from_ is None:
        raise CsorchError("give CONFIG (or --from BUNDLE)", hint="csorch compare CONFIG")
    experiment = load_experiment(config) if config is not None else None
    if from_ is not None:
        trusted = trust.load_trusted(from_, experiment)
        # first: who made the evidence, or that it is tampered (docs/ci.md, "The first line")
        out.print(styled(trusted.statement), highlight=False, soft_wrap=True)
        if trusted.against:
            out.print(escape(trusted.against), highlight=False, soft_wrap=True)
        if not trusted.ok or trusted.records is None:
            for reason in trusted.reasons:
                err.print(f"[yellow]inconclusive:[/] {escape(reason)}", soft_wrap=True)
            err.print("the stored bundle is not evidence: nothing compared", highlight=False)
            raise typer.Exit(ExitCode.INCONCLUSIVE)
        records = trusted.records
        sources, builds, attempts = records.sources, records.builds, records.attempts
        experiment = trusted.experiment
    else:
        assert experiment is not None
        target = out_dir or options.default_out(experiment.name)
        choice, facts = options.choose_backend(backend, options.interpreter_of([experiment]))
        options.check_out(target)
        places.check_directory(cache_dir, "--cache-dir")
        places.check_cache(cache_dir, places.sources([experiment]))
        places.check_out(
            target,
            sources=places.sources([experiment]),
            cache=cache_dir,
        )
        out.print(f"backend: [bold]{choice.backend}[/] ({choice.reason})", highlight=False)
        opts = options.make(choice, target, cache=cache_dir, jobs=jobs)
        start = time.monotonic()
        with shown() as listener:
            result = request.execute(experiment, opts, facts, listener)
        table_of(result, opts.backend, time.monotonic() - start)
        sources, builds, attempts = result.sources, result.builds, result.attempts
    assert experiment is not None
    c = compare.compare(experiment, sources, builds, attempts)
    out.print(verdicts.comparison(c))
    if c.inconclusive or not c.agree or not c.shared:
        err.print("controls undecided: see the statements above", highlight=False)
        raise typer.Exit(ExitCode.INCONCLUSIVE)
    raise typer.Exit(VERDICT_EXIT[Verdict.PASS if c.removes else Verdict.FAIL])
