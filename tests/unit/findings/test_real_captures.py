"""The subject's frames, follow-on records and ambient records on real H200 captures of
code not written here (tests/fixtures/compute-sanitizer/h200-thirdparty/): every record
of the logs, not an excerpt."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.backends.compute_sanitizer import log as cs_log
from orchestrator.findings import follow_on, subject
from orchestrator.findings.signatures import signature
from orchestrator.model import Checker, Finding

CAPTURES = (
    Path(__file__).resolve().parents[2] / "fixtures" / "compute-sanitizer" / "h200-thirdparty"
)


def records(name: str) -> tuple[Finding, ...]:
    with open(CAPTURES / name, encoding="utf-8") as lines:
        parsed = cs_log.parse(lines, checker=Checker.MEMCHECK, examples=None)
    return follow_on.mark(parsed.findings)


@pytest.mark.parametrize(
    "log", ["extension-cpp.fixed.memcheck.log", "extension-cpp.control.memcheck.log"]
)
def test_torch_start_up_records_have_no_frame_of_the_subject(log: str) -> None:
    start_up = [f for f in records(log) if f.kind == "api-error"]
    assert len(start_up) == 34 and {signature(f).function for f in start_up} == {
        "cuGetProcAddress_v2"
    }
    # cuda-python's bindings and CPython called the driver: the environment, not the change
    assert not any(subject.in_subject(f) for f in start_up)


def test_the_extensions_kernel_is_its_own() -> None:
    faults = [
        f for f in records("extension-cpp.control.memcheck.log") if f.kind == "invalid-access"
    ]
    assert len(faults) == 66
    assert {signature(f).function for f in faults} == {"extension_cpp::muladd_kernel"}
    assert all(subject.in_subject(f) for f in faults)


def test_a_cub_fault_is_named_by_the_subjects_host_frame_and_its_sequels_follow_it() -> None:
    found = records("cub-freed-input.memcheck.log")
    faults = [f for f in found if f.kind == "invalid-access"]
    assert len(faults) == 24
    # every device frame is CUB's: the signature names main, the program's own frame
    assert {signature(f).function for f in faults} == {"main"}
    assert all(subject.library(fr) in ("CUB", "libcu++") for f in faults for fr in f.frames)
    sequels = [f for f in found if f.kind == "api-error"]
    assert sorted(signature(f).function for f in sequels) == [
        "cudaDeviceSynchronize",
        "cudaFree",
        "cudaFree",
        "cudaGetLastError",
        "cudaMemcpy",
    ]
    assert {f.follows for f in sequels} == {follow_on.sig_id(faults[0])}
