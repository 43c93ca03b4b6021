"""Stored bundles as a gate reads them: found under the paths given, each read through
`bundle.trust` against the gate's experiment of its name, and judged again from its
attempts (nothing runs). A gate that has just run (or resumed) reads its own bundles back
the same way (`checked`), so what it judges is what its directory proves."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from orchestrator import bundle, judge
from orchestrator.bundle import trust
from orchestrator.errors import BundleError, CsorchError
from orchestrator.files import read_json
from orchestrator.gate.policy import Judged
from orchestrator.model import Experiment
from orchestrator.run import carried, runner


def bundles(paths: Sequence[Path]) -> list[Path]:
    """Experiment bundles: each path is one, or a gate's directory holding several."""
    found = []
    for p in paths:
        if (p / bundle.RESULTS).exists():
            found.append(p)
        elif p.is_dir() and (
            subs := sorted(d for d in p.iterdir() if (d / bundle.RESULTS).exists())
        ):
            found += subs
        else:
            raise CsorchError(
                f"{p} is not a results bundle (no {bundle.RESULTS}) nor a gate's directory",
                hint="give what `csorch run --out` or `csorch gate --out` wrote",
            )
    return found


def judge_bundle(path: Path, expect: Experiment | None = None) -> Judged:
    """A bundle's records, judged again from its attempts (nothing runs) against `expect`
    (the gate's experiment of that name) once `bundle.trust` has checked it; BundleError
    if it cannot be read at all. Every reason not to trust it is a problem of the Judged
    (the gate is then INCONCLUSIVE)."""
    t = trust.load_trusted(path, expect)
    if t.records is None:
        raise BundleError(path, "; ".join(t.reasons) or f"{bundle.RESULTS} cannot be read back")
    records = t.records
    experiment = t.experiment if not t.reasons else records.experiment
    assert experiment is not None
    judgement = judge.judged(experiment, records.attempts, records.builds)
    if records.carried is not None:  # judged again, it still says first that it was carried
        judgement = carried.judged(records.carried, judgement)
    return Judged(experiment, records.attempts, judgement, str(path), t.reasons)


def judge_stored(
    experiments: Sequence[Experiment], paths: Sequence[Path]
) -> tuple[list[Judged], list[str], list[str]]:
    """(judged, missing, broken): the stored bundles judged again, the plan's experiments
    none of them holds, and why each unreadable bundle could not be judged. A bundle of an
    experiment the gate does not hold is broken: nothing of it is judged silently."""
    judged: list[Judged] = []
    broken: list[str] = []
    foreign: list[str] = []  # bundles of experiments the gate does not hold
    by_name = {e.name: e for e in experiments}
    for path in bundles(paths):
        try:
            found = judge_bundle(path, _expected(path, by_name))
        except BundleError as exc:  # a truncated results.json: judge nothing from it
            broken.append(f"bundle {path} cannot be read: {exc.message}")
            continue
        if found.experiment.name not in by_name:
            foreign.append(
                f"bundle {path} is of experiment {found.experiment.name!r}, which this gate "
                f"does not hold ({', '.join(by_name)}): not judged"
            )
            continue
        judged.append(found)
    seen = {j.experiment.name for j in judged}
    missing = [e.name for e in experiments if e.name not in seen] if not broken else []
    return judged, missing, broken + foreign


def _expected(path: Path, by_name: dict[str, Experiment]) -> Experiment | None:
    """The gate's experiment the bundle at `path` claims to be (None: none of them)."""
    try:
        name = read_json(path / bundle.RESULTS)["experiment"]["name"]
    except (CsorchError, KeyError, TypeError):
        return None
    return by_name.get(name) if isinstance(name, str) else None


def read_back(
    judged: Sequence[Judged], experiments: Sequence[Experiment], repeat: int | None
) -> list[Judged]:
    """The bundles a gate just wrote (run or resumed), read back through `bundle.trust`
    against the gate's experiments (with `--repeat`): what the gate judges is what its
    directory proves."""
    by_name = {e.name: runner.with_repeats(e, repeat) for e in experiments}
    out = []
    for j in judged:
        if not j.bundle:
            out.append(j)
            continue
        try:
            reasons = trust.load_trusted(Path(j.bundle), by_name.get(j.experiment.name)).reasons
        except BundleError as exc:
            reasons = (exc.message,)
        out.append(dataclasses.replace(j, problems=(*j.problems, *reasons)))
    return out
