"""asan_fold: the fold lines on real captured logs (tests/fixtures/asan), how a count finds
its printed report, and the shim itself in real instrumented processes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from orchestrator import proc
from orchestrator.backends.asan import backend as asan
from orchestrator.backends.asan import shim as asan_fold
from orchestrator.backends.asan.backend import Asan
from orchestrator.backends.asan.log import parse
from orchestrator.errors import CheckerUnavailable
from orchestrator.model import Checker, Finding

pytestmark = pytest.mark.process  # builds, runs a checker, git or a child process

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "asan"
SRC = FIXTURES / "src"
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


def parsed(name: str):
    with open(FIXTURES / name, encoding="utf-8", errors="replace") as lines:
        return parse(lines)


def reports(findings) -> dict[str, int]:
    """Bad accesses per case (the last part of its node id): printed plus folded."""
    out: dict[str, int] = {}
    for f in findings:
        case = f.case.rsplit("::", 1)[-1]
        out[case] = out.get(case, 0) + f.count
    return out


def test_the_fold_line_grammar() -> None:
    line = "==4540==csorch-asan-fold: 4999 more READ of size 8 at pc 0x7f31344a21be shadow fd"
    assert asan_fold.fold(line, "c") == asan_fold.Fold(
        4540, "c", "read", 8, "7f31344a21be", "fd", 4999
    )
    opened = line.replace("4999 more", "folding")
    assert asan_fold.fold(opened, "c") == asan_fold.Fold(
        4540, "c", "read", 8, "7f31344a21be", "fd", 0
    )
    for odd in (
        line.replace("4999", "0"),  # the shim never writes a zero count
        line.replace("READ", "FETCH"),
        line.replace(" shadow fd", ""),
        line + " extra",
    ):
        assert asan_fold.fold(odd, "c") is None
        assert asan_fold.FOLD_ANY_RE.match(odd)


def test_a_program_s_flood_is_one_report_and_a_count() -> None:
    """src/flood.c as a program, 1000 bad reads at one pc (flood-folded.log)."""
    result = parsed("flood-folded.log")
    (finding,) = result.findings
    assert (finding.kind, finding.access, finding.size) == ("heap-use-after-free", "read", 8)
    assert finding.frames[0].function == "planted_flood" and finding.count == 1000
    assert result.conclusive and result.summary_count == result.records == 1000
    assert result.summary_lines == (
        "1000 AddressSanitizer report(s): 1 printed, 999 folded "
        "(repeats of a printed one in its case)",
    )


def test_counts_belong_to_the_case_between_the_markers() -> None:
    """case_flood.py under pytest, 200 bad reads in each of two cases and none in the one
    between them (pytest-flood.log): each case keeps its own report and its own count."""
    result = parsed("pytest-flood.log")
    assert result.conclusive and result.summary_count == 400
    assert reports(result.findings) == {"test_flood_first": 200, "test_flood_again": 200}


def test_a_print_limit_prints_that_many_and_counts_the_rest() -> None:
    """CSORCH_ASAN_PRINT_LIMIT=3 (flood-limit3.log): three printed, the count on the last."""
    result = parsed("flood-limit3.log")
    assert [f.count for f in result.findings] == [1, 1, 998]
    assert result.conclusive and result.summary_count == 1000


def test_a_count_without_its_printed_report_is_inconclusive() -> None:
    """fold-unmatched.log: flood-folded.log with the count line's pc changed."""
    result = parsed("fold-unmatched.log")
    assert result.findings[0].count == 1 and not result.conclusive
    assert "parse incomplete" in result.reason and "pc 0x123456" in result.reason
    # and the key its first repeat opened was never counted
    assert "began folding and its count never came" in result.count_mismatch
    # the total still says how many reports there were; it just cannot be attributed
    assert result.summary_count == 1000


def test_a_key_opened_and_never_counted_is_inconclusive() -> None:
    """A count that never came (the case's end flush did not run, the process ended
    without exit handlers) is no zero: the line its first repeat wrote says it existed."""
    lines = (FIXTURES / "flood-folded.log").read_text().splitlines()
    result = parse([line for line in lines if " more READ" not in line])
    assert result.complete and not result.conclusive and result.findings[0].count == 1
    assert "began folding and its count never came" in result.reason


def test_forks_neither_lose_nor_double_a_count() -> None:
    """fork-child-exit.log: a forked child folds nothing (it may end with _exit, as
    multiprocessing's workers do), so its 8 reads are 8 printed reports.
    fork-after.log: a child forked after the parent folded writes no copy of the count."""
    child = parsed("fork-child-exit.log")
    assert child.conclusive and len(child.findings) == 8 and child.summary_count == 8
    after = parsed("fork-after.log")
    assert after.conclusive and [f.count for f in after.findings] == [1000]
    assert after.summary_count == 1000


def test_a_damaged_fold_line_is_inconclusive() -> None:
    lines = (FIXTURES / "flood-folded.log").read_text().splitlines()
    damaged = [
        line.replace(" READ of", " RAED of") if "csorch-asan-fold" in line else line
        for line in lines
    ]
    result = parse(damaged)
    assert result.complete and not result.conclusive
    assert "unreadable fold line" in result.reason


KEY = asan_fold.Key(7, "t", "55d0", "read", 8, "fd")


@pytest.mark.parametrize(
    ("fold", "matches"),
    [
        (asan_fold.Fold(7, "t", "read", 8, "55d0", "fd", 3), True),
        (asan_fold.Fold(8, "t", "read", 8, "55d0", "fd", 3), False),  # another process
        (asan_fold.Fold(7, "u", "read", 8, "55d0", "fd", 3), False),  # another case
        (asan_fold.Fold(7, "t", "write", 8, "55d0", "fd", 3), False),
        (asan_fold.Fold(7, "t", "read", 4, "55d0", "fd", 3), False),
        (asan_fold.Fold(7, "t", "read", 8, "55d1", "fd", 3), False),
        # same instruction, other shadow: an overflow is not a use-after-free
        (asan_fold.Fold(7, "t", "read", 8, "55d0", "fa", 3), False),
    ],
)
def test_a_fold_needs_its_key_printed(fold: asan_fold.Fold, matches: bool) -> None:
    finding = Finding(Checker.ASAN, "heap-use-after-free")
    (out,), unmatched = asan_fold.attach([finding], [KEY], [fold])
    assert (out.count == 4, not unmatched) == (matches, matches)


def test_the_header_pc_is_the_fold_key() -> None:
    header = (
        "==4540==ERROR: AddressSanitizer: heap-use-after-free on address 0x6030 "
        "at pc 0x00007f31344A21be bp 0x7ffc sp 0x7ffc"
    )
    assert asan_fold.header_pc(header) == "7f31344a21be"
    assert asan_fold.header_pc("==1==ERROR: AddressSanitizer: SEGV on unknown address") == ""


def test_wrap_puts_the_shim_ahead_of_the_runtime() -> None:
    w = Asan("/lib/libasan.so.8", fold="/c/libcsorch_asan_fold.so").wrap(
        ["t"], checker=Checker.MEMCHECK, env={"LD_PRELOAD": "/lib/other.so"}, plain=True
    )
    env = dict(w.env)
    assert env["LD_PRELOAD"] == "/c/libcsorch_asan_fold.so /lib/libasan.so.8 /lib/other.so"
    # the shim does the per-pc folding, counted: ASan's own suppression stays off
    options = env["ASAN_OPTIONS"].split(":")
    assert "suppress_equal_pcs=0" in options and "suppress_equal_pcs=1" not in options
    assert options[-2:] == ["atexit=1", "verify_asan_link_order=0"]
    assert (
        "verify_asan_link_order"
        not in dict(Asan("/lib/libasan.so.8").wrap(["t"], checker=Checker.MEMCHECK).env)[
            "ASAN_OPTIONS"
        ]
    )


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    return asan_fold.build("gcc", tmp_path_factory.mktemp("fold"))


@pytest.fixture(scope="module")
def flood(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    exe = tmp_path_factory.mktemp("flood") / "flood"
    sources = [str(SRC / "flood.c"), str(SRC / "flood_main.c")]
    subprocess.run(["gcc", *asan.COMPILE_FLAGS, *sources, "-o", str(exe)], check=True)
    return exe


def run(tmp_path: Path, backend: Asan, argv: list[str], env=None, *, plain=False):
    wrapped = backend.wrap(argv, checker=Checker.MEMCHECK, env=env, plain=plain)
    log = tmp_path / f"{len(list(tmp_path.iterdir()))}.log"
    ran = proc.run(
        wrapped.argv, log_path=log, env={**(env or {}), **dict(wrapped.env)}, timeout=120
    )
    with open(log, errors="replace") as lines:
        return ran, parse(lines), log


def test_the_shim_is_built_once_per_content(shim: Path) -> None:
    before = shim.stat().st_mtime_ns
    again = asan_fold.build("gcc", shim.parents[1])
    assert again == shim and shim.stat().st_mtime_ns == before  # found, not rebuilt
    assert shim.name == asan_fold.LIBRARY and shim.read_bytes()[:4] == b"\x7fELF"


def test_the_shim_path_is_absolute_and_a_missing_compiler_is_unavailable(
    tmp_path: Path, shim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # LD_PRELOAD is read in the child, which starts in another directory
    monkeypatch.chdir(shim.parents[1])
    assert asan_fold.build("gcc", Path(".")) == shim
    with pytest.raises(CheckerUnavailable, match="csorch-no-such-cc"):
        asan_fold.build("csorch-no-such-cc", tmp_path)


@needs_gcc
def test_a_folded_report_is_the_one_asan_prints_alone(
    tmp_path: Path, shim: Path, flood: Path
) -> None:
    """The hand-over is a tail call: the printed report names the instrumented function,
    not the shim, and reads as it does without the shim; the other 2999 are counted."""
    runtime = asan.find_runtime("gcc")
    _, alone, _ = run(tmp_path, Asan(runtime), [str(flood), "1"])
    ran, folded, log = run(tmp_path, Asan(runtime, fold=shim), [str(flood), "3000"])
    assert ran.returncode == 0 and folded.conclusive
    (first,) = alone.findings
    (kept,) = folded.findings
    same = lambda f: (f.kind, f.access, f.size, [x.function for x in f.frames])  # noqa: E731
    assert same(kept) == same(first) and kept.frames[0].function == "planted_flood"
    assert kept.count == 3000 and folded.summary_count == 3000
    assert log.stat().st_size < 20_000  # one report, not 3000 of ~4 KB


@needs_gcc
def test_print_limit_zero_folds_nothing(tmp_path: Path, shim: Path, flood: Path) -> None:
    env = {asan_fold.PRINT_LIMIT_VAR: "0"}
    _, result, _ = run(tmp_path, Asan(asan.find_runtime("gcc"), fold=shim), [str(flood), "5"], env)
    assert len(result.findings) == 5 and result.not_printed == 0 and result.conclusive


@needs_gcc
def test_more_than_25_faulting_pcs_end_a_plain_run_only_without_the_shim(
    tmp_path: Path, shim: Path
) -> None:
    """ASan's suppress_equal_pcs (a plain run's fallback) ends the process at the 26th
    distinct pc; with the shim the program runs to its end, each pc printed once."""
    exe = tmp_path / "pcs"
    subprocess.run(["gcc", *asan.COMPILE_FLAGS, str(SRC / "pcs.c"), "-o", str(exe)], check=True)
    runtime = asan.find_runtime("gcc")
    ran, result, _ = run(tmp_path, Asan(runtime), [str(exe)], plain=True)
    assert ran.returncode != 0 and not result.complete and len(result.findings) == 25
    ran, result, log = run(tmp_path, Asan(runtime, fold=shim), [str(exe)], plain=True)
    assert ran.returncode == 0 and result.conclusive and len(result.findings) > 25
    assert "done " in log.read_text()  # the program printed its last line

