"""Fuzzing orchestrator/backends/asan/log.py (the AddressSanitizer report parser).

Properties, over damaged real logs (tests/fixtures/asan and the CPU control logs),
random bytes, huge lines and two processes' output interleaved: `parse` never raises; a
log without the runtime's exit marker (or ABORTING) is never complete, so never clean;
counts agree and survive the bundle's JSON round trip; application output changes
nothing.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("hypothesis", reason="hypothesis is a CPU-machine test dependency (make setup)")

from fuzzlib import fed, fixture_lines, huge_line, interleaved, mutated, raw_bytes, with_app_output
from hypothesis import given

from orchestrator.backends.asan import log as asan_log
from orchestrator.model import ParseResult

LOGS = fixture_lines("asan/*.log", "controls/cpu-asan/*.log")


def check(lines: list[str]) -> ParseResult:
    fed("asan")
    result = asan_log.parse(lines)
    assert result.complete == (result.summary_count is not None)
    assert result.summary_count is None or result.summary_count >= 0
    assert all(f.kind for f in result.findings)
    if not result.complete:
        assert not result.conclusive and result.reason
    if not any("AddressSanitizer exit stats:" in line or "ABORTING" in line for line in lines):
        assert not result.complete, "complete without the exit marker"
    assert ParseResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result
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
    assert check(noisy) == asan_log.parse(lines)
