"""asan: options, wrapping, liveness, runtime discovery and real instrumented runs
(the log's grammar and parser are asan_log's: test_asan_log.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from orchestrator import proc
from orchestrator.backends.asan import backend as asan
from orchestrator.backends.asan.backend import Asan, merge_options
from orchestrator.errors import CheckerUnavailable
from orchestrator.model import Checker, ParseResult

pytestmark = pytest.mark.process  # builds, runs a checker, git or a child process

SRC = Path(__file__).resolve().parents[3] / "fixtures" / "asan" / "src"
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


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
