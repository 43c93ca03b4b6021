"""Fuzzing orchestrator/markers/reader.py (the reader of a child pytest's case markers).

Properties, over damaged real logs with markers, random marker sequences, random bytes,
huge lines and two processes interleaved: `read` never raises and neither do the
report's properties the executor relies on (`unrun`, `finished`, `began`); a session
without its end marker is never finished; each node is reported once; application
output without markers changes nothing.
"""

from __future__ import annotations

import pytest

pytest.importorskip("hypothesis", reason="hypothesis is a CPU-machine test dependency (make setup)")

from fuzzlib import (
    APP_LINE,
    fed,
    fixture_lines,
    huge_line,
    interleaved,
    mutated,
    raw_bytes,
)
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.markers import reader as nodes

LOGS = [
    lines
    for lines in fixture_lines("**/*.log")
    if any(line.startswith("[csorch-") for line in lines)
]
NODES = ["t.py::a", "t.py::b[x]", "t.py::c[1-2]", "", "t.py::d e"]
KINDS = ["begin", "end", "outcome", "cuda-error", "session-end", "import-error", "collected"]


@st.composite
def markers(draw: st.DrawFn) -> list[str]:
    """A random sequence of marker lines, in any order, over a few node ids."""
    out = []
    for _ in range(draw(st.integers(0, 30))):
        kind, node = draw(st.sampled_from(KINDS)), draw(st.sampled_from(NODES))
        if kind == "outcome":
            node += " " + draw(st.sampled_from(["passed", "failed", "skipped", "error", "odd"]))
        elif kind in ("session-end", "collected"):
            node = draw(st.sampled_from(["0", "1", "-1", "x", "99999999999999999999", "9" * 5000]))
        elif kind == "cuda-error":
            node += draw(st.sampled_from(["", " CUDA error: unspecified launch failure"]))
        out.append(f"[csorch-case-{kind}] {node}" if kind in ("begin", "end", "outcome")
                   else f"[csorch-{kind}] {node}")  # fmt: skip
    return out


def check(lines: list[str]) -> nodes.LaunchReport:
    fed("nodes")
    report = nodes.read(lines)
    began = report.began
    assert len(set(began)) == len(began), f"a node reported twice: {began}"
    assert report.unrun is None or report.unrun >= 0
    if report.finished:
        assert report.session_status is not None and not report.context_lost
    if not any(line.startswith("[csorch-session-end]") for line in lines):
        assert report.session_status is None and not report.finished
    if report.context_lost:
        assert report.context_lost in began
    return report


@given(st.one_of(mutated(LOGS), markers()))
def test_mutated_logs_and_marker_sequences(lines: list[str]) -> None:
    check(lines)


@given(raw_bytes(LOGS))
def test_random_bytes(lines: list[str]) -> None:
    check(lines)


@given(huge_line(LOGS))
def test_huge_lines(lines: list[str]) -> None:
    check(lines)


@given(st.one_of(interleaved(LOGS), st.tuples(markers(), markers()).map(lambda t: t[0] + t[1])))
def test_interleaved_processes(lines: list[str]) -> None:
    check(lines)


QUIET_LINE = APP_LINE.filter(lambda s: not nodes.LAUNCH_FAILURE_RE.search(s))


@given(st.sampled_from(LOGS), st.lists(st.tuples(st.integers(0, 10_000), QUIET_LINE), max_size=10))
def test_application_output_changes_nothing(lines: list[str], inserts) -> None:
    noisy = list(lines)
    for at, text in inserts:
        noisy.insert(at % (len(noisy) + 1), text)
    assert check(noisy) == nodes.read(lines)
