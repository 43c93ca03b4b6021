"""gate: the policy file and the gate's truth table (the gate run over real bundles:
test_pipeline.py)."""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator import gate, judge
from orchestrator.errors import ConfigError
from orchestrator.findings import suppressions
from orchestrator.gate import allowances
from orchestrator.gate.allowances import Allowance
from orchestrator.model import Checker, ParseResult, Suppression, TargetPattern, Verdict
from unit.judge.test_causality import (  # the judge's truth-table builders
    OTHER,
    attempts,
    experiment,
)

ROOT = Path(__file__).resolve().parents[3]
E2E = ROOT / "tests" / "fixtures" / "e2e"
runner = CliRunner()


def judged(table=None, exp=None) -> gate.Judged:
    exp = exp or experiment()
    rows = table if table is not None else attempts()
    return gate.Judged(exp, tuple(rows), judge.causality(exp, rows))


POLICY = gate.Policy("g", (Path("/x.yaml"),))


def test_a_causal_experiment_with_a_live_checker_passes() -> None:
    result = gate.decide(POLICY, [judged()])
    assert result.verdict is Verdict.PASS
    assert [(c.checker, c.caught_by) for c in result.liveness] == [
        (Checker.MEMCHECK, ("exp/rebuilt", "exp/installed"))
    ]
    assert "memcheck caught exp/rebuilt, exp/installed" in result.reasons


def test_a_fix_that_is_not_causal_fails() -> None:
    result = gate.decide(POLICY, [judged(attempts(patched_memcheck="hit hit hit"))])
    assert result.verdict is Verdict.FAIL and "not causal" in result.reasons[0]


def test_a_checker_that_caught_no_control_is_unproven() -> None:
    silent = attempts(rebuilt_memcheck="clean clean clean", installed_memcheck="clean clean clean")
    result = gate.decide(POLICY, [judged(silent)])
    assert result.verdict is Verdict.INCONCLUSIVE
    assert "memcheck caught no positive control: its liveness is unproven" in result.reasons


def _with_other(rows, *variants: str):
    return [
        dataclasses.replace(a, parse=ParseResult((*a.findings, OTHER), None, 0, True))
        if a.variant in variants and a.run == "memcheck" and a.repeat == 0
        else a
        for a in rows
    ]


def test_an_unexpected_signature_anywhere_fails_unless_allowed_or_reported() -> None:
    rows = _with_other(attempts(), "rebuilt", "installed")  # controls show more than the target
    assert judge.causality(experiment(), rows).verdict is Verdict.PASS
    result = gate.decide(POLICY, [judged(rows)])
    assert result.verdict is Verdict.FAIL
    assert [(u.variant, u.run, u.signature) for u in result.unexpected] == [
        (v, "memcheck", "memcheck invalid-access global write size 4 in other")
        for v in ("installed", "rebuilt")
    ]
    allow = Allowance(TargetPattern(function="other"), reason="known, issue #3")
    tolerant = dataclasses.replace(POLICY, allow=(allow,))
    allowed = gate.decide(tolerant, [judged(rows)])
    assert allowed.verdict is Verdict.PASS and allowed.allowed == 2
    assert {(t.variant, t.why) for t in allowed.tolerated} == {
        ("installed", "allowed: known, issue #3"),
        ("rebuilt", "allowed: known, issue #3"),
    }
    report_only = gate.decide(dataclasses.replace(POLICY, unexpected="report"), [judged(rows)])
    assert report_only.verdict is Verdict.PASS and len(report_only.unexpected) == 2


def test_an_expired_allowance_fails_the_gate_and_an_unused_one_is_reported() -> None:
    rows = _with_other(attempts(), "rebuilt", "installed")
    allow = Allowance(
        TargetPattern(function="other"), reason="cuBLAS bug", expires="2026-12-01", where="g:7"
    )
    unused = Allowance(TargetPattern(function="nothing*"), reason="old", where="g:9")
    policy = dataclasses.replace(POLICY, allow=(allow, unused))
    before = gate.decide(policy, [judged(rows)], today=datetime.date(2026, 11, 30))
    assert before.verdict is Verdict.PASS and before.allowed == 2 and not before.expired
    assert before.unused == ("allowance {function=nothing*} (g:9) matched no finding: remove it",)
    assert before.unused[0] in before.reasons
    on_the_day = gate.decide(policy, [judged(rows)], today=datetime.date(2026, 12, 1))
    assert on_the_day.verdict is Verdict.FAIL
    assert on_the_day.reasons[0] == (
        "allowance {function=other} (g:7) expired on 2026-12-01 (reason given: cuBLAS bug): "
        "fix the finding, or renew the allowance with a new date"
    )
    # what it tolerated is unexpected again
    assert len(on_the_day.unexpected) == 2 and on_the_day.allowed == 0


def test_suppressed_findings_are_listed_not_unexpected_and_unused_suppressions_reported() -> None:
    used = Suppression("supp.xml#1", "Precise", (("size", "4"),))
    idle = Suppression("supp.xml#2", "Api", (("api", "cudaFree"),))
    exp = experiment()
    exp = dataclasses.replace(
        exp,
        runs=tuple(
            dataclasses.replace(r, suppressions=(used, idle)) if r.name == "memcheck" else r
            for r in exp.runs
        ),
    )
    rows = [
        dataclasses.replace(a, parse=suppressions.apply(a.parse, (used, idle)))
        if a.parse is not None
        else a
        for a in _with_other(attempts(), "rebuilt")
    ]
    marked = [f for a in rows for f in a.findings if f.suppressed]
    assert marked and all(f.suppressed == "supp.xml#1" for f in marked)
    result = gate.decide(POLICY, [judged(rows, exp)])
    assert result.verdict is Verdict.PASS, result.reasons
    assert not result.unexpected
    assert {t.why for t in result.tolerated} == {"suppressed by supp.xml#1"}
    assert result.unused == (
        "exp/memcheck: suppression supp.xml#2 (kind Api) matched no finding: remove it or fix it",
    )


def test_findings_a_parser_folded_count_as_the_records_they_stand_for() -> None:
    folded = dataclasses.replace(OTHER, count=500)
    rows = [
        dataclasses.replace(a, parse=ParseResult((*a.findings, folded), None, 0, True))
        if a.variant == "rebuilt" and a.run == "memcheck" and a.repeat == 0
        else a
        for a in attempts()
    ]
    result = gate.decide(POLICY, [judged(rows)])
    assert [(u.variant, u.findings) for u in result.unexpected] == [("rebuilt", 500)]
    size4 = Suppression("supp.xml#1", "Precise", (("size", "4"),))
    exp = experiment()
    exp = dataclasses.replace(
        exp,
        runs=tuple(
            dataclasses.replace(r, suppressions=(size4,)) if r.name == "memcheck" else r
            for r in exp.runs
        ),
    )
    marked = [
        dataclasses.replace(a, parse=suppressions.apply(a.parse, (size4,))) if a.parse else a
        for a in rows
    ]
    tolerated = gate.decide(POLICY, [judged(marked, exp)])
    assert not tolerated.unexpected
    assert [(t.variant, t.findings) for t in tolerated.tolerated] == [("rebuilt", 500)]


def test_fail_outranks_inconclusive_and_problems_make_an_experiment_inconclusive() -> None:
    failing = judged(attempts(patched_memcheck="hit hit hit"))
    shaky = dataclasses.replace(judged(), problems=("bundle b is incomplete (interrupted)",))
    result = gate.decide(POLICY, [failing, shaky])
    assert result.verdict is Verdict.FAIL
    assert [e.verdict for e in result.experiments] == [Verdict.FAIL, Verdict.INCONCLUSIVE]
    assert gate.decide(POLICY, [shaky]).verdict is Verdict.INCONCLUSIVE
    assert gate.decide(POLICY, [judged()], missing=["other"]).verdict is Verdict.INCONCLUSIVE
    assert gate.decide(POLICY, []).verdict is Verdict.INCONCLUSIVE


def test_the_release_gate_config_loads() -> None:
    policy = gate.load_policy(ROOT / "configs" / "release-gate.yaml")
    assert policy.name == "release-gate" and policy.unexpected == "fail"
    assert [p.name for p in policy.experiments] == ["nvfp4-rng-ownership.yaml", "noop-swizzle.yaml"]
    assert gate.is_gate_config(ROOT / "configs" / "release-gate.yaml")
    assert not gate.is_gate_config(ROOT / "configs" / "noop-swizzle.yaml")


def test_the_checkers_gate_config_loads_and_can_prove_every_checker_live() -> None:
    from orchestrator.backends.compute_sanitizer import log as cs_log
    from orchestrator.config.experiment import load_experiment
    from orchestrator.findings.signatures import signature

    policy = gate.load_policy(ROOT / "configs" / "checkers-gate.yaml")
    assert policy.name == "checkers-gate" and policy.unexpected == "fail"
    shipped = sorted(p.name for p in (ROOT / "configs").glob("cudabugs-*.yaml"))
    assert sorted(p.name for p in policy.experiments) == shipped and len(shipped) == 7
    # liveness: each compute-sanitizer checker has a control whose target it watches
    watched: dict[str, list[str]] = {}
    for path in policy.experiments:
        e = load_experiment(path)
        assert e.expect is not None
        for t in e.expect.targets:
            watched.setdefault(t.checker, []).append(e.name)
    assert {"memcheck", "initcheck", "racecheck", "synccheck"} <= set(watched)
    assert set(watched["asan"]) == {"cudabugs-oob-write", "cudabugs-leak"}
    # the one allowance: the follow-on error of a destroyed context, not the API-error
    # program's own defect
    follow_on, own = (
        cs_log.parse(
            [f'========= Program hit {code} (error {n}) due to "{why}" on CUDA API call to {call}.']
        ).findings[0]
        for code, n, why, call in (
            ("cudaErrorLaunchFailure", 719, "unspecified launch failure", "cudaDeviceSynchronize"),
            ("cudaErrorInvalidValue", 1, "invalid argument", "cudaFree"),
        )
    )
    assert allowances.find(policy.allow, signature(follow_on))
    assert not allowances.find(policy.allow, signature(own))


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("name: g\nexperiments: [missing.yaml]\n", 2, "no such file"),
        ("name: g\nexperiments: [e.yaml]\npolicy: {unexpected: ignore}\n", 3, "fail, report"),
        ("name: g\nexperiments: [e.yaml]\npolicy: {alow: []}\n", 3, "alow"),
        ("name: g\nexperiments: [e.yaml]\npolicy: {ambient: ignore}\n", 3, "report, fail"),
        ("name: g\nexperiments: [e.yaml]\npolicy: {allow: [{colour: red}]}\n", 3, "colour"),
        ("name: g\nexperiments: [e.yaml]\npolicy: {allow: [{kind: leak}]}\n", 3, "needs a reason"),
        (
            "name: g\nexperiments: [e.yaml]\npolicy:\n  allow:\n"
            "    - {kind: leak, reason: r, expires: next week}\n",
            5,
            "expected a date YYYY-MM-DD",
        ),
        ("name: 'g/h'\nexperiments: [e.yaml]\n", 1, "not a safe name"),
        ("name: g\nexperiments: []\n", 2, "at least one experiment"),
    ],
)
def test_bad_gate_configs(tmp_path: Path, text: str, line: int, words: str) -> None:
    (tmp_path / "e.yaml").write_text("name: e\n")
    path = tmp_path / "gate.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        gate.load_policy(path)
    message = info.value.message
    assert f"gate.yaml:{line}" in message and words in message, message


def test_ambient_signatures_are_reported_by_default_and_fail_only_when_asked(
    tmp_path: Path,
) -> None:
    from unit.judge import test_ambient as amb

    exp, rows = amb.experiment(), amb.attempts()
    one = gate.Judged(exp, tuple(rows), judge.causality(exp, rows))
    result = gate.decide(POLICY, [one])
    # before: torch's start-up error, in the fix as in the control, failed the gate
    assert result.verdict is Verdict.PASS, result.reasons
    (found,) = result.ambient
    assert found.signature.endswith("in cuGetProcAddress_v2") and found.findings == 8
    assert result.unexpected == ()
    strict = gate.decide(dataclasses.replace(POLICY, ambient="fail"), [one])
    assert strict.verdict is Verdict.FAIL
    message = strict.reasons[0]
    assert f"ambient signature {found.id}" in message and "to accept it" in message
    assert found.allowance in message
    # the printed allowance, pasted into a gate config, accepts it
    (tmp_path / "e.yaml").write_text("name: e\n")
    entry = found.allowance.replace('"..."', '"torch probes the driver"').replace(
        "YYYY-MM-DD", "2099-01-01"
    )
    config = tmp_path / "gate.yaml"
    config.write_text(
        f"name: g\nexperiments: [e.yaml]\npolicy:\n  ambient: fail\n  allow:\n    - {entry}\n"
    )
    policy = gate.load_policy(config)
    assert policy.ambient == "fail"
    accepted = gate.decide(policy, [one])
    assert accepted.verdict is Verdict.PASS, accepted.reasons
    assert [t.why for t in accepted.tolerated] == ["allowed: torch probes the driver"]


def test_an_unexpected_signature_fail_names_its_id_and_the_allowance() -> None:
    rows = _with_other(attempts(), "rebuilt", "installed")
    result = gate.decide(POLICY, [judged(rows)])
    first = result.unexpected[0]
    assert len(first.id) == 12 and f"unexpected signature {first.id}" in result.reasons[0]
    assert (
        "{checker: memcheck, kind: invalid-access, access: write, space: global, size: 4, "
        'function: other, reason: "...", expires: YYYY-MM-DD}'
    ) in result.reasons[0]


def test_a_case_broken_in_every_variant_stays_visible_in_the_gate() -> None:
    from unit.judge.test_causality import _two_cases, _with_broken_case

    exp, rows = _two_cases(), _with_broken_case(attempts())
    result = gate.decide(POLICY, [gate.Judged(exp, tuple(rows), judge.causality(exp, rows))])
    assert result.verdict is Verdict.PASS, result.reasons
    assert any(
        "case not run, broken in every variant alike: memcheck/other" in r for r in result.reasons
    )
