"""`csorch run`: one experiment end to end, with progress bars, then its table: the flags
make a run request (run/request.py), the library runs it, and this module prints."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from orchestrator import bundle, report
from orchestrator.bundle import signing
from orchestrator.bundle.layout import SIGNATURE
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
from orchestrator.errors import CsorchError
from orchestrator.judge import proposal
from orchestrator.model.job import Fanout
from orchestrator.run.request import Request, Settings, run


def _drop_stale(out: Path) -> None:
    """Remove a signature a resume left behind over a manifest it has since rewritten
    (unsigned, the bundle says so; a stale signature would read as tampering)."""
    if signing.present(out) and signing.check(out, None):
        (out / SIGNATURE).unlink(missing_ok=True)


@app.command("run")
def run_command(
    config: Annotated[
        Path | None, typer.Argument(help="the experiment config (YAML; with --resume: optional)")
    ] = None,
    backend: Backend = "auto",
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", help="the results bundle (default: results/<experiment>-<time>)"),
    ] = None,
    repeat: Repeat = None,
    devices: Annotated[
        str | None,
        typer.Option(
            help="GPUs to fan out over, e.g. 0,1 (CUDA_VISIBLE_DEVICES per child), or all"
        ),
    ] = None,
    fanout: Annotated[
        Fanout,
        typer.Option(
            help="shard: split the attempts over the devices; replicate: run every attempt "
            "on every device"
        ),
    ] = Fanout.SHARD,
    jobs: Jobs = None,
    cache_dir: CacheDir = DEFAULT_CACHE,
    no_compile_cache: NoCompileCache = False,
    compile_cache_remote: CompileCacheRemote = None,
    keep_work: Annotated[bool, typer.Option(help="keep the scratch trees")] = False,
    case: Annotated[
        list[str] | None, typer.Option("--case", help="run only this config case (repeatable)")
    ] = None,
    executor: ExecutorOpt = None,
    slurm: SlurmOpt = None,
    resume: Annotated[
        Path | None,
        typer.Option(help="continue the run kept in this --out directory (killed or interrupted)"),
    ] = None,
    carry_from: CarryFrom = None,
    sign: Annotated[
        Path | None,
        typer.Option(
            "--sign",
            help="an SSH private key: sign the bundle's manifest (manifest.json.sig, "
            "ssh-keygen -Y sign); csorch verify --allowed-signers checks it",
        ),
    ] = None,
) -> None:
    """Build every variant, run its cases under the checker, and judge causality; with
    --sign KEY, sign the bundle as `csorch gate --sign` signs a gate (unsigned without)."""
    compile_cache_off(no_compile_cache, compile_cache_remote)
    if sign is not None and not sign.is_file():  # before anything runs, as the gate does
        raise CsorchError(f"--sign {sign}: no such key file", hint="an SSH private key")
    settings = Settings(
        backend=backend,
        repeat=repeat,
        jobs=jobs,
        devices=devices,
        fanout=fanout,
        executor=executor,
        slurm=tuple(slurm) if slurm else None,
        cache=cache_dir,
        cases=tuple(case or ()),
        keep_work=keep_work,
        carry_from=carry_from,
        sign=sign,
    )
    asked = Request(
        configs=(config,) if config is not None else (),
        settings=settings,
        out=out_dir,
        resume=resume,
    )
    start = time.monotonic()
    try:
        with shown() as listener:
            result = run(asked, listener)  # signs last where --sign (or the resumed run) asks
    finally:
        if resume is not None:
            _drop_stale(resume)
    table_of(result, result.backend, time.monotonic() - start)
    found = proposal.propose(result.experiment, result.attempts)
    if found:  # the config has no target: what every control showed and the fix did not
        experiment = result.experiment
        out.print(
            f"proposed target (every control shows it, {experiment.expect.fix} does not; "  # type: ignore[union-attr]
            f"paste under expect: in {experiment.config}):",
            highlight=False,
            soft_wrap=True,
        )
        out.print(proposal.target_block(found).rstrip(), highlight=False, markup=False)
    step_summary(report.render("markdown", *bundle.read(result.bundle)), result.bundle)
    raise typer.Exit(VERDICT_EXIT[result.judgement.verdict])
