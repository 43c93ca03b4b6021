"""cudabugs: every control patch applies, and every program, fixed and with its control,
compiles with nvcc for sm_90 through the subject's own Makefile, by the GPU evidence
script's build step (`tools/cudabugs_evidence.py --build-only`), so that the CUDA-only
programs cannot rot on machines without a GPU (CI). The script's run step needs a GPU:
here it must refuse, not report an empty table. Running the programs on the CPU under
ASan is tests/e2e/test_run_asan.py's job. Cost: 14 small nvcc builds, about 15-50 s on
2 cores."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUBJECT = ROOT / "cudabugs"
SCRIPT = ROOT / "tools" / "cudabugs_evidence.py"
NVCC = shutil.which("nvcc")
GPU = Path("/dev/nvidiactl").exists()


def _script():
    spec = importlib.util.spec_from_file_location("cudabugs_evidence", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["cudabugs_evidence"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


evidence = _script()
PROGRAMS = sorted(p.stem for p in SUBJECT.glob("*.cu"))


def test_every_program_has_a_control_patch_and_a_readme_row() -> None:
    patches = sorted(p.stem for p in (SUBJECT / "controls").glob("*.patch"))
    assert PROGRAMS == patches == sorted(evidence.PROGRAMS)
    readme = (SUBJECT / "README.md").read_text()
    assert all(f"| `{p}` |" in readme for p in PROGRAMS)


@pytest.mark.parametrize("program", PROGRAMS)
def test_each_control_patch_applies_and_changes_only_its_program(
    program: str, tmp_path: Path
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(SUBJECT, tree, ignore=shutil.ignore_patterns(*PROGRAMS))
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    patch = SUBJECT / "controls" / f"{program}.patch"
    done = subprocess.run(
        ["git", "-C", str(tree), "apply", "--numstat", str(patch)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert [line.split("\t")[2] for line in done.stdout.splitlines()] == [f"{program}.cu"]
    subprocess.run(["git", "-C", str(tree), "apply", str(patch)], check=True)
    assert (tree / f"{program}.cu").read_text() != (SUBJECT / f"{program}.cu").read_text()


def test_the_evidence_plan_covers_every_program_and_the_issues_variants() -> None:
    jobs = evidence.plan()
    runs = {(j.program, j.variant, j.tool, " ".join(j.options)) for j in jobs}
    for program in PROGRAMS:
        for variant in ("fixed", "control"):
            assert (program, variant, "none", "") in runs
    assert ("leak", "control", "memcheck", "--leak-check full") in runs
    assert ("oob_write", "control", "memcheck", "--destroy-on-device-error kernel") in runs
    for mode in ("all", "hazard", "analysis"):
        assert ("race", "control", "racecheck", f"--racecheck-report {mode}") in runs
    tools = {(j.program, j.tool) for j in jobs if j.tool != "none"}
    assert {("uninit", "initcheck"), ("syncdiv", "synccheck"), ("api_error", "memcheck")} <= tools
    assert len({j.name for j in jobs}) == len(jobs)  # one log name per run


def test_the_evidence_summaries_are_the_tools_own_lines() -> None:
    text = (
        "========= Invalid __global__ write of size 4 bytes\n"
        "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n"
        "========= LEAK SUMMARY: 4096 bytes leaked in 1 allocations\n"
        "========= ERROR SUMMARY: 1,024 errors\n"
    )
    errors, others = evidence._summaries(text)
    assert errors == "1024"
    assert others == (
        "RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings) | "
        "LEAK SUMMARY: 4096 bytes leaked in 1 allocations"
    )
    assert evidence._summaries("the tool crashed\n") == ("missing", "")


@pytest.mark.slow
@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed on this machine")
def test_every_program_and_control_compiles_with_nvcc(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path), "--build-only", "--jobs", "2"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    logs = "".join(p.read_text() for p in sorted((tmp_path / "build").glob("*.log")))
    assert done.returncode == 0, done.stderr + logs[-4000:]
    for program in PROGRAMS:
        assert (tmp_path / "trees" / "fixed" / program).is_file()
        assert (tmp_path / "trees" / program / program).is_file()
    assert "-arch=sm_90 -lineinfo" in logs  # the Makefile's nvcc line, for every build
    assert not (tmp_path / "evidence.tsv").exists()


@pytest.mark.skipif(GPU, reason="this host has a GPU: the script would run for real")
def test_the_evidence_script_refuses_to_run_without_a_gpu(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path), "--sanitizer", sys.executable],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "no GPU visible" in done.stderr
    assert not (tmp_path / "trees").exists()  # refused before building anything
