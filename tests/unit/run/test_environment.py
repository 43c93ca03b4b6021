"""environment: the project's test requirements go into the variant's own entry (deps/),
from a wheel directory without an index, keyed with the build; the environment's python
is the one the builds use."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from orchestrator.errors import BuildError
from orchestrator.model import BuildKind, BuildSpec, Environment, Variant
from orchestrator.run import build, environment
from tests.unit.run.conftest import context, tree_of

pytestmark = pytest.mark.process  # pip installs the requirements in a child


def test_test_requirements_install_into_the_entry(
    project: Path, wheelhouse: Path, tmp_path: Path
) -> None:
    env = Environment(requires=("tinypkg==1.0",), wheels=str(wheelhouse))
    ctx = context(tmp_path, environment=env)
    variant = Variant("p", BuildSpec(BuildKind.PIP))
    done = build.build(variant, tree_of(project), ctx)
    assert done.requirements_path == done.directory / "deps"
    assert (done.requirements_path / "tinypkg" / "__init__.py").exists()
    install = done.steps[-1]
    assert "--no-index" in install and install[install.index("--find-links") + 1] == str(wheelhouse)
    assert "--no-deps" in install and install[-1] == "tinypkg==1.0"
    again = build.build(variant, tree_of(project), ctx)
    assert again.cached and again.requirements_path == done.requirements_path
    # other requirements: another entry; none: the key of a build without any
    other = context(tmp_path, environment=dataclasses.replace(env, requires=("tinypkg==2.0",)))
    with pytest.raises(BuildError, match="pip install"):
        build.build(variant, tree_of(project), other)
    bare = build.build(variant, tree_of(project), context(tmp_path))
    assert bare.requirements_path is None and bare.cache_key != done.cache_key


def test_the_interpreter_is_the_config_s_or_csorch_s() -> None:
    from orchestrator.model import Experiment, SourceKind, SourceSpec

    e = Experiment("e", SourceSpec(SourceKind.PATH, "/x"), (), (), ())
    assert environment.interpreter(e, "/usr/bin/python3") == "/usr/bin/python3"
    e = dataclasses.replace(e, environment=Environment(python="/venv/bin/python"))
    assert environment.interpreter(e, "/usr/bin/python3") == "/venv/bin/python"


DESCRIPTION = """\
import argparse, pathlib, sys
p = argparse.ArgumentParser()
for o in ("--root", "--build-dir", "--package-dir"):
    p.add_argument(o, required=True)
a = p.parse_args()
pkg = pathlib.Path(a.package_dir) / "subj"
pkg.mkdir(parents=True)
(pkg / "__init__.py").write_text(f"BUILT_BY = {sys.executable!r}\\n")
"""


def test_the_environment_s_python_builds_and_is_recorded(tmp_path: Path) -> None:
    import venv

    venv.create(tmp_path / "venv", with_pip=False)
    python = str(tmp_path / "venv" / "bin" / "python")
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "build.py").write_text(DESCRIPTION)
    variant = Variant("j", BuildSpec(BuildKind.JIT))
    ctx = context(tmp_path, python=python, environment=Environment(python=python))
    done = build.build(variant, tree_of(tmp_path / "s"), ctx)
    assert done.python == python and done.steps[0][0] == python
    assert python in (done.import_path / "subj" / "__init__.py").read_text()
    assert build.build(variant, tree_of(tmp_path / "s"), ctx).python == python  # cached
    mine = build.build(variant, tree_of(tmp_path / "s"), context(tmp_path))
    assert mine.python == "" and mine.cache_key != done.cache_key
