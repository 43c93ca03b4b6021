"""The attempt plan: which variant x run x case x repeat runs on which device. Pure.

Without devices every job runs on the default device (the CPU under ASan, whatever
CUDA picks under compute-sanitizer). With `--devices 0,1` the executor sets
`CUDA_VISIBLE_DEVICES` per job, and the fan-out decides the work each device gets:
- `shard`: each job runs once, the jobs dealt round-robin over the devices in plan
  order (variant, run, repeat, case), so every device gets a share of every variant;
- `replicate`: every job runs on every device (per-rank attempts and logs), to show
  that a finding does not depend on the GPU it ran on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from orchestrator.errors import CsorchError
from orchestrator.model import Experiment
from orchestrator.model.experiment import MAX_ATTEMPTS
from orchestrator.model.job import Fanout, Job

# 0 / GPU-8f4e1f53-... / MIG-GPU-8f4e1f53-.../1/0 (older MIG form): a device becomes part
# of a log's file name, so nothing else (no `..`, no other `/` use) is accepted
DEVICE_RE = re.compile(r"^(?:[0-9]{1,4}|(?:GPU|MIG)-[A-Za-z0-9-]{1,80}(?:/[0-9]{1,4}){0,2})\Z")


def parse_devices(text: str) -> tuple[str, ...]:
    """`0,1` -> ("0", "1"); ValueError naming every item that is not a distinct GPU index
    or UUID (all of them at once, so that one fix fixes the option)."""
    devices = tuple(d.strip() for d in text.split(",") if d.strip())
    if not devices:
        raise ValueError(f"{text!r} names no device; give one or more GPU indices, e.g. 0,1")
    problems = [
        f"{d!r} is not a GPU index or UUID"
        for d in dict.fromkeys(devices)
        if not DEVICE_RE.match(d)
    ]
    twice = [d for d in dict.fromkeys(devices) if devices.count(d) > 1]
    problems += [f"{d!r} is listed {devices.count(d)} times" for d in twice]
    if problems:
        raise ValueError("; ".join(problems))
    return devices


def plan(
    experiment: Experiment,
    *,
    devices: Sequence[str] = (),
    fanout: Fanout = Fanout.SHARD,
    runs: Iterable[str] | None = None,
    variants: Iterable[str] | None = None,
) -> tuple[Job, ...]:
    """Every job of the experiment, restricted to `runs` and `variants` when given."""
    run_names = set(runs) if runs is not None else {r.name for r in experiment.runs}
    variant_names = set(variants) if variants is not None else {v.name for v in experiment.variants}
    count = experiment.attempts() * (len(devices) if fanout is Fanout.REPLICATE and devices else 1)
    if count > MAX_ATTEMPTS:  # checked before the list is made: it would be the memory
        raise CsorchError(
            f"{experiment.name} would plan {count:,} attempts; at most {MAX_ATTEMPTS:,}",
            hint="lower --repeat (or the config's repeats), or split the experiment",
        )
    units = [
        (variant.name, run.name, case.name, repeat)
        for variant in experiment.variants
        if variant.name in variant_names
        for run in experiment.runs
        if run.name in run_names
        for repeat in range(experiment.repeats_for(run))
        for case in experiment.cases
    ]
    if not devices:
        return tuple(Job(*unit) for unit in units)
    if fanout is Fanout.REPLICATE:
        return tuple(
            Job(*unit, device=device, rank=rank)
            for unit in units
            for rank, device in enumerate(devices)
        )
    return tuple(
        Job(*unit, device=devices[i % len(devices)], rank=i % len(devices))
        for i, unit in enumerate(units)
    )
