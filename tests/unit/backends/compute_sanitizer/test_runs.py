"""cs_runs: a run of records shaped as the one before (the same text but for the
numbers outside the signature) counted at once, on the H200 racecheck captures; and
every way out of a run: a record that differs in a field of its signature, a number
whose value changes what the grammar reads, a record cut by the log's or the chunk's
end. The reference is the parse that reads every record whole, folded afterwards."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest

from orchestrator.backends.compute_sanitizer import log as cs_log
from orchestrator.backends.compute_sanitizer import runs as cs_runs
from orchestrator.backends.compute_sanitizer import skim as cs_skim
from orchestrator.findings import folding
from orchestrator.findings.signatures import group
from orchestrator.model import Checker, ParseResult

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "compute-sanitizer"
HAZARDS = FIXTURES / "cudabugs-h200" / "race.control.racecheck-report-all.log"
ANALYSIS = FIXTURES / "cudabugs-h200" / "race.control.racecheck-report-analysis.log"
P = "========="
RACE = Checker.RACECHECK
KEY = ("a skim key",)


def folded_whole(lines: list[str]) -> ParseResult:
    whole = cs_log.parse(lines, examples=None, checker=RACE)
    return dataclasses.replace(whole, findings=folding.fold(whole.findings))


def hazard_records() -> list[list[str]]:
    """The 256 hazard records of the H200 capture, each its lines (bare prefix included)."""
    out: list[list[str]] = []
    for line in HAZARDS.read_text().splitlines():
        if "Potential RAW hazard" in line:
            out.append([])
        if out and out[-1][-1:] != [f"{P} "]:
            out[-1].append(line)
    assert len(out) == 256 and all(r[-1] == f"{P} " for r in out)
    return out


def runs() -> cs_runs.Runs:
    return cs_runs.Runs(P, cs_log.HEADER_DISPATCH, cs_log.DETAIL_DISPATCH)


def count_after_first(
    records: list[list[str]], runner: cs_runs.Runs | None = None, text: str | None = None
):
    """`Runs.count` for the first record of `records`, as `skim` calls it once it has
    counted that record: (the records counted after it, the text, where it stopped)."""
    if text is None:
        text = "\n".join(line for r in records for line in r) + "\n"
    first = len("\n".join(records[0])) + 1
    stop, n = (runner or runs()).count(text, 0, first, KEY)
    return n, text, stop


def test_a_hazard_report_is_one_run_of_one_shape() -> None:
    records = hazard_records()
    n, text, stop = count_after_first(records)
    assert n == 255 and stop == len(text)
    # the numbers of the signature's frames stay as they are; the others are holes
    shape = runs()._shape(text, 0, len("\n".join(records[0])) + 1)
    assert shape is not None and shape.lines == 7
    assert "race\\.cu:18" in shape.regex.pattern and "0x120" in shape.regex.pattern
    assert "0x400" not in shape.regex.pattern and "Value\\ :\\ 100" not in shape.regex.pattern
    assert [row for row, _, _ in shape.checks] == [0, 1, 2, 3]  # header, threads, value


def test_a_record_with_another_frame_ends_the_run_there() -> None:
    records = hazard_records()
    other = [line.replace("race.cu:19", "race.cu:29") for line in records[100]]
    n, text, stop = count_after_first([*records[:100], other, *records[101:]])
    assert n == 99 and text[stop:].startswith("\n".join(other))


def test_a_number_that_changes_what_the_grammar_reads_ends_the_run_there() -> None:
    """Past 25 digits a hazard count no longer parses as one: the location (a field of
    the signature) takes it in. The shape matches the record; its check does not."""
    lines = ANALYSIS.read_text().splitlines()
    record = lines[1:4]  # "Race reported ...", "and Read access ... [256 hazards]", bare
    odd = [record[0], record[1].replace("[256 hazards]", f"[{'9' * 30} hazards]"), record[2]]
    runner = runs()
    n, text, stop = count_after_first([record] * 20 + [odd] + [record] * 9, runner)
    assert n == 19 and text[stop:].startswith("\n".join(odd))
    assert runner.reach == cs_runs.REACH  # a run that did not check starts small again
    assert cs_log.DETAIL_DISPATCH.key(odd[1][len(P) :].strip()) != cs_log.DETAIL_DISPATCH.key(
        record[1][len(P) :].strip()
    )


def test_a_run_counts_whole_records_only() -> None:
    records = hazard_records()[:50]
    text = "\n".join(line for r in records for line in r) + "\n"
    cut = text.index("Current Value", len(text) - 300)  # inside the last record
    n, _, stop = count_after_first(records, text=text[:cut])
    assert n == 48 and text[:cut][stop:].startswith("\n".join(records[-1][:3]))


@pytest.mark.parametrize("where", ["offset", "file", "unknown", "truncated"])
def test_a_log_with_a_run_broken_parses_as_read_whole(where: str) -> None:
    lines = HAZARDS.read_text().splitlines() * 3
    # a thread line of a hazard record in the middle of the second repetition's run
    at = next(i for i in range(len(lines) // 2, len(lines)) if "Write Thread" in lines[i])
    if where == "offset":  # another key, the same signature (it has no offsets, no lines)
        lines[at] = lines[at].replace("+0x120 in race.cu:18", "+0x220 in race.cu:28")
    elif where == "file":  # another key and signature
        lines[at] = lines[at].replace("race.cu:18", "other.cu:18")
    elif where == "unknown":
        lines[at] = lines[at].replace("Write Thread", "Wrote Thread")  # a line no row reads
    else:
        lines = lines[:at]
    result = cs_log.parse(lines, checker=RACE)
    assert result == folded_whole(lines)
    if where == "truncated":
        assert not result.complete and not result.conclusive
    else:
        assert result.complete and result.records == 3 * 257 and not result.count_mismatch
        # a record of another signature is one of its own
        assert len(group(result.findings)) == (2 if where == "offset" else 3)


def test_a_hazard_count_the_grammar_cannot_read_parses_as_read_whole() -> None:
    lines = ANALYSIS.read_text().splitlines()
    records = lines[1:4] * 30
    records[3 * 20 + 1] = records[1].replace("[256 hazards]", f"[{'9' * 30} hazards]")
    summary = lines[4].replace(" 1 hazard displayed (1 error", " 30 hazards displayed (30 errors")
    log = [lines[0], *records, summary]
    result = cs_log.parse(log, checker=RACE)
    assert result == folded_whole(log)
    assert result.records == 30 and result.conclusive and len(group(result.findings)) == 2


@pytest.mark.parametrize("size", [97, 4096, 50_000])
def test_runs_cut_by_chunks_count_the_same(monkeypatch, size: int) -> None:
    text = HAZARDS.read_text() * 4 + ANALYSIS.read_text() * 3
    monkeypatch.setattr(cs_skim, "CHUNK", size)
    result = cs_log.parse(io.StringIO(text), checker=RACE)
    assert result == folded_whole(text.splitlines())
    assert result.records == 4 * 257 + 3 and not result.count_mismatch


@pytest.mark.parametrize("other", ["key", "shape"])
def test_records_of_two_shapes_one_by_one_parse_as_read_whole(other: str) -> None:
    """Every other record of the capture with its read printed twice (another key), or
    with a negative value (its key's other shape): runs of one record, after which runs
    are tried only now and then (`TRIES`, `BACKOFF`); the result is the same."""
    lines: list[str] = []
    for i, record in enumerate(hazard_records()):
        for line in record:
            if i % 2 and other == "key" and "Read Thread" in line:
                lines.append(line)
            if i % 2 and other == "shape":
                line = line.replace("Current Value : ", "Current Value : -")
            lines.append(line)
    log = ["========= COMPUTE-SANITIZER", *lines * 3]
    log.append("========= RACECHECK SUMMARY: 768 hazards displayed (768 errors, 0 warnings)")
    result = cs_log.parse(log, checker=RACE)
    assert result == folded_whole(log)
    assert result.records == 768 and result.conclusive
    assert len(group(result.findings)) == (2 if other == "key" else 1)
