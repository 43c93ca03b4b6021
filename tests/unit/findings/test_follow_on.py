"""findings.follow_on: the sticky API errors after a fault are its consequences."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from orchestrator.backends.compute_sanitizer import log as cs_log
from orchestrator.findings import follow_on
from orchestrator.model import Checker, Finding, Frame

GRAMMAR = Path(__file__).resolve().parents[2] / "fixtures" / "compute-sanitizer" / "grammar"


def parse(name: str) -> tuple[Finding, ...]:
    with open(GRAMMAR / name, encoding="utf-8") as lines:
        return cs_log.parse(lines, checker=Checker.MEMCHECK).findings


def test_launch_failures_after_the_cub_fault_follow_it() -> None:
    findings = follow_on.link(parse("memcheck-cub-follow-on.log"))
    fault = next(f for f in findings if f.kind == "invalid-access")
    assert not fault.follows
    later = [f for f in findings if f.kind == "api-error"]
    assert [f.frames[0].function for f in later] == [
        "cudaGetLastError",
        "cudaMemcpyAsync",
        "cudaFree",
    ]
    assert {f.follows for f in later} == {follow_on.sig_id(fault)}
    assert len(follow_on.sig_id(fault)) == 12


def test_api_errors_before_any_fault_or_not_sticky_stand_alone() -> None:
    startup = parse("memcheck-torch-startup.log")
    assert follow_on.follow_ons(startup) == ()
    cub = parse("memcheck-cub-follow-on.log")
    # the launch failure before the fault (reordered) is not explained by it
    api, fault = cub[2], cub[0]
    assert follow_on.link((api, fault))[0].follows == ""
    other = dataclasses.replace(api, code="cudaErrorInvalidValue", detail="invalid argument")
    assert follow_on.link((fault, other))[1].follows == ""


def test_another_process_fault_does_not_explain_a_launch_failure() -> None:
    fault = Finding(Checker.MEMCHECK, "invalid-access", frames=(Frame("k"),), pid=1)
    api = Finding(
        Checker.MEMCHECK, "api-error", code="cudaErrorLaunchFailure", frames=(Frame("cudaFree"),)
    )
    assert follow_on.link((fault, dataclasses.replace(api, pid=2)))[1].follows == ""
    assert follow_on.link((fault, dataclasses.replace(api, pid=1)))[1].follows
