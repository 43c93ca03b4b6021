"""Which executor an experiment runs on: the config's `executor:` and `slurm:` block, with
the command line's `--executor` and `--slurm KEY=VALUE` over them."""

from __future__ import annotations

from orchestrator.config.slurm import EXECUTORS, with_flags
from orchestrator.errors import CsorchError
from orchestrator.executors.base import Executor
from orchestrator.executors.slurm import executor as slurm
from orchestrator.model import Experiment


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
