"""fold: per case and signature, the true count and the first few findings whole."""

from __future__ import annotations

import dataclasses

from orchestrator.findings import folding
from orchestrator.findings.signatures import group, signature, total
from orchestrator.model import Checker, Finding, Frame

READ = Finding(
    Checker.MEMCHECK, "invalid-access", "read", 8, "global", frames=(Frame("k(float *)"),)
)
WRITE = dataclasses.replace(READ, access="write")


def thread(finding: Finding, i: int, case: str = "") -> Finding:
    return dataclasses.replace(finding, thread=f"{i},0,0", case=case)


def test_the_first_examples_are_kept_whole_and_the_rest_counted_into_the_last() -> None:
    findings = [thread(READ, i) for i in range(100)] + [thread(WRITE, i) for i in range(2)]
    folded = folding.fold(tuple(findings))
    assert [(f.access, f.thread, f.count) for f in folded] == [
        ("read", "0,0,0", 1),
        ("read", "1,0,0", 1),
        ("read", "2,0,0", 98),
        ("write", "0,0,0", 1),
        ("write", "1,0,0", 1),
    ]
    assert total(folded) == 102
    assert [g.count for g in group(folded)] == [g.count for g in group(findings)] == [100, 2]


def test_cases_fold_apart_and_keep_their_exact_counts() -> None:
    findings = [thread(READ, i, "t.py::a") for i in range(5)]
    findings += [thread(READ, i, "t.py::b") for i in range(7)]
    findings += [thread(READ, i, "t.py::a") for i in range(4)]
    folded = folding.fold(tuple(findings))
    per_case = {c: sum(f.count for f in folded if f.case == c) for c in ("t.py::a", "t.py::b")}
    assert per_case == {"t.py::a": 9, "t.py::b": 7}
    assert len(folded) == 2 * folding.EXAMPLES


def test_a_fold_tells_when_a_signature_has_its_examples_and_counts_without_a_finding() -> None:
    folder = folding.Fold(examples=2)
    sig = signature(READ)
    assert folder.full("", sig) is None
    folder.add(thread(READ, 0))
    folder.add(thread(READ, 1), sig)
    group = folder.full("", sig)
    assert group is not None and folder.full("t.py::a", sig) is None
    folder.count(group, 40)
    assert folder.total == 42 and [f.count for f in folder.findings()] == [1, 41]


def test_none_keeps_every_finding_and_folding_twice_changes_nothing() -> None:
    findings = tuple(thread(READ, i) for i in range(10))
    assert folding.fold(findings, examples=None) == findings
    once = folding.fold(findings)
    assert folding.fold(once) == once and total(once) == 10
