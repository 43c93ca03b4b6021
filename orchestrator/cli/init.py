"""`csorch init REPO`: write a first experiment config for a repository and a fix
(`config.scaffold` makes the text; this verb reads git and the tree's file names)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator import files
from orchestrator.bisect import history
from orchestrator.cli.common import ExitCode, app, err, out
from orchestrator.config.scaffold import Facts, scaffold
from orchestrator.errors import CsorchError


def _files(root: Path) -> tuple[str, ...]:
    """The tree's top-level file names and its */build.py scripts."""
    top = [p.name for p in root.iterdir() if p.is_file()]
    return tuple(sorted([*top, *(p.relative_to(root).as_posix() for p in root.glob("*/build.py"))]))


def _tests(root: Path, given: list[Path]) -> tuple[Path, ...]:
    if given:
        missing = [p for p in given if not p.exists()]
        if missing:
            raise CsorchError(f"--tests {missing[0]}: no such file or directory")
        return tuple(p.resolve() for p in given)
    found = next((root / d for d in ("tests", "test") if (root / d).is_dir()), None)
    if found is None:
        raise CsorchError(f"{root} has no tests/ directory", hint="give --tests PATH")
    return (found.resolve(),)


def facts_of(
    repo: Path, fix: str, control: Path | None, installed: str, tests: list[Path]
) -> Facts:
    """What init needs to know about `repo` (git is read only for --fix)."""
    root = repo.resolve()
    if not root.is_dir():
        raise CsorchError(f"{repo} is not a directory", hint="give the extension's directory")
    if control is not None and not control.is_file():
        raise CsorchError(f"--control {control}: no such patch file")
    known: dict[str, object] = {}
    if fix:
        top, sub = history.toplevel(root)
        sha = history.resolve(top, fix)
        try:
            parent = history.resolve(top, f"{sha}^")
        except CsorchError:
            raise CsorchError(
                f"--fix {fix} ({sha[:12]}) has no parent commit to be the control",
                hint="give --control PATCH instead",
            ) from None
        known = {
            "fix": sha,
            "parent": parent,
            "subject": history.subject(top, sha),
            "repo": Path(top),
            "subdir": sub,
        }
    wheel = Path(installed)
    if installed.endswith(".whl"):
        if not wheel.is_file():
            raise CsorchError(f"--installed {installed}: no such wheel file")
        installed = str(wheel.resolve())
    return Facts(
        root=root,
        files=_files(root),
        tests=_tests(root, tests),
        control=control.resolve() if control else None,
        installed=installed,
        **known,  # type: ignore[arg-type]
    )


@app.command("init")
def init(
    repo: Annotated[
        Path, typer.Argument(help="the extension's directory (a git work tree for --fix)")
    ],
    fix: Annotated[str, typer.Option(help="the fixing commit; its parent is the control")] = "",
    control: Annotated[
        Path | None, typer.Option(help="a patch that undoes the fix (the tree as it is is fixed)")
    ] = None,
    installed: Annotated[
        str, typer.Option(help="a release wheel file or NAME==VERSION: a prebuilt control")
    ] = "",
    tests: Annotated[
        list[Path] | None, typer.Option("--tests", help="test file or directory (repeatable)")
    ] = None,
    name: Annotated[str, typer.Option(help="the experiment's name")] = "",
    out_file: Annotated[
        Path | None,
        typer.Option("--out", help="write the config here (paths relative to it); default: print"),
    ] = None,
) -> None:
    """Write a first config for REPO and a fix (then: csorch check, csorch run)."""
    if out_file is not None and out_file.exists():
        raise CsorchError(f"--out {out_file} exists", hint="give a new file name")
    facts = facts_of(repo, fix, control, installed, tests or [])
    base = out_file.resolve().parent if out_file is not None else None
    text = scaffold(facts, base=base, name=name)
    if out_file is None:
        out.print(text, end="", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(ExitCode.PASS)
    try:
        files.make_dirs(out_file.parent)
        with files.open_file(out_file, "x") as handle:
            handle.write(text)
    except OSError as exc:
        err.print(f"[bold red]error:[/] cannot write {out_file}: {exc.strerror or exc}")
        raise typer.Exit(ExitCode.USAGE) from None
    out.print(f"wrote {out_file}; next: csorch check {out_file}", highlight=False, soft_wrap=True)
