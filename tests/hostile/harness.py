"""Helpers of the hostile suite: experiment configs written into a temp dir, csorch and
git run as child processes the way a user runs them, and csorch's CLI called in process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
E2E = ROOT / "tests" / "fixtures" / "e2e"


def invoke(*args: str):
    """csorch's CLI in this process; a traceback is never an answer: every damaged input
    gets an exit code and a reason."""
    from typer.testing import CliRunner

    from orchestrator import cli

    result = CliRunner().invoke(cli.app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.output,
        result.exception,
    )
    return result


def experiment(
    place: Path,
    *,
    name: str = "exp",
    source: str = "subject",
    cases: str = "[{name: sum, command: [./pick]}]",
    outputs: str = "[pick]",
    repeats: int = 1,
    runs: str = "[{name: plain, checker: none}, {name: memcheck, checker: memcheck}]",
    expect: bool = True,
) -> Path:
    """An experiment config in `place`: the fixed and unfixed C subject, like c-oob.yaml."""
    text = f"""\
name: {name}
source: {source}
repeats: {repeats}
variants:
  - name: fixed
    patches: [fix.patch]
    build: {{kind: command, command: [make], outputs: {outputs}}}
  - name: control
    build: {{kind: command, command: [make], outputs: {outputs}}}
runs: {runs}
cases: {cases}
timeout: 1m
"""
    if expect:
        text += """\
expect:
  controls: [control]
  fix: fixed
  target: {checker: asan, kind: heap-buffer-overflow, access: read, function: sum}
"""
    path = place / f"{name}.yaml"
    path.write_text(text)
    return path


def start(place: Path, *args: str | os.PathLike[str], **kwargs) -> subprocess.Popen:
    """`python -m orchestrator ARGS` in `place`, not waited for."""
    return subprocess.Popen(
        [sys.executable, "-m", "orchestrator", *map(str, args)],
        cwd=place,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(place),
        **kwargs,
    )


def _env(place: Path) -> dict[str, str]:
    """csorch's environment for a try in `place`: its build cache (and so its work
    directory, CACHE/work) under place/build/csorch-cache, never the user's."""
    cache = str(place / "build" / "csorch-cache")
    return {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", "CSORCH_CACHE_DIR": cache}


def csorch(place: Path, *args: str | os.PathLike[str], timeout: float = 240):
    """`python -m orchestrator ARGS` in `place`, to its end."""
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *map(str, args)],
        cwd=place,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(place),
    )


def said(done: subprocess.CompletedProcess) -> str:
    return done.stdout + done.stderr


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()
