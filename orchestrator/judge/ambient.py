"""Ambient findings: what the environment shows in every variant, not what the change does.

On the H200, memcheck reported 34 `api-error CUDA_ERROR_INVALID_VALUE in
cuGetProcAddress_v2` in every variant of a gate, fix included: PyTorch's own runtime
start-up probing the driver for entry points, with no frame of the extension. Such a
signature says nothing about the fix (the fix shows it as much as the controls do), and
a derived target made of it would fail every fix.

A signature is ambient in a run when every variant the expectations name (each control
and the fix) shows it in some attempt of that run, and none of its findings has a frame
in the subject (`findings.subject`: device or host; a finding with no frame at all is
not known to be outside the subject, so it is never ambient). Ambient signatures are
not derived as targets and not called unexpected; the judgement lists them, every
report shows them as ambient, and the gate's `ambient:` policy (`report`, the default,
or `fail`) decides whether they fail the gate. Pure.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from orchestrator.findings import subject as subjects
from orchestrator.findings.signatures import fingerprint, signature
from orchestrator.model import Attempt, Checker, Experiment, Finding
from orchestrator.model.record import Record


@dataclass(frozen=True)
class Ambient(Record):
    run: str
    signature: str  # the label
    fingerprint: str
    findings: int  # records, every variant together
    variants: tuple[str, ...] = ()  # the variants that showed it (each one the expectations name)

    @property
    def id(self) -> str:
        """The signature id the reports show."""
        return self.fingerprint[:12]


def ambient(
    experiment: Experiment,
    attempts: Iterable[Attempt],
    judged: Callable[[Attempt], Iterable[Finding]],
    subject: subjects.Subject = subjects.ANY,
) -> tuple[Ambient, ...]:
    """The experiment's ambient signatures, per checker run; `judged` gives the findings
    of an attempt that the verdict weighs (suppressed and follow-on records left out)."""
    if experiment.expect is None:
        return ()
    variants = (*experiment.expect.controls, experiment.expect.fix)
    checked = {r.name for r in experiment.runs if r.checker is not Checker.NONE}
    seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    counts: dict[tuple[str, str], int] = defaultdict(int)
    labels: dict[str, str] = {}
    outside: dict[str, bool] = {}
    for a in attempts:
        if a.run not in checked or a.variant not in variants:
            continue
        for f in judged(a):
            fp = fingerprint(sig := signature(f))
            labels.setdefault(fp, sig.label())
            framed = bool(f.frames or f.host_frames)
            outside[fp] = outside.get(fp, True) and framed and not subjects.in_subject(f, subject)
            seen[(a.run, fp)].add(a.variant)
            counts[(a.run, fp)] += f.count
    out = [
        Ambient(run, labels[fp], fp, counts[(run, fp)], tuple(v for v in variants if v in by))
        for (run, fp), by in seen.items()
        if outside[fp] and all(v in by for v in variants)
    ]
    return tuple(sorted(out, key=lambda x: (x.run, x.signature)))
