"""Judging: attempts in, outcomes and verdicts out. Pure functions, no I/O.

Causality (docs/architecture.md, "Verdicts"): every control shows the target in at least k of N
repeats, the fix shows it in none, and the controls agree with each other. The rules
this module applies, in order:
- FAIL when the fix shows a target in any repeat: that is evidence, even from an
  attempt whose log is incomplete (a finding that was printed was found).
- INCONCLUSIVE when anything needed is missing or untrustworthy: a variant that did
  not build, a repeat without attempts, an attempt that timed out or whose log is
  incomplete, a control that shows the target in fewer than k repeats (the defect is
  not demonstrated, so its removal cannot be), controls that disagree
  (`judge.agreement`), or no target.
- PASS otherwise. Absence of a finding counts only from conclusive attempts.
Without an explicit target, the targets are what every control reproduces in k of N
repeats: the signatures of each checker run and the failing cases of each plain run.
A target that names its checker applies only where that tool actually watched the run,
so `checker: memcheck` and `checker: asan` targets let one config serve both backends.
Weighed are the findings no suppression marked and that do not follow a fault
(`findings.follow_on`); ambient signatures (`judge.ambient`: every variant shows them, no
frame is the subject's) are never derived as targets nor called unexpected.
`Attempt.repeat` counts from 0; a repeat is a hit when any of its attempts (any case,
any device) shows the target.
"""

from __future__ import annotations

import fnmatch
import functools
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from orchestrator.findings import follow_on
from orchestrator.findings.signatures import fingerprint, matches, near_miss, signature
from orchestrator.judge import agreement, optouts
from orchestrator.judge.ambient import Ambient, ambient
from orchestrator.model import (
    Attempt,
    Build,
    Checker,
    Expectations,
    Experiment,
    Finding,
    Outcome,
    Run,
    Signature,
    TargetPattern,
    Verdict,
)
from orchestrator.model.record import Record


def judged_findings(attempt: Attempt) -> tuple[Finding, ...]:
    """The findings the verdict weighs: all but those a run's suppression file marked
    (the gate lists those apart, with the suppression that matched them) and the API
    errors that follow a fault in the same process (`findings.follow_on`: the fault is
    weighed, its consequences are listed with it)."""
    return tuple(f for f in follow_on.link(attempt.findings) if not f.suppressed and not f.follows)


def failed_builds(builds: Iterable[Build]) -> dict[str, str]:
    """variant -> the first line of its build error, for the builds that failed (what
    `causality` takes)."""
    return {b.variant: (b.error.splitlines() or ["failed"])[0] for b in builds if not b.ok}


def judged(
    experiment: Experiment, attempts: Iterable[Attempt], builds: Iterable[Build]
) -> Judgement:
    """`causality` of the attempts with what the builds say: which failed, and the
    checker opt-outs of each variant's tree. What every caller judges a bundle with."""
    builds = tuple(builds)
    forms = {b.variant: b.case_forms for b in builds if b.ok and b.case_forms}
    return causality(experiment, attempts, failed_builds(builds), optouts.of(builds), forms)


def other_tests(fix: str, controls: Sequence[str], forms: Mapping[str, Sequence[str]]) -> list[str]:
    """Under `cases_from: variant`, one reason per control whose own tests differ from the
    fix's (a file added, removed, or changed beyond comments and docstrings): the fix's
    clean run may be its test's doing, not its code's."""
    if fix not in forms:
        return []
    mine = dict(f.rpartition(" ")[::2] for f in forms[fix])
    out = []
    for control in controls:
        if control not in forms:
            continue
        theirs = dict(f.rpartition(" ")[::2] for f in forms[control])
        differ = sorted(p for p in mine.keys() | theirs.keys() if mine.get(p) != theirs.get(p))
        if differ:
            how = "changes" if differ[0] in mine and differ[0] in theirs else (
                "adds" if differ[0] in mine else "removes")  # fmt: skip
            more = f" (+{len(differ) - 1} more file(s))" if len(differ) > 1 else ""
            out.append(
                f"fix {fix} {how} its own test {differ[0]}{more} against control {control} "
                "(cases_from: variant runs each variant's own tests): the fix's clean run "
                "may be its test's doing; run every variant on one test (cases_from: "
                "config) or keep the tests the same"
            )
    return out


# --- causality ----------------------------------------------------------------------


@dataclass(frozen=True)
class Hits(Record):
    variant: str
    run: str
    target: str
    hits: int  # repeats in which the target appeared
    repeats: int  # N
    unknown: int  # repeats without a hit whose evidence is not conclusive


@dataclass(frozen=True)
class Judgement(Record):
    verdict: Verdict
    reasons: tuple[str, ...]
    hits: tuple[Hits, ...] = ()
    targets: tuple[str, ...] = ()
    unexpected: tuple[tuple[str, str], ...] = ()  # (run, signature) the fix shows beyond targets
    ambient: tuple[Ambient, ...] = ()  # signatures of the environment (`judge.ambient`)
    # "run/case: why" of the cases broken in every variant alike (`broken_cases`): not run
    broken: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Target:
    label: str
    applies: Callable[[Run, Checker], bool]  # (run, the tool that actually watched it)
    hit: Callable[[Attempt], bool]
    covers: Callable[[Signature], bool]  # whether a finding's signature is this target
    case: str = ""  # the glob of the cases the target names ("" none)
    # where a signature misses the target by one field, that field as it has it
    near: Callable[[Signature], str] = lambda sig: ""
    outcome: bool = False  # a test's outcome (failed, error), not a checker's finding


def _pattern_label(p: TargetPattern) -> str:
    fields = {k: v for k, v in p.to_dict().items() if v not in ("", None)}
    return " ".join(f"{k}={v}" for k, v in fields.items())


def _pattern_target(p: TargetPattern) -> _Target:
    def hit(a: Attempt) -> bool:
        if p.case and not fnmatch.fnmatchcase(a.case, p.case):
            return False
        if p.outcome is not None:
            return a.conclusive and a.outcome is p.outcome
        return any(matches(p, signature(f)) for f in judged_findings(a))

    def applies(run: Run, tool: Checker) -> bool:
        # a pattern naming its checker waits for that tool: with `checker: asan` and
        # `checker: memcheck` targets, one config serves both backends
        return p.applies_to(run) and (not p.checker or fnmatch.fnmatchcase(tool.value, p.checker))

    return _Target(
        _pattern_label(p), applies, hit, lambda sig: matches(p, sig), p.case,
        lambda sig: near_miss(p, sig), p.outcome is not None,
    )  # fmt: skip


def _signature_target(run: str, fp: str, label: str) -> _Target:
    return _Target(
        f"{run}: {label}",
        lambda r, _: r.name == run,
        lambda a: any(fingerprint(signature(f)) == fp for f in judged_findings(a)),
        lambda sig: fingerprint(sig) == fp,
    )


def _failure_target(run: str, case: str) -> _Target:
    return _Target(
        f"{run}: case {case} failed",
        lambda r, _: r.name == run,
        lambda a: a.conclusive and a.case == case and a.outcome is Outcome.FAILED,
        lambda sig: False,
        outcome=True,
    )


class _Index:
    """Attempts by variant, run and repeat, with each repeat's status for a target."""

    def __init__(self, experiment: Experiment, attempts: Iterable[Attempt]) -> None:
        self.experiment = experiment
        self.cases = [c.name for c in experiment.cases]
        self.by: dict[tuple[str, str, int], list[Attempt]] = defaultdict(list)
        self.tools: dict[str, Checker] = {}
        attempts = tuple(attempts)
        for a in attempts:
            self.by[(a.variant, a.run, a.repeat)].append(a)
            self.tools.setdefault(a.run, a.checker)
        # (run, case) -> why: cases broken in every variant alike (`broken_cases`), which
        # the repeats' evidence leaves out
        self.broken: dict[tuple[str, str], str] = {}
        found = ambient(experiment, attempts, judged_findings)
        self.ambient = found
        self.environment = {(x.run, x.fingerprint) for x in found}

    def tool(self, run: Run) -> Checker:
        """The checker that watched a run (ASAN standing in for memcheck, say)."""
        return self.tools.get(run.name, run.checker)

    def repeats(self, variant: str, run: Run) -> list[tuple[list[Attempt], str]]:
        """Per repeat: its attempts and why its evidence is incomplete ("" if it is not)."""
        out = []
        for r in range(self.experiment.repeats_for(run)):
            attempts = self.by.get((variant, run.name, r), [])
            missing = sorted(
                set(self.cases) - {a.case for a in attempts} - self.broken_in(run.name)
            )
            bad = [
                a for a in attempts if not a.conclusive and (run.name, a.case) not in self.broken
            ]
            why = (
                f"no attempt of case {missing[0]}"
                if missing
                else f"case {bad[0].case}: {bad[0].inconclusive_reason}"
                if bad
                else ""
            )
            out.append((attempts, why))
        return out

    def broken_in(self, run: str) -> set[str]:
        return {case for r, case in self.broken if r == run}

    def near(self, variant: str, run: Run, target: _Target) -> list[str]:
        """What `variant` showed in `run` that misses `target` by one field (that field,
        as it showed it), most repeats first."""
        seen: dict[str, set[int]] = defaultdict(set)
        for r in range(self.experiment.repeats_for(run)):
            for a in self.by.get((variant, run.name, r), []):
                if target.case and not fnmatch.fnmatchcase(a.case, target.case):
                    continue
                for f in judged_findings(a):
                    miss = target.near(signature(f))
                    if miss:
                        seen[miss].add(r)
        return sorted(seen, key=lambda m: (-len(seen[m]), m))

    def count(self, variant: str, run: Run, target: _Target) -> tuple[Hits, str]:
        hits = unknown = 0
        why = ""
        for attempts, reason in self.repeats(variant, run):
            if any(target.hit(a) for a in attempts):
                hits += 1
            elif reason:
                unknown += 1
                why = why or reason
        n = self.experiment.repeats_for(run)
        return Hits(variant, run.name, target.label, hits, n, unknown), why


def _derive(index: _Index, controls: Sequence[str], k_of: Callable[[Run], int]) -> list[_Target]:
    """What every control reproduces in k of N repeats, per run."""
    targets = []
    for run in index.experiment.runs:
        k = k_of(run)
        shared: set[tuple[str, str]] | None = None
        for control in controls:
            per_repeat = [
                {
                    (fingerprint(s), s.label())
                    for a in attempts
                    for s in map(signature, judged_findings(a))
                }
                if run.checker is not Checker.NONE
                else {
                    (a.case, f"case {a.case} {a.outcome.value}")
                    for a in attempts
                    if a.conclusive and a.outcome is Outcome.FAILED
                }
                for attempts, _ in index.repeats(control, run)
            ]
            tally: dict[tuple[str, str], int] = defaultdict(int)
            for seen in per_repeat:
                for item in seen:
                    tally[item] += 1
            reliable = {
                item
                for item, n in tally.items()
                if n >= k and (run.name, item[0]) not in index.environment
            }
            shared = reliable if shared is None else shared & reliable
        for key, label in sorted(shared or ()):
            targets.append(
                _failure_target(run.name, key)
                if run.checker is Checker.NONE
                else _signature_target(run.name, key, label)
            )
    return targets


def broken_cases(index: _Index, targets: Sequence[_Target]) -> dict[tuple[str, str], str]:
    """(run, case) -> why, for each case broken in every variant alike in a run: every
    attempt of it, in the fix and in each control, every repeat, is inconclusive, for
    one reason or another; no target names it (`case:`) and none of its attempts shows a
    target. Such a case is the environment's or the suite's, not the change's: it is
    reported as not run, and the verdict stands on the other cases (docs/architecture.md,
    "Verdicts")."""
    expect = index.experiment.expect
    if expect is None:
        return {}
    variants = (*expect.controls, expect.fix)
    out: dict[tuple[str, str], str] = {}
    for run in index.experiment.runs:
        for case in index.cases:
            if any(t.case and fnmatch.fnmatchcase(case, t.case) for t in targets):
                continue
            seen: list[Attempt] = []
            whole = True
            for variant in variants:
                mine = [
                    a
                    for r in range(index.experiment.repeats_for(run))
                    for a in index.by.get((variant, run.name, r), [])
                    if a.case == case
                ]
                whole = whole and len({a.repeat for a in mine}) == index.experiment.repeats_for(run)
                seen += mine
            if not whole or not seen or any(a.conclusive for a in seen):
                continue
            if any(t.hit(a) for t in targets for a in seen):
                continue
            out[(run.name, case)] = seen[0].inconclusive_reason
    return out


def needed(experiment: Experiment, run: Run) -> int:
    """k: the repeats of `run` in which a control must show a target (`min_hits`, at
    most N; N without one)."""
    n = experiment.repeats_for(run)
    expect = experiment.expect
    if expect is None or expect.min_hits is None:
        return n
    return min(expect.min_hits, n)


def _k_of(experiment: Experiment) -> Callable[[Run], int]:
    return functools.partial(needed, experiment)


def _targets(index: _Index, k_of: Callable[[Run], int]) -> list[_Target]:
    """The experiment's targets: as configured, else what every control reproduces."""
    expect = index.experiment.expect
    if expect is None:
        return []
    if expect.targets:
        return [_pattern_target(p) for p in expect.targets]
    return _derive(index, expect.controls, k_of)


def _uncovered(index: _Index, targets: Sequence[_Target]) -> list[tuple[str, str, Signature, int]]:
    out: dict[tuple[str, str, Signature], int] = defaultdict(int)
    for (variant, run_name, _), attempts in sorted(index.by.items()):
        run = index.experiment.run(run_name)
        for a in attempts:
            for f in judged_findings(a):
                sig = signature(f)
                if (run_name, fingerprint(sig)) in index.environment:
                    continue  # ambient: listed apart (`judge.ambient`)
                if not any(t.applies(run, index.tool(run)) and t.covers(sig) for t in targets):
                    out[(variant, run_name, sig)] += f.count
    return [(v, r, sig, n) for (v, r, sig), n in out.items()]


def uncovered(
    experiment: Experiment, attempts: Iterable[Attempt]
) -> tuple[tuple[str, str, Signature, int], ...]:
    """(variant, run, signature, findings) of every finding, in any variant, that none of
    the experiment's targets covers and no suppression marked: what a gate calls an
    unexpected signature."""
    index = _Index(experiment, attempts)
    return tuple(_uncovered(index, _targets(index, _k_of(experiment))))


def _swapped(index: _Index, expect: Expectations) -> str:
    """Where the fix shows what the controls do not (reports, failed cases): said, with
    the question whether the roles are the wrong way round ("" where it does not)."""

    def shown(variant: str) -> tuple[int, int]:
        reports = failed = 0
        for (v, _, _), attempts in index.by.items():
            if v != variant:
                continue
            for a in attempts:
                reports += sum(f.count for f in judged_findings(a))
                failed += a.conclusive and a.outcome is Outcome.FAILED
        return reports, failed

    fix = shown(expect.fix)
    controls = [shown(c) for c in expect.controls]
    if fix == (0, 0) or any(c != (0, 0) for c in controls):
        return ""
    return (
        f"; yet {expect.fix} itself shows {fix[0]} checker report(s) and {fix[1]} failed "
        f"case attempt(s), where the controls ({', '.join(expect.controls)}) show none: "
        "are the fix and the control the wrong way round?"
    )


def causality(
    experiment: Experiment,
    attempts: Iterable[Attempt],
    failed_builds: Mapping[str, str] | None = None,
    opt_outs: Mapping[str, Sequence[str]] | None = None,
    case_forms: Mapping[str, Sequence[str]] | None = None,
) -> Judgement:
    """The experiment's causality verdict; `failed_builds` maps variant -> error,
    `opt_outs` variant -> the checker opt-outs in its tree (judge/optouts.py),
    `case_forms` variant -> its own test files under `cases_from: variant` (run/cases.py)."""
    expect = experiment.expect
    if expect is None:
        return Judgement(Verdict.INCONCLUSIVE, ("the experiment states no expectations",))
    attempts = tuple(attempts)
    index = _Index(experiment, attempts)
    failed_builds = failed_builds or {}
    fails: list[str] = []
    unsure = [
        f"variant {v} did not build: {failed_builds[v]}"
        for v in (*expect.controls, expect.fix)
        if v in failed_builds
    ]
    unsure += optouts.reasons(expect.fix, expect.controls, opt_outs or {})
    unsure += other_tests(expect.fix, expect.controls, case_forms or {})

    k_of = _k_of(experiment)
    targets = _targets(index, k_of)
    index.broken = broken_cases(index, targets)
    not_run = [
        f"case {case} not run in run {run}: broken in every variant alike ({why}); "
        "no target names it or shows in it, so the verdict stands on the other cases"
        for (run, case), why in sorted(index.broken.items())
    ]
    if not expect.targets and not targets:
        unsure.append(
            f"the controls share no finding or failure reproduced in k of N "
            f"repeats: nothing for {expect.fix} to remove" + _swapped(index, expect)
        )
    all_hits: list[Hits] = []
    judged = [(t, r) for t in targets for r in experiment.runs if t.applies(r, index.tool(r))]
    if targets and not judged:
        tools = ", ".join(sorted({index.tool(r).value for r in experiment.runs}))
        unsure.append(f"no target applies to the runs as they ran (checkers: {tools})")
    for target, run in judged:
        for control in expect.controls:
            hits, why = index.count(control, run, target)
            all_hits.append(hits)
            if hits.unknown:
                unsure.append(f"control {control}, run {run.name}: {why}")
            elif hits.hits < k_of(run):
                near = index.near(control, run, target)
                hint = (
                    f" (but it shows a finding that differs from the target only in "
                    f"{near[0]}: is the target's {near[0].split('=', 1)[0]} misspelled or "
                    "too narrow?)"
                    if near
                    else ""
                )
                unsure.append(
                    f"control {control} shows [{target.label}] in {hits.hits} of "
                    f"{hits.repeats} repeats of run {run.name}; needs "
                    f"{k_of(run)}: the defect is not demonstrated{hint}"
                )
        hits, why = index.count(expect.fix, run, target)
        all_hits.append(hits)
        if hits.hits:
            fails.append(
                f"fix {expect.fix} still shows [{target.label}] in {hits.hits} of "
                f"{hits.repeats} repeats of run {run.name}"
            )
        elif hits.unknown:
            unsure.append(f"fix {expect.fix}, run {run.name}: {why}")
    apart: dict[tuple[str, str], list[str]] = defaultdict(list)
    for d in agreement.disagreements(experiment, attempts, expect.controls, judged_findings):
        apart[(d.run, d.other)].append(d.item)
    for (run_name, other), items in apart.items():
        unsure.append(
            f"controls {expect.controls[0]} and {other} disagree in run {run_name}: "
            f"{items[0]}" + (f" (+{len(items) - 1} more)" if len(items) > 1 else "")
        )
    unexpected = {
        (run, sig.label()) for v, run, sig, _ in _uncovered(index, targets) if v == expect.fix
    }
    if fails:
        verdict, reasons = Verdict.FAIL, fails + unsure + not_run
    elif unsure:
        verdict, reasons = Verdict.INCONCLUSIVE, unsure + not_run
    else:
        verdict = Verdict.PASS
        reasons = [
            f"{expect.fix} removes every target ({len({t.label for t, _ in judged})}) "
            f"that the controls "
            f"({', '.join(expect.controls)}) reproduce"
        ] + not_run
    return Judgement(
        verdict,
        tuple(dict.fromkeys(reasons)),
        tuple(all_hits),
        tuple(dict.fromkeys(t.label for t, _ in judged)),
        tuple(sorted(unexpected)),
        index.ambient,
        tuple(f"{run}/{case}: {why}" for (run, case), why in sorted(index.broken.items())),
    )


def expected_outcomes(experiment: Experiment, attempts: Iterable[Attempt]) -> dict[int, str]:
    """The attempts of a control whose test outcome (failed, error) a test-outcome target
    of the experiment shows, by id(), each with that target's label: what the control is
    meant to do, which a report shows as expected rather than as a failure. An outcome no
    such target explains is not in it."""
    attempts = tuple(attempts)
    expect = experiment.expect
    if expect is None:
        return {}
    index = _Index(experiment, attempts)
    targets = [t for t in _targets(index, _k_of(experiment)) if t.outcome]
    out: dict[int, str] = {}
    for a in attempts:
        if a.variant not in expect.controls or a.outcome in (Outcome.PASSED, Outcome.SKIPPED):
            continue
        run = experiment.run(a.run)
        for t in targets:
            if t.applies(run, index.tool(run)) and t.hit(a):
                out[id(a)] = t.label
                break
    return out


# --- one variant against explicit targets (csorch bisect / probe) ----------------------


def watches(pattern: TargetPattern, run: Run, tool: Checker) -> bool:
    """Whether `pattern` counts in `run` when `tool` watches it (ASAN for memcheck, say)."""
    return _pattern_target(pattern).applies(run, tool)


def target_hits(
    experiment: Experiment,
    targets: Sequence[TargetPattern],
    attempts: Iterable[Attempt],
    variant: str,
) -> tuple[tuple[Hits, str], ...]:
    """Per target x run it applies to: how many repeats of `variant` show the target, and
    why the repeats without a hit are unknown ("" when every one is conclusive)."""
    index = _Index(experiment, attempts)
    out = []
    for pattern in targets:
        target = _pattern_target(pattern)
        for run in experiment.runs:
            if target.applies(run, index.tool(run)):
                out.append(index.count(variant, run, target))
    return tuple(out)
