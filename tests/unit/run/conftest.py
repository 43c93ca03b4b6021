"""Tiny real subjects for the build kinds: a pure-Python setup.py project (pip builds it in
seconds) and its wheel, and the helpers that build a variant of one through the cache."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.cache import Cache
from orchestrator.model import SourceKind, SourceSpec, SourceTree
from orchestrator.run import build
from orchestrator.run.sources import tree_digest

SETUP = (
    "from setuptools import setup\n"
    "setup(name='tinypkg', version='1.0', packages=['tinypkg'],\n"
    "      package_data={'tinypkg': ['*.so']})\n"
)
_copies = itertools.count()


def tree_of(root: Path, name: str = "v") -> SourceTree:
    """A fresh copy of `root`, as the pipeline materializes one per variant."""
    copy = root.parent / f"copy{next(_copies)}"
    shutil.copytree(root, copy)
    return SourceTree(name, copy, tree_digest(copy), SourceSpec(SourceKind.PATH, str(root)))


def context(tmp_path: Path, **kw) -> build.Context:
    kw = {"python": sys.executable, "toolchain": {"cc": "test"}, **kw}
    return build.Context(cache=Cache(tmp_path / "cache"), logs=tmp_path / "logs", **kw)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A setup.py project whose package carries a (fake) extension library."""
    root = tmp_path / "project"
    (root / "tinypkg").mkdir(parents=True)
    (root / "tinypkg" / "__init__.py").write_text("VALUE = 42\n")
    (root / "tinypkg" / "_C.so").write_bytes(b"\x7fELF not really")
    (root / "setup.py").write_text(SETUP)
    return root


@pytest.fixture
def wheelhouse(project: Path, tmp_path: Path) -> Path:
    """The project's release wheel, as `pip wheel` makes it."""
    out = tmp_path / "wheelhouse"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(project),
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(out),
        ],
        check=True,
        cwd=tmp_path,
    )
    return out
