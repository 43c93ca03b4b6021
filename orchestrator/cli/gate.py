"""`csorch gate`: the release gate, run (or resumed, or judged again from stored bundles)
by `gate.pipeline`; this module turns the flags into a request and prints."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator import backends, proc
from orchestrator.cli.common import (
    DEFAULT_CACHE,
    VERDICT_EXIT,
    Backend,
    CacheDir,
    ExecutorOpt,
    ExitCode,
    Jobs,
    Repeat,
    SlurmOpt,
    app,
    cannot_write,
    err,
    fail,
    interrupted,
    out,
    step_summary,
)
from orchestrator.cli.progress import run_one, table_of, together
from orchestrator.errors import CsorchError
from orchestrator.gate import manifest, pipeline
from orchestrator.model import Verdict
from orchestrator.model.job import Fanout
from orchestrator.report import verdicts
from orchestrator.run import journal


class _Said(pipeline.Reporter):
    def backend(self, choice: backends.Choice) -> None:
        out.print(f"backend: [bold]{choice.backend}[/] ({choice.reason})", highlight=False)

    def devices(self, devices: tuple[str, ...], fanout: Fanout) -> None:
        out.print(f"devices: {','.join(devices)} ({fanout.value})", highlight=False)


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
    repeat: Repeat = None,
    devices: Annotated[
        str | None,
        typer.Option(help="GPUs to fan out over, e.g. 0,1, or all (every GPU, when two or more)"),
    ] = None,
    fanout: Annotated[
        Fanout, typer.Option(help="shard: split the attempts over the devices; replicate: all")
    ] = Fanout.SHARD,
    jobs: Jobs = None,
    cache_dir: CacheDir = DEFAULT_CACHE,
    executor: ExecutorOpt = None,
    slurm: SlurmOpt = None,
    resume: Annotated[
        Path | None,
        typer.Option(help="continue the gate kept in this --out directory (killed or interrupted)"),
    ] = None,
    serial: Annotated[
        bool, typer.Option("--serial", help="run the experiments one after another")
    ] = False,
    sign: Annotated[
        Path | None,
        typer.Option(
            "--sign",
            help="an SSH private key: sign the gate's manifest (manifest.json.sig, "
            "ssh-keygen -Y sign); csorch verify --allowed-signers checks it",
        ),
    ] = None,
) -> None:
    """The release gate: every fix causal, no unexpected signature, every checker live.
    Exit 0 pass, 1 fail, 3 inconclusive, 2 usage error."""
    settings = pipeline.Settings(
        backend=backend,
        repeat=repeat,
        jobs=jobs,
        devices=devices,
        fanout=fanout,
        executor=executor,
        slurm=tuple(slurm) if slurm else None,
        cache=cache_dir,
        together=not serial,
    )
    request = pipeline.Request(
        configs=tuple(configs or ()),
        settings=settings,
        out=out_dir,
        resume=resume,
        stored=tuple(from_ or ()),
        sign=sign,
    )

    def start(events_for):  # type: ignore[no-untyped-def]
        return pipeline.run(
            request,
            reporter=_Said(),
            run_one=run_one,
            render=verdicts.gate_report,
            events_for=events_for,
        )

    previous = proc.catch_signals()
    try:
        done = together(start)
    except CsorchError as exc:
        raise fail(exc) from None
    except pipeline.NotWritten as exc:
        raise _not_written(exc) from None
    except pipeline.Interrupted as exc:  # run together: each journal keeps its part
        raise interrupted(journal.resume_command("gate", exc.out)) from None
    finally:
        proc.restore_signals(previous)
    for result in done.runs:
        table_of(result, result.backend)
    out.print(verdicts.gate(done.result))
    if done.out is not None:
        where = f"gate: {done.out / manifest.GATE}; report: {done.out / manifest.REPORT}"
        out.print(where, highlight=False)
        summary = done.out / manifest.REPORT
        if summary.is_file():
            step_summary(summary.read_text(encoding="utf-8"), summary)
    raise typer.Exit(VERDICT_EXIT[done.result.verdict])


def _not_written(exc: pipeline.NotWritten) -> typer.Exit:
    """The gate directory could not be written: a fail stays a fail; anything else is
    inconclusive (a pass whose evidence was not written is no pass)."""
    if exc.result is not None:
        out.print(verdicts.gate(exc.result))
    if not exc.ran:  # nothing ran: there is nothing to resume, only the --out to fix
        err.print(f"error: --out {exc.out}: {exc.error}", highlight=False, soft_wrap=True)
        stop = typer.Exit(ExitCode.INCONCLUSIVE)
    else:
        stop = cannot_write(exc.error, journal.resume_command("gate", exc.out), exc.out)
    if exc.result is not None and exc.result.verdict is Verdict.FAIL:
        return typer.Exit(ExitCode.FAIL)
    return stop
