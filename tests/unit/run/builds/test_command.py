"""builds/command: a command build's declared `import_path` is where its pytest cases
import from (first on their PYTHONPATH); a missing one fails the build, naming the key."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from orchestrator.errors import BuildError
from orchestrator.model import BuildKind, BuildSpec, Variant
from orchestrator.run import build
from tests.unit.run.conftest import context, tree_of

pytestmark = pytest.mark.process  # the command runs in a child

MAKE = (
    "import pathlib\n"
    "d = pathlib.Path('out/lib/made')\n"
    "d.mkdir(parents=True)\n"
    "(d / '__init__.py').write_text('')\n"
)


def spec(path: str) -> BuildSpec:
    return BuildSpec(BuildKind.COMMAND, command=(sys.executable, "make.py"), import_path=path)


def test_the_import_path_is_the_cases_import_path(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "make.py").write_text(MAKE)
    done = build.build(Variant("c", spec("out/lib")), tree_of(tmp_path / "s"), context(tmp_path))
    assert done.import_path == done.directory / "tree" / "out" / "lib"
    assert (done.import_path / "made" / "__init__.py").exists()
    again = build.build(Variant("c", spec("out/lib")), tree_of(tmp_path / "s"), context(tmp_path))
    assert again.cached and again.import_path == done.import_path
    plain = build.build(Variant("c", spec("")), tree_of(tmp_path / "s"), context(tmp_path))
    assert plain.import_path is None  # nothing of a command build is imported unless declared


def test_an_import_path_the_command_did_not_make_fails(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "make.py").write_text(MAKE)
    with pytest.raises(BuildError, match="import_path 'build/lib' is not a directory"):
        build.build(Variant("c", spec("build/lib")), tree_of(tmp_path / "s"), context(tmp_path))
