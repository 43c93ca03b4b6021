"""run.scan: the experiment a scan's command line describes, and what a scan found."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.errors import CsorchError
from orchestrator.model import (
    Attempt,
    Build,
    BuildKind,
    CaseKind,
    Checker,
    Finding,
    ParseResult,
    Verdict,
)
from orchestrator.run import scan
from tests import factories


def test_pytest_paths_become_absolute_and_the_rest_stays_pytest_arguments(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_x(): pass\n")
    exp = scan.experiment(
        ["python", "-m", "pytest", "tests/test_a.py::test_x", "-k", "not slow", "-x"],
        cwd=tmp_path,
    )
    (case,) = exp.cases
    assert case.kind is CaseKind.PYTEST and case.name == "test_a"
    assert case.pytest == (f"{tmp_path}/tests/test_a.py::test_x",)
    assert case.args == ("-k", "not slow", "-x")
    assert exp.expect is None and [v.name for v in exp.variants] == [scan.VARIANT]
    (run,) = exp.runs
    assert run.checker is Checker.MEMCHECK
    assert exp.variants[0].build.command == scan.NO_BUILD


def test_a_program_is_a_command_case_and_build_words_are_split(tmp_path: Path) -> None:
    exp = scan.experiment(
        ["./bug", "8"], cwd=tmp_path, checker="racecheck", build="make CC='gcc -O1' bug"
    )
    (case,) = exp.cases
    assert case.kind is CaseKind.COMMAND and case.command == ("./bug", "8")
    assert case.name == "bug-8"
    assert exp.variants[0].build.command == ("make", "CC=gcc -O1", "bug")
    assert exp.runs[0].checker is Checker.RACECHECK
    assert scan.build_spec("jit").kind is BuildKind.JIT
    cccl = scan.experiment(["./bug"], cwd=tmp_path, preset="cccl", target_processes="all")
    assert (cccl.runs[0].preset, cccl.runs[0].target_processes) == ("cccl", "all")


@pytest.mark.parametrize(
    ("argv", "kw", "words"),
    [
        ([], {}, "nothing to scan"),
        (["pytest", "-x", "missing_dir"], {}, "no test file or directory"),
        (["./bug"], {"checker": "asan"}, "unknown checker 'asan'"),
        (["./bug"], {"checker": "none", "options": ("--padding", "64")}, "checker option"),
        (["./bug"], {"source": Path("/nonexistent/tree")}, "not a directory"),
        (["./bug"], {"preset": "nope"}, "unknown preset 'nope'"),
        (["./bug"], {"checker": "synccheck", "preset": "leaks"}, "preset leaks is for memcheck"),
        (["./bug"], {"target_processes": "some"}, "--target-processes 'some'"),
    ],
)
def test_bad_command_lines_say_what_to_do(tmp_path: Path, argv, kw, words) -> None:
    with pytest.raises(CsorchError, match=words) as info:
        scan.experiment(argv, cwd=tmp_path, **kw)
    assert info.value.hint or "checker" in words or "directory" in words


def _attempt(**kw) -> Attempt:
    return factories.attempt(scan.VARIANT, "memcheck", "bug", 0, returncode=0, **kw)


def test_verdict_fail_on_a_finding_inconclusive_on_bad_evidence_else_pass() -> None:
    built = [Build(scan.VARIANT, BuildKind.COMMAND, ok=True)]
    finding = Finding(checker=Checker.ASAN, kind="heap-buffer-overflow", count=2)
    dirty = _attempt(parse=ParseResult(findings=(finding,), complete=True))
    assert scan.verdict(built, [dirty]).verdict is Verdict.FAIL
    assert "2 finding(s)" in scan.verdict(built, [dirty]).reasons[0]
    late = _attempt(timed_out=True)
    assert scan.verdict(built, [late]).verdict is Verdict.INCONCLUSIVE
    assert scan.verdict(built, []).verdict is Verdict.INCONCLUSIVE
    broken = [Build(scan.VARIANT, BuildKind.COMMAND, ok=False, error="make: *** no rule")]
    assert scan.verdict(broken, []).reasons == ("tree did not build: make: *** no rule",)
    assert scan.verdict(built, [_attempt()]).verdict is Verdict.PASS


def test_a_pass_with_failed_tests_says_so() -> None:
    """`scan` said PASS while a test failed: true of the checker, read as green."""
    from orchestrator.model import NodeResult, Outcome

    built = [Build(scan.VARIANT, BuildKind.COMMAND, ok=True)]
    failed = _attempt(outcome=Outcome.FAILED, nodes=(NodeResult("t.py::test_a", Outcome.FAILED),))
    judged = scan.verdict(built, [failed])
    assert judged.verdict is Verdict.PASS  # what a scan judges is the checker's findings
    assert any("but tests failed or errored in" in r for r in judged.reasons)
    assert not any("failed" in r for r in scan.verdict(built, [_attempt()]).reasons)


def test_a_module_the_tests_cannot_import_gets_a_hint() -> None:
    """`scan` of an extension without --build ended in a bare ModuleNotFoundError."""
    from orchestrator.model import NodeResult, Outcome

    built = [Build(scan.VARIANT, BuildKind.COMMAND, ok=True)]
    node = NodeResult("t.py", Outcome.ERROR, "ModuleNotFoundError: No module named 'myext._C'")
    judged = scan.verdict(built, [_attempt(outcome=Outcome.ERROR, nodes=(node,))])
    (hint,) = [r for r in judged.reasons if "could not import" in r]
    assert "myext._C" in hint and "--build" in hint
