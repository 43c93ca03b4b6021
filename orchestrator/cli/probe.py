"""`csorch probe`: one tree judged for `git bisect run`, in git's protocol: 0 good (the
target is absent), 1 bad (it shows in k of N repeats), 125 skip (the tree cannot be
tested: no build, a patch that does not apply, inconclusive or flaky evidence), and 128
when csorch itself cannot judge (bad arguments or config, a missing checker, Ctrl-C): git
stops on a code above 127, where 1-127 would have marked the commit bad and 125 silently
skipped every commit.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from typer.core import TyperCommand

from orchestrator.bisect import evaluator, session
from orchestrator.bisect.state import Mark
from orchestrator.cli.common import (
    ABORT,
    DEFAULT_CACHE,
    CacheDir,
    ExitCode,
    Jobs,
    Repeat,
    app,
    out,
)
from orchestrator.cli.helptext import _click
from orchestrator.cli.steps import MARK_STYLE
from orchestrator.config.experiment import load_experiment
from orchestrator.run import options, places


class ProbeExit(enum.IntEnum):
    GOOD = 0
    BAD = 1
    SKIP = 125
    ABORT = 128


PROBE_EXIT = {Mark.GOOD: ProbeExit.GOOD, Mark.BAD: ProbeExit.BAD, Mark.SKIP: ProbeExit.SKIP}
ABORT["probe"] = ProbeExit.ABORT  # csorch cannot judge: git bisect run stops


#: what a bad argument raises: TyperException in a Typer with its own Click, Click's
#: ClickException before
_BAD_ARGUMENTS = tuple(
    {getattr(typer, "TyperException", None), getattr(_click, "ClickException", None)} - {None}
)


class _GitProtocol(TyperCommand):
    """Bad arguments abort `git bisect run` (128) instead of marking the commit bad (2)."""

    def parse_args(self, ctx, args):  # type: ignore[no-untyped-def]
        try:
            return super().parse_args(ctx, args)
        except _BAD_ARGUMENTS as exc:
            if getattr(exc, "exit_code", None) == ExitCode.USAGE:
                exc.exit_code = ProbeExit.ABORT  # type: ignore[attr-defined]
            raise


@app.command("probe", cls=_GitProtocol)
def probe_command(
    config: Annotated[Path, typer.Argument(help="the experiment config (YAML)")],
    variant: Annotated[
        str | None,
        typer.Option(help="the variant to build (default: the one without patches)"),
    ] = None,
    backend: Annotated[str, typer.Option(help="auto | compute-sanitizer | asan")] = "auto",
    repo: Annotated[Path | None, typer.Option(help="judge a commit of this repository")] = None,
    ref: Annotated[str | None, typer.Option(help="the commit (default: HEAD)")] = None,
    subdir: Annotated[str | None, typer.Option(help="the subject's directory in it")] = None,
    repeat: Repeat = None,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="each probe adds a bundle DIR/<time>-<commit> (default: probe/ in the "
            "results home, never the work tree git bisect runs in)",
        ),
    ] = None,
    cache_dir: CacheDir = DEFAULT_CACHE,
    jobs: Jobs = None,
) -> None:
    """Judge one tree for `git bisect run`: exit 0 good, 1 bad (the target shows in k of
    N repeats), 125 skip (untestable), 128 csorch cannot judge (stops git bisect)."""
    # a CsorchError or an interrupt: git's "abort" (ABORT, the boundary's)
    experiment = load_experiment(config)
    # checked before anything is written (a backend's set-up builds into the cache)
    trees = (*places.sources([experiment]), *([repo] if repo is not None else []))
    places.check_cache(cache_dir, trees)
    if out_dir is None:
        out_dir = options.RESULTS / "probe"
    else:  # a directory of probes: never in the user's tree, the cache or a bundle
        places.check_out(out_dir, sources=trees, cache=cache_dir)
    choice, facts = options.choose_backend(backend)
    subj = evaluator.subject(experiment, variant, choice.backend)
    label, spec = session.probe_spec(subj, repo, ref, subdir)
    opts = options.make(
        choice,
        evaluator.fresh_dir(out_dir.resolve(), f"{session.stamp()}-{label}"),
        cache=cache_dir,
        work=out_dir.resolve() / ".work",
        jobs=jobs,
        repeat=repeat,
    )
    # host facts that contradict each other: no commit judged, git's "abort"
    evaluation = evaluator.evaluate(subj, spec, opts, facts)
    style = MARK_STYLE[evaluation.mark]
    out.print(
        f"probe {label} ({choice.backend}): [{style}]{evaluation.mark.value.upper()}[/] "
        f"{escape(evaluation.reason)} ({evaluation.build}, {evaluation.duration:.0f} s); "
        f"bundle: {evaluation.bundle}",
        highlight=False,
        soft_wrap=True,
    )
    raise typer.Exit(PROBE_EXIT[evaluation.mark])
