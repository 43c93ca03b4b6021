"""builds/pip: `build: pip` installs a setup.py project into a private directory, offline,
and hashes its binaries; a tree without setup.py or pyproject.toml says what to set."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.errors import BuildError
from orchestrator.model import BuildKind, BuildSpec, Variant
from orchestrator.run import build
from tests.unit.run.conftest import context, tree_of

pytestmark = pytest.mark.process  # pip builds the project in a child


def test_pip_installs_the_project_privately(project: Path, tmp_path: Path) -> None:
    done = build.build(Variant("p", BuildSpec(BuildKind.PIP)), tree_of(project), context(tmp_path))
    assert done.ok and done.kind is BuildKind.PIP and done.import_path == done.directory / "pkg"
    assert (done.import_path / "tinypkg" / "__init__.py").read_text() == "VALUE = 42\n"
    assert [a.path for a in done.artifacts] == ["pkg/tinypkg/_C.so"]
    argv = done.steps[0]
    assert argv[1:4] == ("-m", "pip", "install") and "--no-index" in argv
    assert "--no-build-isolation" in argv and argv[argv.index("--target") + 1].endswith("/pkg")
    again = build.build(Variant("p", BuildSpec(BuildKind.PIP)), tree_of(project), context(tmp_path))
    assert again.cached and again.artifacts == done.artifacts


def test_a_tree_that_pip_cannot_build_says_what_to_set(tmp_path: Path) -> None:
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "muladd.cpp").write_text("")
    with pytest.raises(BuildError, match="no setup.py or pyproject.toml") as info:
        build.build(
            Variant("p", BuildSpec(BuildKind.PIP)), tree_of(tmp_path / "bare"), context(tmp_path)
        )
    assert "build: jit or command" in str(info.value) and info.value.log_path is None
