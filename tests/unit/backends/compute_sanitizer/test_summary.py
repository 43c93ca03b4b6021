"""cs_summary: the end-of-run lines and csorch's count against the tool's."""

from __future__ import annotations

from orchestrator.backends.compute_sanitizer.log import parse
from orchestrator.backends.compute_sanitizer.summary import mismatch

P = "========="


def lines(*body: str) -> list[str]:
    return [f"{P} {b}" if b else P for b in body]


def test_leaks_and_api_errors_count_like_access_errors() -> None:
    result = parse(
        lines(
            "Invalid __global__ read of size 4 bytes",
            "    at k()+0x70 in k.cu:6",
            "",
            'Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure"'
            " on CUDA API call to cudaDeviceSynchronize.",
            "",
            "Leaked 4,092 bytes at 0x74b834000000",
            "",
            "LEAK SUMMARY: 4092 bytes leaked in 1 allocations",
            "ERROR SUMMARY: 3 errors",
        )
    )
    assert [f.kind for f in result.findings] == ["invalid-access", "api-error", "leak"]
    assert result.summary_count == 3 and result.count_mismatch == "" and result.conclusive


def test_unprinted_records_count_as_parsed() -> None:
    body = [
        "Invalid __global__ read of size 8 bytes",
        "    at k()+0x10 in k.cu:1",
        "",
        "ERROR SUMMARY: 100 errors",
        "ERROR SUMMARY: 99 errors were not printed. Use --print-limit option to adjust",
    ]
    assert parse(lines(*body)).count_mismatch == ""
    body[-1] = "ERROR SUMMARY: 98 errors were not printed. Use --print-limit option to adjust"
    result = parse(lines(*body))
    assert "counts 100 record(s) but csorch parsed 99" in result.count_mismatch
    assert result.reason.startswith("parse incomplete")


def test_no_summary_is_incomplete_not_a_mismatch() -> None:
    result = parse(lines("Invalid __global__ read of size 8 bytes", "    at k()+0x10 in k.cu:1"))
    assert not result.complete and result.count_mismatch == ""
    assert "no end-of-run summary" in result.reason


def test_mismatch_rules() -> None:
    assert mismatch(None, 5, None, (0, 0)) == ""
    assert mismatch(2, 2, None, (0, 0)) == ""
    assert mismatch(2, 2, (1, 1), (1, 1)) == ""
    assert mismatch(2, 2, (2, 0), (1, 1))
    assert mismatch(3, 2, None, (0, 0))
