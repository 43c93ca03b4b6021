"""Tallies: the attempts of one variant x run x case folded into one row (outcome over
the repeats, conclusiveness and why not, finding counts per signature, the checker's own
count beside the parsed one). Pure. What the tables and reports show; the verdict is
`judge`'s."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace

from orchestrator.findings import SignatureCount, fingerprint, group, signature
from orchestrator.model import Attempt, Checker, Finding, Outcome, Signature
from orchestrator.serial import Record


@dataclass(frozen=True)
class SignatureTally(Record):
    fingerprint: str
    label: str
    count: int  # reports with this signature (folded ones included), all repeats together
    repeats: int  # attempts in which it appeared


@dataclass(frozen=True)
class CaseResult(Record):
    variant: str
    run: str
    case: str
    outcome: Outcome  # over all repeats: see `aggregate`
    outcomes: tuple[Outcome, ...]  # one per attempt, in repeat order
    conclusive: bool
    reasons: tuple[str, ...]  # why not conclusive
    signatures: tuple[SignatureTally, ...]
    findings: int  # parsed records
    summary_count: int | None  # the checker's own count, summed; None if any is missing


def aggregate(outcomes: Iterable[Outcome]) -> Outcome:
    """ERROR if any attempt errored, else FAILED if any failed, else SKIPPED if all were
    skipped, else PASSED. No attempts at all is an ERROR (nothing ran)."""
    seen = set(outcomes)
    for worst in (Outcome.ERROR, Outcome.FAILED):
        if worst in seen:
            return worst
    if not seen:
        return Outcome.ERROR
    return Outcome.SKIPPED if seen == {Outcome.SKIPPED} else Outcome.PASSED


def grouped(findings: Iterable[Finding]) -> tuple[SignatureCount, ...]:
    """`findings.group` counted in reports: a finding stands for itself and the repeats
    ASan's fold shim counted for it (`Finding.reports`); what the reports show."""
    found = list(findings)
    reports: dict[Signature, list[int]] = {}
    for f in found:
        count = reports.setdefault(signature(f), [0, 0])
        count[0] += f.reports
        count[1] += f.reports if f.suppressed else 0
    groups = [
        replace(g, count=reports[g.signature][0], suppressed=reports[g.signature][1])
        for g in group(found)
    ]
    return tuple(sorted(groups, key=lambda g: (-g.count, g.fingerprint)))


def case_results(attempts: Iterable[Attempt]) -> tuple[CaseResult, ...]:
    """One row per variant x run x case, in the order the attempts came."""
    groups: dict[tuple[str, str, str], list[Attempt]] = defaultdict(list)
    for attempt in attempts:
        groups[(attempt.variant, attempt.run, attempt.case)].append(attempt)
    return tuple(_case_result(key, group) for key, group in groups.items())


def _case_result(key: tuple[str, str, str], attempts: list[Attempt]) -> CaseResult:
    attempts = sorted(attempts, key=lambda a: (a.repeat, a.device))
    tallies: dict[str, list] = {}
    for attempt in attempts:
        seen_here: set[str] = set()
        for finding in attempt.findings:
            sig = signature(finding)
            fp = fingerprint(sig)
            tally = tallies.setdefault(fp, [sig.label(), 0, 0])
            tally[1] += finding.reports
            if fp not in seen_here:
                seen_here.add(fp)
                tally[2] += 1
    counts = [a.parse.summary_count if a.parse else None for a in attempts]
    sanitized = any(a.checker is not Checker.NONE for a in attempts)
    reasons = tuple(
        dict.fromkeys(
            f"repeat {a.repeat}: {a.inconclusive_reason}" for a in attempts if not a.conclusive
        )
    )
    return CaseResult(
        variant=key[0],
        run=key[1],
        case=key[2],
        outcome=aggregate(a.outcome for a in attempts),
        outcomes=tuple(a.outcome for a in attempts),
        conclusive=not reasons,
        reasons=reasons,
        signatures=tuple(
            SignatureTally(fp, label, count, repeats)
            for fp, (label, count, repeats) in sorted(tallies.items(), key=lambda i: -i[1][1])
        ),
        findings=sum(len(a.findings) for a in attempts),
        summary_count=sum(c for c in counts if c is not None)
        if sanitized and None not in counts
        else None,
    )
