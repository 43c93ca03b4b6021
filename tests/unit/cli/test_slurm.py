"""cli/slurm: --executor and --slurm are checked before any work, and slurm-task refuses
to run outside a job array. (Runs against a real cluster: tests/e2e/test_run_slurm.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator import cli

runner = CliRunner()


def _config(tmp_path: Path, extra: str = "") -> Path:
    (tmp_path / "src").mkdir(exist_ok=True)
    path = tmp_path / "exp.yaml"
    path.write_text(
        "name: e\nsource: src\nvariants: [{name: v, build: {kind: command, command: [make]}}]\n"
        "runs: [{name: m, checker: memcheck}]\ncases: [[./prog]]\n" + extra
    )
    return path


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--executor", "pbs"], "choose one of: local, slurm"),
        (["--slurm", "partition=gpu"], "need --executor slurm"),
        (["--executor", "slurm", "--slurm", "queue=gpu"], "expected KEY=VALUE"),
        (["--executor", "slurm", "--devices", "0"], "each attempt gets its own GPU"),
    ],
)
def test_bad_executor_flags_are_usage_errors(tmp_path: Path, args: list[str], words: str) -> None:
    result = runner.invoke(cli.app, ["run", str(_config(tmp_path)), "--backend", "asan", *args])
    assert result.exit_code == cli.ExitCode.USAGE and words in result.output, result.output


def test_slurm_task_outside_an_array_is_a_usage_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("SLURM_ARRAY_TASK_ID", raising=False)
    result = runner.invoke(cli.app, ["slurm-task", str(tmp_path)])
    assert result.exit_code == cli.ExitCode.USAGE and "inside a Slurm job array" in result.output


def test_slurm_task_with_a_missing_task_says_so(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "3")
    monkeypatch.setenv("SLURM_ARRAY_JOB_ID", "77")
    (tmp_path / "context.json").write_text("{}")
    (tmp_path / "tasks.json").write_text("[]")
    result = runner.invoke(cli.app, ["slurm-task", str(tmp_path)])
    assert result.exit_code == cli.ExitCode.USAGE and "no task 3" in result.output
