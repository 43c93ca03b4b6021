"""What an executor is: where a built variant's attempts run when not as local child
processes (the Slurm executor is one)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from orchestrator.executors import execute
from orchestrator.model import Attempt, Build
from orchestrator.model.job import Job


class Executor(Protocol):
    """Where attempts run when not as local child processes (slurm.Slurm): given a built
    variant's jobs, it reports each job's queue phase and each finished Attempt."""

    name: str

    def describe(self) -> dict[str, Any]: ...

    def run(
        self,
        jobs: Sequence[Job],
        built: Build,
        ctx: execute.Context,
        placed: Callable[[Job, str, str], None],
        done: Callable[[Attempt], None],
    ) -> None: ...
