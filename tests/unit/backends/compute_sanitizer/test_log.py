"""cs_log: the compute-sanitizer grammar, pattern by pattern (whole logs: test_parser_fixtures)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.backends.compute_sanitizer import frames as cs_frames
from orchestrator.backends.compute_sanitizer import log as cs_log
from orchestrator.backends.compute_sanitizer.log import parse
from orchestrator.model import Checker, Frame

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "compute-sanitizer"

P = "========="


def lines(*body: str, prefix: str = P) -> list[str]:
    return [f"{prefix} {b}" if b else prefix for b in body]


def test_two_line_host_frame_gets_its_module() -> None:
    result = parse(
        lines(
            "Invalid __global__ read of size 4 bytes",
            "    at k()+0x10 in k.cu:3",
            "    Saved host backtrace up to driver entry point at kernel launch time",
            "    Host Frame: [0x302cf0]",
            "               in /lib/x86_64-linux-gnu/libcuda.so.1",
            "",
            "ERROR SUMMARY: 1 error",
        )
    )
    (finding,) = result.findings
    assert finding.host_frames == (
        Frame("", "", None, "/lib/x86_64-linux-gnu/libcuda.so.1", "302cf0"),
    )


def test_thousands_separators_and_details() -> None:
    result = parse(
        lines(
            "Invalid __global__ write of size 1,024 bytes",
            "    at k()+0x10 in k.cu:3",
            "    by thread (1,2,3) in block (4,5,6)",
            "    Address 0x7f00 is out of bounds",
            "    and is 8 bytes after the nearest allocation at 0x7e00 of size 4,096 bytes",
            "",
            "ERROR SUMMARY: 12,345 errors",
            "ERROR SUMMARY: 12,344 errors were not printed. Use --print-limit option to adjust",
        )
    )
    (f,) = result.findings
    assert (f.kind, f.access, f.size, f.space) == ("invalid-access", "write", 1024, "global")
    assert (f.thread, f.block, f.address) == ("1,2,3", "4,5,6", "7f00")
    assert "is out of bounds" in f.detail and "nearest allocation" in f.detail
    assert (result.summary_count, result.not_printed, result.complete) == (12345, 12344, True)


def test_a_new_header_ends_the_previous_record() -> None:
    result = parse(
        lines(
            "Invalid __global__ read of size 4 bytes",
            "    at a()+0x10 in a.cu:3",
            "Invalid __global__ read of size 4 bytes",
            "    at b()+0x10 in b.cu:3",
            "ERROR SUMMARY: 2 errors",
        )
    )
    assert [f.frames[0].function for f in result.findings] == ["a()", "b()"]


def test_lines_without_the_prefix_are_ignored_and_streaming_works() -> None:
    def stream():
        yield "application output\n"
        yield f"{P}= not ours either\n"
        yield f"{P} Invalid __local__ read of size 4 bytes\r\n"
        yield "more output\n"
        yield f"{P}     at k()+0x10 in k.cu:3\n"
        yield f"{P} ERROR SUMMARY: 1 error\n"

    result = parse(stream())
    assert len(result.findings) == 1 and result.findings[0].space == "local"
    assert result.findings[0].frames[0].function == "k()"
    assert result.conclusive and not result.unparsed


def test_custom_prefix() -> None:
    result = parse(
        lines("Invalid __global__ read of size 4 bytes", "ERROR SUMMARY: 1 error", prefix="##"),
        prefix="##",
    )
    assert result.complete and len(result.findings) == 1


def test_summaries_of_several_processes_add_up() -> None:
    result = parse(lines("ERROR SUMMARY: 0 errors", "ERROR SUMMARY: 3 errors"))
    assert result.summary_count == 3 and result.complete


def test_a_record_after_the_last_summary_makes_the_log_incomplete() -> None:
    result = parse(
        lines(
            "ERROR SUMMARY: 0 errors",
            "Invalid __global__ read of size 4 bytes",
            "    at k()+0x10 in k.cu:3",
        )
    )
    assert not result.complete and result.summary_count is None
    assert "no end-of-run summary" in result.reason


def test_empty_log_is_incomplete() -> None:
    result = parse([])
    assert not result.complete and not result.conclusive and result.findings == ()


def test_records_carry_the_run_checker_unless_their_kind_says_otherwise() -> None:
    result = parse(
        lines("Leaked 8 bytes at 0x10", "ERROR SUMMARY: 1 error"), checker=Checker.INITCHECK
    )
    assert result.findings[0].checker is Checker.INITCHECK
    race = parse(
        lines(
            "Error: Race reported between Write access at k()+0x1 in k.cu:1",
            "    and Read access at k()+0x2 in k.cu:2",
            "RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)",
        )
    )
    assert race.findings[0].checker is Checker.RACECHECK and race.findings[0].hazards is None
    assert race.findings[0].access == "write-read" and race.summary_count == 1


def test_case_markers_attribute_and_do_not_split_records() -> None:
    result = parse(
        [
            "[csorch-case-begin] t.py::test_a",
            f"{P} Invalid __global__ read of size 4 bytes",
            "[csorch-case-end] t.py::test_a",
            f"{P}     at k()+0x10 in k.cu:3",
            f"{P} ERROR SUMMARY: 1 error",
        ]
    )
    (f,) = result.findings
    assert f.case == "t.py::test_a" and f.frames[0].function == "k()"


def test_unknown_checker_lines_are_kept_but_bounded() -> None:
    result = parse(lines(*[f"Something new {i}" for i in range(50)], "ERROR SUMMARY: 0 errors"))
    assert len(result.unparsed) == cs_log.MAX_UNPARSED and result.complete


def test_host_backtraces_keep_the_extension_and_the_test_not_cpython_or_pytest() -> None:
    log = FIXTURES / "h200" / "rng-owner-scope-memcheck-rng-64x96.log"
    result = parse(log.read_text().splitlines(), checker=Checker.MEMCHECK)
    assert result.findings
    for finding in result.findings:
        host = finding.host_frames
        native = [f for f in host if not f.is_python]
        assert [f.module for f in native[:2]] == ["libcudart.so.13", "libcudart.so.13"]
        assert any(f.function.startswith("qext::quantize_nvfp4_impl") for f in native)
        assert all(f.module not in ("python", "libc.so.6") for f in native)
        assert len(native) <= cs_frames.MAX_NATIVE_FRAMES
        assert all(len(f.function) <= cs_frames.MAX_HOST_FUNCTION for f in host)
        assert any(f.function.startswith("pybind11::cpp_function::initialize<") for f in host)
        assert [(f.function, f.file) for f in host if f.is_python] == [
            ("quantize", "quantizers.py"),
            ("_quantize", "test_rng_ownership.py"),
            ("test_deterministic_replay", "test_rng_ownership.py"),
        ]


def test_the_host_frame_fast_path_changes_no_finding() -> None:
    """Real H200 logs parsed twice: as captured (host frames take the fast path) and with
    one more space of indent on every host frame line (the general path); the trimmed
    host frames, and so every finding, must be the same."""
    logs = [
        FIXTURES / "h200" / "rng-owner-scope-memcheck-rng-64x96.log",
        FIXTURES / "h200-csorch" / "rebuilt-memcheck-160x48-context-lost.log",
    ]
    for log in logs:
        text = log.read_text().splitlines()
        fast = parse(text)
        slow = parse([t.replace("Host Frame:", " Host Frame:", 1) for t in text])
        assert fast.findings and fast == slow
        assert any(f.host_frames for f in fast.findings)


# --- found by tests/fuzz and tools/fuzz_linear.py (issue 11) ----------------------------


def test_corrupt_counts_are_unknown_lines_not_crashes() -> None:
    for line in ("ERROR SUMMARY: , errors", "ERROR SUMMARY: " + "9" * 5000 + " errors"):
        result = parse([f"========= {line}"])
        assert not result.complete and result.unparsed == (line,)


def test_a_corrupt_line_number_leaves_the_frame_unparsed() -> None:
    location = "k(int *)+0x10 in k.cu:" + "1" * 5000
    assert cs_frames.device_frame(location) == Frame(function=location)
    result = parse(
        ["========= Error: Race reported between Write access at " + location,
         "=========", "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)"],
        checker=Checker.RACECHECK,
    )  # fmt: skip
    assert result.complete and len(result.findings) == 1


def test_thousands_separators_still_read() -> None:
    assert parse(["========= ERROR SUMMARY: 4,098 errors"]).summary_count == 4098
