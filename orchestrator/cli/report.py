"""`csorch report BUNDLE --format table|markdown|junit|sarif|html|json|github`.

Renders a stored bundle; runs and judges nothing (the verdict shown is the one the
bundle recorded, once `bundle.trust` has checked it, against the config file its
manifest names when that is there: a bundle that does not verify, is incomplete, whose
results.json its logs contradict or whose experiment is not its config file's is shown
INCONCLUSIVE, with why; `csorch gate --from` judges again). The first line, on stderr,
says whether the evidence is signed (by whom), unsigned or tampered. Exit 0 when the report was
written, 2 for a missing or unreadable bundle, an unknown format or an unwritable
--output: the verdict's exit code belongs to `run` and `gate`, so a CI step that only
publishes a report does not fail because the fix did.
"""

from __future__ import annotations

import datetime
import io
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.text import Text

from orchestrator import bundle as bundles
from orchestrator import files, gate, report
from orchestrator.bundle import trust
from orchestrator.cli.common import ExitCode, app, err, fail, out
from orchestrator.cli.verify import styled
from orchestrator.errors import BundleError, ConfigError, CsorchError
from orchestrator.gate import allowances
from orchestrator.gate import manifest as gate_manifest
from orchestrator.report import htmlgate, sarif, table, verdicts
from orchestrator.run import places

FORMATS = ("table", *report.FORMATS)


def _table(records: bundles.Records, results: dict) -> RenderableType:
    """The terminal table of `csorch run`, from the stored records."""
    backend = results.get("backend", {}).get("name", "")
    not_run = results.get("not_run", [])
    if records.judgement is not None:
        view = table.render(
            records.experiment,
            records.builds,
            records.attempts,
            records.judgement,
            backend=backend,
            not_run=not_run,
        )
    else:  # the run stopped before its judgement: show what it has
        view = Group(
            table.builds_table(records.builds),
            table.cases_table(records.experiment, records.builds, records.attempts, backend),
            table.signatures(records.experiment, records.attempts),
            Text("verdict: not judged", style="bold yellow"),
        )
    if not results.get("complete"):
        why = "interrupted" if results.get("interrupted") else "it never finished"
        view = Group(view, Text(f"the bundle is incomplete ({why})", style="yellow"))
    return view


GATE_FORMATS = ("table", "markdown", "html", "json")


def _emit(text: str, output: Path | None) -> None:
    """`text` to stdout or to --output, then exit 0."""
    if output is None:
        # verbatim: Rich would read `[...]` in Markdown as markup and wrap long lines
        typer.echo(text, nl=False)
        raise typer.Exit(ExitCode.PASS)
    try:
        files.atomic_write(output, text)
    except OSError as exc:
        raise CsorchError(f"--output {output}: {exc.strerror}") from None
    raise typer.Exit(ExitCode.PASS)


def _write_view(view: object, output: Path) -> None:
    """A Rich view rendered as plain text into --output (whole, in one rename)."""
    text = io.StringIO()
    Console(file=text, width=200, color_system=None).print(view)
    files.atomic_write(output, text.getvalue())


def _gate_dir(root: Path, fmt: str, output: Path | None, policy: Path | None) -> None:
    """A gate's directory (`csorch gate --out`): its recorded verdict and every bundle."""
    if fmt not in GATE_FORMATS:
        raise fail(
            CsorchError(
                f"{root} is a gate's directory: --format {fmt} renders one bundle",
                hint=f"give one of its bundles ({root}/EXPERIMENT), or --format "
                + " | ".join(GATE_FORMATS),
            )
        )
    # first, on stderr (stdout is the document): who made the evidence, or that it is
    # tampered (docs/ci.md, "The first line")
    try:
        stated = trust.stated(gate_manifest.verify_gate(root))
    except BundleError as exc:
        stated = f"evidence: tampered: {exc.message}"
    err.print(styled(stated), highlight=False, soft_wrap=True)
    try:
        result, found = verdicts.stored_gate(root)
        if fmt == "json":
            _emit(files.read_text(root / gate_manifest.GATE, files.DOCUMENT), output)
        if fmt in ("markdown", "html"):
            today = datetime.date.today()
            allow = gate.load_policy(policy).allow if policy is not None else ()
            live = [a for a in allow if not a.expired(today)]
            if fmt == "html":  # one page: the gate's verdict, then each experiment's section
                _emit(htmlgate.gate_dir_page(root, live), output)
            _emit(verdicts.gate_dir_report(root, live), output)
    except (BundleError, ConfigError) as exc:
        raise fail(exc) from None
    view = Group(verdicts.gate(result), Text("bundles: " + ", ".join(p.name for p in found)))
    if output is None:
        out.print(view)
        raise typer.Exit(ExitCode.PASS)
    try:
        _write_view(view, output)
    except OSError as exc:
        raise CsorchError(f"--output {output}: {exc.strerror}") from None
    raise typer.Exit(ExitCode.PASS)


@app.command("report")
def report_command(
    bundle: Annotated[
        Path,
        typer.Argument(
            metavar="BUNDLE",
            help="a results bundle (`csorch run --out`) or a gate's directory (`gate --out`)",
        ),
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="table | markdown | junit | sarif | html | json | github (Actions annotations)",
        ),
    ] = "table",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="write the report here, not to stdout")
    ] = None,
    policy: Annotated[
        Path | None,
        typer.Option(
            "--policy",
            help="a gate config: show the findings its allowances tolerate as allowed",
        ),
    ] = None,
    repo_root: Annotated[
        Path | None,
        typer.Option(
            "--repo-root",
            help="sarif: URIs relative to this directory (default: the repository holding "
            "the experiment's source), as code scanning maps them",
        ),
    ] = None,
) -> None:
    """Render a results bundle as a table, Markdown (a PR's validation section), JUnit
    XML, SARIF 2.1.0, one self-contained HTML page or its results.json. Suppressed
    findings are always shown as such; with --policy, so are the findings a gate's
    unexpired allowances tolerate."""
    if fmt not in FORMATS:
        raise fail(
            CsorchError(f"unknown format {fmt!r}", hint="choose one of: " + ", ".join(FORMATS))
        )
    if output is not None:
        places.check_report(output)
    if gate_manifest.is_gate_dir(bundle):
        _gate_dir(bundle, fmt, output, policy)
    trusted = trust.load_trusted(bundle)
    if trusted.results is None or trusted.manifest is None:
        raise BundleError(bundle, "; ".join(trusted.reasons))
    # first, on stderr (stdout is the document): who made the evidence, or that it is
    # tampered, and what it was judged against (docs/ci.md, "The first line")
    err.print(styled(trusted.statement), highlight=False, soft_wrap=True)
    err.print(escape(trusted.against), highlight=False, soft_wrap=True)
    results, manifest = trust.shown(trusted), trusted.manifest
    if policy is not None:
        allow = gate.load_policy(policy).allow
        today = datetime.date.today()
        results = allowances.mark_results(results, [a for a in allow if not a.expired(today)])
    records = bundles.records(results, bundle / bundles.RESULTS)
    for reason in trusted.reasons:  # shown, and the verdict is INCONCLUSIVE in the report
        err.print(f"[yellow]not evidence:[/] {escape(reason)}", highlight=False, soft_wrap=True)
    if fmt == "table":
        view = _table(records, results)
        if output is None:
            out.print(view)
            raise typer.Exit(ExitCode.PASS)
        try:
            _write_view(view, output)
        except OSError as exc:
            raise CsorchError(f"--output {output}: {exc.strerror}") from None
        raise typer.Exit(ExitCode.PASS)
    if fmt == "sarif" and repo_root is not None:
        _emit(sarif.render(results, manifest, root=repo_root.resolve()), output)
    _emit(report.render(fmt, results, manifest), output)
