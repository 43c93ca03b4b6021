"""slurm_queue: what squeue, sacct and sbatch printed on the real test cluster
(tests/fixtures/slurm/, captured from Slurm 22.05 with the executor's own formats)
read into task states."""

from __future__ import annotations

from pathlib import Path

from orchestrator.executors.slurm.queue import (
    SACCT_DISABLED_RE,
    TaskState,
    parse_job_id,
    parse_sacct,
    parse_squeue,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "slurm"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_a_throttled_array_one_running_the_rest_pending() -> None:
    states = parse_squeue(read("squeue-throttled.txt"))
    assert states["11_0"] == TaskState("11_0", "RUNNING", "csorch1", "")
    assert states["11_3"] == TaskState("11_3", "PENDING", "", "JobArrayTaskLimit")
    assert [s.phase for s in states.values()] == ["queued", "queued", "queued", "running"]


def test_ended_tasks_and_a_node_failure() -> None:
    states = parse_squeue(read("squeue-ended.txt"))
    assert states["11_0"].phase == "done" and not states["11_0"].killed
    failed = states["9_1"]
    assert (failed.state, failed.node, failed.reason) == ("NODE_FAIL", "csorch1", "NodeDown")
    assert failed.phase == "done" and failed.killed  # Slurm's doing: retried once
    # 11_3 was cancelled while pending: Slurm drops it from squeue at once
    assert "11_3" not in states


def test_sacct_without_an_accounting_database() -> None:
    text = read("sacct-disabled.txt")
    assert SACCT_DISABLED_RE.search(text) and parse_sacct(text) == {}


def test_sacct_states_carry_who_cancelled() -> None:
    # not captured: the test cluster has no slurmdbd; the format is the one the executor
    # asks for (--parsable2 --format=JobID,State,NodeList,ExitCode)
    text = (
        "12_0|COMPLETED|gpu-a1|0:0\n12_1|CANCELLED by 1000|gpu-a2|0:15\n"
        "12_2|PENDING|None assigned|0:0\n12|FAILED|gpu-a1|1:0\n"
    )
    states = parse_sacct(text)
    assert states["12_1"] == TaskState("12_1", "CANCELLED", "gpu-a2", "by 1000")
    assert states["12_2"].node == "" and states["12_2"].phase == "queued"
    assert "12" not in states  # not an array task


def test_job_ids_from_sbatch() -> None:
    assert parse_job_id(read("sbatch-parsable.txt")) == "11"
    assert parse_job_id("4242;cluster-a\n") == "4242"
    assert parse_job_id(read("sbatch-bad-partition.txt")) == ""


def test_an_unknown_state_is_not_taken_for_done() -> None:
    assert TaskState("1_0", "SOMETHING_NEW").phase == "running"
