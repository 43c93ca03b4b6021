"""asan_log: the frame grammar and the parser of AddressSanitizer's reports (what makes a
log complete, the kinds and accesses, and the damaged lines the fuzzer found)."""

from __future__ import annotations

import pytest

from orchestrator.backends.asan.log import frame, parse
from orchestrator.model import Frame


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "    #0 0x556d50cdd234 in main /tmp/uaf.c:3",
            Frame("main", "/tmp/uaf.c", 3, "", "0x556d50cdd234"),
        ),
        (
            "    #0 0x556d50cdd234 in main /tmp/uaf.c:3:12",
            Frame("main", "/tmp/uaf.c", 3, "", "0x556d50cdd234"),
        ),
        (
            "    #3 0x556d50cdd0f0 in _start (/tmp/uaf+0x10f0)",
            Frame("_start", "", None, "/tmp/uaf", "0x556d50cdd0f0"),
        ),
        (
            "    #1 0x7fe8e42edf79  (/lib/x86_64-linux-gnu/libffi.so.8+0x6f79)",
            Frame("", "", None, "/lib/x86_64-linux-gnu/libffi.so.8", "0x7fe8e42edf79"),
        ),
        (
            "    #2 0x7f00 in quantize(float const*, int) /src/bug.cpp:11 (BuildId: 4f2a)",
            Frame("quantize(float const*, int)", "/src/bug.cpp", 11, "", "0x7f00"),
        ),
        (
            "    #4 0x7f00 in operator new(unsigned long) (/lib/libasan.so.8+0xb8a3)",
            Frame("operator new(unsigned long)", "", None, "/lib/libasan.so.8", "0x7f00"),
        ),
        ("    #5 0x7f00 in mystery", Frame("mystery", "", None, "", "0x7f00")),
    ],
)
def test_frame_forms(text: str, expected: Frame) -> None:
    assert frame(text) == expected


def test_a_long_run_of_spaces_in_a_frame_reads_at_once() -> None:
    """A damaged frame line with 200,000 spaces (the fuzzer's huge_line): the earlier lazy
    patterns backtracked over the run for every position in it (about a minute for
    this line); the suffix patterns read it in one pass, to the same frame."""
    spaces = " " * 200_000
    line = f"    #2 0x7f00 in __libc_start_call_main ../sysdeps/nptl/libc_st{spaces}art_main.h:58"
    got = frame(line)
    assert (got.function, got.file, got.line) == (
        "__libc_start_call_main ../sysdeps/nptl/libc_st",
        "art_main.h",
        58,
    )
    got = frame(f"    #1 0x7f00 in f{spaces}(/lib/libffi.so.8+0x6f79) (BuildId: 4f2a)")
    assert (got.function, got.module) == ("f", "/lib/libffi.so.8")
    assert frame(f"    #1 0x7f00 in f{spaces}x").function.endswith(" x")


def test_segv_report_takes_the_access_from_the_signal_line() -> None:
    result = parse(
        [
            "==7==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000 (pc 0x1 bp 0x2 "
            "sp 0x3 T0)",
            "==7==The signal is caused by a WRITE memory access.",
            "    #0 0x55 in store /src/s.c:4",
            "SUMMARY: AddressSanitizer: SEGV /src/s.c:4 in store",
            "==7==ABORTING",
        ]
    )
    (f,) = result.findings
    assert (f.kind, f.access, f.pid, f.address) == ("SEGV", "write", 7, "000000000000")
    assert result.complete and result.summary_count == 1


def test_double_free_kind_comes_from_the_summary() -> None:
    result = parse(
        [
            "==9==ERROR: AddressSanitizer: attempting double-free on 0x602000000010 in thread T0:",
            "    #0 0x7f in __interceptor_free (/lib/libasan.so.8+0xb6a8)",
            "    #1 0x55 in main /src/d.c:6",
            "SUMMARY: AddressSanitizer: double-free (/lib/libasan.so.8+0xb6a8) in "
            "__interceptor_free",
            "AddressSanitizer exit stats:",
        ]
    )
    assert result.findings[0].kind == "double-free" and result.complete


def test_a_report_after_the_last_marker_is_incomplete() -> None:
    result = parse(
        [
            "AddressSanitizer exit stats:",
            "==8==ERROR: AddressSanitizer: heap-use-after-free on address 0x10 at pc 0x1",
            "SUMMARY: AddressSanitizer: heap-use-after-free /a.c:1 in f",
        ]
    )
    assert not result.complete and result.summary_count is None and len(result.findings) == 1


def test_silence_is_not_clean() -> None:
    assert not parse(["hello from the program"]).complete


# --- found by tests/fuzz (issue 11) -----------------------------------------------------


def test_a_report_line_damaged_after_the_colon_is_an_unknown_kind() -> None:
    # (a report is whole once its SUMMARY line came: a cut one is never complete)
    lines = ["==7==ERROR: AddressSanitizer: 123 garbled", "SUMMARY: AddressSanitizer: 123"]
    result = parse([*lines, "AddressSanitizer exit stats:"])
    assert [f.kind for f in result.findings] == ["unknown"] and result.complete


def test_corrupt_sizes_and_line_numbers_do_not_crash() -> None:
    result = parse(
        ["==7==ERROR: AddressSanitizer: heap-use-after-free on address 0x1",
         "READ of size " + "9" * 5000 + " at 0x1 thread T0",
         "    #0 0x1 in f a.c:" + "9" * 5000],
    )  # fmt: skip
    (finding,) = result.findings
    assert finding.size is None and finding.frames[0].line is None and not result.complete


def test_a_corrupt_pid_makes_the_report_line_unknown() -> None:
    # found by `make fuzz` (long profile): the pid went through int() unbounded
    result = parse(["==" + "9" * 5000 + "==ERROR: AddressSanitizer: heap-use-after-free"])
    assert result.findings == () and not result.complete
