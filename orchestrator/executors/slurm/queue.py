"""What Slurm says about submitted array tasks: `squeue`/`sacct` text in, task states out.

Pure: the executor (slurm.py) runs the commands through `proc` and hands the text here.
csorch asks for pipe-separated fields, so the grammar is one line per task:

    squeue --array --states=all --noheader --format=%i|%T|%N|%r
        1234_7|RUNNING|gpu-a17|None
        1234_8|PENDING||Priority
    sacct --allocations --noheader --parsable2 --format=JobID,State,NodeList,ExitCode
        1234_7|TIMEOUT|gpu-a17|0:0
        1234_9|CANCELLED by 0|gpu-a18|0:15
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from orchestrator.model.record import Record

SQUEUE_FORMAT = "%i|%T|%N|%r"
SACCT_FORMAT = "JobID,State,NodeList,ExitCode"
#: `1234_7`: an array task (a pending range `1234_[8-20%4]` only without --array)
TASK_ID_RE = re.compile(r"^(?P<job>\d+)_(?P<task>\d+)$")
#: "Slurm accounting storage is disabled" (no slurmdbd): sacct cannot help
SACCT_DISABLED_RE = re.compile(r"accounting storage is disabled", re.IGNORECASE)

QUEUED = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
                    "RESV_DEL_HOLD", "SUSPENDED"})  # fmt: skip
RUNNING = frozenset({"RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING", "RESIZING"})
#: Slurm ended the task for reasons of its own, not the attempt's: retry it once
KILLED = frozenset({"TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE",
                    "OUT_OF_MEMORY", "REVOKED"})  # fmt: skip
#: ended; COMPLETED and FAILED are the worker's own exit (its result file says the rest)
ENDED = KILLED | frozenset({"COMPLETED", "FAILED", "CANCELLED", "SPECIAL_EXIT"})


@dataclass(frozen=True)
class TaskState(Record):
    """One array task as the queue last reported it."""

    job_id: str  # "1234_7"
    state: str  # Slurm's word: PENDING, RUNNING, COMPLETED, TIMEOUT, ...
    node: str = ""
    reason: str = ""  # why pending, or "by 0" for a cancellation

    @property
    def phase(self) -> str:
        """queued, running or done (an unknown word counts as running: not yet done)."""
        if self.state in QUEUED:
            return "queued"
        if self.state in ENDED:
            return "done"
        return "running"

    @property
    def killed(self) -> bool:
        return self.state in KILLED


def _state(word: str) -> tuple[str, str]:
    """("CANCELLED", "by 1000") from sacct's "CANCELLED by 1000"; squeue's words are bare."""
    head, _, rest = word.strip().partition(" ")
    return head.rstrip("+"), rest.strip()


def parse_squeue(text: str) -> dict[str, TaskState]:
    """Task states by job id ("1234_7"); lines that are not one task are ignored."""
    states = {}
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) != 4 or not TASK_ID_RE.match(fields[0]):
            continue
        state, _ = _state(fields[1])
        reason = fields[3] if fields[3] not in ("None", "(null)") else ""
        states[fields[0]] = TaskState(fields[0], state, fields[2], reason)
    return states


def parse_sacct(text: str) -> dict[str, TaskState]:
    """Final task states by job id from `sacct --parsable2`."""
    states = {}
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) != 4 or not TASK_ID_RE.match(fields[0]):
            continue
        state, by = _state(fields[1])
        node = fields[2] if fields[2] not in ("None assigned", "(null)") else ""
        states[fields[0]] = TaskState(fields[0], state, node, by)
    return states


def parse_job_id(text: str) -> str:
    """The array's job id from `sbatch --parsable` ("1234" or "1234;cluster"); "" if none."""
    for line in reversed(text.strip().splitlines()):
        head = line.strip().split(";")[0]
        if head.isdigit():
            return head
    return ""


def task_id(job: str, index: int) -> str:
    return f"{job}_{index}"
