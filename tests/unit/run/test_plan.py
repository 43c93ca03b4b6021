"""plan: jobs per variant x run x case x repeat, and fan-out over devices."""

from __future__ import annotations

from collections import Counter

import pytest

from orchestrator.model import (
    BuildKind,
    BuildSpec,
    Case,
    CaseKind,
    Checker,
    Experiment,
    Run,
    SourceKind,
    SourceSpec,
    Variant,
)
from orchestrator.model.job import Fanout, Job
from orchestrator.run.plan import parse_devices, plan

EXPERIMENT = Experiment(
    name="e",
    source=SourceSpec(SourceKind.PATH, "/src"),
    variants=(Variant("fix", BuildSpec(BuildKind.JIT)), Variant("ctl", BuildSpec(BuildKind.JIT))),
    runs=(Run("plain", Checker.NONE), Run("memcheck", Checker.MEMCHECK, repeats=3)),
    cases=(Case("a", CaseKind.PYTEST, ("/t/a.py",)), Case("b", CaseKind.COMMAND, command=("x",))),
    repeats=1,
)
UNITS = 2 * (1 + 3) * 2  # variants x (repeats of plain + memcheck) x cases


def test_without_devices_every_unit_runs_once_on_the_default_device() -> None:
    jobs = plan(EXPERIMENT)
    assert len(jobs) == UNITS and {j.device for j in jobs} == {""}
    assert jobs[0] == Job("fix", "plain", "a", 0)
    assert Counter((j.variant, j.run) for j in jobs)[("ctl", "memcheck")] == 6
    assert len({j.stem() for j in jobs}) == UNITS


def test_shard_deals_the_units_round_robin() -> None:
    jobs = plan(EXPERIMENT, devices=("0", "1", "2"), fanout=Fanout.SHARD)
    assert len(jobs) == UNITS
    per_device = Counter(j.device for j in jobs)
    assert (
        set(per_device) == {"0", "1", "2"}
        and max(per_device.values()) - min(per_device.values()) <= 1
    )
    assert [j.device for j in jobs[:4]] == ["0", "1", "2", "0"]
    assert all(j.rank == int(j.device) for j in jobs)
    # every variant gets work on more than one device
    assert all(len({j.device for j in jobs if j.variant == v}) > 1 for v in ("fix", "ctl"))


def test_replicate_runs_every_unit_on_every_device_with_per_rank_logs() -> None:
    jobs = plan(EXPERIMENT, devices=("3", "5"), fanout=Fanout.REPLICATE)
    assert len(jobs) == 2 * UNITS
    assert Counter(j.device for j in jobs) == {"3": UNITS, "5": UNITS}
    first = [j for j in jobs if (j.variant, j.run, j.case, j.repeat) == ("fix", "plain", "a", 0)]
    assert [(j.device, j.rank) for j in first] == [("3", 0), ("5", 1)]
    assert first[0].stem() == "fix/plain/a/r0-rank0-gpu3" and first[1].stem().endswith("gpu5")
    assert len({j.stem() for j in jobs}) == len(jobs)


def test_plan_restricted_to_runs_and_variants() -> None:
    jobs = plan(EXPERIMENT, runs=["memcheck"], variants=["ctl"])
    assert {(j.variant, j.run) for j in jobs} == {("ctl", "memcheck")} and len(jobs) == 6


@pytest.mark.parametrize(
    ("text", "problem"),
    [("", "one or more"), ("0,0", "listed 2 times"), ("0,cpu", "not a GPU index")],
)
def test_bad_device_lists(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_devices(text)


def test_device_lists() -> None:
    assert parse_devices("0, 1") == ("0", "1")
    assert parse_devices("GPU-1234abcd") == ("GPU-1234abcd",)


def test_every_problem_of_a_device_list_is_reported_at_once() -> None:
    with pytest.raises(ValueError) as caught:
        parse_devices("-1,0,0")
    assert str(caught.value) == "'-1' is not a GPU index or UUID; '0' is listed 2 times"
    with pytest.raises(ValueError, match="' , ' names no device"):
        parse_devices(" , ")


def test_a_device_cannot_walk_out_of_the_logs_directory() -> None:
    with pytest.raises(ValueError, match="not a GPU index or UUID"):
        parse_devices("GPU-x/../../../etc")
    (mig,) = parse_devices("MIG-GPU-8f4e1f53-aa/1/0")
    assert Job("v", "r", "c", 0, device=mig).stem() == "v/r/c/r0-rank0-MIG-GPU-8f4e1f53-aa-1-0"
