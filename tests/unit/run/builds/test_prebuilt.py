"""builds/prebuilt: the pinned-release control is the release binary as users install it (a
wheel file, a pinned requirement from a wheel directory, an installed distribution),
nothing rebuilt, its binaries hashed and its identity (name, version, wheel, sha256)
recorded; one that cannot be found fails the build, saying which."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

from orchestrator.errors import BuildError
from orchestrator.files import file_digest
from orchestrator.model import Build, BuildKind, BuildSpec, Variant
from orchestrator.run import build
from orchestrator.run.builds.prebuilt import WHEEL_RE
from tests.unit.run.conftest import context, tree_of

pytestmark = pytest.mark.process  # pip installs the wheel in a child

WHEEL = "tinypkg-1.0-py3-none-any.whl"


def prebuilt(**spec: str) -> Variant:
    return Variant("release", BuildSpec(BuildKind.PREBUILT, **spec))


def test_a_wheel_file_is_installed_unchanged(project: Path, wheelhouse: Path, tmp_path: Path):
    wheel = wheelhouse / WHEEL
    done = build.build(prebuilt(wheel=str(wheel)), tree_of(project), context(tmp_path))
    assert done.distribution is not None
    assert (done.distribution.name, done.distribution.version) == ("tinypkg", "1.0")
    assert done.distribution.wheel == WHEEL and done.distribution.sha256 == file_digest(wheel)
    assert {a.path for a in done.artifacts} == {f"wheel/{WHEEL}", "pkg/tinypkg/_C.so"}
    assert (done.import_path / "tinypkg" / "__init__.py").exists()
    assert Build.from_dict(done.to_dict()) == done  # the bundle keeps the identity
    again = build.build(prebuilt(wheel=str(wheel)), tree_of(project), context(tmp_path))
    assert again.cached and again.distribution == done.distribution


def test_a_pinned_requirement_comes_from_the_wheel_directory(
    project: Path, wheelhouse: Path, tmp_path: Path
) -> None:
    variant = prebuilt(requirement="tinypkg==1.0", find_links=str(wheelhouse))
    done = build.build(variant, tree_of(project), context(tmp_path))
    assert done.distribution.sha256 == file_digest(wheelhouse / WHEEL)
    assert done.distribution.origin == f"tinypkg==1.0 from {wheelhouse}"
    download = done.steps[0]
    assert "download" in download and "--no-index" in download
    missing = prebuilt(requirement="tinypkg==2.0", find_links=str(wheelhouse))
    with pytest.raises(BuildError, match="pip download"):
        build.build(missing, tree_of(project), context(tmp_path))


def test_an_installed_distribution_is_copied_with_its_identity(
    project: Path, wheelhouse: Path, tmp_path: Path
) -> None:
    env = tmp_path / "venv"
    venv.create(env, system_site_packages=False, with_pip=False)
    python = env / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "-q",
            "--target",
            site,
            str(wheelhouse / WHEEL),
        ],
        check=True,
    )
    ctx = context(tmp_path, python=str(python))
    done = build.build(prebuilt(installed="tinypkg"), tree_of(project), ctx)
    assert (done.distribution.name, done.distribution.version) == ("tinypkg", "1.0")
    assert done.distribution.origin.startswith(f"installed in {python}")
    assert [a.path for a in done.artifacts] == ["pkg/tinypkg/_C.so"]
    with pytest.raises(BuildError, match="no distribution 'nothere' is installed"):
        build.build(prebuilt(installed="nothere"), tree_of(project), ctx)


def test_wheel_names() -> None:
    m = WHEEL_RE.match("extension_cpp-0.0.1-1-cp311-cp311-linux_x86_64.whl")
    assert m and (m["name"], m["version"]) == ("extension_cpp", "0.0.1")
    assert not WHEEL_RE.match("extension_cpp-0.0.1.tar.gz")
