"""What every verb shares: the Typer app, the consoles, exit codes, the options several
verbs take, and the one boundary (`_Boundary`) where the library's errors, interrupts and
signals become exit codes and messages: a verb raises or lets through what the library
raises, and never translates it itself."""

from __future__ import annotations

import enum
import os
import platform
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from typer.core import TyperGroup

from orchestrator import __version__, cache, files, proc
from orchestrator.cli import helptext
from orchestrator.cli.helptext import _click
from orchestrator.config.slurm import SLURM
from orchestrator.errors import CsorchError
from orchestrator.model import Verdict
from orchestrator.model.experiment import MAX_REPEATS
from orchestrator.run import journal
from orchestrator.run.builds import compilecache, remote

#: verbs that speak another protocol's exit codes: the one for "cannot judge" (a usage
#: error, an interrupt), in place of USAGE (probe: git bisect run's 128, set in probe.py)
ABORT: dict[str, int] = {}


class _Boundary(TyperGroup):
    """The one place, around every verb, where SIGINT and SIGTERM are caught (as Ctrl-C:
    children stopped, the bundle or state left valid, a second signal swallowed) and
    what the library raises becomes an exit code: a CsorchError is a usage error (2),
    an interrupted run, gate or bisection prints the command that resumes it and is
    inconclusive (3), and so is a directory that could not be written (a fail stays a
    fail)."""

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        """The verb, its help made to read at 80 columns (`helptext.tidy`)."""
        command = super().get_command(ctx, cmd_name)
        return helptext.tidy(command) if command is not None else None

    def format_help(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        helptext.tidy(self, ctx)
        for name in self.list_commands(ctx):
            self.get_command(ctx, name)  # the verb list shows each verb's tidied help
        super().format_help(ctx, formatter)

    def invoke(self, ctx: _click.Context) -> object:
        previous = proc.catch_signals()
        try:
            return super().invoke(ctx)
        except journal.NotWritten as exc:
            raise not_written(exc) from None
        except journal.Interrupted as exc:
            raise interrupted(exc.resume) from None
        except CsorchError as exc:
            code = ABORT.get(ctx.invoked_subcommand or "")
            raise fail(exc, ExitCode.USAGE if code is None else code) from None
        except KeyboardInterrupt:
            code = ABORT.get(ctx.invoked_subcommand or "")
            if code is None:
                raise  # nothing to resume: Typer's own (130)
            err.print("interrupted", highlight=False)
            raise typer.Exit(code) from None
        finally:
            proc.restore_signals(previous)


app = typer.Typer(
    cls=_Boundary,
    name="csorch",
    help="Compute Sanitizer validation orchestrator: builds patched and unpatched variants "
    "of a CUDA/C++ extension, runs their cases under a checker, and judges whether the "
    "fix causally removes the defect.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# a table of variants x runs is wide: do not squeeze it into 80 columns when piped, unless
# COLUMNS says how wide the reader is (a CI log viewer, a pager): then the tables fit it
out = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 200)
err = Console(stderr=True)


class ExitCode(enum.IntEnum):
    PASS = 0
    FAIL = 1
    USAGE = 2
    INCONCLUSIVE = 3


VERDICT_EXIT = {
    Verdict.PASS: ExitCode.PASS,
    Verdict.FAIL: ExitCode.FAIL,
    Verdict.INCONCLUSIVE: ExitCode.INCONCLUSIVE,
}

Backend = Annotated[
    str,
    typer.Option(
        help="auto | compute-sanitizer | asan (auto: compute-sanitizer where a "
        "GPU and the tool exist, else ASan)"
    ),
]
Jobs = Annotated[
    int | None, typer.Option(min=1, help="child processes at once (default: CPU count, up to 16)")
]
Repeat = Annotated[
    int | None, typer.Option(min=1, max=MAX_REPEATS, help="N for every run (at most 10,000)")
]
CacheDir = Annotated[
    Path,
    typer.Option(
        help="the build cache (default: $CSORCH_CACHE_DIR, else $XDG_CACHE_HOME/csorch, "
        "else ~/.cache/csorch; scratch trees go in its work/)"
    ),
]
CarryFrom = Annotated[
    Path | None,
    typer.Option(
        "--carry-from",
        help="a stored bundle or gate directory: where every changed file is proven not to "
        "execute (comments, docstrings) and every built file executes the same, its verdict "
        "carries and no attempt runs; else the run goes on as usual, saying why",
    ),
]
NoCompileCache = Annotated[
    bool,
    typer.Option(
        "--no-compile-cache",
        help="build without ccache (also: CSORCH_NO_COMPILE_CACHE=1); the build cache's "
        "key is as strict either way",
    ),
]


CompileCacheRemote = Annotated[
    str | None,
    typer.Option(
        "--compile-cache-remote",
        metavar="URL",
        help="share the compile cache through this Redis server, e.g. redis://cachehost:6379 "
        f"(also: {remote.ENV}, or the config's slurm: compile_cache)",
    ),
]


def compile_cache_off(off: bool, remote_url: str | None = None) -> None:
    """--no-compile-cache and --compile-cache-remote: set for the whole command (its
    builds, a resume's) through the variables run/builds/compilecache.py and remote.py
    read; where ccache is absent, says so once (the builds compile every unit, as
    without it). A bad URL is a usage error here, before anything runs."""
    if off:
        os.environ[compilecache.OFF_ENV] = "1"
    if remote_url is not None:
        remote.parse(remote_url, "--compile-cache-remote")
        os.environ[remote.ENV] = remote_url
    notice = compilecache.notice_once()
    if notice:
        err.print(f"[dim]compile cache:[/] {notice}", highlight=False, soft_wrap=True)


ExecutorOpt = Annotated[
    str | None,
    typer.Option(
        "--executor",
        help="local: child processes here; slurm: a job array per variant (default: the "
        "config's executor:, else local)",
    ),
]
SlurmOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--slurm",
        metavar="KEY=VALUE",
        help="a Slurm setting over the config's slurm: block (repeatable); keys: "
        + ", ".join(SLURM),
    ),
]
DEFAULT_CACHE = cache.DEFAULT_DIR


def fail(error: CsorchError, code: int = 2) -> typer.Exit:
    """Print a csorch error for the user; the caller raises the returned Exit (`code`,
    a usage error unless the verb speaks another protocol)."""
    err.print(f"[bold red]error:[/] {error.message}", highlight=False, soft_wrap=True)
    if error.hint:
        err.print(f"[dim]hint:[/] {error.hint}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def interrupted(command: str) -> typer.Exit:
    """What every long verb (run, gate, bisect) says on Ctrl-C or SIGTERM."""
    err.print(f"interrupted; resume with: {command}", highlight=False, soft_wrap=True)
    return typer.Exit(ExitCode.INCONCLUSIVE)


def cannot_write(exc: OSError, command: str, out_dir: Path) -> typer.Exit:
    """The bundle or the journal could not be written: what is journaled is kept, the
    verdict is INCONCLUSIVE, and the same command continues once the cause is fixed."""
    where = f" {exc.filename}" if exc.filename else f" in {out_dir}"
    err.print(
        f"[bold red]error:[/] cannot write{where}: {exc.strerror or exc}; the run is "
        f"inconclusive; once fixed, resume with: {command}",
        highlight=False,
        soft_wrap=True,
    )
    return typer.Exit(ExitCode.INCONCLUSIVE)


def not_written(exc: journal.NotWritten) -> typer.Exit:
    """A run's or gate's directory could not be written: inconclusive (a pass whose
    evidence was not written is no pass), a fail stays a fail; when nothing ran there is
    nothing to resume, only the --out to fix."""
    if not exc.ran:
        err.print(f"error: --out {exc.out}: {exc.error}", highlight=False, soft_wrap=True)
        stop = typer.Exit(ExitCode.INCONCLUSIVE)
    else:
        stop = cannot_write(exc.error, exc.resume, exc.out)
    return typer.Exit(ExitCode.FAIL) if exc.failed else stop


#: GitHub Actions names the job summary's file in this variable (Markdown, appended to)
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
#: what GitHub shows of one step's summary; past it the upload is refused
STEP_SUMMARY_LIMIT = 1024 * 1024


def step_summary(markdown: str, where: Path) -> None:
    """Append a verb's Markdown section to the workflow job's summary when csorch runs
    under GitHub Actions ($GITHUB_STEP_SUMMARY set). Cut to GitHub's limit, with a note
    saying where the whole report is; a summary that cannot be written is a warning (the
    verdict and the bundle do not depend on it)."""
    path = os.environ.get(STEP_SUMMARY)
    if not path:
        return
    text = markdown.rstrip("\n") + "\n\n"
    data = text.encode("utf-8")
    if len(data) > STEP_SUMMARY_LIMIT:
        note = f"\n\n_(cut to GitHub's summary limit: the whole report is in {where})_\n\n"
        keep = STEP_SUMMARY_LIMIT - len(note.encode("utf-8"))
        text = data[:keep].decode("utf-8", errors="ignore") + note
    try:
        with files.open_file(Path(path), "a") as f:
            f.write(text)
    except OSError as exc:
        err.print(
            f"warning: ${STEP_SUMMARY} ({path}): {exc.strerror or exc}; the job summary "
            "was not written",
            highlight=False,
            soft_wrap=True,
        )


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
