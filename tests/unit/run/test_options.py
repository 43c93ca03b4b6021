"""run/options: the checks every verb shares, and Options made in one place."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.backends import Choice
from orchestrator.config.experiment import load_experiment
from orchestrator.errors import CsorchError
from orchestrator.host import Host
from orchestrator.run import options


def test_devices_all_fans_out_only_over_two_or_more_gpus() -> None:
    two = Host("3.11", "linux", gpus=("NVIDIA H200", "NVIDIA H200"))
    one = Host("3.11", "linux", gpus=("NVIDIA H200",))
    none = Host("3.11", "linux")
    resolve = options.resolve_devices
    assert resolve("all", "compute-sanitizer", two) == ("0", "1")
    assert resolve("all", "compute-sanitizer", one) == ()
    assert resolve("all", "asan", none) == () and resolve(None, "asan", none) == ()
    assert resolve("1,0", "compute-sanitizer", one) == ("1", "0")
    for text, backend, message in [
        ("", "compute-sanitizer", "names no device"),
        ("0,0", "compute-sanitizer", "listed 2 times"),
        ("0", "asan", "the ASan backend runs on the CPU"),
    ]:
        with pytest.raises(CsorchError, match=message):
            resolve(text, backend, two)


def test_options_are_made_with_the_choice_and_default_jobs(tmp_path: Path) -> None:
    made = options.make(Choice("asan", "no GPU"), tmp_path, repeat=2)
    assert (made.backend, made.reason, made.out, made.repeat) == ("asan", "no GPU", tmp_path, 2)
    assert made.jobs == options.default_jobs() >= 1
    assert options.make(Choice("asan", ""), tmp_path, jobs=3).jobs == 3


def test_a_new_out_must_be_an_empty_directory_or_absent(tmp_path: Path) -> None:
    options.check_out(tmp_path / "new")
    options.check_out(tmp_path)  # empty
    (tmp_path / "f").write_text("x")
    for path, says in [(tmp_path, "not empty"), (tmp_path / "f", "is a file"),
                       (tmp_path / "f" / "sub", "a file")]:  # fmt: skip
        with pytest.raises(CsorchError, match=says):
            options.check_out(path)


def test_an_unknown_backend_names_the_choices() -> None:
    with pytest.raises(CsorchError, match="unknown backend 'gpu'") as caught:
        options.check_backend("gpu")
    assert "compute-sanitizer" in caught.value.hint


def test_racecheck_workers_share_the_cpus_among_the_jobs() -> None:
    cpus = os.cpu_count() or 1
    assert options.racecheck_workers(1) == cpus
    assert options.racecheck_workers(cpus * 4) == 1  # never none
    assert options.racecheck_workers(2) == max(1, cpus // 2)


def test_a_repeat_below_min_hits_is_refused_naming_both(tmp_path: Path) -> None:
    source = Path(__file__).resolve().parents[2] / "fixtures" / "e2e" / "c-oob.yaml"
    text = source.read_text().replace("timeout: 2m", "timeout: 2m\nrepeats: 3")
    text = text.replace("  fix: fixed", "  fix: fixed\n  min_hits: 2")
    text = text.replace("source: cprog", f"source: {source.parent / 'cprog'}")
    text = text.replace("[fix-oob.patch]", f"[{source.parent / 'fix-oob.patch'}]")
    config = tmp_path / "c-oob.yaml"
    config.write_text(text)
    experiment = load_experiment(config)
    for fine in (None, 2, 5):
        options.check_repeat(experiment, fine)
    with pytest.raises(CsorchError, match="--repeat 1 is below min_hits 2 of experiment 'c-oob'"):
        options.check_repeat(experiment, 1)


def test_child_threads_share_the_cpus_and_leave_one_job_alone() -> None:
    cpus = os.cpu_count() or 1
    assert options.child_threads(1) == 0  # one child: the host's default
    assert options.child_threads(2) == max(1, cpus // 2)
    assert options.child_threads(cpus * 4) == 1  # never none
