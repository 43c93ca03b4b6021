"""The grid every bundle report shares: case node x variant x run x device.

A pytest case is several nodes (its node ids); a command case is one node named by the
case. Repeats fold into one cell: its outcome is `model.kinds.aggregate` of the node's
outcomes, its findings are those attributed to the node (a finding's `case` is the node
id that the case markers printed around it), counted over all repeats. Findings outside
any node (at interpreter exit, say) get the pseudo node `OUTSIDE`, as in the terminal
table. An attempt that reported no node at all (its variant did not build, pytest could
not start) is one cell named by its case, with the attempt's own outcome, so that what
did not run still has a row. Pure: records in, records out.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from orchestrator.model import Attempt, Checker, Experiment, Finding, Outcome
from orchestrator.model.job import device_label
from orchestrator.model.kinds import aggregate

OUTSIDE = "(outside a test)"

#: (case, variant, run, device)
Key = tuple[str, str, str, str]


_SEPARATOR_RE = re.compile(r"(/|::)")


def _parts(nodeid: str) -> list[str]:
    """`tests/x/test_a.py::TestA::test_b[a/b]` -> its components with their separators,
    the parameters (which may hold "/" or "::") kept whole on the last one."""
    head, bracket, rest = nodeid.partition("[")
    parts = _SEPARATOR_RE.split(head)
    parts[-1] += bracket + rest
    return parts


def labels(nodeids: Iterable[str]) -> dict[str, str]:
    """Each node id shortened by the prefix every one of them shares, cut at a `/` or
    `::`, never past the test's own name: `TestA::test_x` and `TestB::test_x` stay two
    labels (the class is kept), `tests/a/test_a.py::f` and `tests/b/test_b.py::f` become
    `a/test_a.py::f` and `b/test_b.py::f`; a lone node is its test's name."""
    ids = list(dict.fromkeys(nodeids))
    split = [_parts(n) for n in ids]
    if not split:
        return {}
    common = 0
    shortest = min(len(p) for p in split)
    # components are at even indices, separators at odd ones; keep the last component
    while common + 2 < shortest and all(p[: common + 2] == split[0][: common + 2] for p in split):
        common += 2
    return {n: "".join(p[common:]) for n, p in zip(ids, split, strict=True)}


def short(nodeid: str) -> str:
    """`tests/x/test_a.py::test_b[cpu]` -> `test_b[cpu]`: a lone node's label."""
    return labels([nodeid])[nodeid]


@dataclass(frozen=True)
class Column:
    variant: str
    run: str
    device: str  # "" without --devices
    checker: Checker  # the tool that watched the run (ASAN standing in for memcheck)

    def label(self, run_checker: Checker) -> str:
        """`memcheck (asan)` when the tool differs from what the run asked for."""
        tool = self.checker
        named = self.run if tool in (Checker.NONE, run_checker) else f"{self.run} ({tool.value})"
        return named + (f" {device_label(self.device)}" if self.device else "")


@dataclass(frozen=True)
class Cell:
    """One node of one case in one variant x run x device, over its repeats."""

    node: str
    repeats: int  # attempts in the group
    outcomes: tuple[Outcome, ...]  # one per attempt in which the node reported
    details: tuple[str, ...]  # what the node results or the attempts said about it
    findings: tuple[Finding, ...]  # attributed to this node, all repeats
    hit_repeats: int  # attempts with at least one of those findings
    reasons: tuple[str, ...]  # why the group's evidence is not conclusive
    sanitized: bool  # a checker watched it
    not_built: str = ""  # the variant's build error

    @property
    def outcome(self) -> Outcome | None:
        return aggregate(self.outcomes) if self.outcomes else None

    @property
    def records(self) -> int:
        """The checker's records behind `findings` (folded ones included)."""
        return sum(f.count for f in self.findings)


def groups(attempts: Iterable[Attempt]) -> dict[Key, list[Attempt]]:
    """Attempts by (case, variant, run, device), repeats in order."""
    out: dict[Key, list[Attempt]] = defaultdict(list)
    for a in attempts:
        out[(a.case, a.variant, a.run, a.device)].append(a)
    for group in out.values():
        group.sort(key=lambda a: a.repeat)
    return dict(out)


def columns(experiment: Experiment, attempts: Sequence[Attempt]) -> list[Column]:
    """(variant, run, device) that have attempts, in config order, devices sorted."""
    seen: dict[tuple[str, str], dict[str, Checker]] = defaultdict(dict)
    for a in attempts:
        seen[(a.variant, a.run)].setdefault(a.device, a.checker)
    return [
        Column(v.name, r.name, device, seen[(v.name, r.name)][device])
        for v in experiment.variants
        for r in experiment.runs
        for device in sorted(seen.get((v.name, r.name), {}), key=lambda d: (len(d), d))
    ]


def nodes(attempts: Iterable[Attempt], case: str) -> list[str]:
    """The nodes of one case's attempts, first seen first; the case itself when none."""
    found: dict[str, None] = {}
    outside = False
    for a in attempts:
        for n in a.nodes:
            found[n.nodeid] = None
        outside = outside or any(not f.case for f in a.findings)
    out = list(found) or [case]
    return out + [OUTSIDE] if outside else out


def rows(experiment: Experiment, attempts: Sequence[Attempt]) -> list[tuple[str, str]]:
    """(case, node) for every case in config order, over every variant, run and device."""
    by_case: dict[str, list[Attempt]] = {c.name: [] for c in experiment.cases}
    for a in attempts:
        by_case.setdefault(a.case, []).append(a)
    return [(case, node) for case, group in by_case.items() for node in nodes(group, case)]


def cell(attempts: Sequence[Attempt], node: str, not_built: str = "") -> Cell:
    """The cell of `node` in one group of attempts (one case x variant x run x device)."""
    reported = [n for a in attempts for n in a.nodes if n.nodeid == node]
    outcomes = tuple(n.outcome for n in reported)
    details = [n.detail for n in reported if n.detail]
    if not reported and node != OUTSIDE and not any(a.nodes for a in attempts):
        # nothing reported a node: the attempt itself is all there is to say
        outcomes = tuple(a.outcome for a in attempts)
        details = [a.error for a in attempts if a.error]
    findings = [[f for f in a.findings if (f.case or OUTSIDE) == node] for a in attempts]
    reasons = (f"repeat {a.repeat}: {a.inconclusive_reason}" for a in attempts if not a.conclusive)
    return Cell(
        node=node,
        repeats=len(attempts),
        outcomes=outcomes,
        details=tuple(dict.fromkeys(details)),
        findings=tuple(f for per in findings for f in per),
        hit_repeats=sum(1 for per in findings if per),
        reasons=tuple(dict.fromkeys(reasons)),
        sanitized=any(a.checker is not Checker.NONE for a in attempts),
        not_built=not_built,
    )


def reason(cells: Sequence[tuple[Column, Cell | None]], width: int = 200) -> str:
    """Why a row's cells did not pass, in one line: each distinct reason (the variant's
    build error, what the node or the attempt said, why the evidence is inconclusive)
    once, with the columns it holds in, or "every column" where it holds in all of them;
    "" when every cell passed cleanly."""
    where: dict[str, list[str]] = {}
    present = [(c, cell) for c, cell in cells if cell is not None]
    for column, cell in present:
        if cell.not_built:  # what the attempts say of it repeats the build error
            texts = [f"not built: {cell.not_built}"]
        else:
            texts = list(cell.details) + [
                r.split(": ", 1)[-1] if r.startswith("repeat ") else r for r in cell.reasons
            ]
        for text in dict.fromkeys(t[:width] for t in texts if t):
            where.setdefault(text, []).append(f"{column.variant}/{column.run}")
    parts = []
    for text, columns in where.items():
        scope = "every column" if len(columns) == len(present) > 1 else ", ".join(columns)
        parts.append(f"{scope}: {text}")
    return "; ".join(parts)
