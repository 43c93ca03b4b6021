"""The hostile suite's harness: a small C subject copied into a temp dir, experiment
configs written beside it, and csorch run as a child process the way a user runs it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CPROG = ROOT / "tests" / "fixtures" / "e2e" / "cprog"
FIX = ROOT / "tests" / "fixtures" / "e2e" / "fix-oob.patch"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:  # every test here starts csorch, git or a build
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(pytest.mark.process)


@pytest.fixture
def place(tmp_path: Path) -> Path:
    """A fresh directory with the C subject in `subject/` and the fix in `fix.patch`; csorch
    runs with this directory as its working directory."""
    if shutil.which("cc") is None or shutil.which("make") is None:
        pytest.skip("the C subject needs cc and make")
    shutil.copytree(CPROG, tmp_path / "subject")
    shutil.copy(FIX, tmp_path / "fix.patch")
    return tmp_path
