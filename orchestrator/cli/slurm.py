"""`--executor local|slurm` and `--slurm KEY=VALUE` for run, gate and bisect, and the
hidden `csorch slurm-task SPOOL` that each array task runs on its node."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.common import ExitCode, app, err, interrupt
from orchestrator.config.slurm import EXECUTORS, SLURM, with_flags
from orchestrator.errors import CsorchError
from orchestrator.executors.base import Executor
from orchestrator.executors.slurm import executor as slurm
from orchestrator.model import Experiment

ExecutorOpt = Annotated[
    str | None,
    typer.Option(
        "--executor",
        help="local: child processes here; slurm: a job array per variant (default: the "
        "config's executor:, else local)",
    ),
]
SlurmOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--slurm",
        metavar="KEY=VALUE",
        help="a Slurm setting over the config's slurm: block (repeatable); keys: "
        + ", ".join(SLURM),
    ),
]


def executor_for(
    experiment: Experiment, executor: str | None, pairs: list[str] | None
) -> Executor | None:
    """The executor an experiment runs on (None: local); CsorchError for a bad flag."""
    name = executor or experiment.executor
    if name not in EXECUTORS:
        raise CsorchError(f"--executor {name}: choose one of: {', '.join(EXECUTORS)}")
    if name == "local":
        if pairs:
            raise CsorchError("--slurm settings need --executor slurm (or executor: slurm)")
        return None
    return slurm.Slurm(with_flags(experiment.slurm, pairs or []))


def check_local_only(executor: Executor | None, devices: str | None) -> None:
    """--devices (the flag as given) picks GPUs on this host; Slurm gives each task its
    own through gres (`all`, make validate's default, then means nothing to pick)."""
    if executor is not None and devices and devices.strip() != "all":
        raise CsorchError(
            "--devices picks GPUs on this host; under Slurm each attempt gets its own GPU "
            "through --gres",
            hint="drop --devices (set --slurm gres=gpu:1 or the config's slurm: gres)",
        )


@app.command("slurm-task", hidden=True)
def slurm_task_command(
    spool: Annotated[Path, typer.Argument(help="the variant's spool directory")],
) -> None:
    """Run this array task's attempt (SLURM_ARRAY_TASK_ID) and write its result."""
    # Slurm ends a task with SIGTERM (time limit, scancel): stop the attempt's children
    # as Ctrl-C would; the driver sees Slurm's state and retries or records it
    signal.signal(signal.SIGTERM, interrupt)
    try:
        index = int(os.environ["SLURM_ARRAY_TASK_ID"])
        array = os.environ.get("SLURM_ARRAY_JOB_ID") or os.environ["SLURM_JOB_ID"]
    except (KeyError, ValueError):
        err.print("slurm-task runs inside a Slurm job array (SLURM_ARRAY_TASK_ID)")
        raise typer.Exit(ExitCode.USAGE) from None
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    try:
        path = slurm.work(spool, index, array, node)
    except CsorchError as exc:
        err.print(f"error: {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(ExitCode.USAGE) from None
    except KeyboardInterrupt:
        err.print(f"task {array}_{index} on {node}: stopped by a signal", highlight=False)
        raise typer.Exit(ExitCode.INCONCLUSIVE) from None
    err.print(f"task {array}_{index} on {node}: {path.name}", highlight=False)
