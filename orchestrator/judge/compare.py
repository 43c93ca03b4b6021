"""Pinned-release controls side by side: installed wheel vs rebuilt unmodified vs patched.

From one experiment's records: each variant's identity (source digest, patches, build
kind, binaries), each test node's outcome per variant and run, each checker run's
signature set per variant; then two plain statements: whether the controls agree (as the
verdict decides it, `judge.agreement`: the same weighed signatures in each checker run
and the same failing cases in each plain run) and whether the fix removes what they
share (every failing node and every signature, as shown). Pure: records in,
`Comparison` out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.findings.signatures import signature
from orchestrator.judge import agreement
from orchestrator.judge.causality import judged_findings
from orchestrator.model import Attempt, Build, Checker, Experiment, Outcome, SourceTree
from orchestrator.model.kinds import aggregate
from orchestrator.model.record import Record


@dataclass(frozen=True)
class Identity(Record):
    variant: str
    role: str  # "control", "fix" or ""
    kind: str  # build kind
    built: bool
    source_digest: str
    patches: tuple[str, ...]  # "name sha256"
    binaries: tuple[str, ...]  # "path sha256"


@dataclass(frozen=True)
class NodeRow(Record):
    run: str
    node: str
    outcomes: tuple[tuple[str, str], ...]  # (variant, outcome or "-")


@dataclass(frozen=True)
class SignatureSet(Record):
    run: str
    checker: str
    variant: str
    signatures: tuple[tuple[str, int], ...]  # (label, findings)


@dataclass(frozen=True)
class Comparison(Record):
    experiment: str
    identities: tuple[Identity, ...]
    nodes: tuple[NodeRow, ...]
    signatures: tuple[SignatureSet, ...]
    controls: tuple[str, ...]
    fix: str
    agree: bool
    disagreements: tuple[str, ...]
    shared: tuple[str, ...]  # "run: signature" or "run: node failed", in every control
    remaining: tuple[str, ...]  # shared items the fix still shows
    inconclusive: tuple[str, ...]  # attempts whose evidence is incomplete, variants not built
    statements: tuple[str, ...]

    @property
    def removes(self) -> bool:
        return bool(self.shared) and not self.remaining


def _identities(
    experiment: Experiment, sources: Sequence[SourceTree], builds: Sequence[Build]
) -> tuple[Identity, ...]:
    by_source = {s.variant: s for s in sources}
    by_build = {b.variant: b for b in builds}
    out = []
    for v in experiment.variants:
        s, b = by_source.get(v.name), by_build.get(v.name)
        out.append(
            Identity(
                v.name,
                experiment.role(v.name),
                v.build.kind.value,
                bool(b and b.ok),
                s.digest if s else "",
                tuple(f"{p.path.name} {p.sha256}" for p in s.patches) if s else (),
                tuple(f"{a.path} {a.sha256}" for a in b.artifacts) if b else (),
            )
        )
    return tuple(out)


def _evidence(experiment: Experiment, attempts: Sequence[Attempt]):
    """Per (variant, run): the set of evidence items, node outcomes and signature counts."""
    items: dict[tuple[str, str], set[str]] = defaultdict(set)
    nodes: dict[tuple[str, str, str], list[Outcome]] = defaultdict(list)
    sigs: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    tools: dict[str, Checker] = {}
    for a in attempts:
        tools.setdefault(a.run, a.checker)
        for n in a.nodes:
            nodes[(a.run, n.nodeid, a.variant)].append(n.outcome)
            if n.outcome is Outcome.FAILED:
                items[(a.variant, a.run)].add(f"{a.run}: {n.nodeid} failed")
        for f in a.findings:
            label = signature(f).label()
            sigs[(a.variant, a.run)][label] += f.count
            items[(a.variant, a.run)].add(f"{a.run}: {label}")
    return items, nodes, sigs, tools


def compare(
    experiment: Experiment,
    sources: Sequence[SourceTree],
    builds: Sequence[Build],
    attempts: Sequence[Attempt],
) -> Comparison:
    """The side-by-side comparison of an experiment's controls and fix."""
    expect = experiment.expect
    controls = tuple(expect.controls) if expect else ()
    fix = expect.fix if expect else ""
    variants = [v.name for v in experiment.variants]
    items, nodes, sigs, tools = _evidence(experiment, attempts)
    identities = _identities(experiment, sources, builds)
    rows = []
    for run in experiment.runs:
        names = sorted({node for (r, node, _) in nodes if r == run.name})
        for node in names:
            cells = tuple(
                (
                    v,
                    aggregate(nodes[(run.name, node, v)]).value
                    if nodes[(run.name, node, v)]
                    else "-",
                )
                for v in variants
            )
            rows.append(NodeRow(run.name, node, cells))
    sets = tuple(
        SignatureSet(
            run.name,
            tools.get(run.name, run.checker).value,
            v,
            tuple(sorted(sigs[(v, run.name)].items())),
        )
        for run in experiment.runs
        if tools.get(run.name, run.checker) is not Checker.NONE
        for v in variants
    )
    unsure = [f"variant {b.variant} did not build" for b in builds if not b.ok]
    unsure += [
        f"{a.variant}/{a.run}/{a.case} r{a.repeat}: {a.inconclusive_reason}"
        for a in attempts
        if not a.conclusive
    ]
    # the verdict's definition (`judge.agreement`), so compare never contradicts it
    disagreements = [
        f"{d.run}: {d.item} ({d.shown_by} only)"
        for d in agreement.disagreements(experiment, attempts, controls, judged_findings)
    ]
    shared: set[str] | None = None
    for run in experiment.runs:
        per_control = {c: items[(c, run.name)] for c in controls}
        common = set.intersection(*per_control.values()) if per_control else set()
        shared = common if shared is None else shared | common
    shared_items = tuple(sorted(shared or ()))
    fix_items = set().union(*(items[(fix, r.name)] for r in experiment.runs)) if fix else set()
    remaining = tuple(i for i in shared_items if i in fix_items)
    agree = len(controls) >= 1 and not disagreements
    statements = []
    if len(controls) > 1:
        digests = {i.source_digest for i in identities if i.role == "control"}
        same_source = len(digests) == 1 and "" not in digests
        statements.append(
            f"The controls ({', '.join(controls)}) "
            + ("agree" if agree else f"disagree in {len(disagreements)} item(s)")
            + (
                ": the same signatures and the same failing cases in every run"
                if agree
                else f", first: {disagreements[0]}"
            )
            + (
                "; they are built from the same source and patches."
                if same_source
                else "; their sources differ."
            )
        )
    if not shared_items:
        statements.append(
            "The controls share no finding or failure: nothing for the fix to remove."
        )
    elif remaining:
        statements.append(
            f"The fix ({fix}) does not remove what the controls share: it still shows "
            f"{len(remaining)} of {len(shared_items)}, first: {remaining[0]}."
        )
    else:
        statements.append(
            f"The fix ({fix}) removes all {len(shared_items)} item(s) the controls share."
        )
    if unsure:
        statements.append(
            f"{len(unsure)} attempt(s) or build(s) are inconclusive, first: {unsure[0]}."
        )
    return Comparison(
        experiment.name,
        identities,
        tuple(rows),
        sets,
        controls,
        fix,
        agree,
        tuple(disagreements),
        shared_items,
        remaining,
        tuple(unsure),
        tuple(statements),
    )
