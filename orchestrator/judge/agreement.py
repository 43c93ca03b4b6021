"""Whether the controls agree: the one definition the verdict and `csorch compare` share.

docs/architecture.md, "Verdicts": causality needs the controls to agree with each other
(installed and rebuilt give the same signature set). A control's evidence in a run is:
- in a checker run, the labels of the signatures the verdict weighs
  (`judge.judged_findings`: a suppressed record, or an API error that follows a fault,
  is not weighed, so it cannot make two controls disagree);
- in a plain run, `case <name> failed` for each case whose attempt failed with
  conclusive evidence (an attempt that timed out or whose log is incomplete says nothing).
Over the N repeats the run plans, every case and device together. The first control is
compared with each other one, run by run; what only one of two shows is a
disagreement. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from orchestrator.findings.signatures import signature
from orchestrator.model import Attempt, Checker, Experiment, Finding, Outcome, Run
from orchestrator.model.record import Record


@dataclass(frozen=True)
class Disagreement(Record):
    run: str
    first: str  # the first control
    other: str  # the control compared with it
    item: str  # a signature label, or "case <name> failed"
    shown_by: str  # which of the two shows it


def evidence(
    experiment: Experiment,
    attempts: Iterable[Attempt],
    variant: str,
    run: Run,
    judged: Callable[[Attempt], Iterable[Finding]],
) -> frozenset[str]:
    """What `variant` shows in `run` over its planned repeats, as the controls are
    compared; `judged` gives the findings of an attempt the verdict weighs."""
    repeats = experiment.repeats_for(run)
    out: set[str] = set()
    for a in attempts:
        if a.variant != variant or a.run != run.name or not 0 <= a.repeat < repeats:
            continue
        if run.checker is Checker.NONE:
            if a.conclusive and a.outcome is Outcome.FAILED:
                out.add(f"case {a.case} failed")
        else:
            out.update(signature(f).label() for f in judged(a))
    return frozenset(out)


def disagreements(
    experiment: Experiment,
    attempts: Iterable[Attempt],
    controls: Sequence[str],
    judged: Callable[[Attempt], Iterable[Finding]],
) -> tuple[Disagreement, ...]:
    """Per run, per control after the first: each item only one of the two shows,
    sorted; () when the controls agree (one control always does)."""
    attempts = tuple(attempts)
    out = []
    for run in experiment.runs:
        sets = {c: evidence(experiment, attempts, c, run, judged) for c in controls}
        first = controls[0] if controls else ""
        for other in controls[1:]:
            for item in sorted(sets[first] ^ sets[other]):
                by = first if item in sets[first] else other
                out.append(Disagreement(run.name, first, other, item, by))
    return tuple(out)
