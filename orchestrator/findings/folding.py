"""Findings folded as a log is parsed: per case and signature, the true count and the
first few findings whole (`EXAMPLES`); the later ones are counted into the last example
kept (`Finding.count`) and dropped.

A memcheck run prints one record per faulting thread (4,098 for one planted owner-scope
bug on the H200), racecheck's hazard report one per hazardous byte: kept whole, a 100 MB
log held 11,320 findings (80 MB) that every report then grouped back into one signature.
Folded, a parse holds memory in proportion to its distinct signatures and cases, and the
counts stay exact: the check against the tool's summary, the tally per variant x run x
case and every report add up `Finding.count`.

What a kept example stands for: the records folded into it have its signature (checker,
kind, access, space, size, code, kernel and top frames) and its case, nothing more.
Their addresses, threads, blocks and host backtraces are not kept; a suppression that
tells records of one signature apart by those marks the folded ones as it marks the
example they were counted into (`suppressions.apply`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from orchestrator.findings.signatures import signature
from orchestrator.model import Finding, Signature

#: findings kept whole per signature and case; None (in `Fold`) keeps every one
EXAMPLES = 3


@dataclass
class Group:
    """One case and signature of a fold."""

    kept: int = 0  # examples kept
    last: int = -1  # the index of the last one in `Fold.kept`
    folded: int = 0  # records counted into it beyond its own count


@dataclass
class Fold:
    """The findings of one parse, folded as they come. Mutable, one per parse."""

    examples: int | None = EXAMPLES
    kept: list[Finding] = field(default_factory=list)
    total: int = 0  # records seen, folded ones included
    _groups: dict[tuple[str, Signature], Group] = field(default_factory=dict)

    def full(self, case: str, sig: Signature) -> Group | None:
        """(case, sig)'s group when it has its examples (a further record of it is only
        counted, so its parser need not read it whole: `count`), else None."""
        group = self._groups.get((case, sig))
        if group is None or self.examples is None or group.kept < self.examples:
            return None
        return group

    def add(self, finding: Finding, sig: Signature | None = None) -> None:
        """One parsed finding (`sig`: its signature, when the caller knows it already)."""
        key = (finding.case, sig if sig is not None else signature(finding))
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = Group()
        self.total += finding.count
        if self.examples is None or group.kept < self.examples:
            group.kept += 1
            group.last = len(self.kept)
            self.kept.append(finding)
        else:
            group.folded += finding.count

    def count(self, group: Group, n: int = 1) -> None:
        """`n` records of a group that is `full`, counted without being parsed."""
        group.folded += n
        self.total += n

    def findings(self) -> tuple[Finding, ...]:
        """The kept findings in log order, each group's last one carrying what was
        folded into it."""
        out = list(self.kept)
        for group in self._groups.values():
            if group.folded:
                last = out[group.last]
                out[group.last] = replace(last, count=last.count + group.folded)
        return tuple(out)


def fold(findings: tuple[Finding, ...], examples: int | None = EXAMPLES) -> tuple[Finding, ...]:
    """`findings` folded (a parser that could not fold as it went, or a merge of parses)."""
    folder = Fold(examples)
    for finding in findings:
        folder.add(finding)
    return folder.findings()
