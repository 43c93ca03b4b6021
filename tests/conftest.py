"""Options and fixtures shared by the test tree (registered here so that they work from
any path)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
E2E = ROOT / "tests" / "fixtures" / "e2e"

# pytest-xdist's workers inherit COLUMNS=80, and csorch's piped output fits COLUMNS where
# it is set: the in-process CLI tests read csorch as a CI log shows it (200 wide), and a
# test that wants a width gives it (CliRunner's env, a child's environment)
os.environ.pop("COLUMNS", None)

#: the C-program experiments behind `cprog_bundles`, by the verdict each one gets
CPROG_CONFIGS = {
    "pass": E2E / "c-oob.yaml",  # the fix removes the planted out-of-bounds read
    "fail": E2E / "c-oob-nofix.yaml",  # the "fix" only adds a comment
    "inconclusive": E2E / "c-oob-badpatch.yaml",  # the fix does not apply
}


def csorch_run(config: Path, out: Path, cache: Path, *, cwd: Path) -> subprocess.CompletedProcess:
    """`csorch run CONFIG --backend asan` in a child process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", str(config), "--backend", "asan",
         "--out", str(out), "--cache-dir", str(cache)],
        cwd=cwd, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )  # fmt: skip


def pytest_addoption(parser):
    parser.addoption(
        "--qext-device",
        action="append",
        choices=("cpu", "cuda"),
        help="device for the regression cases (repeatable; default: all present)",
    )


@pytest.fixture(scope="session")
def run_asan():
    """`csorch_run` for test modules (a fixture: `from conftest import` would find
    whichever conftest.py pytest imported first under that name)."""
    return csorch_run


@pytest.fixture(scope="session")
def cprog_bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real bundles of `csorch run --backend asan` over a tiny C program (seconds each):
    {"pass": ..., "fail": ..., "inconclusive": ...}. Read-only: copy one to change it."""
    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("the C-program bundles need gcc and make")
    tmp = tmp_path_factory.mktemp("cprog-bundles")
    bundles = {}
    for verdict, config in CPROG_CONFIGS.items():
        out = tmp / verdict
        done = csorch_run(config, out, tmp / "cache", cwd=tmp)
        expected = {"pass": 0, "fail": 1, "inconclusive": 3}[verdict]
        assert done.returncode == expected, done.stdout[-3000:] + done.stderr[-3000:]
        bundles[verdict] = out
    return bundles


# --- a host made of real programs (tests/unit/test_host.py, test_workflow.py) -----------

_FAKE_TORCH_INIT = '''\
"""A stand-in torch: its facts come from fake.json beside it (written by the test)."""
import json as _json
import pathlib as _pathlib
import time as _time

_fake = _json.loads((_pathlib.Path(__file__).parent / "fake.json").read_text())
if _fake.get("fail"):
    raise ImportError(_fake["fail"])
_time.sleep(_fake.get("import_s", 0.0))
from torch import cuda  # noqa: E402
try:
    from torch import version
except ImportError:  # no version.py: a test of the fast part's fallback
    import types as _types
    version = _types.SimpleNamespace(__version__="2.13.0+cu130", cuda="13.0")
__version__ = _fake.get("version") or version.__version__
if _fake.get("stamp"):  # when `import torch` ended, for the tests of the join's place
    _pathlib.Path(_fake["stamp"]).write_text(repr(_time.time()))
'''
_FAKE_TORCH_CUDA = """\
import json as _json
import pathlib as _pathlib
import types as _types

_GPUS = _json.loads((_pathlib.Path(__file__).parent / "fake.json").read_text())["gpus"]

def is_available():
    return bool(_GPUS)

def device_count():
    return len(_GPUS)

def get_device_name(i):
    return _GPUS[i][0]

def get_device_capability(i):
    return tuple(int(x) for x in _GPUS[i][1].split("."))

def get_device_properties(i):
    return _types.SimpleNamespace(uuid=_GPUS[i][2])
"""


class FakeHost:
    """A host made of real programs: a torch package first on PYTHONPATH (its version.py
    as given; `import torch` slow, failing or contradicting it on demand; torch.cuda
    reporting chosen GPUs) and an `nvidia-smi` script first on PATH printing chosen
    lines. CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER and TORCH_CUDA_ARCH_LIST (which would
    key the arch instead of the GPUs; the GPU machine sets it) are unset."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.site, self.bin = root / "site", root / "bin"
        (self.site / "torch").mkdir(parents=True)
        self.bin.mkdir()
        (self.site / "torch" / "__init__.py").write_text(_FAKE_TORCH_INIT)
        (self.site / "torch" / "cuda.py").write_text(_FAKE_TORCH_CUDA)
        old = os.environ.get("PYTHONPATH")
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(self.site), old) if p))
        monkeypatch.setenv("PATH", f"{self.bin}{os.pathsep}{os.environ['PATH']}")
        for name in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "TORCH_CUDA_ARCH_LIST"):
            monkeypatch.delenv(name, raising=False)
        self.torch("__version__ = '2.13.0+cu130'\ncuda = '13.0'\n")
        self.smi([], returncode=9)

    def torch(
        self,
        version_py: str | None,
        gpus: Sequence[tuple[str, str, str]] = (),
        *,
        import_s: float = 0.0,
        version: str = "",
        fail: str = "",
        stamp: Path | None = None,
    ) -> None:
        """torch/version.py (None: none), and what `import torch` will say: GPUs as
        (name, capability, uuid) in CUDA's order."""
        path = self.site / "torch" / "version.py"
        if version_py is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(version_py)
        fake = {"gpus": [list(g) for g in gpus], "import_s": import_s, "version": version,
                "fail": fail, "stamp": str(stamp or "")}  # fmt: skip
        (self.site / "torch" / "fake.json").write_text(json.dumps(fake))

    def smi(self, lines: Sequence[str], returncode: int = 0) -> None:
        """What `nvidia-smi` prints (whatever it is asked) and its exit status."""
        text = self.bin / "smi.txt"
        text.write_text("".join(f"{line}\n" for line in lines))
        script = self.bin / "nvidia-smi"
        script.write_text(f"#!/bin/sh\ncat '{text}'\nexit {returncode}\n")
        script.chmod(0o755)


@pytest.fixture
def fake_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeHost:
    """A FakeHost under tmp_path (a CUDA build of torch; nvidia-smi failing until told)."""
    return FakeHost(tmp_path / "fake-host", monkeypatch)
