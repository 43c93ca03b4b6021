"""The one boundary between the library and the exit codes (cli/common.py): what each
error, interrupt and signal the library raises becomes, with the words the user reads."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from orchestrator import cli
from orchestrator.cli import common
from orchestrator.errors import CsorchError
from orchestrator.gate import pipeline as gate
from orchestrator.gate.policy import GateResult
from orchestrator.model import Verdict
from orchestrator.run import journal

runner = CliRunner()
OUT = Path("/tmp/csorch-boundary-out")
FULL = OSError(28, "No space left on device")


def verb(raised: BaseException) -> typer.Typer:
    """An app with the CLI's boundary and one verb that raises `raised`."""
    app = typer.Typer(cls=common._Boundary)

    @app.command("run")
    def run() -> None:
        raise raised

    @app.command("other")  # two commands: the verb's name is given, as csorch's are
    def other() -> None: ...

    return app


def said(raised: BaseException) -> tuple[int, str]:
    result = runner.invoke(verb(raised), ["run"])
    return result.exit_code, " ".join(result.output.split())


def test_a_csorch_error_is_a_usage_error_with_its_hint() -> None:
    code, output = said(CsorchError("--out x is a file", hint="give a new directory"))
    assert code == cli.ExitCode.USAGE
    assert output == "error: --out x is a file hint: give a new directory"


def test_an_interrupt_prints_the_command_that_resumes() -> None:
    code, output = said(journal.Interrupted("run", OUT))
    assert code == cli.ExitCode.INCONCLUSIVE
    assert output == f"interrupted; resume with: csorch run --resume {OUT}"
    code, output = said(gate.Interrupted(OUT))
    assert (code, output) == (3, f"interrupted; resume with: csorch gate --resume {OUT}")


def test_a_directory_not_written_is_inconclusive_and_resumable() -> None:
    code, output = said(journal.NotWritten(FULL, "run", OUT))
    assert code == cli.ExitCode.INCONCLUSIVE
    assert output == (
        f"error: cannot write in {OUT}: No space left on device; the run is inconclusive; "
        f"once fixed, resume with: csorch run --resume {OUT}"
    )
    code, output = said(gate.NotWritten(FULL, OUT, None, ran=False))  # nothing ran
    assert (code, output) == (3, f"error: --out {OUT}: [Errno 28] No space left on device")


def test_a_fail_stays_a_fail_when_its_gate_cannot_be_written() -> None:
    failed = GateResult("g", Verdict.FAIL, (), (), (), ())
    assert said(gate.NotWritten(FULL, OUT, failed, ran=True))[0] == cli.ExitCode.FAIL
    # a pass whose evidence is not written is no pass
    passed = GateResult("g", Verdict.PASS, (), (), (), ())
    assert said(gate.NotWritten(FULL, OUT, passed, ran=True))[0] == cli.ExitCode.INCONCLUSIVE


def test_an_interrupt_with_nothing_to_resume_is_typers_own() -> None:
    assert said(KeyboardInterrupt())[0] == 130  # Typer's code for Ctrl-C


def test_a_verb_of_another_protocol_keeps_its_own_code(monkeypatch) -> None:
    monkeypatch.setitem(common.ABORT, "run", 128)
    assert said(CsorchError("no such commit"))[0] == 128
    assert said(KeyboardInterrupt()) == (128, "interrupted")


def test_the_boundary_puts_the_signal_handlers_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    said(CsorchError("x"))
    assert signal.getsignal(signal.SIGTERM) is before


def test_probe_speaks_git_bisect_runs_abort() -> None:
    result = runner.invoke(cli.app, ["probe", "/nonexistent/config.yaml"])
    assert result.exit_code == 128, result.output


@pytest.mark.process
def test_sigterm_is_ctrl_c_and_names_the_resume(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import os, signal, time
        import typer
        from orchestrator.cli import common
        from orchestrator.run import journal

        app = typer.Typer(cls=common._Boundary)

        @app.command("run")
        def run() -> None:
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(30)
            except KeyboardInterrupt:
                raise journal.Interrupted("run", {str(tmp_path)!r}) from None

        @app.command("other")
        def other() -> None: ...

        app(["run"])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[3],
        env={**os.environ},
    )
    assert done.returncode == cli.ExitCode.INCONCLUSIVE, done.stderr
    assert f"interrupted; resume with: csorch run --resume {tmp_path}" in done.stderr
