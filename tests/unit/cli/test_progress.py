"""cli.progress: in a CI log (stderr not a terminal) each finished attempt is a line; a
finished bar says it is done rather than keeping the last attempt's name."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from rich.progress import Progress

from orchestrator.cli import progress
from orchestrator.model import Outcome
from tests import factories
from tests.conftest import CPROG_CONFIGS, csorch_run


def test_finished_bars_say_so_not_the_last_name() -> None:
    bars = Progress(console=Console(file=io.StringIO()))
    shown = progress.Shown(bars, "exp")
    shown.planned(["fixed"], 2)
    shown.attempt_finished(factories.attempt("fixed", "memcheck", "case", 0))
    assert bars.tasks[shown.runs].description == "exp: running"
    shown.attempt_finished(factories.attempt("fixed", "memcheck", "case", 1))
    assert bars.tasks[shown.runs].description == "exp: ran"


def test_an_attempt_in_a_line() -> None:
    found = factories.attempt("fixed", "memcheck", "sum", 2, factories.finding())
    assert progress.said(found) == "fixed/memcheck/sum r2: passed, 1 finding record(s)"
    failed = factories.attempt("control", "plain", "sum", 0, outcome=Outcome.FAILED)
    assert progress.said(failed) == "control/plain/sum r0: failed"
    cut = factories.attempt("fixed", "memcheck", "sum", 0, complete=False)
    assert progress.said(cut).startswith("fixed/memcheck/sum r0: inconclusive (")


@pytest.mark.process
def test_a_ci_log_gets_a_line_per_finished_attempt(tmp_path: Path) -> None:
    done = csorch_run(CPROG_CONFIGS["fail"], tmp_path / "out", tmp_path / "cache", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip().startswith("[")]
    assert len(lines) == 4, done.stderr  # 2 variants x 2 runs x 1 case
    assert [line.split("]")[0] for line in lines] == ["[1/4", "[2/4", "[3/4", "[4/4"]
    said = sorted(line.split("] ", 1)[1] for line in lines)
    assert said == [
        "control/memcheck/sum r0: passed, 1 finding record(s)",
        "control/plain/sum r0: passed",
        "fixed/memcheck/sum r0: passed, 1 finding record(s)",
        "fixed/plain/sum r0: passed",
    ]
