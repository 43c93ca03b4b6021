"""`csorch scan -- pytest ARGS` (or `-- ./binary ARGS`): the tree as it is under the
checker, no config; the per-case findings table and a bundle."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from orchestrator import backends, bundle, report
from orchestrator.cli.common import (
    DEFAULT_CACHE,
    VERDICT_EXIT,
    Backend,
    CacheDir,
    CompileCacheRemote,
    Jobs,
    NoCompileCache,
    Repeat,
    app,
    compile_cache_off,
    out,
    step_summary,
)
from orchestrator.cli.progress import shown, table_of
from orchestrator.config.schema import DURATION_RE, PRESETS, UNITS
from orchestrator.errors import CsorchError
from orchestrator.run import options, places, request, scan


def _seconds(text: str) -> float:
    match = DURATION_RE.match(text.strip())
    if not match:
        raise CsorchError(f"--timeout {text!r}: give seconds, or 90s / 10m / 2h")
    return float(match["n"]) * UNITS[match["unit"]]


@app.command(
    "scan",
    context_settings={"allow_interspersed_args": False},
    no_args_is_help=True,
)
def scan_command(
    argv: Annotated[
        list[str],
        typer.Argument(
            metavar="-- COMMAND...",
            help="pytest ARGS, python -m pytest ARGS, or a program and its arguments",
        ),
    ],
    checker: Annotated[
        str, typer.Option(help="memcheck | initcheck | racecheck | synccheck | none")
    ] = "memcheck",
    backend: Backend = "auto",
    source: Annotated[
        Path | None,
        typer.Option(help="the tree to scan (default: here); csorch works on a copy of it"),
    ] = None,
    build: Annotated[
        str | None,
        typer.Option(
            help="jit, wheel, or a command line run in the copy first (e.g. 'make'); "
            "default: none, the tree as it is"
        ),
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option", metavar="OPT", help="an extra compute-sanitizer option (repeatable)"
        ),
    ] = None,
    preset: Annotated[
        str, typer.Option(help="a named set of compute-sanitizer options: " + ", ".join(PRESETS))
    ] = "",
    target_processes: Annotated[
        str, typer.Option(help="all | application-only (default: the tool's, all)")
    ] = "",
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", help="the results bundle (default: results/scan-<tree>-<time>)"),
    ] = None,
    repeat: Repeat = None,
    timeout: Annotated[str, typer.Option(help="per attempt: seconds, or 90s / 10m / 2h")] = "15m",
    devices: Annotated[
        str | None, typer.Option(help="GPUs to fan out over, e.g. 0,1, or all")
    ] = None,
    jobs: Jobs = None,
    cache_dir: CacheDir = DEFAULT_CACHE,
    no_compile_cache: NoCompileCache = False,
    compile_cache_remote: CompileCacheRemote = None,
    keep_work: Annotated[bool, typer.Option(help="keep the scratch tree")] = False,
) -> None:
    """Run a command under the checker, as it is: no config, no expectations. Exit 0 when
    the checker found nothing, 1 when it found something, 3 when the evidence is
    incomplete (a build that failed, a timeout, a truncated log)."""
    compile_cache_off(no_compile_cache, compile_cache_remote)
    experiment = scan.experiment(
        argv,
        cwd=Path.cwd(),
        source=source,
        checker=checker,
        build=build,
        options=tuple(option or ()),
        preset=preset,
        target_processes=target_processes,
        timeout=_seconds(timeout),
    )
    if out_dir is not None:
        options.check_out(out_dir)
    # where csorch writes, checked as `run` checks it, before anything is written: the
    # scanned tree (here, by default) is the user's, and so is its repository
    places.check_directory(cache_dir, "--cache-dir")
    places.check_cache(cache_dir, places.sources([experiment]))
    if out_dir is not None:
        places.check_out(out_dir, sources=places.sources([experiment]), cache=cache_dir)
    choice, facts = options.choose_backend(backend)
    for run in experiment.runs:  # before anything is built: a run it cannot serve is usage
        why = backends.named(choice.backend).serves(run.checker)
        if why:
            raise CsorchError(
                f"--checker {checker} on the {choice.backend} backend: {why}",
                hint=f"--checker memcheck or none on {choice.backend}, or --backend "
                "compute-sanitizer on a host with a GPU",
            )
    device_list = options.resolve_devices(devices, choice.backend, facts.fast)
    out.print(f"backend: [bold]{choice.backend}[/] ({choice.reason})", highlight=False)
    opts = options.make(
        choice,
        out_dir or options.default_out(experiment.name),
        cache=cache_dir,
        jobs=jobs,
        devices=device_list,
        repeat=repeat,
        keep_work=keep_work,
        judge=scan.verdict,
    )
    start = time.monotonic()
    with shown() as listener:
        result = request.execute(experiment, opts, facts, listener)
    table_of(result, opts.backend, time.monotonic() - start)
    step_summary(report.render("markdown", *bundle.read(result.bundle)), result.bundle)
    raise typer.Exit(VERDICT_EXIT[result.judgement.verdict])
