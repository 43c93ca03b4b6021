"""What an executor is: where a built variant's attempts run (`local.Local`: child
processes on this host; `slurm.Slurm`: a job array on a cluster)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from orchestrator.executors import execute
from orchestrator.model import Attempt, Build
from orchestrator.model.job import Job


class Executor(Protocol):
    """Where attempts run: given a built variant's jobs, it reports each job's phase
    (`placed(job, phase, node)`: queued, running, done) and each finished Attempt."""

    name: str
    queues: bool  # whether jobs wait in a queue whose phases are worth showing

    def describe(self) -> dict[str, Any]: ...

    def run(
        self,
        jobs: Sequence[Job],
        built: Build,
        ctx: execute.Context,
        placed: Callable[[Job, str, str], None],
        done: Callable[[Attempt], None],
    ) -> None: ...
