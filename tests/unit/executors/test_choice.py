"""executors/choice: the config's executor and slurm block, with the flags over them."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.config.experiment import load_experiment
from orchestrator.errors import CsorchError
from orchestrator.executors.choice import check_local_only, executor_for
from orchestrator.executors.slurm import executor as slurm
from unit.cli.test_slurm import _config


def test_the_config_chooses_and_the_flags_override(tmp_path: Path) -> None:
    e = load_experiment(_config(tmp_path, "executor: slurm\nslurm: {partition: gpu}\n"))
    chosen = executor_for(e, None, ["throttle=4"])
    assert isinstance(chosen, slurm.Slurm)
    assert (chosen.settings.partition, chosen.settings.throttle) == ("gpu", 4)
    assert chosen.describe()["name"] == "slurm"
    assert executor_for(e, "local", None) is None
    with pytest.raises(CsorchError, match="need --executor slurm"):
        executor_for(e, "local", ["partition=x"])


def test_devices_are_refused_under_slurm_but_all_means_nothing_to_pick(tmp_path: Path) -> None:
    e = load_experiment(_config(tmp_path, "executor: slurm\n"))
    runner = executor_for(e, None, None)
    check_local_only(runner, "all")
    check_local_only(None, "0,1")
    with pytest.raises(CsorchError, match="its own GPU"):
        check_local_only(runner, "0")
