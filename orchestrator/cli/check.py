"""`csorch check CONFIG`: load and validate a config and print what a run would do (the
plan from `run.preview`), building and running nothing. Exit 0 when the plan is sound, 2
for a config error or a problem found without building (a missing patch or test file, a
jit build with no description)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from orchestrator.cli.common import Backend, ExitCode, app, err, out
from orchestrator.config.experiment import load_experiment
from orchestrator.run import options
from orchestrator.run.preview import preview


@app.command("check")
def check(
    config: Annotated[Path, typer.Argument(help="experiment YAML")],
    backend: Backend = "auto",
) -> None:
    """Validate CONFIG and print the plan a run would follow, without building."""
    options.check_backend(backend)
    experiment = load_experiment(config)
    choice, _ = options.choose_backend(backend, options.interpreter_of([experiment]))
    plan = preview(experiment, choice.backend, choice.reason)
    out.print(f"[bold]{escape(experiment.name)}[/] ({escape(str(experiment.config))})")
    for title, lines in (
        ("variants", plan.variants),
        ("runs", plan.runs),
        ("cases", plan.cases),
    ):
        out.print(f"{title}:", highlight=False)
        for line in lines:
            out.print(f"  {escape(line)}", highlight=False, soft_wrap=True)
    for line in plan.summary:
        out.print(escape(line), highlight=False, soft_wrap=True)
    for warning in plan.warnings:
        err.print(f"[bold yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)
    if plan.problems:
        for problem in plan.problems:
            err.print(f"[bold red]error:[/] {escape(problem)}", highlight=False, soft_wrap=True)
        raise typer.Exit(ExitCode.USAGE)
    out.print("config ok: nothing was built", highlight=False)
