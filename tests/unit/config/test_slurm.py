"""slurm_options: the config block and flags (errors name file, line and key), the array
spec with its %N throttle, Slurm's time format, and the sbatch argv."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.backends import Asan, ComputeSanitizer
from orchestrator.config.experiment import load_experiment
from orchestrator.config.slurm import (
    SlurmSettings,
    array_spec,
    sbatch_argv,
    time_limit,
    with_flags,
)
from orchestrator.errors import ConfigError, CsorchError

BASE = """\
name: demo
source: src
variants: [{name: v, build: {kind: command, command: [make]}}]
runs: [{name: plain, checker: none}]
cases: [[./prog]]
"""


def load(tmp_path: Path, extra: str):
    (tmp_path / "src").mkdir(exist_ok=True)
    path = tmp_path / "exp.yaml"
    path.write_text(BASE + extra)
    return load_experiment(path)


def test_a_config_without_the_block_runs_locally(tmp_path: Path) -> None:
    e = load(tmp_path, "")
    assert e.executor == "local" and e.slurm == SlurmSettings()


def test_the_block_is_read_into_settings(tmp_path: Path) -> None:
    e = load(
        tmp_path,
        "executor: slurm\nslurm:\n  partition: gpu\n  account: proj-1\n  time: 30m\n"
        "  gres: gpu:h100:1\n  sbatch: [--qos=high, --constraint=h100]\n  throttle: 64\n"
        "  poll: 30s\n  max_array: 500\n",
    )
    assert e.executor == "slurm"
    assert e.slurm == SlurmSettings(
        "gpu", "proj-1", 1800.0, "gpu:h100:1", ("--qos=high", "--constraint=h100"), 64, 30.0, 500
    )


@pytest.mark.parametrize(
    ("extra", "line", "key", "words"),
    [
        ("executor: pbs\n", 6, "executor", "choose one of: local, slurm"),
        ("slurm: {partiton: gpu}\n", 6, "slurm.partiton", "did you mean 'partition'"),
        ("slurm:\n  throttle: 0\n", 7, "slurm.throttle", "at least 1"),
        ("slurm:\n  time: soon\n", 7, "slurm.time", "positive duration"),
        ("slurm:\n  gres: 'gpu 1'\n", 7, "slurm.gres", "not a gres list"),
        ("slurm:\n  partition: 'a b'\n", 7, "slurm.partition", "not a Slurm partition name"),
    ],
)
def test_a_bad_block_names_file_line_and_key(
    tmp_path: Path, extra: str, line: int, key: str, words: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, extra)
    assert info.value.line == line and info.value.key == key, str(info.value)
    assert words in str(info.value) and "exp.yaml" in str(info.value)


def test_flags_override_the_block() -> None:
    base = SlurmSettings(partition="gpu", sbatch=("--qos=low",))
    s = with_flags(base, ["partition=debug", "time=2h", "throttle=8", "sbatch=--exclusive -N1"])
    assert (s.partition, s.time, s.throttle) == ("debug", 7200.0, 8)
    assert s.sbatch == ("--qos=low", "--exclusive", "-N1")  # flags add to the config's


@pytest.mark.parametrize(
    ("pair", "words"),
    [
        ("partition", "expected KEY=VALUE"),
        ("queue=gpu", "expected KEY=VALUE with KEY one of"),
        ("throttle=-1", "whole number"),
        ("time=later", "positive duration"),
        ("gres=gpu 1", "not a gres list"),
    ],
)
def test_a_bad_flag_says_what_is_wrong(pair: str, words: str) -> None:
    with pytest.raises(CsorchError) as info:
        with_flags(SlurmSettings(), [pair])
    assert f"--slurm {pair}" in str(info.value) and words in str(info.value)


def test_gres_follows_the_checker_unless_given() -> None:
    assert SlurmSettings().gres_for(ComputeSanitizer().gres()) == "gpu:1"
    assert SlurmSettings().gres_for(Asan().gres()) == ""  # ASan runs on the CPU: no GPU
    assert SlurmSettings(gres="gpu:a100:1").gres_for(Asan().gres()) == "gpu:a100:1"
    assert SlurmSettings(gres="none").gres_for(ComputeSanitizer().gres()) == ""


@pytest.mark.parametrize(
    ("indices", "throttle", "spec"),
    [
        ([0], 0, "0"),
        ([0, 1, 2, 3], 0, "0-3"),
        ([3, 0, 1, 7, 8, 5], 4, "0-1,3,5,7-8%4"),
        ([2, 2, 4], 1, "2,4%1"),
    ],
)
def test_array_spec(indices: list[int], throttle: int, spec: str) -> None:
    assert array_spec(indices, throttle) == spec


def test_time_limit_rounds_up_to_minutes() -> None:
    assert time_limit(1) == "0-00:01:00"
    assert time_limit(61) == "0-00:02:00"
    assert time_limit(900 + 300) == "0-00:20:00"
    assert time_limit(26 * 3600) == "1-02:00:00"


def test_sbatch_argv(tmp_path: Path) -> None:
    settings = SlurmSettings(partition="gpu", account="p1", sbatch=("--qos=high",), throttle=2)
    argv = sbatch_argv(settings, name="csorch-e-v", indices=[0, 1, 2], output=tmp_path / "o",
                       script=tmp_path / "task.sh", seconds=600, gres="gpu:1",
                       workdir=tmp_path)  # fmt: skip
    assert argv[:2] == ["sbatch", "--parsable"] and argv[-1] == str(tmp_path / "task.sh")
    assert "--array=0-2%2" in argv and "--gres=gpu:1" in argv and "--no-requeue" in argv
    assert f"--output={tmp_path / 'o'}/%A_%a.out" in argv
    assert "--time=0-00:15:00" in argv  # the attempt's timeout fires first
    assert argv.index("--qos=high") > argv.index("--account=p1")  # extra options last
    cpu = sbatch_argv(SlurmSettings(time=60), name="n", indices=[0], output=tmp_path,
                      script=tmp_path / "t", seconds=600, gres="", workdir=tmp_path)  # fmt: skip
    assert "--time=0-00:01:00" in cpu and not any(a.startswith("--gres") for a in cpu)
    assert not any(a.startswith(("--partition", "--account")) for a in cpu)
