"""The control patches still apply to ext/, each patched tree builds, and the no-op
control still reproduces its defect: a change to qext cannot silently break a control."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTROLS = sorted((ROOT / "controls").glob("*.patch"))

pytestmark = pytest.mark.slow


def _apply(patch: Path, tree: Path) -> None:
    r = subprocess.run(["patch", "-p1", "--forward", "--batch", "-d", str(tree), "-i", str(patch)],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"{patch.name} no longer applies to ext/:\n{r.stdout}{r.stderr}"


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """Builds each control in one source path, so ninja recompiles only what differs."""
    work = tmp_path_factory.mktemp("controls")
    src = work / "src"
    out = {}
    for patch in CONTROLS:
        if src.exists():
            shutil.rmtree(src)
        # Fresh mtimes, so that ninja sees files restored from the previous patch as new.
        shutil.copytree(ROOT / "ext", src, copy_function=shutil.copy,
                        ignore=shutil.ignore_patterns("_C*.so", "__pycache__", "build"))
        _apply(patch, src)
        pkg = work / f"pkg-{patch.stem}"
        r = subprocess.run([sys.executable, str(src / "qext" / "build.py"), "--root", str(src),
                            "--build-dir", str(work / "build"), "--package-dir", str(pkg),
                            "--cuda", "no"], capture_output=True, text=True)
        out[patch.stem] = (r, pkg)
    return out


def test_there_are_two_controls():
    assert [p.stem for p in CONTROLS] == ["noop-double-swizzle", "rng-owner-scope"]


@pytest.mark.parametrize("control", [p.stem for p in CONTROLS])
def test_control_applies_and_builds(control, builds):
    r, pkg = builds[control]
    assert r.returncode == 0, (
        f"{control}: the patched tree does not build:\n{r.stdout[-3000:]}{r.stderr[-3000:]}"
    )
    assert (pkg / "qext" / "_C.so").is_file()


def test_noop_control_still_reproduces(builds):
    r, pkg = builds["noop-double-swizzle"]
    assert r.returncode == 0
    env = {**os.environ, "PYTHONPATH": str(pkg)}
    case = "tests/regression/test_noop_replay.py::test_noop_update_leaves_tensor_unchanged"
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          f"{case}[cpu-nvfp4-both-unaligned-128x320]",
                          f"{case}[cpu-mxfp8-both-unaligned-128x320]", "--qext-device", "cpu"],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    assert "1 failed, 1 passed" in res.stdout, res.stdout[-3000:]
    assert "swizzle" in res.stdout or "changed" in res.stdout or "reallocated" in res.stdout
