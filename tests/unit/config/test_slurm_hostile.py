"""sbatch's options and its filename pattern: a user's `sbatch:` option that would set one
of csorch's own (`--output=...` landed after csorch's and won) is refused, naming it,
in the config and in `--slurm`; the bundle's path reaches `--output` as literal text
(`%` doubled), or is refused (a backslash turns the pattern off); the task script
quotes the paths it holds."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given

from orchestrator.config import slurm
from orchestrator.errors import ConfigError, CsorchError
from orchestrator.model.experiment import SlurmSettings
from tests.unit.hostile_text import QUICK, hostile, hostile_name


@pytest.mark.parametrize(
    "option",
    ["--output=/tmp/x", "--out=/tmp/x", "-o", "-vo", "-oX", "--error=e", "--chdir=/",
     "--job-name=x", "-J", "--array=1-3", "--time=5", "--partition=p", "-p", "--account=a",
     "--gres=gpu:2", "--parsable", "--requeue", "--wrap=ls", "--"],
)  # fmt: skip
def test_an_option_of_csorchs_own_is_refused(option: str) -> None:
    with pytest.raises(CsorchError, match=r"--slurm sbatch=.*csorch"):
        slurm.with_flags(SlurmSettings(), [f"sbatch={option} /tmp/x"])


@pytest.mark.parametrize(
    "option", ["--qos=high", "--constraint=h100", "--ntasks-per-node=1", "--time-min=5",
               "--gres-flags=enforce-binding", "-C", "h100", "-N1", "--mem=4G", "-Cout"],
)  # fmt: skip
def test_other_options_pass_verbatim(option: str) -> None:
    assert slurm.with_flags(SlurmSettings(), [f"sbatch={option}"]).sbatch == (option,)


def test_the_config_refuses_it_by_file_line_and_key(tmp_path: Path) -> None:
    from orchestrator.config.nodes import load

    path = tmp_path / "s.yaml"
    path.write_text("slurm:\n  sbatch: [--qos=high, --output=/elsewhere/%j]\n")
    view = load(path).mapping({"slurm": ""}).get("slurm")
    with pytest.raises(ConfigError, match=r"s\.yaml:2: slurm\.sbatch: '--output=/elsewhere/%j'"):
        slurm.read(view)


def test_an_open_quote_in_the_flag_is_a_usage_error() -> None:
    with pytest.raises(CsorchError, match="--slurm sbatch='--qos=high: No closing quotation"):
        slurm.with_flags(SlurmSettings(), ["sbatch='--qos=high"])


@QUICK
@given(hostile)
def test_any_sbatch_flag_is_taken_or_refused_by_name(text: str) -> None:
    try:
        got = slurm.with_flags(SlurmSettings(), [f"sbatch={text}"])
    except CsorchError as exc:
        assert str(exc).startswith("--slurm sbatch=")
        return
    assert slurm.sbatch_problem(got.sbatch) == ""


def argv(output: Path) -> list[str]:
    return slurm.sbatch_argv(
        SlurmSettings(),
        name="n",
        indices=[0, 1],
        output=output,
        script=Path("/s"),
        seconds=60,
        gres="",
        workdir=Path("/w"),
    )


@QUICK
@given(hostile_name)
def test_the_output_directory_is_literal_in_the_pattern(name: str) -> None:
    output = Path("/bundle") / name / "logs"
    try:
        made = argv(output)
    except CsorchError as exc:
        assert "\\" in name and "backslash" in str(exc)
        return
    (option,) = [a for a in made if a.startswith("--output=")]
    pattern = option.removeprefix("--output=")
    assert pattern.endswith("/%A_%a.out")
    # sbatch's reading: %% is one %, every other % a field
    literal = pattern.removesuffix("/%A_%a.out")
    assert literal.replace("%%", "").count("%") == 0
    assert literal.replace("%%", "%") == str(output)


def test_a_percent_in_out_is_doubled() -> None:
    assert "--output=/b/50%%/logs/%A_%a.out" in argv(Path("/b/50%/logs"))


@pytest.mark.process
def test_the_task_script_quotes_csorchs_path(tmp_path: Path, monkeypatch) -> None:
    from orchestrator.executors import execute
    from orchestrator.executors.slurm import executor

    root = tmp_path / 'it\'s "$(touch pwned)" `x` $HOME'
    monkeypatch.setattr(execute, "CSORCH_ROOT", root)

    class Ctx:  # what write_spool reads of a run's context
        experiment = type("E", (), {"name": "e", "to_dict": lambda self: {}})()
        backend = type("B", (), {"name": "asan", "task_context": lambda self: {}})()
        python = "/usr/bin/python3"
        root = tmp_path / "bundle"
        scratch = tmp_path / "work" / "scratch"
        cancel = None

    built = type("Bu", (), {"variant": "v", "to_dict": lambda self: {}})()
    array = executor._Array(SlurmSettings(), [], built, Ctx(), None, None)  # type: ignore[arg-type]
    script = array.write_spool()
    probe = script.read_text().replace("exec ", "echo ", 1)
    done = subprocess.run(["sh", "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], "PYTHONPATH": "/after"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "pwned").exists()
    env = subprocess.run(["sh", "-c", probe.split("\n", 3)[2] + "\nprintf %s \"$PYTHONPATH\""],
                         capture_output=True, text=True, env={"PYTHONPATH": "/after"})  # fmt: skip
    assert env.stdout == f"{root}:/after"
