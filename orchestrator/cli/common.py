"""What every verb shares: the Typer app, the consoles, exit codes, the error printer, and
the checks of options that several verbs take."""

from __future__ import annotations

import enum
import platform
import sys
from pathlib import Path

import typer
from rich.console import Console

from orchestrator import __version__, backends, host
from orchestrator.errors import CsorchError
from orchestrator.model import Verdict
from orchestrator.run.plan import parse_devices

app = typer.Typer(
    name="csorch",
    help="Compute Sanitizer validation orchestrator: builds patched and unpatched variants "
    "of a CUDA/C++ extension, runs their cases under a checker, and judges whether the "
    "fix causally removes the defect.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# a table of variants x runs is wide: do not squeeze it into 80 columns when piped
out = Console(width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True)


class ExitCode(enum.IntEnum):
    PASS = 0
    FAIL = 1
    USAGE = 2
    INCONCLUSIVE = 3


def fail(error: CsorchError) -> typer.Exit:
    """Print a csorch error for the user; the caller raises the returned Exit."""
    err.print(f"[bold red]error:[/] {error.message}", highlight=False, soft_wrap=True)
    if error.hint:
        err.print(f"[dim]hint:[/] {error.hint}", highlight=False, soft_wrap=True)
    return typer.Exit(ExitCode.USAGE)


def _print_version(value: bool) -> None:
    if value:
        out.print(f"csorch {__version__}", highlight=False)
        raise typer.Exit(ExitCode.PASS)


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """csorch: causal validation of fixes under compute-sanitizer (or ASan on a CPU)."""


@app.command("version")
def version_command() -> None:
    """Print csorch's version and the Python running it."""
    out.print(f"csorch {__version__}", highlight=False)
    out.print(f"python {platform.python_version()} ({sys.executable})", highlight=False)


def check_backend(name: str) -> None:
    """CsorchError unless `name` is a backend --backend accepts (checked before any work)."""
    if name not in backends.CHOICES:
        raise CsorchError(
            f"unknown backend {name!r}", hint="choose one of: " + ", ".join(backends.CHOICES)
        )


def choose_backend(requested: str) -> tuple[backends.Choice, host.Facts]:
    """The backend to run with and the host's facts (torch's own answer still coming:
    the workflow joins it behind the builds); CsorchError for an unknown name or a
    checker asked for by name that is missing."""
    check_backend(requested)
    facts = host.start(sys.executable, backends.probe_checkers)
    sanitizer, asan = facts.checkers
    choice = backends.choose(requested, gpus=len(facts.fast.gpus), sanitizer=sanitizer, asan=asan)
    return choice, facts


def resolve_devices(text: str | None, backend: str, facts: host.Host) -> tuple[str, ...]:
    """`--devices`: explicit GPU indices/UUIDs, or `all` (every GPU present when there are
    two or more; one GPU or none needs no fan-out). CsorchError for bad text, or explicit
    devices with the ASan backend (it runs on the CPU)."""
    if text is None:
        return ()
    if text.strip() == "all":
        gpus = len(facts.gpus) if backend != "asan" else 0
        return tuple(str(i) for i in range(gpus)) if gpus >= 2 else ()
    try:
        devices = parse_devices(text)
    except ValueError as exc:
        raise CsorchError(f"--devices: {exc}") from None
    if backend == "asan":
        raise CsorchError(
            "--devices fans out over GPUs; the ASan backend runs on the CPU",
            hint="drop --devices, or use --backend compute-sanitizer",
        )
    return devices


def check_out(path: Path) -> None:
    """CsorchError unless `--out path` can become a new results directory: not a file,
    not under one, and empty if it exists (a bundle's manifest hashes every log in it:
    old files would pass as evidence)."""
    if path.exists() and not path.is_dir():
        raise CsorchError(f"--out {path} is a file", hint="give a new directory")
    parent = next((p for p in path.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise CsorchError(f"--out {path} is under {parent}, a file", hint="give a new directory")
    if path.is_dir() and any(path.iterdir()):
        raise CsorchError(f"--out {path} is not empty", hint="give a new directory")


def interrupt(signum: int, frame: object) -> None:
    """SIGTERM handler: a CI job is cancelled with SIGTERM; treat it as Ctrl-C, so the
    children are stopped and the bundle or state is left valid (they run in their own
    sessions and would otherwise be orphaned)."""
    raise KeyboardInterrupt


VERDICT_EXIT = {
    Verdict.PASS: ExitCode.PASS,
    Verdict.FAIL: ExitCode.FAIL,
    Verdict.INCONCLUSIVE: ExitCode.INCONCLUSIVE,
}
