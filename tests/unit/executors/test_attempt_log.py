"""attempt_log: a log read as a stream (memory bounded by a line) and its last words
from its tail; the launches' parses merged into one."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from orchestrator.executors import attempt_log
from orchestrator.markers import reader as nodes
from orchestrator.model import ParseResult


def test_a_log_is_read_as_a_stream_and_its_last_words_from_its_tail(tmp_path: Path) -> None:
    """A checker's log can run to gigabytes: the attempt reads it line by line (memory
    bounded by a line, not by the log) and its last informative line from the tail."""
    log = tmp_path / "big.log"
    line = "=========     Host Frame: at::native::something [0x1234] in libtorch_cuda.so\n"
    with open(log, "w") as f:
        f.write("E   ImportError: an early line, not the last word\n")
        for _ in range(200_000):  # ~15 MB
            f.write(line)
        f.write("E   RuntimeError: the last word\n[csorch-session] 1\nStats: 3\n")
    tracemalloc.start()
    report = nodes.read(attempt_log.lines(log))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert report.nodes == () and peak < 2_000_000, peak
    assert sum(1 for _ in attempt_log.lines(log)) == 200_004
    assert attempt_log.last_words(log) == "E   RuntimeError: the last word"
    assert attempt_log.last_words(tmp_path / "missing.log") == "no output"
    assert list(attempt_log.lines(tmp_path / "missing.log")) == []


def test_merge_is_complete_only_when_every_launch_is() -> None:
    done = ParseResult(summary_count=2, complete=True)
    cut = ParseResult(summary_count=None, complete=False)
    assert attempt_log.merge([done, done]).summary_count == 4
    merged = attempt_log.merge([done, cut])
    assert not merged.complete and merged.summary_count is None
    assert not attempt_log.merge([]).complete


def test_merge_keeps_the_count_check_and_the_race_split() -> None:
    race = ParseResult(summary_count=1, complete=True, summary_split=(1, 0))
    off = ParseResult(summary_count=3, complete=True, count_mismatch="counts 3 but parsed 2")
    merged = attempt_log.merge([race, race, off])
    assert merged.summary_split == (2, 0)
    assert merged.count_mismatch == "counts 3 but parsed 2" and not merged.conclusive
    assert attempt_log.merge([race]).conclusive
