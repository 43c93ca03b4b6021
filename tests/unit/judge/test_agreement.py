"""judge.agreement: the one definition of "the controls agree", which the verdict and
`csorch compare` share; cases where the two used to say otherwise."""

from __future__ import annotations

import dataclasses

from orchestrator import judge
from orchestrator.judge import agreement
from orchestrator.judge.compare import compare
from orchestrator.model import Finding, NodeResult, Outcome, ParseResult, Verdict
from unit.judge import test_causality as t

# a record a suppression marked, and a launch failure after the target fault (a
# follow-on): the verdict weighs neither
SUPPRESSED = dataclasses.replace(t.OTHER, suppressed="supp.xml#1")
LOST = Finding(t.TARGET.checker, "api-error", code="cudaErrorLaunchFailure", detail="cudaFree")


def _with(attempts, variant: str, run: str, extra=(), nodes=()):
    out = []
    for a in attempts:
        if a.variant == variant and a.run == run:
            findings = a.findings + tuple(extra)
            a = dataclasses.replace(
                a, parse=ParseResult(findings, len(findings), 0, True), nodes=tuple(nodes)
            )
        out.append(a)
    return out


def test_identical_controls_agree() -> None:
    exp = t.experiment()
    controls = ("rebuilt", "installed")
    assert agreement.disagreements(exp, t.attempts(), controls, judge.judged_findings) == ()


def test_what_one_control_alone_shows_is_named_with_who_shows_it() -> None:
    exp = t.experiment()
    rows = t.attempts(installed_memcheck="other other other", rebuilt_plain="fail fail fail")
    found = agreement.disagreements(exp, rows, ("rebuilt", "installed"), judge.judged_findings)
    assert [(d.run, d.item, d.shown_by) for d in found] == [
        ("plain", "case rng failed", "rebuilt"),
        ("memcheck", "memcheck invalid-access global write size 4 in other", "installed"),
    ]


def test_suppressed_and_follow_on_records_do_not_split_the_controls() -> None:
    # before: causality said the controls agree (PASS) while compare said they disagree
    # in 2 items, beside it: compare counted every record, suppressed and follow-on alike
    exp = t.experiment()
    rows = _with(t.attempts(), "installed", "memcheck", extra=(SUPPRESSED, LOST))
    assert judge.causality(exp, rows).verdict is Verdict.PASS
    c = compare(exp, [], [], rows)
    assert c.agree and c.disagreements == ()


def test_a_node_failing_in_a_checker_run_does_not_split_the_controls() -> None:
    # before: compare said the controls disagree on "memcheck: ... failed"; the verdict
    # compares failures in plain runs only (a checker's run is compared by signatures)
    exp = t.experiment()
    failed = (NodeResult("t/test_rng.py::test_x", Outcome.FAILED),)
    rows = _with(t.attempts(), "installed", "memcheck", nodes=failed)
    assert judge.causality(exp, rows).verdict is Verdict.PASS
    assert compare(exp, [], [], rows).agree


def test_controls_that_disagree_for_the_verdict_disagree_for_compare() -> None:
    exp = t.experiment()
    rows = t.attempts(installed_memcheck="other other other")
    j = judge.causality(exp, rows)
    c = compare(exp, [], [], rows)
    assert j.verdict is Verdict.INCONCLUSIVE
    assert "controls rebuilt and installed disagree in run memcheck" in " ".join(j.reasons)
    assert not c.agree
    assert c.disagreements == (
        "memcheck: memcheck invalid-access global write size 4 in other (installed only)",
    )
