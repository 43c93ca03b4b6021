"""report.junit: JUnit XML of real ASan bundles validates against the Ant JUnit schema
(tests/fixtures/junit/JUnit.xsd), with the expected counts; and read by junitparser as a CI
system reads it, a FAIL shows failures and an INCONCLUSIVE errors, never all green."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from orchestrator import bundle
from orchestrator.report import junit
from unit.report.test_markdown import NODES, as_pytest_nodes, edited

XSD = Path(__file__).resolve().parents[2] / "fixtures" / "junit" / "JUnit.xsd"


def parse(path: Path) -> ET.Element:
    text = junit.render(*bundle.read(path))
    try:
        from lxml import etree
    except ImportError:  # the offline GPU machine: the structure is still checked below
        return ET.fromstring(text)
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    doc = etree.fromstring(text.encode())
    assert schema.validate(doc), str(schema.error_log)
    return ET.fromstring(text)


def counts(element: ET.Element) -> dict[str, int]:
    return {k: int(element.get(k)) for k in ("tests", "failures", "errors", "skipped")}


def counted(suite: ET.Element) -> dict[str, int]:
    """What the testcases themselves add up to."""
    cases = suite.findall("testcase")
    return {
        "tests": len(cases),
        "failures": sum(1 for c in cases if c.find("failure") is not None),
        "errors": sum(1 for c in cases if c.find("error") is not None),
        "skipped": sum(1 for c in cases if c.find("skipped") is not None),
    }


def props(element: ET.Element) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in element.findall("properties/property"):
        out.setdefault(p.get("name"), []).append(p.get("value"))
    return out


def facts(suite: ET.Element, classname: str, name: str = "sum") -> dict[str, str]:
    """A testcase's facts: its suite property (the schema allows none on a testcase)."""
    (value,) = props(suite)[f"testcase:{classname}::{name}"]
    return dict(pair.split("=", 1) for pair in value.split("; "))


def output(suite: ET.Element, classname: str, name: str = "sum") -> str:
    """A testcase's section of the suite's <system-out>."""
    text = suite.find("system-out").text or ""
    head = f"[{classname}::{name}]\n"
    assert head in text, text
    return text.split(head, 1)[1].split("\n\n[", 1)[0]


def claims(suite: ET.Element) -> dict[str, ET.Element]:
    """The verdict's and its claims' testcases, by name."""
    name = suite.get("name")
    return {
        c.get("name"): c
        for c in suite.findall("testcase")
        if c.get("classname") == f"{name}.csorch"
    }


TARGET = "[checker=asan kind=heap-buffer-overflow access=read function=sum] in run memcheck"


def case(suite: ET.Element, classname: str, name: str = "sum") -> ET.Element:
    found = [c for c in suite.findall("testcase") if c.get("classname") == classname]
    return next(c for c in found if c.get("name") == name)


def test_pass_bundle(cprog_bundles) -> None:
    root = parse(cprog_bundles["pass"])
    suite = root.find("testsuite")
    assert suite.get("name") == "c-oob"
    # the verdict, control reproduces, fix removes; then 2 variants x 2 runs
    expected = {"tests": 7, "failures": 0, "errors": 0, "skipped": 0}
    assert counts(suite) == counted(suite) == expected
    assert list(claims(suite)) == [
        "verdict",
        f"control control reproduces {TARGET}",
        f"fix fixed removes {TARGET}",
    ]
    assert suite.findall("testcase")[0].get("name") == "verdict"  # first
    assert props(suite)["csorch.verdict"] == ["pass"]
    assert props(suite)["csorch.backend"] == ["asan"]
    control = facts(suite, "c-oob.control.memcheck")
    assert control["role"] == "control" and control["findings"] == "1"
    assert control["checker"] == "asan" and control["outcomes"] == "passed"
    out = output(suite, "c-oob.control.memcheck")
    assert "1 x asan heap-buffer-overflow read size 4 in sum [signature c9c53e2d1ae7]" in out
    assert "at sum (pick.c)" in out and "log: logs/control/memcheck/sum/r0.log" in out
    fixed = facts(suite, "c-oob.fixed.memcheck")
    assert fixed["role"] == "fix" and fixed["findings"] == "0"
    # what the schema requires of an aggregated suite
    assert suite.get("package") == "c-oob" and suite.get("id") == "0"
    assert suite.get("hostname") == "localhost" and len(suite.get("timestamp")) == 19
    assert all(c.get("time") for c in suite.findall("testcase"))


def test_a_failing_fix_fails_its_verdict_its_claim_and_its_case(cprog_bundles) -> None:
    """The no-fix config: FAIL, exit 1; it used to read tests=4 failures=0 errors=0."""
    suite = parse(cprog_bundles["fail"]).find("testsuite")
    assert counts(suite) == counted(suite) == {"tests": 7, "failures": 3, "errors": 0, "skipped": 0}
    assert props(suite)["csorch.verdict"] == ["fail"]
    assert any("still shows" in r for r in props(suite)["csorch.verdict.reason"])
    said = claims(suite)
    verdict = said["verdict"].find("failure")
    assert verdict.get("type") == "fail" and verdict.get("message").startswith("FAIL: fix fixed")
    assert said[f"control control reproduces {TARGET}"].find("failure") is None
    removes = said[f"fix fixed removes {TARGET}"].find("failure")
    assert removes.get("message") == "the fix still shows it in 1 of 1 repeats"
    # the fix's case passed as a test, but its finding fails it; the control's is data
    finding = case(suite, "c-oob-nofix.fixed.memcheck").find("failure")
    assert finding.get("type") == "finding" and "heap-buffer-overflow" in finding.get("message")
    assert case(suite, "c-oob-nofix.control.memcheck").find("failure") is None
    assert "heap-buffer-overflow" in output(suite, "c-oob-nofix.fixed.memcheck")


def test_a_variant_that_did_not_build_is_an_error(cprog_bundles) -> None:
    suite = parse(cprog_bundles["inconclusive"]).find("testsuite")
    # the verdict, the fix's claim (no conclusive evidence), the two unbuilt cases
    assert counts(suite) == counted(suite) == {"tests": 7, "failures": 0, "errors": 4, "skipped": 0}
    verdict = claims(suite)["verdict"].find("error")
    assert verdict.get("type") == "inconclusive" and "did not build" in verdict.get("message")
    error = case(suite, "c-oob-badpatch.fixed.plain").find("error")
    assert error.get("type") == "not built" and "stale.patch does not apply" in error.get("message")
    assert props(suite)["csorch.verdict"] == ["inconclusive"]


def test_one_testcase_per_node_and_device(cprog_bundles, tmp_path) -> None:
    def nodes_on_gpu(results: dict[str, Any]) -> None:
        as_pytest_nodes(results)
        for a in results["attempts"]:
            a["device"] = "0"

    suite = parse(edited(cprog_bundles["pass"], tmp_path, nodes_on_gpu)).find("testsuite")
    # the verdict and 2 claims, 2 variants x 2 runs x 2 nodes; test_b fails everywhere
    assert (
        counts(suite) == counted(suite) == {"tests": 11, "failures": 4, "errors": 0, "skipped": 0}
    )
    failed = case(suite, "c-oob.control.memcheck.gpu0", NODES[1])
    assert failed.find("failure").get("message") == "AssertionError"
    passed = case(suite, "c-oob.control.memcheck.gpu0", NODES[0])
    assert passed.find("failure") is None
    assert "heap-buffer-overflow" in output(suite, "c-oob.control.memcheck.gpu0", NODES[0])


def _logic_defect(case_glob: str):
    """The bundle's experiment as a logic defect: its one target the control's failed
    test in the plain run (as noop-swizzle's), and that test failed there."""

    def edit(results: dict[str, Any]) -> None:
        results["experiment"]["expect"]["targets"] = [
            {"outcome": "failed", "case": case_glob, "run": "plain"}
        ]
        for a in results["attempts"]:
            if a["variant"] == "control" and a["run"] == "plain":
                a["outcome"] = "failed"
                a["nodes"] = [{"nodeid": "sum", "outcome": "failed", "detail": "exit 1"}]

    return edit


def test_a_controls_expected_failure_is_not_a_failed_test(cprog_bundles, tmp_path) -> None:
    """On the GPU host the release gate PASSed and its JUnit said failures="36": every
    control case that failed as its logic-defect target says it must was a <failure>, so
    a CI's test tab drew a PASS red. Such a case is an expected failure (a <skipped>
    naming the target, as pytest writes an xfail); the claim that the control
    reproduces the target stays a testcase of its own."""
    suite = parse(edited(cprog_bundles["pass"], tmp_path, _logic_defect("s*"))).find("testsuite")
    assert counts(suite) == counted(suite)
    assert counts(suite)["failures"] == 0 and counts(suite)["errors"] == 0
    skipped = case(suite, "c-oob.control.plain").find("skipped")
    assert skipped is not None
    assert skipped.get("message").startswith("expected failure: the control shows its target")
    assert "outcome=failed" in skipped.get("message")
    # the facts still say what the test did
    assert facts(suite, "c-oob.control.plain")["outcomes"] == "failed"


def test_a_controls_failure_no_target_explains_stays_a_failure(cprog_bundles, tmp_path) -> None:
    suite = parse(edited(cprog_bundles["pass"], tmp_path, _logic_defect("other"))).find("testsuite")
    assert counts(suite) == counted(suite)
    assert case(suite, "c-oob.control.plain").find("failure") is not None


def test_an_interrupted_run_shows_its_gaps_as_skipped(cprog_bundles, tmp_path) -> None:
    def interrupt(results: dict[str, Any]) -> None:
        results.update(complete=False, interrupted=True, verdict=None, judgement=None)
        results["attempts"] = [a for a in results["attempts"] if a["run"] == "plain"]

    suite = parse(edited(cprog_bundles["pass"], tmp_path, interrupt)).find("testsuite")
    # no verdict: its testcase is an error, and there are no claims
    assert counts(suite) == counted(suite) == {"tests": 5, "failures": 0, "errors": 1, "skipped": 2}
    assert list(claims(suite)) == ["verdict"]
    assert props(suite)["csorch.verdict"] == ["not judged"]
    assert props(suite)["csorch.interrupted"] == ["true"]
    assert case(suite, "c-oob.fixed.memcheck").find("skipped") is not None


@pytest.mark.parametrize("verdict", ["pass", "fail", "inconclusive"])
def test_a_ci_system_reading_the_junit_shows_the_verdict(cprog_bundles, tmp_path, verdict) -> None:
    """junitparser, as CI test-result tabs read a file: green exactly on PASS."""
    junitparser = pytest.importorskip("junitparser", reason="junitparser: CPU machines only")
    path = tmp_path / "junit.xml"
    path.write_text(junit.render(*bundle.read(cprog_bundles[verdict])))
    (suite,) = list(junitparser.JUnitXml.fromfile(str(path)))
    results = {case.name: [type(r).__name__ for r in case.result] for case in suite}
    shown = {"failures": suite.failures, "errors": suite.errors}
    assert shown == {"pass": {"failures": 0, "errors": 0}, "fail": {"failures": 3, "errors": 0},
                     "inconclusive": {"failures": 0, "errors": 4}}[verdict]  # fmt: skip
    first = next(iter(suite))
    assert first.name == "verdict" and first.is_passed is (verdict == "pass")
    assert (
        results["verdict"] == {"pass": [], "fail": ["Failure"], "inconclusive": ["Error"]}[verdict]
    )


def test_a_truncated_checker_log_is_never_a_pass(cprog_bundles, tmp_path) -> None:
    def truncate(results: dict[str, Any]) -> None:
        for a in results["attempts"]:
            if a["checker"] != "none":
                a["parse"]["complete"] = False

    suite = parse(edited(cprog_bundles["pass"], tmp_path, truncate)).find("testsuite")
    assert counted(suite)["errors"] == 2
    error = case(suite, "c-oob.fixed.memcheck").find("error")
    assert error.get("type") == "inconclusive" and "no end-of-run summary" in error.get("message")


def test_control_characters_from_logs_stay_valid_xml(cprog_bundles, tmp_path) -> None:
    def colour(results: dict[str, Any]) -> None:
        for a in results["attempts"]:
            for f in (a["parse"] or {}).get("findings", []):
                f["header"] = "\x1b[1m\x1b[31m==1==ERROR: AddressSanitizer\x1b[0m"

    suite = parse(edited(cprog_bundles["pass"], tmp_path, colour)).find("testsuite")
    assert "AddressSanitizer" in output(suite, "c-oob.control.memcheck")


def test_the_schema_check_itself_rejects_what_it_must() -> None:
    """The validation the tests lean on refuses the attributes and children the older
    output had (a testcase's properties and output, totals on <testsuites>)."""
    etree = pytest.importorskip("lxml.etree", reason="lxml: CPU machines only (offline GPU)")
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    suite = (
        '<testsuite name="e" package="e" id="0" timestamp="2026-12-02T10:00:00" '
        'hostname="localhost" tests="1" failures="0" errors="0" time="0"><properties/>'
        '<testcase name="n" classname="c" time="0">{inner}</testcase>'
        "<system-out/><system-err/></testsuite>"
    )
    ok = f"<testsuites>{suite.format(inner='')}</testsuites>"
    assert schema.validate(etree.fromstring(ok))
    for bad in (
        f'<testsuites tests="1">{suite.format(inner="")}</testsuites>',
        f"<testsuites>{suite.format(inner='<properties/>')}</testsuites>",
        f"<testsuites>{suite.format(inner='<system-out>x</system-out>')}</testsuites>",
    ):
        assert not schema.validate(etree.fromstring(bad)), bad


@pytest.mark.process  # junit2html's command line in a child, as a CI step runs it
@pytest.mark.parametrize("verdict", ["pass", "fail", "inconclusive"])
def test_junit2html_draws_the_verdict_green_only_on_pass(cprog_bundles, tmp_path, verdict) -> None:
    """junit2html, the page a CI system without a test-results tab publishes: the verdict
    case is drawn passed on PASS, failed on FAIL and on INCONCLUSIVE (an error)."""
    pytest.importorskip("junit2htmlreport", reason="junit2html: CPU machines only")
    xml, page = tmp_path / "junit.xml", tmp_path / "junit.html"
    xml.write_text(junit.render(*bundle.read(cprog_bundles[verdict])))
    done = subprocess.run([sys.executable, "-m", "junit2htmlreport", str(xml), str(page)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    drawn = re.findall(
        r'<li class="outcome (outcome-\w+)"><a href="#\w+">verdict</a>', page.read_text()
    )
    assert drawn == ["outcome-passed" if verdict == "pass" else "outcome-failed"], drawn
