"""scaffold: the config `csorch init` writes, from repository facts, loaded back by the
real config reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.config.experiment import load_experiment
from orchestrator.config.scaffold import Facts, build_kind, scaffold
from orchestrator.errors import CsorchError
from orchestrator.model import BuildKind, SourceKind


def test_the_build_kind_comes_from_the_trees_files() -> None:
    assert build_kind(("build.py", "setup.py")) == "jit"
    assert build_kind(("setup.py", "myext/build.py")) == "{kind: jit, description: myext/build.py}"
    assert build_kind(("a/build.py", "b/build.py", "pyproject.toml")) == "wheel"
    assert build_kind(("setup.py",)) == "wheel"
    assert build_kind(("Makefile", "x.c")) == "{kind: command, command: [make]}"
    with pytest.raises(CsorchError, match="cannot tell how to build this tree"):
        build_kind(("README.md",))


@pytest.fixture
def subject(tmp_path: Path) -> Path:
    root = tmp_path / "my ext"  # a space: the paths must be quoted
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    (root / "setup.py").write_text("")
    (tmp_path / "undo.patch").write_text("")
    return root


def test_a_control_patch_config_loads(subject: Path, tmp_path: Path) -> None:
    facts = Facts(
        root=subject,
        files=("setup.py",),
        tests=(subject / "tests",),
        control=tmp_path / "undo.patch",
    )
    (tmp_path / "cfg").mkdir()
    text = scaffold(facts, base=tmp_path / "cfg")
    assert 'source: "../my ext"' in text
    (tmp_path / "cfg" / "e.yaml").write_text(text)
    e = load_experiment(tmp_path / "cfg" / "e.yaml")
    assert e.name == "my-ext-fix" and e.source.location == str(subject)
    assert [(v.name, v.build.kind, v.patches) for v in e.variants] == [
        ("fixed", BuildKind.WHEEL, ()),
        ("control", BuildKind.WHEEL, (tmp_path / "undo.patch",)),
    ]
    assert [r.checker.value for r in e.runs] == ["none", "memcheck"]
    assert e.cases[0].pytest == (str(subject / "tests"),)
    assert e.case_timeout == 300.0 and e.timeout == 1800.0
    assert e.expect is not None and e.expect.controls == ("control",) and e.expect.targets == ()


def test_a_fix_commit_config_loads_with_absolute_paths(subject: Path, tmp_path: Path) -> None:
    facts = Facts(
        root=subject,
        files=("Makefile",),
        tests=(subject / "tests" / "test_a.py",),
        fix="a" * 40,
        parent="b" * 40,
        subject='sum: "stop" at the end',
        repo=tmp_path,
        subdir="my ext",
        control=tmp_path / "undo.patch",
    )
    text = scaffold(facts, name="sum-fix")
    (tmp_path / "elsewhere.yaml").write_text(text)
    e = load_experiment(tmp_path / "elsewhere.yaml")
    assert e.description == 'fix aaaaaaaaaaaa: sum: "stop" at the end'
    assert (e.source.kind, e.source.ref, e.source.subdir) == (SourceKind.GIT, "a" * 40, "my ext")
    control = e.variant("control")
    assert control.source is not None and control.source.ref == "b" * 40
    assert e.variant("undone").patches == (tmp_path / "undo.patch",)
    assert e.variant("fixed").build.command == ("make",)
    assert e.expect is not None and e.expect.controls == ("control", "undone")


def test_an_installed_release_is_a_prebuilt_control(subject: Path, tmp_path: Path) -> None:
    facts = Facts(root=subject, files=("setup.py",), tests=(subject,), installed="my-ext==1.2")
    assert '    build: {kind: prebuilt, requirement: "my-ext==1.2"}' in scaffold(facts)
    wheel = Facts(
        root=subject, files=("setup.py",), tests=(subject,), installed=str(tmp_path / "x.whl")
    )
    assert f"wheel: {tmp_path / 'x.whl'}" in scaffold(wheel)
    assert "controls: [installed]" in scaffold(wheel)


def test_no_fix_or_no_tests_is_an_error(subject: Path) -> None:
    with pytest.raises(CsorchError, match="init needs the fix: --fix REF"):
        scaffold(Facts(root=subject, files=("setup.py",), tests=(subject,)))
    with pytest.raises(CsorchError, match="init needs the tests"):
        scaffold(Facts(root=subject, files=("setup.py",), tests=(), installed="x==1"))
