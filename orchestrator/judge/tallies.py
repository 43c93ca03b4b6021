"""Tallies: the attempts of one variant x run x case folded into one row (outcome over
the repeats, conclusiveness and why not, finding counts per signature, the checker's own
count beside the parsed one). Pure. What the tables and reports show; the verdict is
`judge`'s."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from orchestrator.findings.signatures import fingerprint, signature
from orchestrator.model import Attempt, Checker, Outcome
from orchestrator.model.kinds import aggregate
from orchestrator.model.record import Record


@dataclass(frozen=True)
class SignatureTally(Record):
    fingerprint: str
    label: str
    count: int  # records with this signature, all repeats together (`Finding.count`)
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
    findings: int  # parsed records (folded ones included)
    summary_count: int | None  # the checker's own count, summed; None if any is missing


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
            tally[1] += finding.count
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
        findings=sum(a.parse.records for a in attempts if a.parse is not None),
        summary_count=sum(c for c in counts if c is not None)
        if sanitized and None not in counts
        else None,
    )
