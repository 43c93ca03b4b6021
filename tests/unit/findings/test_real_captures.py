"""The subject's frames, follow-on records and ambient records on real H200 captures of
code not written here (tests/fixtures/compute-sanitizer/h200-thirdparty/): every record
of the logs, not an excerpt."""

from __future__ import annotations

import lzma
from pathlib import Path

import pytest

from orchestrator.backends.compute_sanitizer import log as cs_log
from orchestrator.findings import follow_on, subject
from orchestrator.findings.signatures import signature
from orchestrator.model import Checker, Finding, ParseResult

CAPTURES = (
    Path(__file__).resolve().parents[2] / "fixtures" / "compute-sanitizer" / "h200-thirdparty"
)


def parsed(name: str) -> ParseResult:
    """The whole log (xz-compressed when the name says so: the megablocks captures are
    MBs of repeated Python frames)."""
    opener = lzma.open if name.endswith(".xz") else open
    with opener(CAPTURES / name, "rt", encoding="utf-8") as lines:
        return cs_log.parse(lines, checker=Checker.MEMCHECK, examples=None)


def records(name: str) -> tuple[Finding, ...]:
    return follow_on.link(parsed(name).findings)


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


MEGABLOCKS = "megablocks-sort.iota-temporary.memcheck.launch{}.log.xz"


def test_a_fault_in_cub_of_a_wrapped_namespace_is_named_by_the_extensions_function() -> None:
    """databricks/megablocks builds CUB inside its own namespace (`megablocks::cub::`):
    its sort's reads of a freed temporary are CUB's, the signature the extension's."""
    log = parsed(MEGABLOCKS.format(0))
    assert log.complete and not log.count_mismatch and log.summary_count == 162
    found = follow_on.link(log.findings)
    faults = [f for f in found if f.kind == "invalid-access"]
    assert len(faults) == 160
    # before: "megablocks::cub::LoadDirectWarpStriped<...>", a CUB template, named it
    assert {signature(f).function for f in faults} == {"megablocks::cub_radix_sort<short>"}
    assert all(subject.library(f.frames[0]) == "CUB" for f in faults)
    sequels = [f for f in found if f.kind == "api-error"]
    assert len(sequels) == 2 and {f.follows for f in sequels} == {follow_on.sig_id(faults[0])}


def test_a_lower_case_warp_assert_is_parsed_and_its_sticky_errors_follow_it() -> None:
    """compute-sanitizer 2025.3 writes a device-side assert() as "Warp assert": before,
    468 records went unparsed and the log was inconclusive (summary 470, parsed 2)."""
    log = parsed(MEGABLOCKS.format(1))
    assert log.complete and log.unparsed == () and log.summary_count == 470
    assert not log.count_mismatch
    found = follow_on.link(log.findings)
    asserts = [f for f in found if f.kind == "hardware-exception"]
    assert len(asserts) == 468 and {f.detail for f in asserts} == {"assert"}
    sequels = [f for f in found if f.kind == "api-error"]
    assert [f.code for f in sequels] == ["cudaErrorAssert", "cudaErrorAssert"]
    assert {f.follows for f in sequels} == {follow_on.sig_id(asserts[0])}


def test_the_fixed_megablocks_sort_is_clean() -> None:
    log = parsed("megablocks-sort.fixed.memcheck.log.xz")
    assert log.complete and log.findings == () and log.summary_count == 0
