"""The hidden `csorch slurm-task SPOOL` that each Slurm array task runs on its node."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.common import ExitCode, app, err
from orchestrator.executors.slurm import executor as slurm


@app.command("slurm-task", hidden=True)
def slurm_task_command(
    spool: Annotated[Path, typer.Argument(help="the variant's spool directory")],
) -> None:
    """Run this array task's attempt (SLURM_ARRAY_TASK_ID) and write its result."""
    # Slurm ends a task with SIGTERM (time limit, scancel): the boundary (cli/common.py)
    # stops the attempt's children as Ctrl-C would; the driver sees Slurm's state and
    # retries or records it
    try:
        index = int(os.environ["SLURM_ARRAY_TASK_ID"])
        array = os.environ.get("SLURM_ARRAY_JOB_ID") or os.environ["SLURM_JOB_ID"]
    except (KeyError, ValueError):
        err.print("slurm-task runs inside a Slurm job array (SLURM_ARRAY_TASK_ID)")
        raise typer.Exit(ExitCode.USAGE) from None
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    try:
        path = slurm.work(spool, index, array, node)  # a CsorchError: a usage error
    except KeyboardInterrupt:
        err.print(f"task {array}_{index} on {node}: stopped by a signal", highlight=False)
        raise typer.Exit(ExitCode.INCONCLUSIVE) from None
    err.print(f"task {array}_{index} on {node}: {path.name}", highlight=False)
