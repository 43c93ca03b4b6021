"""The CLI under the Typers a user's machine may already have: csorch installs with
`--no-deps` where there is no network (a GPU host), so it runs on whatever Typer is
there. 0.24 uses Click itself; 0.28 carries its own copy of Click without the type
descriptors 0.29 added. Every verb's --help and a bad probe argument (git bisect's 128,
not 2) must work under each."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator import cli

pytestmark = pytest.mark.process

VERBS = sorted(c.name for c in cli.app.registered_commands if c.name and not c.hidden)
ROOT = Path(__file__).resolve().parents[3]

_SCRIPT = """
import sys
import typer
from typer.testing import CliRunner
from orchestrator import cli
runner = CliRunner()
print("typer", typer.__version__)
for verb in sys.argv[1:]:
    done = runner.invoke(cli.app, [*([verb] if verb else []), "--help"], env={"COLUMNS": "80"})
    assert done.exit_code == 0, (verb, done.output, done.exception)
    assert "<bool>" not in done.output and "<int>" not in done.output, done.output
done = runner.invoke(cli.app, ["probe", "--no-such-option"])
print("probe-bad", done.exit_code)
"""


@pytest.fixture(scope="module", params=["0.24.1", "0.28.0"])
def typer_site(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path]:
    site = tmp_path_factory.mktemp(f"typer-{request.param}")
    got = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--target",
            str(site),
            f"typer=={request.param}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if got.returncode != 0:  # no package index reachable: nothing to install from
        pytest.skip(f"pip could not install typer=={request.param}: {got.stderr[-300:]}")
    return request.param, site


def test_every_verb_works_under_an_older_typer(typer_site: tuple[str, Path]) -> None:
    version, site = typer_site
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, "", *VERBS],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"typer {version}" in done.stdout, done.stdout
    assert "probe-bad 128" in done.stdout, done.stdout
