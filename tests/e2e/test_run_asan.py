"""`csorch run` end to end on the CPU with the ASan backend, as a user runs it.

- qext, configs/nvfp4-rng-ownership.yaml: three real builds (patched and rebuilt by the
  JIT description, installed from a wheel), the use-after-free signature in both
  controls and none in the patch, verdict causal (exit 0); a second run rebuilds
  nothing (read from the bundle, not from timing).
- a subject that is not qext: a C program with a planted out-of-bounds read and its fix
  as a patch, a `command` build (make) and a `command` case; and one whose use-after-free
  inside a loop floods ASan (3000 reports, one printed, the rest counted).
- cudabugs, the CUDA programs' subject: the two with a host build (the out-of-bounds
  write, and the leak under `--leak-check full`) through `csorch gate`, causal (exit 0);
  with the out-of-bounds fix removed, the gate is red (exit 1). About 15 s in all.
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

from tests import essence

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
    # the second run only needs to show that nothing is built again: the target's case
    second = csorch(config, "--out", str(tmp / "second"), "--case", "rng-unfused", *common, cwd=tmp)
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


def reports(found: list[dict]) -> int:
    """Bad accesses: each printed report and the repeats the fold shim counted for it
    (`Finding.count`)."""
    return sum(f["count"] for f in found)


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
    # both controls: the freed RNG state read in every unfused case, 8 reads each (the
    # first of each instruction printed, its repeats in the case counted)
    for control in ("rebuilt", "installed"):
        uaf = findings(results, control, "memcheck", "rng-unfused")
        assert uaf and {(f["kind"], f["access"], f["size"]) for f in uaf} == {
            ("heap-use-after-free", "read", 8)
        }
        per_case: dict[str, int] = {}
        for f in uaf:
            per_case[f["case"]] = per_case.get(f["case"], 0) + f["count"]
        assert len(per_case) == 9 and set(per_case.values()) == {8}, per_case
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
def test_the_rng_experiment_records_what_it_recorded(rng) -> None:
    """How csorch is put together may change; what it records of this run may not
    (tests/essence.py; the C subject's in tests/e2e/test_same_records.py)."""
    tmp, first, _ = rng
    assert first.returncode == 0
    got = essence.essence(tmp / "first", tmp / "cache")
    assert essence.compare(got, "qext-rng-asan") == []


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


def test_a_flooding_c_program_is_counted_not_printed(tmp_path: Path) -> None:
    """Issue #14: a use-after-free read inside a loop (c-flood.yaml, 3000 reads from one
    pc) as a command subject: the fold shim prints the first report and counts the rest,
    in the checker run and in the plain run; the true count reaches the case's row."""
    out = tmp_path / "out"
    done = csorch(
        str(FIXTURES / "c-flood.yaml"),
        "--out",
        str(out),
        "--cache-dir",
        str(tmp_path / "cache"),
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    results, manifest = load(out)
    control = findings(results, "control", "memcheck", "flood")
    assert [(f["kind"], f["case"], f["count"]) for f in control] == [
        ("heap-use-after-free", "flood", 3000)
    ]
    (row,) = [c for c in results["cases"] if (c["variant"], c["run"]) == ("control", "memcheck")]
    assert row["summary_count"] == 3000 and [s["count"] for s in row["signatures"]] == [3000]
    assert findings(results, "fixed", "memcheck", "flood") == []
    assert results["verdict"] == "pass"
    # the plain run folds too (it is not judged by its reports, but it must not crawl)
    (plain,) = [a for a in manifest["attempts"] if (a["variant"], a["run"]) == ("control", "plain")]
    log = (out / plain["launches"][0]["log"]).read_text()
    assert log.count("ERROR: AddressSanitizer") == 1 and "2999 more READ of size 8" in log
    assert len(manifest["backend"]["fold_shim_sha256"]) == 64


def gate(config: Path, out: Path, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "gate",
            str(config),
            "--backend",
            "asan",
            "--out",
            str(out),
            "--cache-dir",
            str(cache),
        ],
        cwd=out.parent,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )


@pytest.fixture(scope="module")
def cudabugs_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One build cache for both gates: the fix-removed gate rebuilds nothing."""
    return tmp_path_factory.mktemp("cudabugs") / "cache"


def test_the_cudabugs_host_programs_are_causal_under_asan(
    tmp_path: Path, cudabugs_cache: Path
) -> None:
    done = gate(FIXTURES / "gate-cudabugs-cpu.yaml", tmp_path / "gate", cudabugs_cache)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "gate: PASS" in done.stdout
    oob, _ = load(tmp_path / "gate" / "cudabugs-oob-write")
    # one bad write per thread past the end: 1024 launched for 1000 elements, one
    # instruction (printed once, the other 23 counted)
    control = findings(oob, "control", "memcheck", "oob_write")
    assert {(f["kind"], f["access"], f["size"]) for f in control} == {
        ("heap-buffer-overflow", "write", 4)
    }
    assert reports(control) == 24
    assert all(f["frames"][0]["function"].startswith("fill_squares") for f in control)
    assert findings(oob, "fixed", "memcheck", "oob_write") == []
    leak, manifest = load(tmp_path / "gate" / "cudabugs-leak")
    control = findings(leak, "control", "memcheck-leaks", "leak")
    assert [f["kind"] for f in control] == ["memory-leak"]
    assert findings(leak, "fixed", "memcheck-leaks", "leak") == []
    # --leak-check full is what turned LeakSanitizer on, and only in that run
    options = {
        a["run"]: a["launches"][0]["env"].get("ASAN_OPTIONS", "") for a in manifest["attempts"]
    }
    assert "detect_leaks=1" in options["memcheck-leaks"]
    assert "detect_leaks=1" not in options["plain"]
    for results in (oob, leak):
        assert results["verdict"] == "pass"
        assert {b["kind"] for b in results["builds"]} == {"command"}


def test_a_removed_cudabugs_fix_turns_the_gate_red(tmp_path: Path, cudabugs_cache: Path) -> None:
    done = gate(FIXTURES / "gate-cudabugs-nofix.yaml", tmp_path / "gate", cudabugs_cache)
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-4000:]
    verdict = json.loads((tmp_path / "gate" / "gate.json").read_text())
    assert verdict["verdict"] == "fail"
    assert verdict["reasons"][0].startswith("cudabugs-oob-write-nofix: the fix is not causal")
    nofix, _ = load(tmp_path / "gate" / "cudabugs-oob-write-nofix")
    assert reports(findings(nofix, "fixed", "memcheck", "oob_write")) == 24


@pytest.mark.parametrize(
    ("patch", "named"),
    [
        ("hide-oob-attribute.patch", "adds no_sanitize_address (pick.c:6)"),
        ("hide-oob-environment.patch", "adds ASAN_OPTIONS (pick.c:8)"),
    ],
)
def test_a_fix_that_hides_the_defect_from_the_checker_does_not_pass(
    tmp_path: Path, patch: str, named: str
) -> None:
    """The "fix" leaves the out-of-bounds read in place and hides it from ASan: a function
    exempt from instrumentation, or a loop that stops early when it sees ASAN_OPTIONS. Its
    run is clean, the control's is not; the verdict is INCONCLUSIVE, naming the opt-out."""
    for name in ("c-oob.yaml", patch):
        shutil.copy(FIXTURES / name, tmp_path / name)
    shutil.copytree(FIXTURES / "cprog", tmp_path / "cprog")
    config = tmp_path / "c-oob.yaml"
    config.write_text(config.read_text().replace("fix-oob.patch", patch))
    done = csorch(
        str(config), "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"),
        cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    results, _ = load(tmp_path / "out")
    assert findings(results, "fixed", "memcheck", "sum") == []  # hidden: a clean run
    assert [f["kind"] for f in findings(results, "control", "memcheck", "sum")] == [
        "heap-buffer-overflow"
    ]
    assert results["verdict"] == "inconclusive"
    reason = results["judgement"]["reasons"][0]
    assert f"fix fixed {named}, which none of the controls has" in reason
    fixed = next(b for b in results["builds"] if b["variant"] == "fixed")
    assert any(m.startswith(named.split()[1] + " pick.c:") for m in fixed["opt_outs"])
