"""cli: the Typer app answers --help, --version and version; errors become exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from orchestrator import __version__, cli
from orchestrator.errors import ConfigError

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


def test_help_lists_the_commands() -> None:
    result = runner.invoke(cli.app, ["--help"])
    assert result.exit_code == 0
    assert "Compute Sanitizer validation orchestrator" in result.output
    assert "version" in result.output


def test_version_command_and_flag() -> None:
    result = runner.invoke(cli.app, ["version"])
    assert result.exit_code == 0 and f"csorch {__version__}" in result.output
    assert "python" in result.output
    flag = runner.invoke(cli.app, ["--version"])
    assert flag.exit_code == 0 and flag.output.strip() == f"csorch {__version__}"


def test_unknown_command_is_a_usage_error() -> None:
    assert runner.invoke(cli.app, ["frobnicate"]).exit_code == cli.ExitCode.USAGE


def test_exit_codes_are_distinct() -> None:
    assert len({int(c) for c in cli.ExitCode}) == len(cli.ExitCode)
    assert (cli.ExitCode.PASS, cli.ExitCode.FAIL) == (0, 1)


def test_fail_prints_message_and_hint(capsys: pytest.CaptureFixture[str]) -> None:
    exit_ = cli.fail(
        ConfigError("c.yaml", 3, "runs[0].checker", "'x' is not allowed", hint="choose memcheck")
    )
    assert isinstance(exit_, typer.Exit) and exit_.exit_code == cli.ExitCode.USAGE
    err = capsys.readouterr().err
    assert "c.yaml:3: runs[0].checker: 'x' is not allowed" in err and "choose memcheck" in err


def test_python_dash_m_runs_the_app() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "--version"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.strip() == f"csorch {__version__}"
