"""config/builds: each build kind and the project's environment load from a config; a bad
one is an error naming the file, the line, the key and what to set instead."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.config.experiment import load_experiment
from orchestrator.errors import ConfigError
from orchestrator.model import BuildKind, CasesFrom

BASE = """\
name: demo
source: src
variants:
  - name: fixed
    build: pip
  - name: other
    build: BUILD
runs:
  - {name: memcheck, checker: memcheck}
cases:
  - tests/test_a.py
EXTRA"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "userext-0.1-cp311-cp311-linux_x86_64.whl").write_bytes(b"PK")
    (tmp_path / "reqs.txt").write_text("expecttest==0.3.0\n")
    return tmp_path


def load(tree: Path, build: str, extra: str = ""):
    path = tree / "exp.yaml"
    path.write_text(BASE.replace("BUILD", build).replace("EXTRA", extra))
    return load_experiment(path)


def test_every_kind_loads(tree: Path) -> None:
    e = load(tree, "wheel")
    assert e.variants[0].build.kind is BuildKind.PIP and e.variants[1].build.kind is BuildKind.WHEEL
    wheel = load(tree, "{kind: prebuilt, wheel: dist/userext-0.1-cp311-cp311-linux_x86_64.whl}")
    assert wheel.variants[1].build.wheel == str(tree / "dist" / wheel.variants[1].build.wheel)
    req = load(tree, '{kind: prebuilt, requirement: "userext==0.1", find_links: dist}')
    assert req.variants[1].build.find_links == str(tree / "dist")
    index = load(tree, '{kind: prebuilt, requirement: "userext==0.1", index: "https://x/simple"}')
    assert index.variants[1].build.index == "https://x/simple"
    assert load(tree, "{kind: prebuilt, installed: userext}").variants[1].build.installed
    cmd = load(tree, "{kind: command, command: [make], import_path: build/lib}")
    assert cmd.variants[1].build.import_path == "build/lib"


def test_the_environment_and_cases_from(tree: Path) -> None:
    venv = tree / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").write_text("#!/bin/sh\n")
    os.chmod(venv / "python", 0o755)
    extra = (
        "python: venv/bin/python\ntest_requires: [expecttest==0.3.0]\nwheels: dist\n"
        "cases_from: config\n"
    )
    e = load(tree, "pip", extra)
    assert e.environment.python == str(venv / "python")
    assert e.environment.requires == ("expecttest==0.3.0",)
    assert e.environment.wheels == str(tree / "dist") and e.cases_from is CasesFrom.CONFIG
    assert load(tree, "pip", "test_requires: reqs.txt\n").environment.requirements_file == str(
        tree / "reqs.txt"
    )
    # under cases_from: variant the paths are the variant's tree's: not checked here
    text = (tree / "exp.yaml").read_text()
    (tree / "exp.yaml").write_text(
        text.replace("tests/test_a.py", "test/test_extension.py") + "cases_from: variant\n"
    )
    e = load_experiment(tree / "exp.yaml")
    assert e.cases_from is CasesFrom.VARIANT and e.cases[0].pytest == ("test/test_extension.py",)


BAD = [
    ("torch-jit", "jit_load", 7, "variants[1].build", "choose one of: jit, wheel, pip"),
    ("bare-prebuilt", "prebuilt", 7, "variants[1].build", "needs the binary it stands for"),
    (
        "two-sources",
        "{kind: prebuilt, installed: x, requirement: x==1, find_links: dist}",
        7,
        "variants[1].build",
        "exactly one of wheel, requirement, installed; found requirement, installed",
    ),
    (
        "unpinned",
        "{kind: prebuilt, requirement: userext, find_links: dist}",
        7,
        "variants[1].build.requirement",
        "'userext' is not pinned",
    ),
    (
        "nowhere",
        '{kind: prebuilt, requirement: "userext==0.1"}',
        7,
        "variants[1].build.requirement",
        "exactly one of find_links",
    ),
    (
        "not-a-wheel",
        "{kind: prebuilt, wheel: reqs.txt}",
        7,
        "variants[1].build.wheel",
        "not a wheel file",
    ),
    (
        "import-path-on-pip",
        "{kind: pip, import_path: lib}",
        7,
        "variants[1].build.import_path",
        "applies to command builds only, not pip",
    ),
    (
        "import-path-outside",
        "{kind: command, command: [make], import_path: ../lib}",
        7,
        "variants[1].build.import_path",
        "relative path inside the tree",
    ),
]


@pytest.mark.parametrize(
    ("build", "line", "key", "words"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_build(tree: Path, build: str, line: int, key: str, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        load(tree, build)
    error = info.value
    assert (error.line, error.key) == (line, key), str(error)
    assert words in str(error)


BAD_ENV = [
    ("python-missing", "python: venv/bin/python3\n", "python", "no executable interpreter"),
    ("python-a-name", "python: python3\n", "python", "is not a path"),
    ("unpinned-test-req", "test_requires: [expecttest]\n", "test_requires[0]", "not pinned"),
    ("no-wheels-dir", "wheels: nowhere\n", "wheels", "no such directory"),
    ("cases-from", "cases_from: tests\n", "cases_from", "choose one of: config, variant"),
    (
        "outside-the-tree",
        "cases_from: variant\n",
        "cases[0]",
        "a path inside the variant's tree",
    ),
]


@pytest.mark.parametrize(
    ("extra", "key", "words"), [b[1:] for b in BAD_ENV], ids=[b[0] for b in BAD_ENV]
)
def test_bad_environment(tree: Path, extra: str, key: str, words: str) -> None:
    path = tree / "exp.yaml"
    text = BASE.replace("BUILD", "pip").replace("EXTRA", extra)
    if "variant" in extra:
        text = text.replace("tests/test_a.py", "../tests/test_a.py")
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_experiment(path)
    assert info.value.key == key and words in str(info.value), str(info.value)


def test_a_prebuilt_control_takes_no_patches(tree: Path) -> None:
    (tree / "bug.patch").write_text("")
    build = "{kind: prebuilt, installed: userext}\n    patches: [bug.patch]"
    with pytest.raises(ConfigError, match="takes no patches") as info:
        load(tree, build)
    assert info.value.key == "variants[1].patches"
