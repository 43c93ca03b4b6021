"""The Slurm executor: a built variant's attempts as one job array on a cluster.

Builds stay where csorch runs (the submitting host), once per variant, through the same
content-addressed cache: a build is one per variant and needs the toolchain, not a GPU,
and the cache's lock and entries live on the file system that the cluster shares. Each
attempt is then one array task, `--gres=gpu:1` under compute-sanitizer, which runs
`python -m orchestrator slurm-task SPOOL` on its node: the same `execute.execute` as a
local run, writing the Attempt as JSON into the spool and its logs into the bundle. So
an attempt means the same thing on both executors (its launches, its timeout, its
parse), and the bundle has the same shape.

    WORK/run-*/slurm/<variant>/   context.json, build.json, tasks.json, task.sh
                                  results/<index>.<array job>.json   (the workers')
    BUNDLE/logs/slurm/<variant>/<array job>_<index>.out              (Slurm's output)

The driver polls `squeue` (one call per poll for all of the variant's tasks) and asks
`sacct` only about tasks that left the queue without a result. A task that Slurm ended
for its own reasons (time limit, node failure, preemption) is submitted again once;
a second such end, a task that left no result, or one Slurm lost track of is an
inconclusive attempt. Ctrl-C (the run's cancel event) `scancel`s every array submitted.
The cluster must share, at the same paths: csorch and its venv, the work and cache
directories, and the bundle.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from orchestrator import backends, files, proc
from orchestrator.config.slurm import SlurmSettings, sbatch_argv
from orchestrator.errors import CsorchError
from orchestrator.executors import execute
from orchestrator.executors.slurm import output_log
from orchestrator.executors.slurm.queue import (
    SACCT_DISABLED_RE,
    SACCT_FORMAT,
    SQUEUE_FORMAT,
    TaskState,
    parse_job_id,
    parse_sacct,
    parse_squeue,
    task_id,
)
from orchestrator.model import Attempt, Build, Experiment, Placement
from orchestrator.model.job import Job

#: polls a finished task may go without its result file before it counts as lost (a
#: shared file system can show a file a little after the node wrote it)
RESULT_GRACE = 3
#: polls a task may be missing from both squeue and sacct before it counts as lost
LOST_AFTER = 3
COMMAND_TIMEOUT = 120.0


class SlurmError(CsorchError):
    """sbatch refused the array (a bad partition, account or option): names the command."""

    def __init__(self, argv: Sequence[str], output: str) -> None:
        tail = "\n".join(output.strip().splitlines()[-5:])
        super().__init__(
            f"sbatch refused the job array: {tail or 'no output'}",
            hint=f"the command was: {shlex.join(argv)}",
        )


class Slurm:
    """Runs planned attempts as Slurm job arrays (see the module docstring)."""

    name = "slurm"
    queues = True  # its jobs wait in the queue: their phases are shown

    def __init__(self, settings: SlurmSettings) -> None:
        self.settings = settings

    def describe(self) -> dict[str, Any]:
        """What the bundle records about the executor."""
        return {"name": self.name, **self.settings.to_dict()}

    def run(
        self,
        jobs: Sequence[Job],
        built: Build,
        ctx: execute.Context,
        placed: Callable[[Job, str, str], None],
        done: Callable[[Attempt], None],
    ) -> None:
        """Submit `jobs` (all of one built variant), call `placed(job, phase, node)` as
        they move through the queue and `done(attempt)` as each ends. SlurmError when
        sbatch refuses; KeyboardInterrupt (after scancel) when the run is cancelled."""
        _Array(self.settings, jobs, built, ctx, placed, done).drive()


class _Array:
    """The state of one variant's submission: tasks, their tries, what is left."""

    def __init__(
        self,
        settings: SlurmSettings,
        jobs: Sequence[Job],
        built: Build,
        ctx: execute.Context,
        placed: Callable[[Job, str, str], None],
        done: Callable[[Attempt], None],
    ) -> None:
        self.settings, self.jobs, self.built, self.ctx = settings, list(jobs), built, ctx
        self.placed, self.done = placed, done
        self.spool = ctx.scratch.parent / "slurm" / built.variant
        self.output = (ctx.root / output_log(built.variant, "-")).parent
        self.arrays: list[str] = []  # every array job id submitted, for scancel
        self.waiting: dict[str, int] = {}  # task id -> index into jobs
        self.tries: dict[int, list[str]] = {i: [] for i in range(len(self.jobs))}
        self.phase: dict[str, str] = {}
        self.strikes: dict[str, int] = {}  # polls a task went unaccounted for
        self.cancel = ctx.cancel or threading.Event()
        self.finished: set[int] = set()

    # --- submission --------------------------------------------------------------

    def write_spool(self) -> Path:
        files.make_dirs(self.spool / "results")
        files.make_dirs(self.output)
        ctx = self.ctx
        context = {
            "experiment": ctx.experiment.to_dict(),
            "backend": ctx.backend.name,
            # what the task needs to make the same backend again (`backends.from_task`)
            **ctx.backend.task_context(),
            "python": ctx.python,
            "root": str(ctx.root),
            "scratch": str(ctx.scratch),
        }
        _write_json(self.spool / "context.json", context)
        _write_json(self.spool / "build.json", self.built.to_dict())
        _write_json(self.spool / "tasks.json", [j.to_dict() for j in self.jobs])
        script = self.spool / "task.sh"
        # every path quoted for the shell (a `"`, `$` or backtick in it is text, not code)
        root = shlex.quote(str(execute.CSORCH_ROOT))
        files.atomic_write(
            script,
            "#!/bin/sh\n"
            f"# one attempt of {ctx.experiment.name}/{self.built.variant} per array task\n"
            f'PYTHONPATH={root}"${{PYTHONPATH:+:$PYTHONPATH}}"; export PYTHONPATH\n'
            f"exec {shlex.quote(ctx.python)} -m orchestrator slurm-task "
            f"{shlex.quote(str(self.spool))}\n",
        )
        script.chmod(0o755)
        return script

    def submit(self, indices: Sequence[int], script: Path) -> None:
        """One sbatch per `max_array` tasks; each task is then waited for."""
        seconds = max(
            self.ctx.experiment.timeout_for(self.ctx.experiment.run(self.jobs[i].run))
            for i in indices
        )
        step = self.settings.max_array
        for start in range(0, len(indices), step):
            chunk = list(indices[start : start + step])
            argv = sbatch_argv(
                self.settings,
                name=f"csorch-{self.ctx.experiment.name}-{self.built.variant}"[:120],
                indices=chunk,
                output=self.output,
                script=script,
                seconds=seconds,
                gres=self.settings.gres_for(self.ctx.backend.gres()),
                workdir=self.spool,
            )
            answer = proc.capture(argv, timeout=COMMAND_TIMEOUT)
            array = parse_job_id(answer.output) if answer.returncode == 0 else ""
            if not array:
                raise SlurmError(argv, answer.output)
            self.arrays.append(array)
            for i in chunk:
                self.waiting[task_id(array, i)] = i
                self.phase[task_id(array, i)] = ""

    # --- the queue ---------------------------------------------------------------

    def squeue(self, arrays: Sequence[str] | None = None) -> dict[str, TaskState]:
        """The waiting tasks' states: one squeue call for all of their arrays."""
        arrays = arrays or sorted({t.split("_")[0] for t in self.waiting}, key=int)
        argv = ["squeue", "--array", "--states=all", "--noheader",
                f"--format={SQUEUE_FORMAT}", f"--jobs={','.join(arrays)}"]  # fmt: skip
        answer = proc.capture(argv, timeout=COMMAND_TIMEOUT)
        if answer.returncode == 0:
            return parse_squeue(answer.output)
        # one array that slurmctld has purged ("Invalid job id") fails the whole call:
        # ask for each alone, and sacct about whatever is still missing
        if len(arrays) == 1:
            return {}
        return {k: v for a in arrays for k, v in self.squeue([a]).items()}

    def sacct(self, tasks: Sequence[str]) -> dict[str, TaskState]:
        argv = ["sacct", "--allocations", "--noheader", "--parsable2",
                f"--format={SACCT_FORMAT}", f"--jobs={','.join(tasks)}"]  # fmt: skip
        answer = proc.capture(argv, timeout=COMMAND_TIMEOUT)
        if answer.returncode != 0 or SACCT_DISABLED_RE.search(answer.output):
            return {}  # no accounting database: squeue was the only witness
        return parse_sacct(answer.output)

    def drive(self) -> None:
        script = self.write_spool()
        try:
            self.submit(range(len(self.jobs)), script)
            while self.waiting:
                if self.cancel.wait(self.settings.poll):
                    raise KeyboardInterrupt
                retry = self.poll()
                if retry:
                    self.submit(retry, script)
        except SlurmError as exc:
            # recorded like a build failure: this variant's attempts are inconclusive
            # and the other variants still run; what Slurm did take is cancelled
            self.scancel()
            for index in range(len(self.jobs)):
                if index not in self.finished:
                    job = self.jobs[index]
                    run = self.ctx.experiment.run(job.run)
                    self.finished.add(index)
                    self.done(execute.not_run(job, run, self.ctx.backend, str(exc)))
        except KeyboardInterrupt:
            self.scancel()
            raise
        except BaseException:
            self.scancel()  # a bug or a refused resubmission: leave nothing queued
            raise

    def scancel(self) -> None:
        if self.arrays:
            proc.capture(["scancel", *self.arrays], timeout=COMMAND_TIMEOUT)

    def poll(self) -> list[int]:
        """One look at the queue; returns the indices to submit again."""
        states = self.squeue()
        missing = [t for t in self.waiting if t not in states]
        if missing:
            states |= self.sacct(missing)
        retry = []
        for tid, index in list(self.waiting.items()):
            state = states.get(tid)
            result = self.result_path(tid, index)
            if state is None:
                state = self.unaccounted(tid, result)
                if state is None:
                    continue
            self.note(tid, index, state)
            if state.phase != "done":
                continue
            if state.killed:
                self.tries[index].append(_try(state))
                del self.waiting[tid]
                if len(self.tries[index]) < 2:
                    retry.append(index)
                else:
                    self.finish(index, state, None, "Slurm ended it twice")
                continue
            if not result.exists() and self.strike(tid) < RESULT_GRACE:
                continue  # the worker's file may not be visible here yet
            self.tries[index].append(_try(state))
            del self.waiting[tid]
            self.finish(index, state, result if result.exists() else None, "")
        return retry

    def unaccounted(self, tid: str, result: Path) -> TaskState | None:
        """A task neither squeue nor sacct reports: done if its result is there, lost
        after a few polls, else not known yet (None)."""
        if result.exists():
            data = files.load_json(result)
            return TaskState(tid, "COMPLETED", data.get("node", ""))
        if self.strike(tid) >= LOST_AFTER:
            return TaskState(tid, "UNKNOWN", "", "Slurm no longer reports it")
        return None

    def strike(self, tid: str) -> int:
        self.strikes[tid] = self.strikes.get(tid, 0) + 1
        return self.strikes[tid] - 1

    def note(self, tid: str, index: int, state: TaskState) -> None:
        phase = state.phase if state.state != "UNKNOWN" else "done"
        if self.phase.get(tid) != phase:
            self.phase[tid] = phase
            self.placed(self.jobs[index], phase, state.node)

    def result_path(self, tid: str, index: int) -> Path:
        return self.spool / "results" / f"{index}.{tid.split('_')[0]}.json"

    # --- results -----------------------------------------------------------------

    def finish(self, index: int, state: TaskState, result: Path | None, why: str) -> None:
        job = self.jobs[index]
        node = state.node
        if result is not None:
            data = files.load_json(result)
            attempt = Attempt.from_dict(data["attempt"])
            node = node or data.get("node", "")
        else:
            out = self.output / f"{state.job_id}.out"
            tail = _tail(out)
            reason = why or "the task left no result"
            attempt = execute.not_run(
                job,
                self.ctx.experiment.run(job.run),
                self.ctx.backend,
                f"slurm: {'; '.join(self.tries[index])} ({reason})" + (f": {tail}" if tail else ""),
            )
        placement = Placement("slurm", state.job_id, node, state.state, tuple(self.tries[index]))
        self.finished.add(index)
        self.done(_placed(attempt, placement))


def _placed(attempt: Attempt, placement: Placement) -> Attempt:
    return dataclasses.replace(attempt, placement=placement)


def _try(state: TaskState) -> str:
    where = f" on {state.node}" if state.node else ""
    why = f" ({state.reason})" if state.reason else ""
    return f"{state.job_id}{where}: {state.state}{why}"


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = "\n".join(files.tail(path, 50)).strip().splitlines()
    except OSError:  # none, or not a file: the reason says the task left no result
        return ""
    return " / ".join(line.strip() for line in text[-lines:])[:400]


def _write_json(path: Path, doc: object) -> None:
    files.atomic_write(path, json.dumps(doc, indent=1))


# --- the node's side -----------------------------------------------------------------


def work(spool: Path, index: int, array: str, node: str) -> Path:
    """Run task `index` of a spool on this node (as `csorch slurm-task` does) and write
    its Attempt where the driver looks for it; returns that path."""
    context = files.load_json(spool / "context.json")
    jobs = files.load_json(spool / "tasks.json")
    if not 0 <= index < len(jobs):
        raise CsorchError(f"{spool}: no task {index} (the spool has {len(jobs)})")
    built = Build.from_dict(files.load_json(spool / "build.json"))
    ctx = execute.Context(
        experiment=Experiment.from_dict(context["experiment"]),
        backend=backends.from_task(context),
        python=context["python"],
        root=Path(context["root"]),
        scratch=Path(context["scratch"]),
    )
    attempt = execute.execute(Job.from_dict(jobs[index]), built, ctx)
    path = spool / "results" / f"{index}.{array}.json"
    _write_json(path, {"attempt": attempt.to_dict(), "node": node, "job_id": f"{array}_{index}"})
    return path
