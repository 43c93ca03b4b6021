"""`csorch gate`: the release gate, run (or resumed, or judged again from stored bundles)
by `gate.pipeline`; this module turns the flags into a request and prints."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator import files
from orchestrator.cli.common import (
    DEFAULT_CACHE,
    VERDICT_EXIT,
    Backend,
    CacheDir,
    CarryFrom,
    CompileCacheRemote,
    ExecutorOpt,
    Jobs,
    NoCompileCache,
    Repeat,
    SlurmOpt,
    app,
    compile_cache_off,
    out,
    step_summary,
)
from orchestrator.cli.progress import shown, table_of
from orchestrator.gate import manifest, pipeline
from orchestrator.model.job import Fanout
from orchestrator.report import verdicts


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
    no_compile_cache: NoCompileCache = False,
    compile_cache_remote: CompileCacheRemote = None,
    executor: ExecutorOpt = None,
    slurm: SlurmOpt = None,
    resume: Annotated[
        Path | None,
        typer.Option(help="continue the gate kept in this --out directory (killed or interrupted)"),
    ] = None,
    serial: Annotated[
        bool,
        typer.Option(
            "--serial", help="run the experiments one after another (default: all at once)"
        ),
    ] = False,
    carry_from: CarryFrom = None,
    sign: Annotated[
        Path | None,
        typer.Option(
            "--sign",
            help="an SSH private key: sign the gate's manifest (manifest.json.sig, "
            "ssh-keygen -Y sign); csorch verify --allowed-signers checks it",
        ),
    ] = None,
    allow_unsandboxed: Annotated[
        bool,
        typer.Option(
            "--allow-unsandboxed",
            help="let the gate pass on a host that cannot sandbox builds and attempts "
            "(csorch doctor's sandbox line)",
        ),
    ] = False,
) -> None:
    """The release gate: every fix causal, no unexpected signature, every checker live.
    Exit 0 pass, 1 fail, 3 inconclusive, 2 usage error."""
    compile_cache_off(no_compile_cache, compile_cache_remote)
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
        allow_unsandboxed=allow_unsandboxed,
        carry_from=carry_from,
    )
    request = pipeline.Request(
        configs=tuple(configs or ()),
        settings=settings,
        out=out_dir,
        resume=resume,
        stored=tuple(from_ or ()),
        sign=sign,
    )
    try:
        with shown() as listener:
            done = pipeline.run(request, listener=listener, render=verdicts.gate_report)
    except pipeline.NotWritten as exc:  # the boundary says what was not written
        if exc.result is not None:
            out.print(verdicts.gate(exc.result))
        raise
    for result in done.runs:
        table_of(result, result.backend)
    out.print(verdicts.gate(done.result))
    if done.out is not None:
        where = f"gate: {done.out / manifest.GATE}; report: {done.out / manifest.REPORT}"
        out.print(where, highlight=False)
        summary = done.out / manifest.REPORT
        if summary.is_file():
            step_summary(files.read_text(summary, errors="replace"), summary)
    raise typer.Exit(VERDICT_EXIT[done.result.verdict])
