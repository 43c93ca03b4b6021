"""A project of a user's own, end to end under ASan, as docs/your-extension.md has it:
tests/fixtures/userext (a setup.py extension, torch.utils.cpp_extension) built with
`build: pip` as its users build it, its control patch rebuilt from source, and a prebuilt
release wheel of the control (made here with `pip wheel`, as a release is): the
use-after-free in both controls, none in the fix, verdict causal at the first run; the
wheel's name, version and sha256 recorded. Three ASan builds of a small extension: 11 min
on 2 cores."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.backends.asan.backend import COMPILE_FLAGS, LINK_FLAGS
from orchestrator.files import file_digest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "userext"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("gcc") is None, reason="the ASan backend needs gcc"),
]


def release_wheel(project: Path, out: Path) -> Path:
    """The control's release: the patched tree through pip wheel, instrumented (ASan sees
    only the accesses of instrumented code; under compute-sanitizer any release will do)."""
    src = out / "release-src"
    shutil.copytree(project, src)
    subprocess.run(
        ["git", "apply", str(FIXTURE / "controls" / "scale-temporary-copy.patch")],
        cwd=src,
        check=True,
    )
    # the flags csorch's ASan backend gives its own builds: an ASan build of the release
    env = {**os.environ, "CFLAGS": " ".join(COMPILE_FLAGS), "LDFLAGS": " ".join(LINK_FLAGS)}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(src),
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(out / "dist"),
        ],
        check=True,
        env=env,
        timeout=1200,
    )
    (wheel,) = (out / "dist").glob("userext-0.1.0-*.whl")
    return wheel


@pytest.fixture(scope="module")
def userext(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("userext")
    project = tmp / "project"
    shutil.copytree(FIXTURE, project)
    wheel = release_wheel(FIXTURE, tmp)
    config = project / "userext.yaml"
    config.write_text(config.read_text().replace("RELEASE_WHEEL", str(wheel)))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "run",
            str(config),
            "--backend",
            "asan",
            "--out",
            str(tmp / "out"),
            "--cache-dir",
            str(tmp / "cache"),
            "--jobs",
            "2",
        ],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )
    (tmp / "run.txt").write_text(done.stdout + done.stderr)
    return tmp, wheel, done


def test_the_user_s_extension_is_causal_under_asan(userext) -> None:
    tmp, wheel, done = userext
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "verdict: PASS (causal)" in done.stdout
    results = json.loads((tmp / "out" / "results.json").read_text())
    builds = {b["variant"]: b for b in results["builds"]}
    assert {v: (b["kind"], b["ok"]) for v, b in builds.items()} == {
        "fixed": ("pip", True),
        "rebuilt": ("pip", True),
        "release": ("prebuilt", True),
    }
    release = builds["release"]["distribution"]
    assert (release["name"], release["version"], release["wheel"]) == (
        "userext",
        "0.1.0",
        wheel.name,
    )
    assert release["sha256"] == file_digest(wheel)
    for name in ("fixed", "rebuilt"):
        paths = [a["path"] for a in builds[name]["artifacts"]]
        assert any(p.startswith("pkg/userext/_C") and ".so" in p for p in paths), paths

    def uaf(variant: str) -> list[dict]:
        return [
            f
            for a in results["attempts"]
            if (a["variant"], a["run"]) == (variant, "memcheck")
            for f in a["parse"]["findings"]
            if f["kind"] == "heap-use-after-free"
        ]

    for control in ("rebuilt", "release"):
        found = uaf(control)
        assert found and all(f["access"] == "read" for f in found)
        assert any("scale_cpu" in fr["function"] for f in found for fr in f["frames"])
    assert uaf("fixed") == []
    # the fix's suite passes in both runs: the cases ran against the build, not nothing
    fixed = [a for a in results["attempts"] if a["variant"] == "fixed"]
    assert fixed and all(a["outcome"] == "passed" for a in fixed)
