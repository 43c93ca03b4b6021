"""builds/jit: a tree without csorch's build.py contract gets an error that says what `jit`
means, points a setup.py project at `build: pip` or `build: wheel`, and cites no build log
that was never written."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.errors import BuildError
from orchestrator.model import BuildKind, BuildSpec, Variant
from orchestrator.run import build
from tests.unit.run.conftest import context, tree_of


def test_a_setup_py_project_under_jit_is_pointed_at_pip(project: Path, tmp_path: Path) -> None:
    with pytest.raises(BuildError) as info:
        build.build(Variant("j", BuildSpec(BuildKind.JIT)), tree_of(project), context(tmp_path))
    text = str(info.value)
    assert "csorch's own build.py contract" in text and "not torch's JIT" in text
    assert "`build: pip` (pip install --target of the tree's setup.py)" in text
    assert "`build: wheel`" in text
    assert info.value.log_path is None and "full log" not in text


def test_a_tree_with_no_project_file_is_given_every_way(tmp_path: Path) -> None:
    (tmp_path / "bare").mkdir()
    with pytest.raises(BuildError) as info:
        build.build(
            Variant("j", BuildSpec(BuildKind.JIT)), tree_of(tmp_path / "bare"), context(tmp_path)
        )
    assert "build.description" in str(info.value) and "import_path" in str(info.value)
