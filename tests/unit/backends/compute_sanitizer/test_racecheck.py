"""cs_race: racecheck's analysis and hazard records (whole logs: test_parser_fixtures)."""

from __future__ import annotations

from orchestrator.backends.compute_sanitizer.log import parse
from orchestrator.backends.compute_sanitizer.racecheck import severity
from orchestrator.model import Checker

P = "========="


def lines(*body: str) -> list[str]:
    return [f"{P} {b}" if b else P for b in body]


def test_a_race_with_several_other_accesses_sums_their_hazards() -> None:
    result = parse(
        lines(
            "Error: Race reported between Write access at k(int *)+0xf0 in k.cu:12",
            "    and Read access at k(int *)+0xd0 in k.cu:12 [32 hazards]",
            "    and Write access at k(int *)+0xf0 in k.cu:12 [4 hazards]",
            "",
            "RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)",
        ),
        checker=Checker.RACECHECK,
    )
    (f,) = result.findings
    assert (f.kind, f.access, f.hazards, f.severity) == ("race", "write-read/write", 36, "error")
    assert [fr.line for fr in f.frames] == [12, 12, 12]
    assert result.summary_split == (1, 0) and result.conclusive


def test_the_print_order_of_other_accesses_does_not_change_the_access() -> None:
    def access(*others: str) -> str:
        head = "Error: Race reported between Write access at k()+0x10 in k.cu:1"
        body = [f"    and {o} access at k()+0x20 in k.cu:2 [1 hazards]" for o in others]
        return parse(lines(head, *body, "")).findings[0].access

    assert access("Read", "Write") == access("Write", "Read") == "write-read/write"


def test_hazard_records_keep_threads_block_and_severity() -> None:
    result = parse(
        lines(
            "Warning: (Warp Level Programming) Potential RAW hazard detected at __shared__ 0x8c"
            " in block (0,0,0) :",
            "    Write Thread (35,0,0) at ws(int *)+0x90 in ws.cu:44",
            "    Read Thread (32,0,0) at ws(int *)+0x120 in ws.cu:56",
            "    Current Value : 35",
            "",
            "RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)",
        ),
        checker=Checker.RACECHECK,
    )
    (f,) = result.findings
    assert (f.kind, f.access, f.space, f.address, f.block) == (
        "race-hazard",
        "raw",
        "shared",
        "8c",
        "0,0,0",
    )
    assert f.severity == "warning" and "Warp Level Programming" in f.detail
    assert "write by thread (35,0,0)" in f.detail and "Current Value : 35" in f.detail
    assert [fr.line for fr in f.frames] == [44, 56]


def test_a_split_that_disagrees_with_the_records_is_a_mismatch() -> None:
    result = parse(
        lines(
            "Warning: Race reported between Write access at k()+0x10 in k.cu:1",
            "    and Read access at k()+0x20 in k.cu:2 [4 hazards]",
            "",
            "RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)",
        ),
        checker=Checker.RACECHECK,
    )
    assert "1 error(s), 0 warning(s)" in result.count_mismatch
    assert not result.conclusive


def test_severity_words() -> None:
    assert [severity(w) for w in ("Error", "ERROR", "WARN", "Warning", "INFO")] == [
        "error",
        "error",
        "warning",
        "warning",
        "info",
    ]
