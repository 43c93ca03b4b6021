"""judge: truth tables for causality, and signatures beyond the targets (per-case rows:
test_tally)."""

from __future__ import annotations

import dataclasses

import pytest

from orchestrator import judge
from orchestrator.model import (
    Attempt,
    Build,
    BuildKind,
    BuildSpec,
    Case,
    CaseKind,
    Checker,
    Experiment,
    Finding,
    Frame,
    Outcome,
    ParseResult,
    TargetPattern,
    Variant,
    Verdict,
)
from tests import factories

N = 3
TARGET = Finding(
    Checker.MEMCHECK,
    "invalid-access",
    "read",
    8,
    "global",
    frames=(Frame("k(float *)", "k.cu", 41),),
    thread="0,0,0",
    address="7f00",
)
OTHER = Finding(
    Checker.MEMCHECK,
    "invalid-access",
    "write",
    4,
    "global",
    frames=(Frame("other(int)", "o.cu", 7),),
)
PATTERN = TargetPattern(checker="memcheck", kind="invalid-access", function="k")


def experiment(targets=(PATTERN,), min_hits=2, expect=True) -> Experiment:
    return factories.experiment(
        variants=(
            "patched",
            "rebuilt",
            Variant("installed", BuildSpec(BuildKind.WHEEL)),
        ),
        fix="patched",
        controls=("rebuilt", "installed"),
        cases=("rng",),
        repeats=N,
        min_hits=min_hits,
        targets=targets,
        expect=expect,
    )


def attempt(variant: str, run: str, repeat: int, what: str) -> Attempt | None:
    """One attempt described by a word: hit, clean, other, cut, cut-hit, timeout, missing,
    pass, fail."""
    if what == "missing":
        return None
    timed_out = what == "timeout"
    if run == "plain":
        outcome = {"pass": Outcome.PASSED, "fail": Outcome.FAILED}.get(what, Outcome.ERROR)
        return factories.attempt(variant, run, "rng", repeat, outcome=outcome, timed_out=timed_out)
    findings = {"hit": (TARGET, TARGET), "cut-hit": (TARGET,), "other": (TARGET, OTHER)}.get(
        what, ()
    )
    complete = what not in ("cut", "cut-hit", "timeout")
    return factories.attempt(
        variant, run, "rng", repeat, *findings,
        checker=Checker.MEMCHECK, complete=complete, timed_out=timed_out,
    )  # fmt: skip


def attempts(**table: str) -> list[Attempt]:
    """table: variant_run="w1 w2 w3" (one word per repeat); runs not given are clean/pass."""
    out = []
    for variant in ("patched", "rebuilt", "installed"):
        for run in ("plain", "memcheck"):
            default = "pass" if run == "plain" else ("clean" if variant == "patched" else "hit")
            words = table.get(f"{variant}_{run}", " ".join([default] * N)).split()
            out += [a for r, w in enumerate(words) if (a := attempt(variant, run, r, w))]
    return out


CAUSALITY = [
    # (id, table, failed builds, verdict, words in the reasons)
    ("all-hold", {}, {}, Verdict.PASS, "removes every target"),
    (
        "fix-shows-target",
        {"patched_memcheck": "clean hit clean"},
        {},
        Verdict.FAIL,
        "still shows [checker=memcheck kind=invalid-access function=k] in 1 of 3",
    ),
    (
        "fix-log-truncated",
        {"patched_memcheck": "clean cut clean"},
        {},
        Verdict.INCONCLUSIVE,
        "fix patched, run memcheck: case rng: log has no end-of-run summary",
    ),
    (
        "fix-finding-in-truncated-log-is-evidence",
        {"patched_memcheck": "clean cut-hit clean"},
        {},
        Verdict.FAIL,
        "in 1 of 3",
    ),
    (
        "fix-timed-out",
        {"patched_memcheck": "clean clean timeout"},
        {},
        Verdict.INCONCLUSIVE,
        "timed out",
    ),
    (
        "control-not-reproduced",
        {"rebuilt_memcheck": "hit clean clean", "installed_memcheck": "hit clean clean"},
        {},
        Verdict.INCONCLUSIVE,
        "control rebuilt shows [checker=memcheck kind=invalid-access "
        "function=k] in 1 of 3 repeats of run memcheck; needs 2",
    ),
    (
        "k-of-n-is-enough",
        {"rebuilt_memcheck": "hit clean hit", "installed_memcheck": "clean hit hit"},
        {},
        Verdict.PASS,
        "",
    ),
    (
        "control-timed-out",
        {"installed_memcheck": "hit timeout hit"},
        {},
        Verdict.INCONCLUSIVE,
        "control installed, run memcheck: case rng: timed out",
    ),
    (
        "control-attempt-missing",
        {"rebuilt_memcheck": "hit hit"},
        {},
        Verdict.INCONCLUSIVE,
        "no attempt of case rng",
    ),
    (
        "fix-did-not-build",
        {"patched_memcheck": "missing missing missing", "patched_plain": "missing missing missing"},
        {"patched": "ninja exited 1"},
        Verdict.INCONCLUSIVE,
        "variant patched did not build",
    ),
    (
        "control-did-not-build-but-fix-fails",
        {"installed_memcheck": "missing missing missing", "patched_memcheck": "hit hit hit"},
        {"installed": "pip wheel exited 1"},
        Verdict.FAIL,
        "variant installed did not build",
    ),
    (
        "controls-disagree",
        {"installed_memcheck": "other other other"},
        {},
        Verdict.INCONCLUSIVE,
        "controls rebuilt and installed disagree in run memcheck",
    ),
    (
        "controls-disagree-on-regressions",
        {"rebuilt_plain": "fail fail fail"},
        {},
        Verdict.INCONCLUSIVE,
        "disagree in run plain: case rng failed",
    ),
]


@pytest.mark.parametrize(
    ("table", "builds", "verdict", "words"),
    [c[1:] for c in CAUSALITY],
    ids=[c[0] for c in CAUSALITY],
)
def test_causality(table, builds, verdict, words) -> None:
    j = judge.causality(experiment(), attempts(**table), builds)
    assert j.verdict is verdict, j.reasons
    assert any(words in r for r in j.reasons), j.reasons


def test_hits_are_reported_beside_the_verdict() -> None:
    j = judge.causality(experiment(), attempts(rebuilt_memcheck="hit clean hit"))
    by = {(h.variant, h.run): (h.hits, h.repeats, h.unknown) for h in j.hits}
    assert by == {
        ("rebuilt", "memcheck"): (2, 3, 0),
        ("installed", "memcheck"): (3, 3, 0),
        ("patched", "memcheck"): (0, 3, 0),
    }


def test_no_expectations_is_not_judged() -> None:
    j = judge.causality(experiment(expect=False), attempts())
    assert j.verdict is Verdict.INCONCLUSIVE and "no expectations" in j.reasons[0]


def test_unexpected_signatures_in_the_fix_are_listed() -> None:
    j = judge.causality(experiment(), attempts(patched_memcheck="clean clean clean"))
    assert j.unexpected == ()
    fix_other = attempts()
    fix_other = [
        dataclasses.replace(a, parse=ParseResult((OTHER,), 1, 0, True))
        if a.variant == "patched" and a.run == "memcheck"
        else a
        for a in fix_other
    ]
    j = judge.causality(experiment(), fix_other)
    assert j.verdict is Verdict.PASS
    assert j.unexpected == (("memcheck", "memcheck invalid-access global write size 4 in other"),)


def _as_asan(attempt_list: list[Attempt]) -> list[Attempt]:
    """The same attempts as if ASan had stood in for memcheck."""
    uaf = dataclasses.replace(TARGET, checker=Checker.ASAN, kind="heap-use-after-free", space="")
    out = []
    for a in attempt_list:
        if a.checker is Checker.MEMCHECK and a.parse is not None:
            findings = tuple(uaf for _ in a.parse.findings)
            a = dataclasses.replace(
                a, checker=Checker.ASAN, parse=dataclasses.replace(a.parse, findings=findings)
            )
        out.append(a)
    return out


def test_one_config_serves_both_backends() -> None:
    asan_pattern = TargetPattern(checker="asan", kind="heap-use-after-free", function="k")
    both = experiment(targets=(PATTERN, asan_pattern))
    on_gpu = judge.causality(both, attempts())
    assert on_gpu.verdict is Verdict.PASS and on_gpu.targets == (_label(PATTERN),)
    on_cpu = judge.causality(both, _as_asan(attempts()))
    assert on_cpu.verdict is Verdict.PASS and on_cpu.targets == (_label(asan_pattern),)
    broken = judge.causality(both, _as_asan(attempts(patched_memcheck="clean hit clean")))
    assert broken.verdict is Verdict.FAIL
    only_gpu = judge.causality(experiment(), _as_asan(attempts()))
    assert only_gpu.verdict is Verdict.INCONCLUSIVE
    assert "no target applies to the runs as they ran (checkers: asan, none)" in only_gpu.reasons


def _label(p: TargetPattern) -> str:
    return " ".join(f"{k}={v}" for k, v in p.to_dict().items() if v not in ("", None))


DERIVED = [
    ("derived-pass", {}, Verdict.PASS, "removes every target (1)"),
    (
        "derived-nothing-shared",
        {"rebuilt_memcheck": "clean clean clean", "installed_memcheck": "clean clean clean"},
        Verdict.INCONCLUSIVE,
        "the controls share no finding or failure",
    ),
    (
        "derived-fix-fails",
        {"patched_memcheck": "clean clean hit"},
        Verdict.FAIL,
        "still shows [memcheck: memcheck invalid-access global read size 8 in k]",
    ),
    (
        "derived-regression",
        {"rebuilt_plain": "fail fail fail", "installed_plain": "fail fail fail"},
        Verdict.PASS,
        "removes every target (2)",
    ),
    (
        "derived-regression-not-fixed",
        {
            "rebuilt_plain": "fail fail fail",
            "installed_plain": "fail fail fail",
            "patched_plain": "pass fail pass",
        },
        Verdict.FAIL,
        "still shows [plain: case rng failed] in 1 of 3",
    ),
]


@pytest.mark.parametrize(
    ("table", "verdict", "words"), [c[1:] for c in DERIVED], ids=[c[0] for c in DERIVED]
)
def test_causality_with_derived_targets(table, verdict, words) -> None:
    j = judge.causality(experiment(targets=(), min_hits=None), attempts(**table))
    assert j.verdict is verdict, j.reasons
    assert any(words in r for r in j.reasons), j.reasons


@pytest.mark.parametrize(
    ("patched_plain", "verdict"),
    [
        ("pass pass pass", Verdict.PASS),
        ("pass fail pass", Verdict.FAIL),
        ("pass timeout pass", Verdict.INCONCLUSIVE),
    ],
)
def test_outcome_target(patched_plain: str, verdict: Verdict) -> None:
    e = experiment(targets=(TargetPattern(outcome=Outcome.FAILED, case="rng"),), min_hits=None)
    table = {
        "rebuilt_plain": "fail fail fail",
        "installed_plain": "fail fail fail",
        "patched_plain": patched_plain,
    }
    assert judge.causality(e, attempts(**table)).verdict is verdict


def test_uncovered_lists_every_variants_signatures_beyond_the_targets() -> None:
    table = attempts(rebuilt_memcheck="other hit hit")
    assert judge.uncovered(experiment(), attempts()) == ()
    (row,) = judge.uncovered(experiment(), table)
    variant, run, sig, count = row
    assert (variant, run, count) == ("rebuilt", "memcheck", 1)
    assert sig.label() == "memcheck invalid-access global write size 4 in other"


def test_judgement_round_trips() -> None:
    j = judge.causality(experiment(), attempts(patched_memcheck="hit clean clean"))
    assert judge.Judgement.from_dict(j.to_dict()) == j


def test_failed_builds_give_their_first_error_line_even_when_it_is_empty() -> None:
    builds = [
        Build("patched", BuildKind.JIT, ok=True),
        Build("rebuilt", BuildKind.JIT, ok=False, error="make: *** [pick] Error 1\nmore"),
        Build("installed", BuildKind.WHEEL, ok=False, error=""),
    ]
    assert judge.failed_builds(builds) == {
        "rebuilt": "make: *** [pick] Error 1",
        "installed": "failed",
    }
    assert experiment().role("rebuilt") == "control" and experiment().role("patched") == "fix"
    assert experiment(expect=False).role("patched") == ""


# --- a case broken in every variant alike (issue 22, item 6) -------------------------


def _with_broken_case(rows: list[Attempt], variants=("patched", "rebuilt", "installed")):
    """`rows` plus a second case, `other`, whose every attempt in `variants` could not run
    (a collection error) and which ran cleanly elsewhere."""
    out = list(rows)
    for a in rows:
        if a.case != "rng":
            continue
        if a.variant in variants:
            broken = Attempt(
                a.variant,
                a.run,
                "other",
                a.repeat,
                a.checker,
                error="pytest: ImportError in conftest",
            )
        else:
            broken = dataclasses.replace(a, case="other", parse=ParseResult((), 0, 0, True))
        out.append(broken)
    return out


def _two_cases(targets=(PATTERN,)) -> Experiment:
    exp = experiment(targets)
    return dataclasses.replace(
        exp, cases=(*exp.cases, Case("other", CaseKind.PYTEST, ("/t/o.py",)))
    )


def test_a_case_broken_in_every_variant_alike_is_not_run_and_the_verdict_stands() -> None:
    rows = _with_broken_case(attempts())
    j = judge.causality(_two_cases(), rows)
    # before: INCONCLUSIVE ("fix patched, run memcheck: case other: pytest: ImportError ...")
    assert j.verdict is Verdict.PASS, j.reasons
    assert any(
        "case other not run in run memcheck: broken in every variant alike" in r for r in j.reasons
    )
    assert "memcheck/other: pytest: ImportError in conftest" in j.broken
    # derived targets too
    derived = judge.causality(_two_cases(()), rows)
    assert derived.verdict is Verdict.PASS, derived.reasons


def test_a_case_broken_in_some_variants_only_or_named_by_a_target_stays_inconclusive() -> None:
    only_fix = judge.causality(_two_cases(), _with_broken_case(attempts(), ("patched",)))
    assert only_fix.verdict is Verdict.INCONCLUSIVE
    assert any("case other: pytest: ImportError" in r for r in only_fix.reasons)
    named = TargetPattern(checker="memcheck", kind="invalid-access", function="k", case="o*")
    j = judge.causality(_two_cases((PATTERN, named)), _with_broken_case(attempts()))
    assert j.verdict is Verdict.INCONCLUSIVE and j.broken == ()


def test_a_target_the_control_misses_by_one_field_is_named_with_what_it_shows() -> None:
    """`kind: heap-overflow` (a misspelling): INCONCLUSIVE, as before, but the reason names
    what the control did show, so the user does not have to dig through the logs."""
    misspelt = TargetPattern(checker="asan", kind="heap-overflow", function="kernel")
    exp = factories.experiment(targets=(misspelt,), runs=("memcheck",), repeats=1)
    shown = factories.finding("heap-buffer-overflow")
    attempts = [
        factories.attempt("control", "memcheck", "case", 0, shown),
        factories.attempt("fixed", "memcheck", "case", 0),
    ]
    judged = judge.causality(exp, attempts)
    assert judged.verdict is Verdict.INCONCLUSIVE
    (reason,) = [r for r in judged.reasons if "not demonstrated" in r]
    assert "differs from the target only in kind=heap-buffer-overflow" in reason
    assert "is the target's kind misspelled or too narrow?" in reason
    # a finding that misses by two fields is no hint
    far = factories.finding("heap-buffer-overflow", function="elsewhere")
    attempts[0] = factories.attempt("control", "memcheck", "case", 0, far)
    (reason,) = [r for r in judge.causality(exp, attempts).reasons if "not demonstrated" in r]
    assert "differs" not in reason


def test_a_near_miss_names_the_one_field_that_differs() -> None:
    from orchestrator.findings.signatures import near_miss, signature

    sig = signature(factories.finding("heap-buffer-overflow", size=4))
    assert near_miss(TargetPattern(kind="heap-overflow"), sig) == "kind=heap-buffer-overflow"
    assert near_miss(TargetPattern(kind="heap-*", size=8), sig) == "size=4"
    assert near_miss(TargetPattern(kind="heap-buffer-overflow"), sig) == ""  # it matches
    assert near_miss(TargetPattern(kind="x", size=8), sig) == ""  # two fields
    assert near_miss(TargetPattern(outcome=Outcome.FAILED), sig) == ""


def test_a_swapped_claim_names_what_the_fix_itself_shows() -> None:
    """The "fix" carries the defect and the "control" is clean: INCONCLUSIVE "nothing to
    remove", as before, but naming the fix's reports and failed cases and asking."""
    exp = factories.experiment(runs=("memcheck",), repeats=1)
    uaf = factories.finding("heap-use-after-free", count=300)
    attempts = [
        factories.attempt("fixed", "memcheck", "case", 0, uaf, outcome=Outcome.FAILED),
        factories.attempt("control", "memcheck", "case", 0),
    ]
    judged = judge.causality(exp, attempts)
    assert judged.verdict is Verdict.INCONCLUSIVE
    (reason,) = [r for r in judged.reasons if "nothing for fixed to remove" in r]
    assert "fixed itself shows 300 checker report(s) and 1 failed case attempt(s)" in reason
    assert "the wrong way round?" in reason
    both = [attempts[0], factories.attempt("control", "memcheck", "case", 0, uaf)]
    assert all("wrong way" not in r for r in judge.causality(exp, both).reasons)


def test_a_fix_whose_own_tests_differ_is_named_per_control() -> None:
    from orchestrator.judge.causality import other_tests

    control = ("tests/test_x.py ast:aa", "tests/conftest.py ast:cc")
    assert other_tests("fixed", ("control",), {"fixed": control, "control": control}) == []
    changed = ("tests/test_x.py ast:bb", "tests/conftest.py ast:cc")
    (why,) = other_tests("fixed", ("control",), {"fixed": changed, "control": control})
    assert why.startswith("fix fixed changes its own test tests/test_x.py against control")
    added = (*control, "tests/data/big.bin 00ff")
    (why,) = other_tests("fixed", ("control", "release"), {"fixed": added, "control": control})
    assert why.startswith("fix fixed adds its own test tests/data/big.bin against control")
    (why,) = other_tests("fixed", ("control",), {"fixed": control[:1], "control": control})
    assert "removes its own test tests/conftest.py" in why
    assert other_tests("fixed", ("control",), {"control": control}) == []  # nothing to compare
