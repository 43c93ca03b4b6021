"""Fuzzing orchestrator/backends/compute_sanitizer/log.py (the compute-sanitizer text parser).

Properties, over damaged real logs (tests/fixtures/compute-sanitizer), random bytes,
huge lines and two logs interleaved: `parse` never raises; a log without a summary line
is never complete (so never clean); the result's counts agree with each other and
survive the bundle's JSON round trip; application output between checker lines changes
nothing; the folded parse (records skimmed once their signature has its examples) is
the parse with every finding kept, folded afterwards.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

pytest.importorskip("hypothesis", reason="hypothesis is a CPU-machine test dependency (make setup)")

from fuzzlib import fed, fixture_lines, huge_line, interleaved, mutated, raw_bytes, with_app_output
from hypothesis import given

from orchestrator.backends.compute_sanitizer import log as cs_log
from orchestrator.findings import folding
from orchestrator.model import ParseResult

LOGS = fixture_lines("compute-sanitizer/**/*.log")


def check(lines: list[str]) -> ParseResult:
    fed("cs_log")
    result = cs_log.parse(lines)
    assert result.complete == (result.summary_count is not None)
    assert result.summary_count is None or result.summary_count >= 0
    assert result.not_printed >= 0
    assert len(result.unparsed) <= cs_log.MAX_UNPARSED
    assert all(f.kind for f in result.findings)
    if result.complete:
        assert result.summary_lines
    else:  # an incomplete log is never evidence of a clean run
        assert not result.conclusive and result.reason
    if not any("SUMMARY: " in line for line in lines):
        assert not result.complete, "complete without a summary line"
    assert ParseResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result
    whole = cs_log.parse(lines, examples=None)
    assert result == dataclasses.replace(whole, findings=folding.fold(whole.findings))
    return result


@given(mutated(LOGS))
def test_mutated_logs(lines: list[str]) -> None:
    check(lines)


@given(raw_bytes(LOGS))
def test_random_bytes(lines: list[str]) -> None:
    check(lines)


@given(huge_line(LOGS))
def test_huge_lines(lines: list[str]) -> None:
    check(lines)


@given(interleaved(LOGS))
def test_interleaved_processes(lines: list[str]) -> None:
    check(lines)


@given(with_app_output(LOGS))
def test_application_output_changes_nothing(pair: tuple[list[str], list[str]]) -> None:
    lines, noisy = pair
    assert check(noisy) == cs_log.parse(lines)
