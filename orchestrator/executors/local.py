"""The local executor: a built variant's attempts as child processes on this host.

Each attempt holds one of the run's job slots while it runs (`submit` puts it on the run's
pool, behind the slots a gate's experiments share), so that running one variant overlaps
building the next and `--jobs` bounds the children at any moment. Ctrl-C or a stop: the
pool drops the attempts not yet begun, and those under way end their children
(`execute` watches the context's cancel event).
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable, Sequence
from typing import Any

from orchestrator.executors import execute
from orchestrator.model import Attempt, Build
from orchestrator.model.job import Job

#: seconds between looks at attempts the pool may have cancelled
POLL = 0.2
#: puts `work(*args)` on the run's pool, holding one of its job slots: -> its future
Submit = Callable[..., "cf.Future[Attempt]"]


class Local:
    """Attempts as local child processes, each through `execute.execute`."""

    name = "local"
    queues = False  # a job starts when a slot frees: no queue phases to show

    def __init__(self, submit: Submit) -> None:
        self.submit = submit

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}

    def run(
        self,
        jobs: Sequence[Job],
        built: Build,
        ctx: execute.Context,
        placed: Callable[[Job, str, str], None],
        done: Callable[[Attempt], None],
    ) -> None:
        """Run `jobs` (all of one built variant) and call `done` with each Attempt as it
        finishes; `placed(job, "running", "")` as each begins. An attempt the pool
        dropped (the run was stopped) gives none."""

        def one(job: Job) -> Attempt:
            placed(job, "running", "")
            return execute.execute(job, built, ctx)

        pending = {self.submit(one, job) for job in jobs}
        while pending:
            cf.wait(pending, timeout=POLL, return_when=cf.FIRST_COMPLETED)
            # polled, not only waited on: an attempt the pool cancels at its shutdown (a
            # stop, Ctrl-C) never wakes a waiter, since concurrent.futures tells waiters
            # of a cancel only when a worker takes the item
            for future in [f for f in pending if f.done()]:
                pending.discard(future)
                if not future.cancelled():
                    done(future.result())
