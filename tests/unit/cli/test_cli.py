"""cli: the Typer app answers --help, --version and version; errors become exit code 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from orchestrator import __version__, cli
from orchestrator.cli import common as cli_app
from orchestrator.errors import ConfigError

pytestmark = pytest.mark.process  # builds, runs a checker, git or a child process

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[3]


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
    exit_ = cli_app.fail(
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


def _config(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir(exist_ok=True)
    path = tmp_path / "exp.yaml"
    path.write_text(
        "name: e\nsource: src\nvariants: [{name: v, build: {kind: command, command: [make]}}]\n"
        "runs: [{name: m, checker: memcheck}]\ncases: [[./prog]]\n"
    )
    return path


def test_run_rejects_an_unknown_backend(tmp_path: Path) -> None:
    result = runner.invoke(cli.app, ["run", str(_config(tmp_path)), "--backend", "valgrind"])
    assert result.exit_code == cli.ExitCode.USAGE and "unknown backend" in result.output


def test_run_reports_a_bad_config_with_its_line(tmp_path: Path) -> None:
    path = _config(tmp_path)
    path.write_text(path.read_text().replace("checker: memcheck", "checker: memchek"))
    result = runner.invoke(cli.app, ["run", str(path), "--backend", "asan"])
    assert result.exit_code == cli.ExitCode.USAGE
    assert "exp.yaml:4: runs[0].checker: 'memchek' is not allowed" in result.output


def test_an_explicit_checker_that_is_missing_is_an_error(tmp_path: Path) -> None:
    from orchestrator.backends.compute_sanitizer.backend import locate

    if locate(os.environ) is not None:
        pytest.skip("compute-sanitizer is installed here")
    result = runner.invoke(
        cli.app, ["run", str(_config(tmp_path)), "--backend", "compute-sanitizer"]
    )
    assert result.exit_code == cli.ExitCode.USAGE
    assert "checker compute-sanitizer is unavailable" in result.output


def test_devices_need_a_gpu_backend(tmp_path: Path) -> None:
    result = runner.invoke(
        cli.app, ["run", str(_config(tmp_path)), "--backend", "asan", "--devices", "0,1"]
    )
    assert result.exit_code == cli.ExitCode.USAGE and "fans out over GPUs" in result.output
    bad = runner.invoke(cli.app, ["run", str(_config(tmp_path)), "--devices", "0,0"])
    assert bad.exit_code == cli.ExitCode.USAGE and "listed 2 times" in bad.output


def test_run_will_not_mix_into_an_old_bundle(tmp_path: Path) -> None:
    old = tmp_path / "old"
    old.mkdir()
    (old / "results.json").write_text("{}")
    result = runner.invoke(
        cli.app, ["run", str(_config(tmp_path)), "--backend", "asan", "--out", str(old)]
    )
    assert result.exit_code == cli.ExitCode.USAGE and "is not empty" in result.output


def test_run_only_some_cases(tmp_path: Path) -> None:
    config = ROOT / "tests" / "fixtures" / "e2e" / "c-oob.yaml"
    bad = runner.invoke(cli.app, ["run", str(config), "--backend", "asan", "--case", "nope"])
    assert bad.exit_code == cli.ExitCode.USAGE
    assert "no case named 'nope'" in bad.output and "cases: sum" in bad.output
    out = tmp_path / "out"
    good = runner.invoke(
        cli.app,
        ["run", str(config), "--backend", "asan", "--case", "sum", "--out", str(out),
         "--cache-dir", str(tmp_path / "cache")],
    )
    assert good.exit_code == cli.ExitCode.PASS, good.output


# --- found when tried as a new user would (issue 11): clear errors, no tracebacks -------

E2E = ROOT / "tests" / "fixtures" / "e2e"


def csorch(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """csorch in a child process, as a user runs it (these fail before any build)."""
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args], cwd=cwd, capture_output=True, text=True,
        timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )  # fmt: skip


def test_run_out_that_is_a_file_or_under_one_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    for out, says in ((tmp_path / "f", "is a file"), (tmp_path / "f" / "sub", "a file")):
        done = csorch("run", str(E2E / "c-oob.yaml"), "--backend", "asan", "--out", str(out),
                      cwd=tmp_path)  # fmt: skip
        assert done.returncode == cli.ExitCode.USAGE, done.stderr
        assert says in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / "f").read_text() == "x"


def test_a_config_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    config = tmp_path / "latin1.yaml"
    config.write_bytes((E2E / "c-oob.yaml").read_bytes() + "# caf\u00e9\n".encode("latin-1"))
    done = csorch("run", str(config), "--backend", "asan", cwd=tmp_path)
    assert done.returncode == cli.ExitCode.USAGE
    assert f"{config}:" in done.stderr and "not UTF-8" in done.stderr
    assert "--devices" not in done.stderr


@pytest.mark.parametrize(
    ("devices", "says"),
    [
        ("", "names no device"),
        ("-1,0,0", "'-1' is not a GPU index or UUID; '0' is listed 2 times"),
    ],
)
def test_bad_devices_are_refused_with_every_problem(tmp_path: Path, devices: str, says: str):
    done = csorch("run", str(E2E / "c-oob.yaml"), "--devices", devices, cwd=tmp_path)
    assert done.returncode == cli.ExitCode.USAGE and says in done.stderr, done.stderr


def test_a_host_whose_facts_disagree_stops_the_run_clearly(tmp_path: Path, fake_host) -> None:
    """torch sees one GPU where nvidia-smi lists two: the builds (keyed by the fast facts)
    ran, no attempt did, exit 2 with the fact, both values and what to do."""
    one = [("NVIDIA H200", "9.0", "GPU-0")]
    fake_host.torch("__version__ = '2.13.0+cu130'\ncuda = '13.0'\n", one)
    fake_host.smi(["580.95.05, NVIDIA H200, 9.0"] * 2)
    pythonpath = os.pathsep.join([str(ROOT), os.environ["PYTHONPATH"]])
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", str(E2E / "c-oob.yaml"), "--backend",
         "asan", "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": pythonpath, "COLUMNS": "200"},
    )  # fmt: skip
    assert done.returncode == cli.ExitCode.USAGE, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "error: the host's facts disagree: the GPU count is 2 by torch/version.py and " \
        "nvidia-smi but 1 by `import torch`" in done.stderr  # fmt: skip
    assert "the builds were keyed by the first, so no attempt runs on them" in done.stderr
    assert "hint:" in done.stderr and not (tmp_path / "out" / "results.json").exists()
