"""`csorch verify`: is this bundle's (or gate directory's) evidence intact."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from orchestrator.bundle import trust, verify
from orchestrator.cli.common import ExitCode, app, out
from orchestrator.errors import BundleError, CsorchError
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
    if check.status is verify.Status.MISMATCH and expected and actual:
        return f"{expected} -> {actual}"
    return expected or actual


def styled(statement: str) -> str:
    """The evidence line (`trust.stated`) with its state in colour, escaped for Rich."""
    head, _, rest = statement.partition(": ")
    state, sep, tail = rest.partition(":")
    state, _, more = state.partition(" (")
    colour = {"tampered": "bold red", "unsigned": "yellow"}.get(state, "green")
    more = f" ({more}" if more else ""
    return f"{head}: [{colour}]{escape(state)}[/]{escape(more + sep + tail)}"


def check_signers(allowed: Path | None, identity: str | None) -> None:
    """A usage error (exit 2) for --identity without --allowed-signers, or an
    allowed-signers file that is not there."""
    if identity is not None and allowed is None:
        raise CsorchError(
            f"--identity {identity} names a signer of an allowed-signers file: give one",
            hint="csorch verify DIR --allowed-signers FILE --identity NAME",
        )
    if allowed is not None and not allowed.is_file():
        raise CsorchError(
            f"--allowed-signers {allowed}: no such file",
            hint='an allowed-signers file: IDENTITY namespaces="csorch" KEY, one a line '
            "(git's gpg.ssh.allowedSignersFile format)",
        )


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
    allowed_signers: Annotated[
        Path | None,
        typer.Option(
            "--allowed-signers",
            help="require the manifest signed (csorch run --sign, csorch gate --sign) by a "
            "key in this file (ssh-keygen's allowed-signers format, as git's)",
        ),
    ] = None,
    identity: Annotated[
        str | None,
        typer.Option("--identity", help="with --allowed-signers: the signer it must be"),
    ] = None,
) -> None:
    """Re-check a bundle: every digest in its manifest (logs, results, config, patches,
    binaries), no symlink and no file the manifest does not list, every attempt's findings
    re-parsed from its logs against results.json, and the run complete. Given a gate's
    directory (`csorch gate --out`): gate.json, report.md, its signature and every
    experiment bundle the gate judged. A bundle is judged against the config file its
    manifest names, when it is there. The first line says whether the evidence is
    signed (by whom), unsigned or tampered.

    Exit 0 when everything checkable matches, 1 on any mismatch, missing or unlisted file
    (or an experiment that is not its config file's), 3 when the evidence is intact but
    the run did not finish, 2 when BUNDLE is neither a bundle nor a gate's directory, or
    for --identity without --allowed-signers or an allowed-signers file that is not
    there."""
    check_signers(allowed_signers, identity)
    reasons: tuple[str, ...] = ()
    tampered: tuple[str, ...] = ()
    against = ""
    if manifest.is_gate_dir(bundle):
        result = manifest.verify_gate(bundle, allowed_signers, identity)
    else:
        trusted = trust.load_trusted(bundle, allowed=allowed_signers, identity=identity)
        if trusted.verification is None:
            raise BundleError(bundle, "; ".join(trusted.reasons))
        result, reasons = trusted.verification, trusted.reasons
        tampered, against = trusted.tampered, trusted.against
    # first: what the evidence proves about who made it (docs/ci.md, "The first line")
    out.print(styled(trust.stated(result, tampered)), highlight=False, soft_wrap=True)
    if against:
        out.print(escape(against), highlight=False, soft_wrap=True)
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
    for reason in reasons:
        out.print(f"[yellow]not evidence:[/] {escape(reason)}", highlight=False, soft_wrap=True)
    out.print(_summary(result), highlight=False)
    if not result.ok or tampered:
        raise typer.Exit(ExitCode.FAIL)
    raise typer.Exit(ExitCode.INCONCLUSIVE if reasons else ExitCode.PASS)
