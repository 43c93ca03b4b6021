"""`csorch run` end to end on the CPU with the ASan backend, as a user runs it.

- qext, configs/nvfp4-rng-ownership.yaml: three real builds (patched and rebuilt by the
  JIT description, installed from a wheel), the use-after-free signature in both
  controls and none in the patch, verdict causal (exit 0); a second run rebuilds
  nothing (read from the bundle, not from timing).
- a subject that is not qext: a C program with a planted out-of-bounds read and its fix
  as a patch, a `command` build (make) and a `command` case.
The builds dominate (about 2 x 2.5 min of ASan JIT builds and a wheel, on 2 cores).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _torch_has_cuda() -> bool:
    import torch

    return torch.version.cuda is not None

FIXTURES = ROOT / "tests" / "fixtures" / "e2e"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("gcc") is None, reason="the ASan backend needs gcc"),
]


# The ASan stand-in for qext is the CPU machines' path. On a CUDA build of torch the
# instrumented builds would also compile and load the CUDA kernels under the ASan
# runtime, a combination not yet run on the GPU machine; there `--backend auto` picks
# compute-sanitizer anyway.
cpu_torch_only = pytest.mark.skipif(
    importlib.util.find_spec("torch") is not None and _torch_has_cuda(),
    reason="the qext ASan experiment runs where torch is a CPU build (CI); this torch has CUDA",
)


def csorch(*args: str, cwd: Path, timeout: float = 1200) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", *args, "--backend", "asan"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )


def load(out: Path) -> tuple[dict, dict]:
    return (
        json.loads((out / "results.json").read_text()),
        json.loads((out / "manifest.json").read_text()),
    )


@pytest.fixture(scope="module")
def rng(tmp_path_factory: pytest.TempPathFactory):
    """The RNG experiment, run twice against one (initially empty) build cache."""
    tmp = tmp_path_factory.mktemp("rng")
    config = str(ROOT / "configs" / "nvfp4-rng-ownership.yaml")
    common = ("--cache-dir", str(tmp / "cache"), "--jobs", "2")
    first = csorch(config, "--out", str(tmp / "first"), *common, cwd=tmp)
    second = csorch(config, "--out", str(tmp / "second"), *common, cwd=tmp)
    for name, done in (("first", first), ("second", second)):  # what the user saw
        (tmp / f"{name}.txt").write_text(done.stdout + done.stderr)
    return tmp, first, second


def findings(results: dict, variant: str, run: str, case: str) -> list[dict]:
    return [
        f
        for a in results["attempts"]
        if (a["variant"], a["run"], a["case"]) == (variant, run, case)
        for f in a["parse"]["findings"]
    ]


@cpu_torch_only
def test_rng_ownership_is_causal_under_asan(rng) -> None:
    tmp, first, _ = rng
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-4000:]
    assert "verdict: PASS (causal)" in first.stdout
    results, manifest = load(tmp / "first")
    assert results["complete"] and results["verdict"] == "pass"
    builds = {b["variant"]: b for b in results["builds"]}
    assert {v: (b["kind"], b["ok"], b["cached"]) for v, b in builds.items()} == {
        "patched": ("jit", True, False),
        "rebuilt": ("jit", True, False),
        "installed": ("wheel", True, False),
    }
    # both controls: the freed RNG state read in every unfused case; ASan halts each
    # case at its first report (halt_on_error=1; recover mode printed 8 a case)
    for control in ("rebuilt", "installed"):
        uaf = findings(results, control, "memcheck", "rng-unfused")
        assert uaf and {(f["kind"], f["access"], f["size"]) for f in uaf} == {
            ("heap-use-after-free", "read", 8)
        }
        per_case: dict[str, int] = {}
        for f in uaf:
            per_case[f["case"]] = per_case.get(f["case"], 0) + 1
        assert len(per_case) == 9 and set(per_case.values()) == {1}, per_case
        assert findings(results, control, "memcheck", "rng-fused") == []
    assert findings(results, "patched", "memcheck", "rng-unfused") == []
    assert findings(results, "patched", "memcheck", "rng-fused") == []
    # evidence: the same patched source for both controls, hashes of every binary
    sources = {s["variant"]: s for s in manifest["sources"]}
    assert sources["rebuilt"]["digest"] == sources["installed"]["digest"]
    assert sources["rebuilt"]["digest"] != sources["patched"]["digest"]
    assert sources["rebuilt"]["patches"][0]["path"].endswith("rng-owner-scope.patch")
    binaries = {b["variant"]: [x["path"] for x in b["binaries"]] for b in manifest["builds"]}
    assert binaries["patched"] == ["pkg/qext/_C.so"]
    assert any(p.endswith(".whl") for p in binaries["installed"])
    assert all(len(x["sha256"]) == 64 for b in manifest["builds"] for x in b["binaries"])
    launch = manifest["attempts"][0]["launches"][0]
    assert launch["argv"][1:4] == [
        "-m",
        "pytest",
        str(ROOT / "tests/regression/test_rng_ownership.py"),
    ]
    assert "PYTHONPATH" in launch["env"] and set(manifest["logs"]) >= {launch["log"]}


@cpu_torch_only
def test_a_second_run_rebuilds_nothing(rng) -> None:
    tmp, first, second = rng
    assert second.returncode == 0, second.stdout[-4000:] + second.stderr[-4000:]
    before, _ = load(tmp / "first")
    after, manifest = load(tmp / "second")
    assert all(b["cached"] for b in after["builds"]) and len(after["builds"]) == 3
    assert all(b["cached"] for b in manifest["builds"])
    keys = lambda r: {b["variant"]: b["cache_key"] for b in r["builds"]}  # noqa: E731
    assert keys(after) == keys(before)
    assert after["verdict"] == "pass"


def test_a_c_program_under_asan(tmp_path: Path) -> None:
    done = csorch(
        str(FIXTURES / "c-oob.yaml"),
        "--out",
        str(tmp_path / "out"),
        "--cache-dir",
        str(tmp_path / "cache"),
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    results, manifest = load(tmp_path / "out")
    control = findings(results, "control", "memcheck", "sum")
    assert [(f["kind"], f["access"], f["size"], f["case"]) for f in control] == [
        ("heap-buffer-overflow", "read", 4, "sum")
    ]
    assert findings(results, "fixed", "memcheck", "sum") == []
    assert results["verdict"] == "pass"
    assert {b["kind"] for b in results["builds"]} == {"command"}
    assert all(b["binaries"][0]["path"] == "tree/pick" for b in manifest["builds"])
