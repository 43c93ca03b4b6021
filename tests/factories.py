"""Records for tests, made one way: `experiment()`, `attempt()`, `finding()`, `parse()`.

Each takes the fields a test cares about and fills the rest with the plainest value that
a real run would record: an experiment of two variants (the fix `fixed`, the control
`control`) with a plain and a memcheck run over one pytest case; an attempt that passed
with a complete, clean parse; a use-after-free read of 8 bytes in one frame. A test
module that needs its own shape passes the fields (or wraps these in one line), instead
of spelling out a record's constructor again.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from orchestrator.model import (
    Attempt,
    BuildKind,
    BuildSpec,
    Case,
    CaseKind,
    Checker,
    Expectations,
    Experiment,
    Finding,
    Frame,
    Outcome,
    ParseResult,
    Run,
    SourceKind,
    SourceSpec,
    TargetPattern,
    Variant,
)

__all__ = ["attempt", "experiment", "finding", "parse", "run"]

#: the runs most experiments have: the plain regression signal and memcheck
RUNS = (("plain", Checker.NONE), ("memcheck", Checker.MEMCHECK))


def run(name: str, checker: Checker | None = None, **changes: object) -> Run:
    """A run named `name`; its checker from the name (plain: none) unless given."""
    if checker is None:
        checker = Checker.NONE if name == "plain" else Checker(name.split("-")[0])
    return Run(name, checker, **changes)  # type: ignore[arg-type]


def experiment(
    *,
    name: str = "exp",
    variants: Sequence[str | Variant] = ("fixed", "control"),
    fix: str | None = "fixed",
    controls: Sequence[str] = ("control",),
    runs: Sequence[str | Run | tuple[str, Checker]] = RUNS,
    cases: Sequence[str | Case] = ("case",),
    repeats: int = 2,
    min_hits: int | None = None,
    targets: Sequence[TargetPattern] = (),
    expect: bool = True,
    source: str = "/src",
    build: BuildKind = BuildKind.JIT,
    **changes: object,
) -> Experiment:
    """An experiment over a path source. Variants, runs and cases may be given by name
    (a variant built by `build`, a run whose checker is its name's first word, a pytest
    case of `/t/test_<name>.py`) or as records; `expect=False` leaves the expectations
    out (a scan's experiment)."""
    return Experiment(
        name=name,
        source=SourceSpec(SourceKind.PATH, source),
        variants=tuple(
            v if isinstance(v, Variant) else Variant(v, BuildSpec(build)) for v in variants
        ),
        runs=tuple(
            r if isinstance(r, Run) else run(r) if isinstance(r, str) else run(*r) for r in runs
        ),
        cases=tuple(
            c if isinstance(c, Case) else Case(c, CaseKind.PYTEST, (f"/t/test_{c}.py",))
            for c in cases
        ),
        repeats=repeats,
        expect=Expectations(tuple(controls), fix, min_hits, tuple(targets)) if expect else None,
        **changes,  # type: ignore[arg-type]
    )


def parse(*findings: Finding, complete: bool = True, **changes: object) -> ParseResult:
    """What a checker's log said: these findings, the summary counting them when complete."""
    summary = sum(f.count for f in findings) if complete else None
    fields: dict[str, object] = {"summary_count": summary, "complete": complete}
    return ParseResult(findings=tuple(findings), **(fields | changes))  # type: ignore[arg-type]


def attempt(
    variant: str = "fixed",
    run: str = "memcheck",
    case: str = "case",
    repeat: int = 0,
    *findings: Finding,
    checker: Checker | None = None,
    outcome: Outcome = Outcome.PASSED,
    complete: bool = True,
    **changes: object,
) -> Attempt:
    """One attempt that ran to its end: `findings` parsed from a complete log (none: a
    clean one); the checker is ASan's stand-in for memcheck unless the run is plain or a
    checker is given. Any other field by name (`timed_out=True`, `error="..."`, `parse=`)."""
    if checker is None:
        checker = Checker.NONE if run == "plain" else Checker.ASAN
    fields: dict[str, object] = {"outcome": outcome}
    if checker is not Checker.NONE or findings:
        fields["parse"] = parse(*findings, complete=complete)
    return Attempt(variant, run, case, repeat, checker, **(fields | changes))  # type: ignore[arg-type]


def finding(
    kind: str = "heap-use-after-free",
    *,
    checker: Checker = Checker.ASAN,
    access: str = "read",
    size: int | None = 8,
    function: str = "kernel",
    file: str = "csrc/kernel.cpp",
    line: int | None = 10,
    **changes: object,
) -> Finding:
    """One report: `kind` at `function` (`file`:`line`), unless `frames=` is given."""
    fields: dict[str, object] = {"frames": (Frame(function, file, line),)}
    return Finding(checker, kind, access, size, **(fields | changes))  # type: ignore[arg-type]


def log_path(*parts: str) -> Path:
    """A bundle-relative log path, as attempts record them."""
    return Path("logs", *parts)
