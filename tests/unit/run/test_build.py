"""build: the three kinds on tiny real subjects, through the cache: an unchanged
variant is never rebuilt, a failed build says why, concurrent builds share one entry."""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
import sys
import threading
from pathlib import Path

import pytest

from orchestrator.backends.base import BuildFlags
from orchestrator.cache import Cache
from orchestrator.errors import BuildError
from orchestrator.model import BuildKind, BuildSpec, SourceKind, SourceSpec, SourceTree, Variant
from orchestrator.run import build
from orchestrator.run.sources import tree_digest

pytestmark = pytest.mark.process  # builds, runs a checker, git or a child process

# a "compiler" that records its flags; each run's binary is its own (a random nonce), so
# equal binaries are one run (a sandboxed step writes nothing outside its tree to count in)
MAKE = """\
import os, pathlib, sys, uuid
pathlib.Path("prog").write_text(f"binary {os.environ.get('CFLAGS', '')} {uuid.uuid4()}")
pathlib.Path("flags.json").write_text(__import__("json").dumps(dict(os.environ)))
sys.exit(int(os.environ.get("FAIL", "0")))
"""
# a jit build description honouring csorch's contract
DESCRIPTION = """\
import argparse, pathlib, sys

p = argparse.ArgumentParser()
for o in ("--root", "--build-dir", "--package-dir"):
    p.add_argument(o, required=True)
p.add_argument("--sanitize")
a = p.parse_args()
pkg = pathlib.Path(a.package_dir) / "subj"
pkg.mkdir(parents=True)
(pkg / "__init__.py").write_text(f"SANITIZE = {a.sanitize!r}\\n")
(pkg / "_C.so").write_text("not really a library")
print("built", a.root)
"""


def tree_of(root: Path, name: str = "v") -> SourceTree:
    """A fresh copy of `root`, as the pipeline materializes one per variant and run."""
    copy = root.parent / f"copy{next(_copies)}"
    shutil.copytree(root, copy)
    return SourceTree(name, copy, tree_digest(copy), SourceSpec(SourceKind.PATH, str(root)))


_copies = itertools.count()


@pytest.fixture
def subject(tmp_path: Path) -> Path:
    root = tmp_path / "subject"
    (root / "tools").mkdir(parents=True)
    (root / "make.py").write_text(MAKE)
    (root / "tools" / "build.py").write_text(DESCRIPTION)
    (root / "src.c").write_text("int main(void) { return 0; }\n")
    return root


def context(tmp_path: Path, **kw) -> build.Context:
    return build.Context(
        cache=Cache(tmp_path / "cache"),
        logs=tmp_path / "logs",
        python=sys.executable,
        toolchain={"cc": "test"},
        **kw,
    )


def command(tmp_path: Path, outputs: tuple[str, ...] = ("prog",), **env: str) -> Variant:
    env = dict(env)
    spec = BuildSpec(
        BuildKind.COMMAND,
        command=(sys.executable, "make.py"),
        outputs=outputs,
        env=tuple(sorted(env.items())),
    )
    return Variant("v", spec)


def test_a_command_build_is_published_and_never_rebuilt(subject: Path, tmp_path: Path) -> None:
    ctx = context(
        tmp_path,
        sanitizer="address",
        flags=BuildFlags(cflags=("-fsanitize=address",), ldflags=("-fsanitize=address",)),
    )
    first = build.build(command(tmp_path), tree_of(subject), ctx)
    assert first.ok and not first.cached and first.sanitizer == "address"
    assert first.workdir == first.directory / "tree" and (first.workdir / "prog").exists()
    assert [a.path for a in first.artifacts] == ["tree/prog"] and len(
        first.artifacts[0].sha256
    ) == 64
    env = json.loads((first.workdir / "flags.json").read_text())
    assert "-fsanitize=address" in env["CFLAGS"] and env["LDFLAGS"].endswith("-fsanitize=address")
    assert env["CSORCH_SANITIZE"] == "address"
    assert env["CSORCH_VERBOSE"] == "1"  # descriptions print their compiler command lines
    again = build.build(command(tmp_path), tree_of(subject), ctx)
    assert (
        again.cached and again.cache_key == first.cache_key and again.artifacts == first.artifacts
    )
    # not rebuilt: a run makes a binary of its own
    assert (tmp_path / "logs" / "v.log").exists()
    # another variant (of another experiment, say) with the same inputs shares the entry
    # but the record is its own
    twin = dataclasses.replace(command(tmp_path), name="twin")
    shared = build.build(twin, tree_of(subject), ctx)
    assert shared.cached and shared.cache_key == first.cache_key and shared.variant == "twin"
    assert (tmp_path / "logs" / "twin.log").exists()
    # anything that changes the binaries changes the key
    other = build.build(command(tmp_path), tree_of(subject), context(tmp_path, sanitizer=""))
    assert not other.cached and other.cache_key != first.cache_key
    (subject / "src.c").write_text("int main(void) { return 1; }\n")
    changed = build.build(command(tmp_path), tree_of(subject), ctx)
    assert not changed.cached and changed.artifacts not in (first.artifacts, other.artifacts)


def test_undeclared_outputs_are_what_the_build_wrote(subject: Path, tmp_path: Path) -> None:
    done = build.build(command(tmp_path, outputs=()), tree_of(subject), context(tmp_path))
    assert sorted(a.path for a in done.artifacts) == ["tree/flags.json", "tree/prog"]


def test_a_failed_build_is_not_published_and_keeps_its_log(subject: Path, tmp_path: Path):
    ctx = context(tmp_path)
    with pytest.raises(BuildError) as info:
        build.build(command(tmp_path, FAIL="3"), tree_of(subject), ctx)
    err = info.value
    assert (
        err.returncode == 3 and err.variant == "v" and err.log_path == tmp_path / "logs" / "v.log"
    )
    assert err.log_path.exists() and "exited 3" in str(err)
    assert list((tmp_path / "cache" / "entries").iterdir()) == []
    assert list((tmp_path / "cache" / "tmp").iterdir()) == []
    with pytest.raises(BuildError, match="declared output 'nope'"):
        build.build(command(tmp_path, outputs=("nope",)), tree_of(subject), ctx)


def test_concurrent_builds_of_one_key_build_once(subject: Path, tmp_path: Path) -> None:
    ctx = context(tmp_path)
    results = []

    def go() -> None:
        results.append(build.build(command(tmp_path), tree_of(subject), ctx))

    threads = [threading.Thread(target=go) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.cached for r in results) == [False, True, True]
    assert len({r.artifacts for r in results}) == 1  # one run: one binary


def test_a_jit_build_follows_the_description_contract(subject: Path, tmp_path: Path) -> None:
    spec = BuildSpec(BuildKind.JIT, description="tools/build.py")
    done = build.build(Variant("j", spec), tree_of(subject), context(tmp_path, sanitizer="address"))
    assert done.import_path == done.directory / "pkg"
    assert "SANITIZE = 'address'" in (done.import_path / "subj" / "__init__.py").read_text()
    assert [a.path for a in done.artifacts] == ["pkg/subj/_C.so"]
    assert done.steps[0][1].endswith("tools/build.py") and "--sanitize" in done.steps[0]


def test_a_jit_build_finds_the_only_build_py(subject: Path, tmp_path: Path) -> None:
    assert build.description(subject, "") == subject / "tools" / "build.py"
    (subject / "other").mkdir()
    (subject / "other" / "build.py").write_text("")
    assert build.description(subject, "") is None
    with pytest.raises(BuildError) as caught:
        build.build(Variant("j", BuildSpec(BuildKind.JIT)), tree_of(subject), context(tmp_path))
    assert "it has 2: other/build.py, tools/build.py" in caught.value.message
    assert "`build: {kind: jit, description: other/build.py}`" in caught.value.message


def test_a_jit_build_of_a_setup_py_tree_names_the_kinds_and_cites_no_missing_log(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ext"
    root.mkdir()
    (root / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    (root / "Makefile").write_text("all:\n\ttrue\n")
    for declared, why in (
        (
            "",
            "a jit build needs one build description, build.py or */build.py, in the tree; "
            "it has none",
        ),
        ("setup.py", "build.description names setup.py, which is not a jit build description"),
        ("tools/b.py", "build.description 'tools/b.py' is not a file in the tree"),
    ):
        variant = Variant("j", BuildSpec(BuildKind.JIT, description=declared))
        with pytest.raises(BuildError) as caught:
            build.build(variant, tree_of(root), context(tmp_path))
        message = caught.value.message
        assert why in message, message
        assert "`build: wheel` (pip wheel of the tree's setup.py)" in message
        assert "`build: {kind: command, command: [make], outputs: [GLOB]}`" in message
        assert "--package-dir P" in message
        # nothing ran, so there is no log: none is cited
        assert "full log" not in message and caught.value.log_path is None
        assert not (tmp_path / "logs" / "j.log").exists()


def test_a_wheel_build_installs_into_a_private_directory(tmp_path: Path) -> None:
    root = tmp_path / "pkgsrc"
    (root / "tinypkg").mkdir(parents=True)
    (root / "tinypkg" / "__init__.py").write_text("VALUE = 42\n")
    (root / "setup.py").write_text(
        "from setuptools import setup\nsetup(name='tinypkg', version='1.0', packages=['tinypkg'])\n"
    )
    done = build.build(Variant("w", BuildSpec(BuildKind.WHEEL)), tree_of(root), context(tmp_path))
    assert (done.import_path / "tinypkg" / "__init__.py").exists()
    assert [a.path for a in done.artifacts if a.path.endswith(".whl")] == [
        "wheel/tinypkg-1.0-py3-none-any.whl"
    ]
