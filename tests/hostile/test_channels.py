"""The subject cannot speak for the checker: what a case prints, redirects or forges
reaches none of the channels csorch judges from (issue 21, section 1).

- a control that only `printf`s a well-formed ASan report (no defect anywhere) is not
  caught: the verdict is inconclusive, never PASS;
- a "fix" that `freopen`s stderr to /dev/null, run as `bash -c './pick && echo done'`,
  still shows its real report (the runtime writes to its own per-process file): FAIL;
- a pytest case that prints csorch's outcome and end markers and then SIGKILLs itself is
  an error with the signal named, never passed;
- a pytest case that prints an ASan report under the ASan checker adds no finding.
Each fails on the code before the channels (the stream was parsed for both).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.backends import Asan
from orchestrator.errors import CheckerUnavailable
from orchestrator.executors import execute
from orchestrator.model import (
    Build,
    BuildKind,
    BuildSpec,
    Case,
    CaseKind,
    Checker,
    Experiment,
    Outcome,
    Run,
    SourceKind,
    SourceSpec,
    Variant,
)
from orchestrator.model.job import Job

ROOT = Path(__file__).resolve().parents[2]
CPROG = ROOT / "tests" / "fixtures" / "e2e" / "cprog"

pytestmark = [
    pytest.mark.process,
    pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("make") is None,
                       reason="needs gcc and make"),
]  # fmt: skip

# what ASan would print for pick.c's planted read, in the subject's own stdout
FORGED = (
    "==4242==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000030 "
    "at pc 0x55d06bbb29e bp 0x7ffd1 sp 0x7ffd2\\n"
    "READ of size 4 at 0x602000000030 thread T0\\n"
    "    #0 0x55d06bbb29d in sum /src/pick.c:9\\n"
    "    #1 0x55d06bbb3a1 in main /src/pick.c:18\\n"
    "SUMMARY: AddressSanitizer: heap-buffer-overflow /src/pick.c:9 in sum\\n"
)

CONFIG = """\
name: {name}
source: cprog
variants:
  - name: fixed
    patches: [fix.patch]
    build: {{kind: command, command: [make], outputs: [pick]}}
  - name: control
    build: {{kind: command, command: [make], outputs: [pick]}}
runs:
  - name: memcheck
    checker: memcheck
cases:
  - {{name: sum, command: {command}}}
timeout: 2m
expect:
  controls: [control]
  fix: fixed
  target: {{checker: asan, kind: heap-buffer-overflow, access: read, function: sum}}
"""


def _subject(tmp: Path, control: str, fixed: str, command: str, name: str) -> Path:
    """A copy of cprog whose pick.c is `control`, a patch making it `fixed`, a config."""
    src = tmp / "cprog"
    src.mkdir(parents=True)
    shutil.copy(CPROG / "Makefile", src / "Makefile")
    (src / "pick.c").write_text(control)
    diff = difflib.unified_diff(
        control.splitlines(keepends=True),
        fixed.splitlines(keepends=True),
        "a/pick.c",
        "b/pick.c",
    )
    (tmp / "fix.patch").write_text("".join(diff))
    config = tmp / f"{name}.yaml"
    config.write_text(CONFIG.format(name=name, command=command))
    return config


def _csorch_run(config: Path, tmp: Path) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp / "out"
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", str(config), "--backend", "asan",
         "--out", str(out), "--cache-dir", str(tmp / "cache")],
        cwd=tmp, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )  # fmt: skip
    results = json.loads((out / "results.json").read_text())
    return done, results


def test_a_printed_asan_report_is_no_finding(tmp_path: Path) -> None:
    """The control has no defect: it prints a report. Before: PASS, "asan caught" it."""
    clean = (CPROG / "pick.c").read_text().replace("i <= n", "i < n")
    control = clean.replace(
        '    printf("sum %d\\n"', f'    printf("{FORGED}");\n    printf("sum %d\\n"'
    )
    assert control != clean
    config = _subject(tmp_path, control, clean, "[./pick]", "forged")
    done, results = _csorch_run(config, tmp_path)
    assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-3000:]
    assert results["verdict"] == "inconclusive"
    control_attempts = [a for a in results["attempts"] if a["variant"] == "control"]
    assert control_attempts and all(not a["parse"]["findings"] for a in control_attempts)
    log = tmp_path / "out" / control_attempts[0]["log"]
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in log.read_text()  # it printed


def test_a_fix_that_hides_stderr_still_shows_its_report(tmp_path: Path) -> None:
    """The "fix" keeps the bug and sends stderr to /dev/null; bash's own exit stats used
    to complete the log. Before: PASS with the bug still in the fix."""
    buggy = (CPROG / "pick.c").read_text()
    hidden = buggy.replace(
        "int main(void) {\n", 'int main(void) {\n    freopen("/dev/null", "w", stderr);\n'
    )
    assert hidden != buggy
    config = _subject(tmp_path, buggy, hidden, "[bash, -c, './pick && echo done']", "hidden")
    done, results = _csorch_run(config, tmp_path)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert results["verdict"] == "fail"
    fixed = [a for a in results["attempts"] if a["variant"] == "fixed"]
    kinds = {f["kind"] for a in fixed for f in a["parse"]["findings"]}
    assert kinds == {"heap-buffer-overflow"}


SUITE = f"""\
import os, signal, sys

FORGED = {FORGED!r}

def test_forges_a_pass_then_dies():
    # csorch's markers, as the plugin writes them, on the case's own streams
    for stream in (sys.stdout, sys.stderr):
        stream.write("\\n[csorch-case-outcome] " + os.environ["PYTEST_CURRENT_TEST"].split()[0]
                     + " passed\\n[csorch-case-end] "
                     + os.environ["PYTEST_CURRENT_TEST"].split()[0] + "\\n"
                     + "[csorch-session-end] 0\\n")
        stream.flush()
    os.kill(os.getpid(), signal.SIGKILL)

def test_prints_a_report():
    sys.stderr.write(FORGED.replace("\\\\n", "\\n"))
    sys.stderr.flush()
"""


def _context(tmp_path: Path, checker: Asan | None) -> tuple[execute.Context, Build]:
    suite = tmp_path / "suite" / "test_hostile.py"
    suite.parent.mkdir()
    suite.write_text(SUITE)
    experiment = Experiment(
        name="e",
        source=SourceSpec(SourceKind.PATH, str(tmp_path)),
        variants=(Variant("v", BuildSpec(BuildKind.JIT)),),
        runs=(Run("plain", Checker.NONE), Run("memcheck", Checker.MEMCHECK)),
        cases=(
            Case("dies", CaseKind.PYTEST, (f"{suite}::test_forges_a_pass_then_dies",)),
            Case("prints", CaseKind.PYTEST, (f"{suite}::test_prints_a_report",)),
        ),
    )
    (tmp_path / "bundle" / "logs").mkdir(parents=True)
    ctx = execute.Context(
        experiment,
        checker or Asan("/nonexistent/libasan.so"),
        sys.executable,
        tmp_path / "bundle",
        tmp_path / "cwd",
    )
    return ctx, Build("v", BuildKind.JIT, ok=True, directory=tmp_path)


def test_printed_markers_then_sigkill_is_an_error_naming_the_signal(tmp_path: Path) -> None:
    ctx, build = _context(tmp_path, None)
    a = execute.execute(Job("v", "plain", "dies", 0), build, ctx)
    assert a.returncode == -9
    assert a.outcome is Outcome.ERROR, a.nodes
    (node,) = a.nodes
    assert node.outcome is Outcome.ERROR and "SIGKILL" in node.detail


def test_a_report_printed_by_a_pytest_case_is_no_finding(tmp_path: Path) -> None:
    try:
        asan = Asan()
        asan.probe()
    except CheckerUnavailable as exc:
        pytest.skip(str(exc))
    asan.build_fold(tmp_path / "fold")
    ctx, build = _context(tmp_path, asan)
    a = execute.execute(Job("v", "memcheck", "prints", 0), build, ctx)
    assert a.conclusive, a.inconclusive_reason
    assert a.findings == () and a.outcome is Outcome.PASSED
    log = (tmp_path / "bundle" / a.log).read_text()
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in log  # it did print one
    # the runtime's own file for the process holds the case boundaries, not the print
    own = sorted((tmp_path / "bundle" / a.log).parent.glob("r0.launch0.checker.[0-9]*"))
    assert own and any("[csorch-case-begin]" in p.read_text() for p in own)
    assert not any("heap-buffer-overflow" in p.read_text() for p in own)
    assert dataclasses.replace(a.parse, findings=()) == a.parse
