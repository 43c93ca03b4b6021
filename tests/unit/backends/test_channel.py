"""channel: the checker's per-process logs read back, on real captured logs laid out as a
launch leaves them (ASan's `PREFIX.<pid>` and start records, compute-sanitizer's
`PREFIX.<pid>.log`), and the argv that makes compute-sanitizer write them."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from orchestrator.backends import Asan, channel
from orchestrator.backends.asan import log as asan_log
from orchestrator.backends.compute_sanitizer import log as cs_log
from orchestrator.backends.compute_sanitizer.backend import ComputeSanitizer
from orchestrator.errors import CheckerUnavailable
from orchestrator.model import Checker

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ASAN = FIXTURES / "asan"
H200 = FIXTURES / "compute-sanitizer" / "h200"


def _own(src: Path, dst: Path) -> None:
    """A captured stream as the tool's own file: without the plugin's marker lines."""
    lines = src.read_text(errors="replace").splitlines(keepends=True)
    dst.write_text("".join(ln for ln in lines if not ln.startswith("[csorch-")))


def test_asan_processes_are_read_one_file_each(tmp_path: Path) -> None:
    prefix = tmp_path / "r0.launch0.checker"
    shutil.copy(ASAN / "freopen.log", f"{prefix}.23028")  # its pid, as the runtime names it
    shutil.copy(ASAN / "clean.log", f"{prefix}.4001")
    Path(f"{prefix}.started.23028").touch()
    Path(f"{prefix}.started.4001").touch()
    got = channel.read_asan(prefix, asan_log.parse)
    assert got.conclusive, got.reason
    assert [f.kind for f in got.findings] == ["heap-buffer-overflow"]
    assert got.summary_count == 1


def test_a_started_process_without_its_exit_record_is_inconclusive(tmp_path: Path) -> None:
    prefix = tmp_path / "r0.launch0.checker"
    shutil.copy(ASAN / "clean.log", f"{prefix}.4001")
    Path(f"{prefix}.started.4001").touch()
    Path(f"{prefix}.started.4002").touch()  # started, then killed before it wrote anything
    got = channel.read_asan(prefix, asan_log.parse)
    assert not got.conclusive and "process 4002" in got.reason


def test_a_truncated_process_log_is_inconclusive_and_named(tmp_path: Path) -> None:
    prefix = tmp_path / "r0.launch0.checker"
    shutil.copy(ASAN / "truncated.log", f"{prefix}.6823")  # its reports' pid
    Path(f"{prefix}.started.6823").touch()
    got = channel.read_asan(prefix, asan_log.parse)
    assert not got.conclusive and "process 6823 left no exit record" in got.reason


def test_a_forked_child_needs_whole_reports_not_an_exit_record(tmp_path: Path) -> None:
    # no start record: a fork that never exec'd (it may `_exit`); its report is whole
    prefix = tmp_path / "r0.launch0.checker"
    text = (ASAN / "freopen.log").read_text()
    Path(f"{prefix}.23028").write_text(text.split("AddressSanitizer exit stats:")[0])
    got = channel.read_asan(prefix, asan_log.parse)
    assert got.conclusive, got.reason
    assert len(got.findings) == 1


def test_a_report_of_another_pid_in_a_process_file_is_not_trusted(tmp_path: Path) -> None:
    prefix = tmp_path / "r0.launch0.checker"
    shutil.copy(ASAN / "freopen.log", f"{prefix}.777")  # its reports say ==23028==
    Path(f"{prefix}.started.777").touch()
    got = channel.read_asan(prefix, asan_log.parse)
    assert not got.conclusive and "23028" in got.reason


def test_no_asan_file_at_all_is_a_checker_error(tmp_path: Path) -> None:
    got = channel.read_asan(tmp_path / "r0.launch0.checker", asan_log.parse)
    assert not got.conclusive and "no AddressSanitizer log" in got.reason


def test_the_check_failure_line_is_the_reason(tmp_path: Path) -> None:
    prefix = tmp_path / "r0.launch0.checker"
    shutil.copy(ASAN / "throw-nocxx.log", f"{prefix}.23044")
    Path(f"{prefix}.started.23044").touch()
    got = channel.read_asan(prefix, asan_log.parse)
    assert "CHECK failed: asan_interceptors.cpp:320" in got.reason


def parse_memcheck(lines):
    return cs_log.parse(lines, checker=Checker.MEMCHECK)


def test_compute_sanitizer_files_are_read_per_process(tmp_path: Path) -> None:
    # two real H200 runs as two processes' files of one launch
    prefix = tmp_path / "r0.launch0.checker"
    _own(H200 / "rng-owner-scope-memcheck-rng-64x96.log", Path(f"{prefix}.5101.log"))
    _own(H200 / "fixed-memcheck-rng-64x96.log", Path(f"{prefix}.5102.log"))
    got = channel.read_cs(prefix, parse_memcheck)
    assert got.conclusive, got.reason
    assert got.summary_count == 4608 and got.records + got.not_printed == 4608
    assert {f.case for f in got.findings} == {""}  # no markers in the tool's own file


def test_a_compute_sanitizer_file_without_its_summary_is_inconclusive(tmp_path: Path) -> None:
    prefix = tmp_path / "r0.launch0.checker"
    _own(H200 / "fixed-memcheck-rng-64x96.log", Path(f"{prefix}.5102.log"))
    cut = (H200 / "rng-owner-scope-memcheck-rng-64x96.log").read_text().split("ERROR SUMMARY")[0]
    Path(f"{prefix}.5101.log").write_text(cut)
    got = channel.read_cs(prefix, parse_memcheck)
    assert not got.conclusive
    assert not channel.read_cs(tmp_path / "other", parse_memcheck).conclusive


def test_compute_sanitizer_is_given_a_per_process_log_file(tmp_path: Path) -> None:
    prefix = tmp_path / "r0.launch0.checker"
    tool = ComputeSanitizer("/opt/cuda/bin/compute-sanitizer")
    w = tool.wrap(["python", "-m", "pytest"], checker=Checker.MEMCHECK,
                  log_path=channel.cs_pattern(prefix))  # fmt: skip
    at = w.argv.index("--log-file")
    assert w.argv[at + 1] == f"{prefix}.%p.log"
    assert w.argv[-3:] == ("python", "-m", "pytest")


def test_compute_sanitizer_findings_are_attributed_by_their_python_frames(tmp_path: Path):
    stream = H200 / "rng-owner-scope-memcheck-rng-64x96.log"
    prefix = tmp_path / "r0.launch0.checker"
    _own(stream, Path(f"{prefix}.5101.log"))
    nodes = [
        ln.split(" ", 1)[1].strip()
        for ln in stream.read_text().splitlines()
        if ln.startswith("[csorch-case-begin]")
    ]
    got = channel.attribute(channel.read_cs(prefix, parse_memcheck), nodes)
    # what the stream's markers attributed them to, from the tool's own frames
    with open(stream) as lines:
        expected = [f.case for f in parse_memcheck(lines).findings]
    assert [f.case for f in got.findings] == expected and set(expected) != {""}
    # a function run twice in one process (two parameters) names no single case
    twice = [*nodes, nodes[0].replace("[cuda-64x96]", "[cuda-8x8]")]
    again = channel.attribute(channel.read_cs(prefix, parse_memcheck), twice)
    first = nodes[0].split("::")[-1].split("[")[0]
    assert all(f.case == "" for f in again.findings if first in (h.function for h in f.host_frames))


def _asan_with_shim(tmp_path: Path) -> Asan:
    """The ASan backend with its fold shim built under `tmp_path` (a skip, saying why,
    where this host has no sh, gcc or ASan runtime)."""
    if shutil.which("sh") is None or shutil.which("gcc") is None:
        pytest.skip("needs sh and gcc")
    asan = Asan()
    try:
        asan.probe()
    except CheckerUnavailable as exc:
        pytest.skip(str(exc))
    asan.build_fold(tmp_path / "fold")
    return asan


@pytest.mark.process
def test_a_shell_that_ends_with__exit_leaves_the_shims_end_record(tmp_path: Path) -> None:
    """dash ends with _exit (no exit handlers, so no exit stats): the fold shim's _exit
    writes the process's end record; without it every `sh -c` case was inconclusive."""
    asan = _asan_with_shim(tmp_path)
    prefix = tmp_path / "r0.launch0.checker"
    wrapped = asan.wrap(["sh", "-c", "true; true"], checker=Checker.MEMCHECK, log_path=prefix)
    subprocess.run(wrapped.argv, env={**os.environ, **dict(wrapped.env)}, check=True)
    got = channel.read_asan(prefix, asan_log.parse)
    assert got.conclusive, got.reason
    assert any("csorch-asan-exit: _exit(0)" in p.read_text() for p in tmp_path.iterdir()
               if p.is_file())  # fmt: skip


@pytest.mark.process
@pytest.mark.parametrize(
    ("child", "conclusive"),
    [
        ("sh -c true", True),
        ("env -u ASAN_OPTIONS sh -c true", True),  # the shim's defaults are csorch's
        ('ASAN_OPTIONS="$ASAN_OPTIONS:poison_heap=0" sh -c true', False),
        ('CSORCH_ASAN_OPTIONS="$ASAN_OPTIONS:poison_heap=0" env -u ASAN_OPTIONS sh -c true', False),
    ],
)
def test_a_process_started_with_options_of_its_own_is_named(
    tmp_path: Path, child: str, conclusive: bool
) -> None:
    """Each process's start record holds the options it started with: one started with
    weaker ones than csorch set (poison_heap=0: heap overflows unseen) makes the launch
    inconclusive, naming it; one that only lost ASAN_OPTIONS runs on the shim's defaults,
    which are csorch's."""
    asan = _asan_with_shim(tmp_path)
    prefix = tmp_path / "r0.launch0.checker"
    wrapped = asan.wrap(["sh", "-c", child], checker=Checker.MEMCHECK, log_path=prefix)
    env = dict(wrapped.env)
    subprocess.run(wrapped.argv, env={**os.environ, **env}, check=True)
    got = channel.read_asan(prefix, asan_log.parse, env["ASAN_OPTIONS"])
    assert got.conclusive is conclusive, got.reason
    if not conclusive:
        assert "checker options of its own" in got.reason and "poison_heap=0" in got.reason
    # without the options to hold them to (an older bundle's reader), nothing is named
    assert channel.read_asan(prefix, asan_log.parse).conclusive


def test_a_start_record_that_is_not_the_shims_is_named(tmp_path: Path) -> None:
    prefix = tmp_path / "r0.launch0.checker"
    shutil.copy(ASAN / "clean.log", f"{prefix}.4001")
    Path(f"{prefix}.started.4001").write_text("ASAN_OPTIONS=x\nsomething else\n")
    got = channel.read_asan(prefix, asan_log.parse, "x")
    assert not got.conclusive and "not the shim's" in got.reason
    Path(f"{prefix}.started.4001").write_text("ASAN_OPTIONS=x\n-CSORCH_ASAN_OPTIONS\n")
    assert channel.read_asan(prefix, asan_log.parse, "x").conclusive


def test_a_real_h200_log_file_names_its_case_by_the_plugins_frame(tmp_path: Path) -> None:
    here = FIXTURES / "compute-sanitizer" / "h200-channels"
    prefix = tmp_path / "r0.launch0.checker"
    shutil.copy(here / "rng-unfused-memcheck.checker.log", f"{prefix}.3535.log")
    markers = (here / "rng-unfused-memcheck.markers").read_text().splitlines()
    nodes = [ln.split(" ", 1)[1] for ln in markers if ln.startswith("[csorch-case-begin]")]
    assert len(nodes) == 9  # test_deterministic_replay is parametrized three times
    got = channel.attribute(channel.read_cs(prefix, parse_memcheck), nodes)
    assert got.conclusive and got.summary_count == 27648
    assert {f.case for f in got.findings} == {
        "tests/regression/test_rng_ownership.py::test_deterministic_replay[cuda-64x96]"
    }
    assert all(f.host_frames[-1].function == "csorch_case_0" for f in got.findings)
