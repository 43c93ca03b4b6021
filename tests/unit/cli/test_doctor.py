"""doctor: on this CPU machine it finds no GPU, names the ASan runtime and picks asan;
without any checker it exits 3 with a hint. host.nvcc_release reads nvcc's version."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator import cli, host
from orchestrator.backends.asan import backend as asan
from orchestrator.errors import CheckerUnavailable

pytestmark = pytest.mark.process  # builds, runs a checker, git or a child process

ROOT = Path(__file__).resolve().parents[3]
runner = CliRunner()

# `nvcc --version` as captured on the CPU CI machine (CUDA 13.0 toolkit)
NVCC_VERSION = """\
nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Aug_20_01:58:59_PM_PDT_2025
Cuda compilation tools, release 13.0, V13.0.88
Build cuda_13.0.r13.0/compiler.36424714_0
"""


def _line(output: str, label: str) -> str:
    return next(line for line in output.splitlines() if line.startswith(label + " "))


@pytest.mark.skipif(
    shutil.which("nvidia-smi") is not None,
    reason="checks what doctor says on a machine without a GPU; this one has nvidia-smi",
)
def test_doctor_on_a_cpu_machine() -> None:
    try:
        runtime = asan.find_runtime()
    except CheckerUnavailable:
        pytest.skip("no ASan runtime on this machine")
    result = runner.invoke(cli.app, ["doctor"])
    assert result.exit_code == cli.ExitCode.PASS, result.output
    assert "no GPU visible" in _line(result.output, "GPUs")
    assert str(runtime) in _line(result.output, "ASan runtime")
    auto = _line(result.output, "backend auto")
    assert "asan: no GPU is visible" in auto and str(runtime) in auto
    assert "memcheck (through ASan)" in _line(result.output, "checkers")
    assert sys.executable in _line(result.output, "python")
    if shutil.which("compute-sanitizer") is None:
        assert "missing" in _line(result.output, "compute-sanitizer")


def test_doctor_json_is_one_object_a_ci_step_reads() -> None:
    import json

    try:
        runtime = asan.find_runtime()
    except CheckerUnavailable:
        pytest.skip("no ASan runtime on this machine")
    result = runner.invoke(cli.app, ["doctor", "--json"], env={"COLUMNS": "40"})
    assert result.exit_code == cli.ExitCode.PASS, result.output
    said = json.loads(result.stdout)  # whole, unwrapped at 40 columns
    assert said["backend"]["auto"] == "asan" and said["problem"] is None
    assert said["checkers"]["asan"]["path"] == str(runtime)
    assert said["host"]["python"].endswith(f"({sys.executable})")
    assert said["sandbox"]["sandboxed"] is said["host"]["sandbox"].startswith("unshare")


def test_doctor_without_any_checker_exits_3(tmp_path: Path) -> None:
    if Path("/usr/local/cuda/bin/compute-sanitizer").exists():
        pytest.skip("compute-sanitizer is found outside PATH here")
    # an empty PATH: neither gcc (the ASan runtime) nor compute-sanitizer can be found
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH")}
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "doctor"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "PATH": str(tmp_path), "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )
    assert done.returncode == cli.ExitCode.INCONCLUSIVE, done.stdout + done.stderr
    assert "ASan is unavailable too" in _line(done.stdout, "backend auto")
    assert "hint:" in done.stderr and "ASan runtime" in done.stderr


def test_nvcc_release() -> None:
    assert host.nvcc_release(NVCC_VERSION.splitlines()) == "13.0.88"
    assert host.nvcc_release(["Build cuda_13.0.r13.0/compiler.36424714_0"]) == ""
    assert host.nvcc_release([]) == ""


def _doctor(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """`csorch doctor` in a child, with the (fake) host's PATH and PYTHONPATH."""
    pythonpath = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "doctor"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": pythonpath, "COLUMNS": "300", **env},
    )


def test_doctor_says_how_a_run_learns_the_host(tmp_path: Path, fake_host) -> None:
    two = [("NVIDIA H200", "9.0", f"GPU-{i}") for i in range(2)]
    fake_host.torch("__version__ = '2.13.0+cu130'\ncuda = '13.0'\n", two)
    fake_host.smi(["580.95.05, NVIDIA H200, 9.0"] * 2)
    fast = _doctor(tmp_path)
    assert "builds start on torch/version.py and nvidia-smi" in _line(fast.stdout, "host probe")
    assert "NVIDIA H200 (sm 9.0), NVIDIA H200 (sm 9.0)" in _line(fast.stdout, "GPUs")
    assert "580.95.05" in _line(fast.stdout, "driver")
    hidden = _doctor(tmp_path, CUDA_VISIBLE_DEVICES="1")
    said = _line(hidden.stdout, "host probe")
    assert "waits for `import torch` before building: CUDA_VISIBLE_DEVICES is set" in said


def test_doctor_reports_facts_that_disagree_and_exits_3(tmp_path: Path, fake_host) -> None:
    one = [("NVIDIA H200", "9.0", "GPU-0")]
    fake_host.torch("__version__ = '2.13.0+cu130'\ncuda = '13.0'\n", one)
    fake_host.smi(["580.95.05, NVIDIA H200, 9.0"] * 2)
    done = _doctor(tmp_path)
    assert done.returncode == cli.ExitCode.INCONCLUSIVE, done.stdout + done.stderr
    said = _line(done.stdout, "host probe")
    assert "disagrees" in said and "the GPU count is 2 by torch/version.py and nvidia-smi" in said
    assert _line(done.stdout, "GPUs").split(maxsplit=1)[1] == "NVIDIA H200 (sm 9.0)"
    assert "hint:" in done.stderr and "CUDA_DEVICE_ORDER=FASTEST_FIRST" in done.stderr
