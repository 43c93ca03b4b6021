"""tally: the attempts of a variant x run x case folded into one row."""

from __future__ import annotations

import dataclasses

import pytest

from orchestrator.judge import tallies
from orchestrator.model import Attempt, Checker, Finding, Frame, Outcome, ParseResult
from orchestrator.model.kinds import aggregate

HIT = Finding(
    Checker.MEMCHECK, "invalid-access", "read", 8, "global", frames=(Frame("k(float *)"),)
)
OTHER = Finding(Checker.MEMCHECK, "invalid-access", "write", 4, "global", frames=(Frame("o(int)"),))


def memcheck(repeat: int, *findings: Finding, summary: int | None = -1, case="rng") -> Attempt:
    """A memcheck attempt; summary -1 = the parsed count, None = the log has no summary."""
    count = len(findings) if summary == -1 else summary
    parse = ParseResult(findings, count, 0, count is not None)
    return Attempt(
        "v", "memcheck", case, repeat, Checker.MEMCHECK, outcome=Outcome.PASSED, parse=parse
    )


@pytest.mark.parametrize(
    ("outcomes", "aggregated"),
    [
        ([], Outcome.ERROR),
        ([Outcome.PASSED, Outcome.PASSED], Outcome.PASSED),
        ([Outcome.PASSED, Outcome.SKIPPED], Outcome.PASSED),
        ([Outcome.SKIPPED, Outcome.SKIPPED], Outcome.SKIPPED),
        ([Outcome.PASSED, Outcome.FAILED], Outcome.FAILED),
        ([Outcome.FAILED, Outcome.ERROR], Outcome.ERROR),
    ],
)
def test_aggregate(outcomes, aggregated) -> None:
    assert aggregate(outcomes) is aggregated


def test_a_row_counts_findings_per_signature_and_keeps_both_counts() -> None:
    (row,) = tallies.case_results(
        [memcheck(0, HIT, HIT), memcheck(1, summary=None), memcheck(2, HIT, OTHER, summary=4000)]
    )
    assert (row.variant, row.run, row.case) == ("v", "memcheck", "rng")
    assert row.outcomes == (Outcome.PASSED,) * 3 and row.outcome is Outcome.PASSED
    assert not row.conclusive and row.reasons[0].startswith("repeat 1: ")
    assert row.findings == 4 and row.summary_count is None  # one summary missing
    assert [(s.count, s.repeats) for s in row.signatures] == [(3, 2), (1, 1)]
    assert row.signatures[0].label.endswith("in k")


def test_a_row_counts_the_records_folded_into_a_finding() -> None:
    folded = dataclasses.replace(HIT, count=4096)
    (row,) = tallies.case_results(
        [memcheck(0, HIT, folded, summary=4097), memcheck(1, OTHER, HIT, summary=2)]
    )
    assert row.conclusive and (row.findings, row.summary_count) == (4099, 4099)
    assert [(s.count, s.repeats) for s in row.signatures] == [(4098, 2), (1, 1)]


def test_the_checker_count_is_summed_beside_the_parsed_one_and_plain_runs_have_none() -> None:
    (row,) = tallies.case_results([memcheck(0, HIT, summary=4164), memcheck(1, summary=0)])
    assert row.conclusive and (row.findings, row.summary_count) == (1, 4164)
    plain = Attempt("v", "plain", "rng", 0, Checker.NONE, outcome=Outcome.FAILED)
    (row,) = tallies.case_results([plain])
    assert row.summary_count is None and row.conclusive and row.outcome is Outcome.FAILED


def test_a_signature_counts_the_reports_an_asan_finding_folded() -> None:
    uaf = Finding(Checker.ASAN, "heap-use-after-free", "read", 8, frames=(Frame("flood"),))
    folded = ParseResult((dataclasses.replace(uaf, count=5000), uaf), 5001, 0, True)
    attempt = Attempt("v", "memcheck", "c", 0, Checker.ASAN, outcome=Outcome.PASSED, parse=folded)
    (row,) = tallies.case_results([attempt])
    # two printed records, one of them standing for 5000 reads (4999 counted by the shim)
    assert row.conclusive and (row.findings, row.summary_count) == (5001, 5001)
    assert [(s.count, s.repeats) for s in row.signatures] == [(5001, 1)]


def test_rows_come_in_the_order_of_the_attempts_and_round_trip() -> None:
    attempts = [memcheck(0, case="b"), memcheck(0, case="a"), memcheck(1, case="b")]
    rows = tallies.case_results(attempts)
    assert [(r.case, len(r.outcomes)) for r in rows] == [("b", 2), ("a", 1)]
    assert tallies.CaseResult.from_dict(rows[0].to_dict()) == rows[0]
