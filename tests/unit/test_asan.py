"""asan: frame grammar, options, runtime discovery and a real instrumented run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from orchestrator import proc
from orchestrator.backends import asan
from orchestrator.backends.asan import Asan, merge_options
from orchestrator.backends.asan_log import frame, parse
from orchestrator.errors import CheckerUnavailable
from orchestrator.model import Checker, Frame, ParseResult

SRC = Path(__file__).resolve().parents[1] / "fixtures" / "asan" / "src"
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


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


def test_merge_options_keeps_the_marker_last() -> None:
    assert merge_options() == (
        "detect_leaks=0:halt_on_error=0:suppress_equal_pcs=0:alloc_dealloc_mismatch=0:atexit=1"
    )
    merged = merge_options("halt_on_error=1:atexit=0")
    assert merged.endswith("halt_on_error=1:atexit=0:atexit=1")
    # a plain run is judged by its outcome: it must not halt at a report
    assert "halt_on_error=0:suppress_equal_pcs=1" in merge_options(plain=True)
    assert "halt_on_error=0:suppress_equal_pcs=0" in merge_options(leaks=True)


def test_merge_options_with_leaks_puts_detection_after_the_default() -> None:
    merged = merge_options("detect_leaks=0", leaks=True).split(":")
    # the last setting wins: csorch's default, then the leak check, then the user's
    assert merged.index("detect_leaks=1") > merged.index("detect_leaks=0")
    assert merged[-2:] == ["detect_leaks=0", "atexit=1"]


@pytest.mark.parametrize(
    ("options", "leaks"),
    [
        (["--leak-check", "full"], True),
        (["--padding", "512", "--leak-check=full"], True),
        (["--leak-check", "no"], False),
        (["--leak-check"], False),
        (["--padding", "512"], False),
    ],
)
def test_leak_check_full_turns_on_leak_sanitizer(options: list[str], leaks: bool) -> None:
    w = Asan("/lib/libasan.so.8").wrap(["t"], checker=Checker.MEMCHECK, options=options)
    assert dict(w.env)["ASAN_OPTIONS"] == merge_options(leaks=leaks)


def test_wrap_preloads_the_runtime_in_front() -> None:
    w = Asan("/lib/libasan.so.8").wrap(
        ["python", "-m", "pytest"],
        checker=Checker.MEMCHECK,
        options=["--padding", "512"],
        env={"LD_PRELOAD": "/lib/other.so", "ASAN_OPTIONS": "verbosity=1"},
    )
    env = dict(w.env)
    assert w.argv == ("python", "-m", "pytest") and w.log_path is None
    assert env["LD_PRELOAD"] == "/lib/libasan.so.8 /lib/other.so"
    assert "verbosity=1" in env["ASAN_OPTIONS"] and env["ASAN_OPTIONS"].endswith("atexit=1")
    with pytest.raises(ValueError, match="memcheck"):
        Asan("/lib/libasan.so.8").wrap(["t"], checker=Checker.RACECHECK)


def test_liveness() -> None:
    a = Asan("/lib/libasan.so.8")
    assert a.liveness(ParseResult(complete=True, summary_count=0)).live
    assert "exit stats" in a.liveness(ParseResult()).reason
    assert not a.liveness(ParseResult(complete=True, tool_errors=("ASan runtime ...",))).live


@needs_gcc
def test_find_runtime_with_the_real_compiler() -> None:
    runtime = asan.find_runtime("gcc")
    assert runtime.is_absolute() and runtime.exists() and "asan" in runtime.name
    info = Asan(compiler="gcc").probe()
    assert info.path == str(runtime) and info.version.startswith("gcc ")


def test_missing_compiler_or_runtime_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(CheckerUnavailable, match="csorch-no-such-cc"):
        asan.find_runtime("csorch-no-such-cc")
    # a "compiler" that knows no libasan echoes the bare name back, as gcc does
    fake = tmp_path / "cc"
    fake.write_text("#!/bin/sh\necho libasan.so\n")
    fake.chmod(0o755)
    with pytest.raises(CheckerUnavailable, match="found no runtime"):
        asan.find_runtime(str(fake))


@needs_gcc
def test_a_real_instrumented_run_through_proc(tmp_path: Path) -> None:
    """Build the planted overflow and its clean twin, run both wrapped, parse the logs."""
    exe = tmp_path / "oob"
    subprocess.run(["gcc", *asan.COMPILE_FLAGS, str(SRC / "oob.c"), "-o", str(exe)], check=True)
    backend = Asan(compiler="gcc")
    results = {}
    for arg in ("8", "7"):
        wrapped = backend.wrap([str(exe), arg], checker=Checker.MEMCHECK)
        log = tmp_path / f"{arg}.log"
        ran = proc.run(wrapped.argv, log_path=log, env=dict(wrapped.env), timeout=60)
        assert ran.returncode == 0  # recover mode: the exit code proves nothing
        with open(log) as lines:
            results[arg] = backend.parse(lines)
    bad, clean = results["8"], results["7"]
    assert bad.conclusive and [f.kind for f in bad.findings] == ["heap-buffer-overflow"]
    assert bad.findings[0].frames[0].function == "pick"
    assert clean.conclusive and clean.findings == () and clean.summary_count == 0


@needs_gcc
def test_a_real_leak_is_reported_only_with_the_leak_check(tmp_path: Path) -> None:
    """The planted leak, run wrapped with and without `--leak-check full`: LeakSanitizer
    reports it before the exit-stats marker, so the log is complete either way."""
    exe = tmp_path / "leak"
    subprocess.run(["gcc", *asan.COMPILE_FLAGS, str(SRC / "leak.c"), "-o", str(exe)], check=True)
    backend = Asan(compiler="gcc")
    results = {}
    for name, options in (("full", ["--leak-check", "full"]), ("default", [])):
        wrapped = backend.wrap([str(exe)], checker=Checker.MEMCHECK, options=options)
        log = tmp_path / f"{name}.log"
        ran = proc.run(wrapped.argv, log_path=log, env=dict(wrapped.env), timeout=60)
        assert ran.returncode == 0  # halt_on_error=0: the leak does not change the exit
        with open(log) as lines:
            results[name] = backend.parse(lines)
    full, default = results["full"], results["default"]
    assert full.conclusive and [(f.kind, f.frames[1].function) for f in full.findings] == [
        ("memory-leak", "stage")
    ]
    assert default.conclusive and default.findings == ()


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
