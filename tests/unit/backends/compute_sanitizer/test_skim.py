"""cs_skim: a log read in chunks, and records counted without being read whole once
their signature has its examples. The reference is the same parse keeping every
finding (`examples=None`: every record read whole), folded afterwards: the counts, the
examples and everything else must be the same, on real logs repeated as a long run of
one process would print them."""

from __future__ import annotations

import dataclasses
import io
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest

from orchestrator.backends.compute_sanitizer import log as cs_log
from orchestrator.backends.compute_sanitizer import skim
from orchestrator.findings import folding
from orchestrator.findings.signatures import group
from orchestrator.model import Checker, ParseResult

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "compute-sanitizer"
RNG = FIXTURES / "h200" / "rng-owner-scope-memcheck-rng-64x96.log"
RACE = FIXTURES / "cudabugs-h200" / "race.control.racecheck-report-all.log"
P = "========="


def folded_whole(lines: list[str], **options) -> ParseResult:
    """The reference: every record read whole, folded afterwards."""
    whole = cs_log.parse(lines, examples=None, **options)
    return dataclasses.replace(whole, findings=folding.fold(whole.findings))


def per_case(result: ParseResult) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for f in result.findings:
        counts[f.case] += f.count
    return dict(counts)


def records(path: Path) -> list[str]:
    """The printed records of a real log (its lines from the first record header to the
    last record's bare prefix), without banner, markers or summaries."""
    lines = path.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(f"{P} Invalid"))
    last = max(i for i, line in enumerate(lines) if line.rstrip() == P)
    return [line for line in lines[first : last + 1] if line.startswith(P)]


@pytest.mark.parametrize(("log", "checker"), [(RNG, Checker.MEMCHECK), (RACE, Checker.RACECHECK)])
def test_a_log_repeated_n_times_counts_n_times_and_keeps_the_same_examples(log, checker) -> None:
    text = log.read_text()
    once = cs_log.parse(io.StringIO(text), checker=checker)
    many = cs_log.parse(io.StringIO(text * 40), checker=checker)
    assert many.records == 40 * once.records and many.summary_count == 40 * once.summary_count
    assert many.conclusive and not many.count_mismatch
    assert len(many.findings) <= 2 * folding.EXAMPLES < many.records  # two signatures at most
    assert many.findings[0] == dataclasses.replace(once.findings[0], count=1)
    if once.summary_split is not None:
        assert many.summary_split == (40 * once.summary_split[0], 40 * once.summary_split[1])
    assert many == folded_whole((text * 40).splitlines(), checker=checker)


def test_memory_follows_the_signatures_not_the_records() -> None:
    text = RNG.read_text()

    def peak(n: int) -> int:
        log = io.StringIO(text * n)  # the input itself is not what parse holds
        tracemalloc.start()
        result = cs_log.parse(log)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert result.records == 20 * n and len(result.findings) == folding.EXAMPLES
        return top

    # both logs are several chunks long; 4 times the records, about the same memory
    assert peak(160) < 1.25 * peak(40)


def test_records_that_cross_chunks_count_the_same(monkeypatch) -> None:
    text = RNG.read_text() * 3 + RACE.read_text() * 2
    reference = folded_whole(text.splitlines())
    for size in (97, 4096, 50_000):
        monkeypatch.setattr(skim, "CHUNK", size)
        assert cs_log.parse(io.StringIO(text)) == reference
        assert cs_log.parse(text.splitlines(keepends=True)) == reference


def test_case_markers_attribute_exact_counts_even_inside_a_record() -> None:
    body = records(RNG)  # 20 records of one signature
    a, b = "t.py::test_a", "t.py::test_b"
    lines = [f"[csorch-case-begin] {a}", *body * 5, f"[csorch-case-end] {a}"]
    lines += [f"[csorch-case-begin] {b}", *body * 3]
    # the test's marker lands inside a record: the record stays b's, the next one is a's
    lines += body[:4] + [f"[csorch-case-end] {b}", f"[csorch-case-begin] {a}"] + body[4:]
    lines += [f"[csorch-case-end] {a}", f"{P} ERROR SUMMARY: 180 errors"]
    result = cs_log.parse(lines)
    assert per_case(result) == {a: 119, b: 61}  # 100 + 19, 60 + the one cut by markers
    assert not result.count_mismatch and result.conclusive
    assert result == folded_whole(lines)


def test_a_log_truncated_mid_record_is_incomplete_and_counts_what_it_printed() -> None:
    lines = RNG.read_text().splitlines() * 10
    cut = len(lines) - 1965 + 1000  # inside a record of the last repetition
    result = cs_log.parse(lines[:cut])
    assert not result.complete and not result.conclusive and result.summary_count is None
    assert "no end-of-run summary" in result.reason
    assert result == folded_whole(lines[:cut])


def test_a_record_after_the_summary_is_counted_and_leaves_the_log_incomplete() -> None:
    after = records(RNG)[:200]  # two records, and the start of a third
    lines = RNG.read_text().splitlines() * 4 + after
    result = cs_log.parse(lines)
    assert sum(1 for line in after if line.startswith(f"{P} Invalid")) == 3
    assert not result.complete and result.records == 4 * 20 + 3
    assert result == folded_whole(lines)


def test_layouts_the_skim_does_not_expect_are_read_whole() -> None:
    """A device frame after the host backtrace, a saved-backtrace line indented one
    more, and application output inside records: each record is read whole (its
    signature can differ from its neighbours'), with the same result as the reference."""
    body = records(RNG)
    saved = next(i for i, line in enumerate(body) if "Saved host backtrace" in line)
    end = next(i for i in range(saved, len(body)) if body[i].rstrip() == P)  # its bare prefix
    head = [line for line in body[: saved + 2] if "Device Frame" not in line]
    late_frame = [*head, f"{P}         Device Frame: other()+0x10 in o.cu:1"]
    late_frame += body[saved + 2 : end + 1]
    shifted = [line.replace(f"{P}     Saved", f"{P}      Saved") for line in body]
    noisy = [line for x in body for line in (x, "application output")]
    lines = body * 2 + late_frame * 5 + body + shifted + noisy
    lines.append(f"{P} ERROR SUMMARY: 105 errors")
    result = cs_log.parse(lines)
    assert result.records == 105 and result.conclusive
    assert result == folded_whole(lines)
    assert len(group(result.findings)) == 2  # the late frame makes a signature of its own


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_chunks_cut_where_a_record_ends_and_lose_nothing(ending: str) -> None:
    text = (RNG.read_text() * 2).replace("\n", ending)
    pieces = list(skim.chunks(io.StringIO(text, newline=""), P))
    assert "".join(p for p, _ in pieces) == text
    for piece, clean in pieces[:-1]:
        assert piece.endswith("\n") and clean
    at = 0
    for piece, _ in pieces[:-1]:  # each next chunk starts with a line that ends a record
        at += len(piece)
        assert skim.ends_record(text[at:].split("\n", 1)[0], P)


def test_lines_with_or_without_their_ends_make_the_same_text() -> None:
    lines = ["a", f"{P} x", ""]
    assert "".join(p for p, _ in skim.chunks(lines, P)) == "a\n========= x\n\n"
    ended = [line + "\n" for line in lines]
    assert "".join(p for p, _ in skim.chunks(ended, P)) == "a\n========= x\n\n"


@pytest.mark.parametrize(
    ("line", "ends"),
    [
        (P, True),
        (f"{P} ", True),
        (f"{P}   \r", True),
        (f"{P} ERROR SUMMARY: 1 error", True),
        (f"{P}     at k()+0x10 in k.cu:3", False),
        (f"{P}\t", False),  # not a checker line: ignored, so no end
        (f"{P}=", False),
        ("[csorch-case-end] t.py::test_a", False),
        ("application output", False),
    ],
)
def test_ends_record(line: str, ends: bool) -> None:
    assert skim.ends_record(line, P) is ends
