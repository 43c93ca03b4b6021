"""report.table: cells of the cases table, the builds table and the verdict line."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from orchestrator.judge.causality import Judgement
from orchestrator.model import (
    Artifact,
    Attempt,
    Build,
    BuildKind,
    BuildSpec,
    Case,
    CaseKind,
    Checker,
    Experiment,
    Finding,
    NodeResult,
    Outcome,
    ParseResult,
    Run,
    SourceKind,
    SourceSpec,
    Variant,
    Verdict,
)
from orchestrator.report import table
from tests import factories

NODE = "tests/t.py::test_x[cpu]"
UAF = Finding(Checker.ASAN, "heap-use-after-free", "read", 8, case=NODE)
EXPERIMENT = Experiment(
    name="exp",
    source=SourceSpec(SourceKind.PATH, "/s"),
    variants=(
        Variant("fix", BuildSpec(BuildKind.JIT)),
        Variant("ctl", BuildSpec(BuildKind.JIT)),
        Variant("gone", BuildSpec(BuildKind.WHEEL)),
    ),
    runs=(Run("plain", Checker.NONE), Run("memcheck", Checker.MEMCHECK)),
    cases=(Case("rng", CaseKind.PYTEST, ("/t.py",)),),
)


def attempt(variant: str, run: str, outcome: Outcome, findings=(), error="") -> Attempt:
    return factories.attempt(
        variant,
        run,
        "rng",
        0,
        *findings,
        outcome=outcome,
        error=error,
        parse=factories.parse(*findings),
        nodes=(NodeResult(NODE, outcome),) if not error else (),
    )


def text(renderable) -> str:
    console = Console(record=True, width=220)
    console.print(renderable)
    return console.export_text()


def test_cells_show_outcomes_and_finding_counts() -> None:
    attempts = [
        attempt("fix", "plain", Outcome.PASSED),
        attempt("fix", "memcheck", Outcome.PASSED),
        attempt("ctl", "plain", Outcome.FAILED),
        attempt("ctl", "memcheck", Outcome.PASSED, [UAF] * 8),
        attempt("gone", "plain", Outcome.ERROR, error="variant gone did not build"),
    ]
    builds = [
        Build(
            "fix",
            BuildKind.JIT,
            True,
            cache_key="a" * 64,
            cached=True,
            artifacts=(Artifact("pkg/q/_C.so", "b" * 64, 1),),
        ),
        Build("ctl", BuildKind.JIT, True, cache_key="c" * 64, duration=61.0),
        Build("gone", BuildKind.WHEEL, False, error="build of variant 'gone' failed: x"),
    ]
    out = text(table.cases_table(EXPERIMENT, builds, attempts, "asan"))
    assert "exp (asan)" in out and "memcheck (asan)" in out
    row = next(line for line in out.splitlines() if "test_x[cpu]" in line)
    cells = [c.strip() for c in row.split("│")[1:-1]]
    assert cells[:6] == ["test_x[cpu]", "passed", "passed 0", "failed", "passed 8", "not built"]
    # the reason column: the build error of the variant that did not build
    assert cells[6] == "gone/plain: not built: build of variant 'gone' failed: x"
    heading = out.splitlines()[out.splitlines().index(row) - 1]
    assert heading.split("│")[1].strip() == "rng"  # the case heads its nodes
    built = text(table.builds_table(builds))
    assert "cached" in built and "built in 61 s" in built and "_C.so bbbbbbbbbbbb" in built
    assert "failed: build of variant 'gone' failed: x" in built
    sigs = text(table.signatures(EXPERIMENT, attempts))
    assert "ctl / memcheck: 8 x asan heap-use-after-free read size 8" in sigs


def test_a_folded_asan_finding_counts_as_its_reports() -> None:
    """Issue #14: one printed report standing for 5000 reads shows as 5000, in the cell
    and in the signature line."""
    flood = Finding(Checker.ASAN, "heap-use-after-free", "read", 8, case=NODE, count=5000)
    attempts = [attempt("ctl", "memcheck", Outcome.PASSED, [flood])]
    assert "passed 5000" in text(table.cases_table(EXPERIMENT, [], attempts))
    sigs = text(table.signatures(EXPERIMENT, attempts))
    assert "ctl / memcheck: 5000 x asan heap-use-after-free read size 8" in sigs


def test_repeats_and_the_verdict_line() -> None:
    attempts = [
        attempt("ctl", "memcheck", Outcome.PASSED, [UAF] * 8),
        Attempt(
            "ctl",
            "memcheck",
            "rng",
            1,
            Checker.ASAN,
            outcome=Outcome.PASSED,
            parse=ParseResult(complete=True),
            nodes=(NodeResult(NODE, Outcome.PASSED),),
        ),
    ]
    out = text(table.cases_table(EXPERIMENT, [], attempts))
    assert "passed 8 in 1/2" in out
    line = text(table.verdict_line(Judgement(Verdict.PASS, ("fix removes every target",))))
    assert line.startswith("verdict: PASS (causal)") and "fix removes every target" in line
    assert "INCONCLUSIVE" in text(table.verdict_line(Judgement(Verdict.INCONCLUSIVE, ("why",))))


def test_cells_count_the_records_a_parser_folded_into_a_finding() -> None:
    folded = Finding(Checker.ASAN, "heap-use-after-free", "read", 8, case=NODE, count=4094)
    attempts = [attempt("ctl", "memcheck", Outcome.PASSED, [UAF, UAF, folded])]
    out = text(table.cases_table(EXPERIMENT, [], attempts))
    assert "passed 4096" in out
    sigs = text(table.signatures(EXPERIMENT, attempts))
    assert "ctl / memcheck: 4096 x asan heap-use-after-free read size 8" in sigs


def test_findings_outside_any_test_get_their_own_row(tmp_path: Path) -> None:
    stray = Finding(Checker.ASAN, "heap-use-after-free", "read", 8)
    out = text(
        table.cases_table(EXPERIMENT, [], [attempt("ctl", "memcheck", Outcome.PASSED, [stray])])
    )
    assert "(outside a test)" in out


# --- found when tried as a new user would (issue 11) ------------------------------------


def test_a_timed_out_case_says_timed_out() -> None:
    timed_out = Attempt(
        "ctl", "plain", "rng", 0, Checker.NONE, timed_out=True,
        nodes=(NodeResult(NODE, Outcome.ERROR, "the process died during this case"),),
    )  # fmt: skip
    never_began = Attempt("fix", "plain", "rng", 0, Checker.NONE, timed_out=True)
    out = text(table.cases_table(EXPERIMENT, [], [timed_out, never_began]))
    row = next(line for line in out.splitlines() if "test_x[cpu]" in line)
    assert [c.strip() for c in row.split("│")[1:-1]] == [
        "test_x[cpu]",
        "timed out",
        "timed out",
        "every column: timed out; ctl/plain: the process died during this case",
    ]
    assert "error ?" not in out


def test_with_every_build_failed_the_cases_are_still_listed() -> None:
    attempts = [
        attempt(v, r, Outcome.ERROR, error=f"variant {v} did not build")
        for v in ("fix", "ctl")
        for r in ("plain", "memcheck")
    ]
    builds = [Build(v, BuildKind.JIT, False, error="build failed") for v in ("fix", "ctl")]
    out = text(table.cases_table(EXPERIMENT, builds, attempts))
    row = next(line for line in out.splitlines() if line.startswith("│ rng"))
    assert [c.strip() for c in row.split("│")[1:-1]] == ["rng"] + ["not built"] * 4 + [
        "every column: not built: build failed"
    ]


def test_nodes_of_two_classes_keep_their_class_names() -> None:
    nodes = ("tests/t.py::TestA::test_x", "tests/t.py::TestB::test_x")
    a = Attempt(
        "fix", "plain", "rng", 0, Checker.NONE, outcome=Outcome.PASSED,
        nodes=tuple(NodeResult(n, Outcome.PASSED) for n in nodes),
    )  # fmt: skip
    out = text(table.cases_table(EXPERIMENT, [], [a]))
    # before: two rows both named `test_x`
    assert "TestA::test_x" in out and "TestB::test_x" in out
    assert "reason" not in out  # the column only where a cell has something to say


def test_only_a_judged_claim_is_called_causal() -> None:
    passed = Judgement(Verdict.PASS, ("the checker found nothing",))
    assert "(causal)" in table.verdict_line(passed).plain
    # a scan states no expectations: its PASS claims nothing about a fix
    scanned = table.verdict_line(passed, claim=False).plain
    assert scanned.startswith("verdict: PASS\n") and "causal" not in scanned


def _gate_shaped() -> tuple[list[Build], list[Attempt]]:
    """Three variants x two runs, one unbuilt (a reason for every row), findings."""
    attempts = [
        attempt(v, r, Outcome.PASSED, [UAF] * (3 if v == "ctl" and r == "memcheck" else 0))
        for v in ("fix", "ctl")
        for r in ("plain", "memcheck")
    ] + [
        attempt("gone", r, Outcome.ERROR, error="variant gone did not build")
        for r in ("plain", "memcheck")
    ]
    builds = [
        Build("fix", BuildKind.JIT, True, cache_key="a" * 64),
        Build("ctl", BuildKind.JIT, True, cache_key="b" * 64),
        Build(
            "gone",
            BuildKind.WHEEL,
            False,
            error="wheel /very/long/path/to/the/wheel.whl is not there",
        ),
    ]
    return builds, attempts


def narrow(renderable, width: int) -> str:
    console = Console(record=True, width=width)
    console.print(renderable)
    return console.export_text()


def test_at_80_columns_nothing_is_cropped() -> None:
    """At 80 columns the case and reason columns shrank to nothing and cells read `pass…`:
    now the table is drawn one variant at a time, the reasons under it."""
    builds, attempts = _gate_shaped()
    judged = Judgement(Verdict.INCONCLUSIVE, ("variant gone did not build: " + "x " * 60,))
    for width in (80, 60, 40):
        out = narrow(table.render(EXPERIMENT, builds, attempts, judged, backend="asan"), width)
        assert "…" not in out, (width, out)
        assert out.count("not built") >= 2 and "passed 3" in out and "reason" in out
        assert "wheel /very/long/path/to/the/wheel.whl is not there" in " ".join(out.split())
    wide = narrow(table.cases_table(EXPERIMENT, builds, attempts), 220)
    assert "reason" in wide.splitlines()[3] and "reasons:" not in wide  # one table, as before
