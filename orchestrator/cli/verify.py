"""`csorch verify`: is this bundle's (or gate directory's) evidence intact."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from orchestrator.bundle import verify
from orchestrator.cli.common import ExitCode, app, fail, out
from orchestrator.errors import BundleError
from orchestrator.gate import manifest

_STYLE = {
    verify.Status.OK: "green",
    verify.Status.MISMATCH: "bold red",
    verify.Status.MISSING: "bold red",
    verify.Status.UNLISTED: "bold red",
    verify.Status.NOT_CHECKABLE: "yellow",
}


def _sha(check: verify.Check) -> str:
    expected, actual = check.expected[:12], check.actual[:12]
    if check.status is verify.Status.MISMATCH:
        return f"{expected} -> {actual}"
    return expected or actual


def _summary(result: verify.Verification) -> str:
    counts = ", ".join(f"{n} {status.value}" for status, n in result.counts().items())
    return f"{counts}: {'[green]OK[/]' if result.ok else '[bold red]FAILED[/]'}"


@app.command("verify")
def verify_command(
    bundle: Annotated[
        Path,
        typer.Argument(help="a results bundle (csorch run --out) or a gate's (csorch gate --out)"),
    ],
    problems_only: Annotated[
        bool, typer.Option("--problems-only", help="list only the checks that are not ok")
    ] = False,
) -> None:
    """Re-check every digest in a bundle's manifest: logs, results, config, patches, binaries.
    Given a gate's directory (`csorch gate --out`): gate.json, report.md and every
    experiment bundle the gate judged.

    Exit 0 when everything checkable matches, 1 on any mismatch, missing or unlisted file,
    2 when BUNDLE is neither a bundle nor a gate's directory."""
    try:
        is_gate = manifest.is_gate_dir(bundle)
        result = manifest.verify_gate(bundle) if is_gate else verify.verify(bundle)
    except BundleError as exc:
        raise fail(exc) from None
    table = Table(title=f"verify {bundle}", header_style="bold", title_justify="left")
    for column in ("status", "kind", "variant", "path", "sha256", "detail"):
        table.add_column(column, overflow="fold")
    for check in result.checks:
        if problems_only and check.status is verify.Status.OK:
            continue
        style = _STYLE[check.status]
        table.add_row(
            f"[{style}]{check.status.value}[/]",
            check.kind.value,
            escape(check.subject),
            escape(check.path),
            _sha(check),
            escape(check.detail),
        )
    out.print(table)
    if not result.complete:
        out.print(
            "[yellow]note:[/] the manifest says the run did not finish (interrupted, or still "
            "running): its logs may still change",
            highlight=False,
            soft_wrap=True,
        )
    out.print(_summary(result), highlight=False)
    raise typer.Exit(ExitCode.PASS if result.ok else ExitCode.FAIL)
