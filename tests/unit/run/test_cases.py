"""cases: under `cases_from: variant` the cases are the variant's tree's own; a case the
tree does not have fails that variant, saying so, instead of running other tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.errors import ConfigError
from orchestrator.model import (
    Case,
    CaseKind,
    CasesFrom,
    Experiment,
    SourceKind,
    SourceSpec,
    SourceTree,
)
from orchestrator.run.cases import cases_root


def test_the_cases_must_be_in_the_variant_s_tree(tmp_path: Path) -> None:
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "test_extension.py").write_text("")
    case = Case("t", CaseKind.PYTEST, pytest=("test/test_extension.py::TestMyMulAdd",))
    source = SourceSpec(SourceKind.GIT, "/repo", "v1")
    e = Experiment("e", source, (), (), (case,), cases_from=CasesFrom.VARIANT)
    tree = SourceTree("old", tmp_path, "d", source)
    assert cases_root(e, tree) == tmp_path
    (tmp_path / "test" / "test_extension.py").unlink()
    with pytest.raises(ConfigError, match="is not in variant 'old'") as info:
        cases_root(e, tree)
    assert "cases_from: config" in str(info.value)
