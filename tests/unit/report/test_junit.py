"""report.junit: JUnit XML of real ASan bundles parses, with the expected counts."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from orchestrator import bundle
from orchestrator.report import junit
from unit.report.test_markdown import NODES, as_pytest_nodes, edited


def parse(path: Path) -> ET.Element:
    return ET.fromstring(junit.render(*bundle.read(path)))


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


def case(suite: ET.Element, classname: str, name: str = "sum") -> ET.Element:
    found = [c for c in suite.findall("testcase") if c.get("classname") == classname]
    return next(c for c in found if c.get("name") == name)


def test_pass_bundle(cprog_bundles) -> None:
    root = parse(cprog_bundles["pass"])
    suite = root.find("testsuite")
    assert suite.get("name") == "c-oob"
    expected = {"tests": 4, "failures": 0, "errors": 0, "skipped": 0}
    assert counts(root) == counts(suite) == counted(suite) == expected
    assert props(suite)["csorch.verdict"] == ["pass"]
    assert props(suite)["csorch.backend"] == ["asan"]
    control = case(suite, "c-oob.control.memcheck")
    assert props(control)["csorch.role"] == ["control"]
    assert props(control)["csorch.findings"] == ["1"]
    out = control.find("system-out").text
    assert "1 x asan heap-buffer-overflow read size 4 in sum [signature c9c53e2d1ae7]" in out
    assert "at sum (pick.c)" in out and "log: logs/control/memcheck/sum/r0.log" in out
    fixed = case(suite, "c-oob.fixed.memcheck")
    assert props(fixed)["csorch.role"] == ["fix"] and props(fixed)["csorch.findings"] == ["0"]


def test_fail_bundle_findings_are_data_not_failures(cprog_bundles) -> None:
    suite = parse(cprog_bundles["fail"]).find("testsuite")
    assert counts(suite) == counted(suite) == {"tests": 4, "failures": 0, "errors": 0, "skipped": 0}
    assert props(suite)["csorch.verdict"] == ["fail"]
    assert any("still shows" in r for r in props(suite)["csorch.verdict.reason"])
    fixed = case(suite, "c-oob-nofix.fixed.memcheck")
    assert "heap-buffer-overflow" in fixed.find("system-out").text


def test_a_variant_that_did_not_build_is_an_error(cprog_bundles) -> None:
    suite = parse(cprog_bundles["inconclusive"]).find("testsuite")
    assert counts(suite) == counted(suite) == {"tests": 4, "failures": 0, "errors": 2, "skipped": 0}
    error = case(suite, "c-oob-badpatch.fixed.plain").find("error")
    assert error.get("type") == "not built" and "stale.patch does not apply" in error.get("message")
    assert props(suite)["csorch.verdict"] == ["inconclusive"]


def test_one_testcase_per_node_and_device(cprog_bundles, tmp_path) -> None:
    def nodes_on_gpu(results: dict[str, Any]) -> None:
        as_pytest_nodes(results)
        for a in results["attempts"]:
            a["device"] = "0"

    suite = parse(edited(cprog_bundles["pass"], tmp_path, nodes_on_gpu)).find("testsuite")
    # 2 variants x 2 runs x 2 nodes; test_b fails everywhere
    assert counts(suite) == counted(suite) == {"tests": 8, "failures": 4, "errors": 0, "skipped": 0}
    failed = case(suite, "c-oob.control.memcheck.gpu0", NODES[1])
    assert failed.find("failure").get("message") == "AssertionError"
    passed = case(suite, "c-oob.control.memcheck.gpu0", NODES[0])
    assert passed.find("failure") is None
    assert "heap-buffer-overflow" in passed.find("system-out").text


def test_an_interrupted_run_shows_its_gaps_as_skipped(cprog_bundles, tmp_path) -> None:
    def interrupt(results: dict[str, Any]) -> None:
        results.update(complete=False, interrupted=True, verdict=None, judgement=None)
        results["attempts"] = [a for a in results["attempts"] if a["run"] == "plain"]

    suite = parse(edited(cprog_bundles["pass"], tmp_path, interrupt)).find("testsuite")
    assert counts(suite) == counted(suite) == {"tests": 4, "failures": 0, "errors": 0, "skipped": 2}
    assert props(suite)["csorch.verdict"] == ["not judged"]
    assert props(suite)["csorch.interrupted"] == ["true"]
    assert case(suite, "c-oob.fixed.memcheck").find("skipped") is not None


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
    assert "AddressSanitizer" in case(suite, "c-oob.control.memcheck").find("system-out").text
