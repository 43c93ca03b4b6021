"""judge.signature_view: the signatures grouped once for every report, from real captured
logs (torch's start-up API errors, a CUB fault with the launch failures that follow it,
an ASan use-after-free)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from orchestrator.backends.asan import log as asan_log
from orchestrator.backends.compute_sanitizer import log as cs_log
from orchestrator.judge import signature_view
from orchestrator.model import (
    Attempt,
    Build,
    BuildKind,
    BuildSpec,
    Case,
    CaseKind,
    Checker,
    Expectations,
    Experiment,
    Finding,
    NodeResult,
    Outcome,
    ParseResult,
    Run,
    SourceKind,
    SourceSpec,
    Variant,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def cs(name: str) -> tuple[Finding, ...]:
    with open(FIXTURES / "compute-sanitizer" / "grammar" / name, encoding="utf-8") as lines:
        return cs_log.parse(lines, checker=Checker.MEMCHECK).findings


STARTUP = cs("memcheck-torch-startup.log")
FAULT = cs("memcheck-cub-follow-on.log")
with open(FIXTURES / "asan" / "uaf.log", encoding="utf-8") as _lines:
    (UAF,) = asan_log.parse(_lines, exit_required=False).findings
ALLOWED = dataclasses.replace(UAF, suppressed="allowed: planted in the test")

EXPERIMENT = Experiment(
    name="sum",
    source=SourceSpec(SourceKind.PATH, "/src"),
    variants=(
        Variant("fixed", BuildSpec(BuildKind.JIT)),
        Variant("control", BuildSpec(BuildKind.JIT)),
        Variant("wheel", BuildSpec(BuildKind.WHEEL)),
    ),
    runs=(Run("plain", Checker.NONE), Run("memcheck", Checker.MEMCHECK)),
    cases=(Case("sum", CaseKind.PYTEST, ("/t/test_sum.py",)),),
    repeats=2,
    expect=Expectations(("control",), "fixed"),
)


def attempt(variant: str, repeat: int, findings=(), *, complete=True, run="memcheck") -> Attempt:
    checker = Checker.MEMCHECK if run == "memcheck" else Checker.NONE
    parse = ParseResult(tuple(findings), None, 0, complete)
    # the nodes the case markers put the findings in, as the plugin reports them
    nodes = tuple(
        NodeResult(n, Outcome.PASSED) for n in dict.fromkeys(f.case for f in findings if f.case)
    )
    return Attempt(
        variant, run, "sum", repeat, checker, outcome=Outcome.PASSED, parse=parse, nodes=nodes
    )


ATTEMPTS = [
    attempt("control", 0, STARTUP + FAULT + (ALLOWED,)),
    attempt("control", 1, STARTUP),
    attempt("fixed", 0, STARTUP),
    # the same signature as repeat 0's, from other addresses
    attempt(
        "fixed", 1, tuple(dataclasses.replace(f, address="7f01") for f in STARTUP), complete=False
    ),
    attempt("fixed", 0, run="plain"),
    attempt("wheel", 0, run="plain"),
]
BUILDS = [Build("wheel", BuildKind.WHEEL, False, error="pip wheel exited 1\nmore")]


def view() -> signature_view.Signatures:
    return signature_view.make(EXPERIMENT, ATTEMPTS, BUILDS)


def by_label(words: str) -> signature_view.SignatureView:
    (found,) = [s for s in view().signatures if words in s.label]
    return found


def test_one_entry_per_signature_with_its_id_and_label() -> None:
    sigs = view().signatures
    assert len({s.fingerprint for s in sigs}) == len(sigs)
    assert all(s.id == s.fingerprint[:12] and s.label == s.signature.label() for s in sigs)
    # most records first, as every report lists them
    assert [s.count for s in sigs] == sorted((s.count for s in sigs), reverse=True)


def test_cells_count_records_and_the_repeats_that_show_it() -> None:
    startup = by_label("cuGetProcAddress_v2")
    per_attempt = sum(f.count for f in STARTUP)
    assert startup.count == 4 * per_attempt
    control = startup.tally(variant="control", run="memcheck")
    assert (control.count, control.hits) == (2 * per_attempt, 2)
    fault = by_label("sumext::sum_cuda")
    assert fault.tally(variant="control", run="memcheck").repeats == (0,)
    assert fault.tally(variant="fixed") is None


def test_ambient_and_follow_on_marks() -> None:
    fault = by_label("sumext::sum_cuda")
    assert by_label("cuGetProcAddress_v2").ambient and not fault.ambient
    followers = [s for s in view().signatures if s.follows]
    assert followers and {s.follows for s in followers} == {fault.id}
    assert all("cudaErrorLaunchFailure" in s.label for s in followers)
    assert not fault.follows
    assert [s.id for s in view().ambient] == [by_label("cuGetProcAddress_v2").id]


def test_tolerated_with_the_reason_and_frames_at_file_and_line() -> None:
    uaf = by_label("heap-use-after-free")
    assert uaf.tolerated and not by_label("sumext::sum_cuda").tolerated
    assert uaf.tally(variant="control").tolerance() == "allowed: planted in the test"
    assert uaf.frames == ("consume (uaf.c:11)", "main (uaf.c:20)")
    assert "main (uaf.c:19)" in uaf.freed
    # a CUB fault is named by the extension's host frame, CUB's frames listed beside it
    assert any("cub::" in f for f in by_label("sumext::sum_cuda").library)


def test_columns_say_what_an_absence_means() -> None:
    columns = {(c.variant, c.run): c for c in view().columns}
    assert list(columns) == [
        ("fixed", "plain"),
        ("fixed", "memcheck"),
        ("control", "memcheck"),
        ("wheel", "plain"),
    ]
    assert not columns[("fixed", "memcheck")].conclusive
    assert columns[("control", "memcheck")].conclusive
    assert columns[("control", "memcheck")].checked and not columns[("fixed", "plain")].checked
    assert columns[("wheel", "plain")].not_built == "pip wheel exited 1"
    assert columns[("control", "memcheck")].repeats == 2


def test_the_records_order_does_not_change_the_view() -> None:
    # a parallel run records attempts as they end: the first finding is still the one of
    # the first variant, run and repeat in config order
    again = signature_view.make(EXPERIMENT, list(reversed(ATTEMPTS)), BUILDS)
    assert by_label("cuGetProcAddress_v2").example is STARTUP[0]
    assert [(s.fingerprint, s.example, s.count) for s in again.signatures] == [
        (s.fingerprint, s.example, s.count) for s in view().signatures
    ]


def test_within_a_scope_most_records_first() -> None:
    found = view().within(variant="control", run="memcheck", case="sum")
    counts = [t.count for _, t in found]
    assert counts == sorted(counts, reverse=True)
    assert {s.id for s, _ in found} == {
        s.id for s in view().signatures if s.tally(variant="control")
    }
    assert view().within(variant="fixed", run="plain") == ()
