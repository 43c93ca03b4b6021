"""judge.ambient and what causality does with it: torch's start-up API errors in every
variant are the environment's; the launch failures after a control's fault follow it.
Both from the hand-written grammar excerpts (memcheck-torch-startup, memcheck-cub-follow-on)."""

from __future__ import annotations

from pathlib import Path

from orchestrator import judge
from orchestrator.backends.compute_sanitizer import log as cs_log
from orchestrator.judge.ambient import ambient
from orchestrator.model import Attempt, Checker, Experiment, Finding, TargetPattern, Verdict
from tests import factories

GRAMMAR = Path(__file__).resolve().parents[2] / "fixtures" / "compute-sanitizer" / "grammar"


def parse(name: str) -> tuple[Finding, ...]:
    with open(GRAMMAR / name, encoding="utf-8") as lines:
        return cs_log.parse(lines, checker=Checker.MEMCHECK).findings


STARTUP = parse("memcheck-torch-startup.log")
FAULT = parse("memcheck-cub-follow-on.log")


def experiment(targets: tuple[TargetPattern, ...] = ()) -> Experiment:
    return factories.experiment(name="sum", runs=("memcheck",), cases=("sum",), targets=targets)


def attempts(fix: tuple[Finding, ...] = STARTUP) -> list[Attempt]:
    return [
        factories.attempt(variant, "memcheck", "sum", r, *findings, checker=Checker.MEMCHECK)
        for variant, findings in (("fixed", fix), ("control", STARTUP + FAULT))
        for r in range(2)
    ]


def test_startup_errors_in_every_variant_are_ambient() -> None:
    (found,) = ambient(experiment(), attempts(), judge.judged_findings)
    assert found.signature.endswith("in cuGetProcAddress_v2")
    assert found.variants == ("control", "fixed") and found.findings == 8
    assert len(found.id) == 12


def test_a_signature_only_the_controls_show_is_not_ambient() -> None:
    assert ambient(experiment(), attempts(fix=()), judge.judged_findings) == ()


def test_derived_targets_leave_the_environment_and_the_follow_ons_out() -> None:
    # before: the start-up error was a derived target the fix "still shows": FAIL
    j = judge.causality(experiment(), attempts())
    assert j.verdict is Verdict.PASS, j.reasons
    assert [t for t in j.targets if "cuGetProcAddress" in t] == []
    assert [t for t in j.targets if "cudaErrorLaunchFailure" in t] == []
    assert [t for t in j.targets if "sumext::sum_cuda" in t]
    assert [a.signature for a in j.ambient] == [
        ambient(experiment(), attempts(), judge.judged_findings)[0].signature
    ]


def test_explicit_target_leaves_neither_ambient_nor_follow_ons_unexpected() -> None:
    target = TargetPattern(checker="memcheck", kind="invalid-access", function="sumext::*")
    exp = experiment((target,))
    assert judge.causality(exp, attempts()).verdict is Verdict.PASS
    # before: 8 start-up errors and the control's 3 launch failures were unexpected
    assert judge.uncovered(exp, attempts()) == ()


def test_a_fault_in_the_subject_shown_by_every_variant_is_not_ambient_and_fails_the_fix() -> None:
    rows = attempts(fix=STARTUP + FAULT)
    assert [a.signature for a in ambient(experiment(), rows, judge.judged_findings)] == [
        ambient(experiment(), attempts(), judge.judged_findings)[0].signature
    ]
    j = judge.causality(experiment(), rows)
    assert j.verdict is Verdict.FAIL and "sumext::sum_cuda" in j.reasons[0]


def test_judgements_stored_before_ambient_and_broken_still_load() -> None:
    old = {"verdict": "pass", "reasons": ["r"], "hits": [], "targets": [], "unexpected": []}
    j = judge.Judgement.from_dict(old)
    assert j.ambient == () and j.broken == ()
    f = Finding.from_dict({"checker": "memcheck", "kind": "api-error"})
    assert f.follows == ""
