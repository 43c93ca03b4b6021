"""compute_sanitizer: argv wrapping, version probe (through a stand-in executable, since
this host has no CUDA), liveness."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from orchestrator.backends.compute_sanitizer.backend import (
    NAME,
    PRESETS,
    ComputeSanitizer,
    locate,
    parse_version,
)
from orchestrator.config import schema
from orchestrator.errors import CheckerUnavailable
from orchestrator.model import Checker, ParseResult

VERSION_OUTPUT = """NVIDIA (R) Compute Sanitizer
Copyright (c) 2020-2025 NVIDIA Corporation
Version 2025.3.1.0 (build 36398880) (public-release)
"""


def fake_tool(directory: Path, body: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / NAME
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_presets_target_processes_and_racecheck_workers_reach_the_argv() -> None:
    cs = ComputeSanitizer("/cs", racecheck_workers=3)
    mem = cs.wrap(
        ["./t"],
        checker=Checker.MEMCHECK,
        options=["--padding", "64"],
        preset="cccl",
        target_processes="application-only",
    )
    # the run's own --padding wins over the preset's; the tool's own flags come first
    assert mem.argv == (
        "/cs", "--tool", "memcheck", "--print-limit", "1000",
        "--track-stream-ordered-races", "all", "--check-device-heap", "yes",
        "--target-processes", "application-only", "--padding", "64", "./t",
    )  # fmt: skip
    assert "--racecheck-num-workers" not in mem.argv  # memcheck has no workers
    race = cs.wrap(["./t"], checker=Checker.RACECHECK, preset="blocking")
    assert race.argv[5:] == (
        "--force-blocking-launches", "--racecheck-num-workers", "3", "./t"
    )  # fmt: skip
    mine = cs.wrap(["./t"], checker=Checker.RACECHECK, options=["--racecheck-num-workers=1"])
    assert mine.argv.count("--racecheck-num-workers=1") == 1 and "3" not in mine.argv
    default = ComputeSanitizer("/cs").wrap(["./t"], checker=Checker.RACECHECK)
    assert "--racecheck-num-workers" not in default.argv  # 0: the tool's own default


def test_every_preset_the_config_names_has_its_options_and_a_source() -> None:
    assert set(PRESETS) == set(schema.PRESETS)
    for name, preset in schema.PRESETS.items():
        assert PRESETS[name] and PRESETS[name][0].startswith("--"), name
        assert preset.what and preset.source and preset.checkers, name
        assert set(preset.checkers) <= {"memcheck", "initcheck", "racecheck", "synccheck"}


def test_wrap_builds_the_argv() -> None:
    cs = ComputeSanitizer("/cuda/bin/compute-sanitizer")
    w = cs.wrap(
        ["python", "-m", "pytest"],
        checker=Checker.MEMCHECK,
        options=["--padding", "512"],
        log_path=Path("/tmp/cs.log"),
    )
    assert w.argv == (
        "/cuda/bin/compute-sanitizer",
        "--tool",
        "memcheck",
        "--print-limit",
        "1000",
        "--log-file",
        "/tmp/cs.log",
        "--padding",
        "512",
        "python",
        "-m",
        "pytest",
    )
    assert w.log_path == Path("/tmp/cs.log") and w.env == ()
    assert "--error-exitcode" not in w.argv


def test_wrap_without_log_file_keeps_output_in_the_stream_and_respects_print_limit() -> None:
    cs = ComputeSanitizer("cs")
    w = cs.wrap(["./t"], checker=Checker.RACECHECK, options=["--print-limit=0"])
    assert w.argv == ("cs", "--tool", "racecheck", "--print-limit=0", "./t")
    assert w.log_path is None


@pytest.mark.parametrize("option", ["--tool", "--log-file=x", "--error-exitcode", "--xml"])
def test_reserved_options_are_refused(option: str) -> None:
    with pytest.raises(ValueError, match="reserved"):
        ComputeSanitizer("cs").wrap(["t"], checker=Checker.MEMCHECK, options=[option])


def test_asan_or_none_is_not_a_compute_sanitizer_tool() -> None:
    with pytest.raises(ValueError):
        ComputeSanitizer("cs").wrap(["t"], checker=Checker.NONE)


def test_parse_version() -> None:
    assert parse_version(VERSION_OUTPUT) == "2025.3.1.0"
    assert parse_version("garbage") is None


def test_locate_on_path_and_under_cuda_home(tmp_path: Path) -> None:
    on_path = fake_tool(tmp_path / "bin", "exit 0\n")
    assert locate({"PATH": str(tmp_path / "bin")}) == on_path
    home = tmp_path / "cuda"
    under_home = fake_tool(home / "bin", "exit 0\n")
    assert locate({"PATH": "", "CUDA_HOME": str(home)}) == under_home


@pytest.mark.process
def test_probe_runs_the_tool(tmp_path: Path) -> None:
    tool = fake_tool(tmp_path, f"cat <<'EOF'\n{VERSION_OUTPUT}EOF\n")
    info = ComputeSanitizer(tool).probe()
    assert (info.name, info.path, info.version) == (NAME, str(tool), "2025.3.1.0")


@pytest.mark.process
def test_probe_of_a_broken_tool_says_why(tmp_path: Path) -> None:
    tool = fake_tool(tmp_path, "echo 'libsanitizer-collection.so: cannot open'; exit 1\n")
    with pytest.raises(CheckerUnavailable, match="cannot open"):
        ComputeSanitizer(tool).probe()


def test_missing_tool_is_unavailable_with_a_hint(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    cs = ComputeSanitizer()
    if cs.path is not None and not str(cs.path).startswith(str(tmp_path)):
        pytest.skip(f"a real compute-sanitizer is installed at {cs.path}")
    with pytest.raises(CheckerUnavailable) as info:
        cs.probe()
    assert "not found" in str(info.value) and "--backend asan" in str(info.value)
    with pytest.raises(CheckerUnavailable):
        cs.wrap(["t"], checker=Checker.MEMCHECK)
    assert os.environ["PATH"] == str(tmp_path)


def test_liveness() -> None:
    cs = ComputeSanitizer("cs")
    assert cs.liveness(ParseResult(complete=True, summary_count=0)).live
    assert not cs.liveness(ParseResult(complete=False)).live
    dead = cs.liveness(
        ParseResult(
            complete=True, tool_errors=("Error: Target application terminated before first ...",)
        )
    )
    assert not dead.live and "Target application" in dead.reason
