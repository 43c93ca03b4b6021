"""The terminal view of a run: builds, a table of cases x (variant, run), signatures,
target hits and the verdict line. Input is records only (a live run or a bundle read
back), output is Rich renderables; printing is the CLI's job.

A cell shows the case's outcome and, for a run with a checker, the number of reports
attributed to it (folded repeats included: `Finding.count`): `failed`, `passed 8`,
`passed 24 in 3/3` (24 reports, in 3 of 3 repeats). `-` means the case did not run
there; `not built` and `inconclusive` say why.

Nothing is cropped to fit a terminal: where the cases table is wider than the console
(80 columns, a release gate's six columns and its reasons), it is drawn one variant at a
time with the reasons below it, and where even that does not fit, as one line per cell
(`_Fitted`). Signatures and targets wrap instead of being cut.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from orchestrator.judge import signature_view
from orchestrator.judge.causality import Judgement
from orchestrator.model import Attempt, Build, Checker, Experiment, Outcome, Verdict
from orchestrator.model.kinds import aggregate
from orchestrator.report.rows import OUTSIDE, Column, cell, labels, reason

STYLES = {
    Outcome.PASSED: "green",
    Outcome.FAILED: "red",
    Outcome.ERROR: "bold red",
    Outcome.SKIPPED: "dim",
}
VERDICT_STYLES = {
    Verdict.PASS: "bold green",
    Verdict.FAIL: "bold red",
    Verdict.INCONCLUSIVE: "bold yellow",
}


def _columns(experiment: Experiment, attempts: Sequence[Attempt]) -> list[tuple[str, str]]:
    ran = {(a.variant, a.run) for a in attempts}
    return [
        (v.name, r.name)
        for v in experiment.variants
        for r in experiment.runs
        if (v.name, r.name) in ran
    ]


def _rows(experiment: Experiment, attempts: Sequence[Attempt]) -> list[tuple[str, str]]:
    """(case, node) in config order, nodes in the order first seen."""
    rows: dict[str, dict[str, None]] = {c.name: {} for c in experiment.cases}
    for a in attempts:
        for n in a.nodes:
            rows.setdefault(a.case, {})[n.nodeid] = None
        if any(not f.case for f in a.findings):
            rows.setdefault(a.case, {})[OUTSIDE] = None
    # a case no attempt reported a node for (its variants did not build, pytest never
    # started) is still listed, as its own single row
    return [(case, node) for case, nodes in rows.items() for node in (nodes or [case])]


def _cell(attempts: list[Attempt], node: str, builds: dict[str, Build]) -> Text:
    if not attempts:
        return Text("-", style="dim")
    variant = attempts[0].variant
    if variant in builds and not builds[variant].ok:
        return Text("not built", style="bold red")
    outcomes = [n.outcome for a in attempts for n in a.nodes if n.nodeid == node]
    counts = [sum(f.count for f in a.findings if (f.case or OUTSIDE) == node) for a in attempts]
    sanitized = attempts[0].checker is not Checker.NONE
    timed_out = any(a.timed_out for a in attempts)
    if not outcomes and node != OUTSIDE:
        bad = next((a for a in attempts if not a.conclusive), None)
        label = "timed out" if timed_out else "inconclusive" if bad else "-"
        return Text(label, style="yellow" if bad else "dim")
    outcome = aggregate(outcomes) if outcomes else None
    # an error that is the attempt's timeout says so ("error ?" told the user nothing)
    timed = outcome is Outcome.ERROR and timed_out
    label = "timed out" if timed else outcome.value if outcome else ""
    text = Text(label, style=STYLES.get(outcome, "") if outcome else "")
    if sanitized:
        total, hits = sum(counts), sum(1 for c in counts if c)
        findings = str(total) if len(counts) == 1 else f"{total} in {hits}/{len(counts)}"
        text.append((" " if outcome else "") + findings, style="bold magenta" if total else "dim")
    if any(not a.conclusive for a in attempts) and label != "timed out":
        text.append(" ?", style="yellow")
    return text


def cases_table(
    experiment: Experiment, builds: Iterable[Build], attempts: Sequence[Attempt], backend: str = ""
) -> RenderableType:
    """Cases x (variant, run): outcome and findings per cell; narrower forms where the
    console is narrower than the table (`_Fitted`)."""
    by_variant = {b.variant: b for b in builds}
    cells: dict[tuple[str, str, str], list[Attempt]] = defaultdict(list)
    for a in attempts:
        cells[(a.case, a.variant, a.run)].append(a)
    columns = _columns(experiment, attempts)
    tools = {a.run: a.checker for a in attempts}
    title = f"{experiment.name}" + (f" ({backend})" if backend else "")
    last = None
    all_rows = _rows(experiment, attempts)
    names = {c.name for c in experiment.cases}
    label = labels(n for _, n in all_rows if n != OUTSIDE and n not in names)
    body: list[tuple[Text, list[Text | str], str]] = []
    for case, node in all_rows:
        row: list[Text | str] = [_cell(cells[(case, v, r)], node, by_variant) for v, r in columns]
        why = reason(
            [
                (
                    Column(v, r, "", tools.get(r, Checker.NONE)),
                    cell(cells[(case, v, r)], node, _not_built(by_variant.get(v)))
                    if cells[(case, v, r)]
                    else None,
                )
                for v, r in columns
            ]
        )
        if node == case:  # a command case is its own single node
            body.append((Text(case, style="bold"), row, why))
            continue
        if case != last:  # the case's name heads its nodes
            body.append((Text(case, style="bold"), [""] * len(columns), ""))
        last = case
        body.append((Text("  " + label.get(node, node)), row, why))
    with_reasons = any(why for _, _, why in body)
    cells_only = _grid(title, columns, body, tools)
    # the reason column only where a cell has something to say
    table = _grid(title, columns, body, tools, reasons=True) if with_reasons else cells_only
    reasons = _reasons(body)

    def only(variant: str) -> list[tuple[Text, list[Text | str], str]]:
        keep = [v == variant for v, _ in columns]
        return [(h, [c for c, k in zip(row, keep, strict=True) if k], w) for h, row, w in body]

    variants = dict.fromkeys(v for v, _ in columns)
    grids = [
        _grid(f"{title}: {v}", [c for c in columns if c[0] == v], only(v), tools) for v in variants
    ]
    per_variant = Group(*grids, *reasons)
    lines = _lines(title, columns, body)
    return _Fitted(
        (table, cells_only, REASON_ROOM if with_reasons else 0),
        (per_variant, Group(*grids), 0),  # the reasons under it wrap
        (lines, lines, 0),
    )


def _grid(
    title: str,
    columns: Sequence[tuple[str, str]],
    body: Sequence[tuple[Text, Sequence[Text | str], str]],
    tools: dict[str, Checker],
    *,
    reasons: bool = False,
) -> Table:
    """The cells of `columns` under `title`; with `reasons`, the reason column too."""
    table = Table(title=title, show_lines=False, header_style="bold")
    table.add_column("case")
    for variant, run in columns:
        tool = tools.get(run, Checker.NONE)
        label = run if tool is Checker.NONE or tool.value == run else f"{run} ({tool.value})"
        table.add_column(f"{variant}\n{label}", justify="left", no_wrap=True)
    if reasons:
        table.add_column("reason", overflow="fold")
    for head, row, why in body:
        table.add_row(head, *row, *([Text(why, style="yellow")] if reasons else []))
    return table


def _reasons(body: Sequence[tuple[Text, Sequence[Text | str], str]]) -> list[Text]:
    """The reason column as lines under the table: "case: why"."""
    out = []
    for head, _, why in body:
        if why:
            out.append(Text(f"  {head.plain.strip()}: ", style="bold").append(why, style="yellow"))
    return [Text("reasons:", style="bold"), *out] if out else []


def _lines(
    title: str,
    columns: Sequence[tuple[str, str]],
    body: Sequence[tuple[Text, Sequence[Text | str], str]],
) -> Group:
    """One line per cell: for a console too narrow for any table."""
    out = [Text(title, style="bold")]
    for head, row, why in body:
        if not any(str(c) for c in row):
            out.append(Text(head.plain, style="bold"))  # a case heading its nodes
            continue
        out.append(Text(head.plain.strip(), style="bold"))
        for (variant, run), value in zip(columns, row, strict=True):
            text = value if isinstance(value, Text) else Text(value)
            out.append(Text(f"    {variant}/{run}: ").append_text(text))
        if why:
            out.append(Text(f"    reason: {why}", style="yellow"))
    return Group(*out)


#: the room a reason column needs beside the cells to be read, not squeezed to a word
REASON_ROOM = 30


class _Fitted:
    """The first of `forms` (renderable, what to measure it by, room it needs beyond
    that) whose measure fits the console's width unwrapped; the last where none does.
    The natural (maximum) width is what counts: Rich's minimum assumes a cell may wrap
    or be cut, which is the crop this avoids."""

    def __init__(self, *forms: tuple[RenderableType, RenderableType, int]) -> None:
        self.forms = forms

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # measured unbounded: a measurement is clamped to the width it is given
        free = options.update_width(1 << 20)
        for form, measured, needs in self.forms[:-1]:
            if Measurement.get(console, free, measured).maximum + needs <= options.max_width:
                yield form
                return
        yield self.forms[-1][0]


def _not_built(build: Build | None) -> str:
    return (build.error.splitlines() or ["failed"])[0] if build is not None and not build.ok else ""


def compile_cache_note(b: Build) -> str:
    """ "; compile cache 3/4 hits" for a build ccache served ("" where none ran)."""
    total = b.compile_hits + b.compile_misses
    remote = f" ({b.compile_remote_hits} remote)" if b.compile_remote_hits else ""
    return f"; compile cache {b.compile_hits}/{total} hits{remote}" if total else ""


def builds_table(builds: Iterable[Build]) -> RenderableType:
    """Each variant's build: kind, how it ended, its cache key and binaries; a line per
    build where the console is too narrow for the table (`_Fitted`)."""
    table = Table(title="builds", header_style="bold", title_justify="left")
    for column in ("variant", "kind"):
        table.add_column(column, no_wrap=True)
    table.add_column("build", overflow="fold")
    table.add_column("key", no_wrap=True)
    table.add_column("binaries (sha256)", overflow="fold")
    lines = [Text("builds:", style="bold")]
    for b in builds:
        if not b.ok:
            status = Text("failed: " + b.error.splitlines()[0], style="bold red")
        elif b.cached:
            status = Text("cached", style="green")
        else:
            status = Text(f"built in {b.duration:.0f} s" + compile_cache_note(b))
        binaries = ", ".join(f"{a.path.rsplit('/', 1)[-1]} {a.sha256[:12]}" for a in b.artifacts)
        table.add_row(b.variant, b.kind.value, status, b.cache_key[:12], binaries)
        line = Text(f"  {b.variant} ({b.kind.value}): ", style="bold").append_text(status)
        line.append(f"; key {b.cache_key[:12]}" if b.cache_key else "")
        lines.append(line.append(f"; {binaries}" if binaries else ""))
    return _Fitted((table, table, 0), (Group(*lines), Group(*lines), 0))


def signatures(
    experiment: Experiment,
    attempts: Sequence[Attempt],
    view: signature_view.Signatures | None = None,
) -> RenderableType:
    """Per variant x run: each signature with its count (`view`: the records' signatures,
    made here when not given)."""
    view = view or signature_view.make(experiment, attempts)
    lines = Text()
    for variant in experiment.variants:
        for run in experiment.runs:
            for sig, tally in view.within(variant=variant.name, run=run.name):
                lines.append(f"  {variant.name} / {run.name}: ", style="bold")
                lines.append(f"{tally.count} x {sig.label}")
                lines.append(f" {sig.id}", style="dim")
                if tally.skipped:
                    lines.append(f" (below {', '.join(tally.skipped)})", style="dim")
                if sig.ambient:
                    lines.append(f" [{signature_view.AMBIENT}]", style="yellow")
                if sig.follows:
                    lines.append(f" [follows {sig.follows}]", style="yellow")
                if tally.tolerance():
                    lines.append(f" [{tally.tolerance()}]", style="yellow")
                lines.append("\n")
    if not lines:
        return Text("signatures: none found", style="dim")
    return Group(Text("signatures:", style="bold"), lines)


def verdict_line(judgement: Judgement, claim: bool = True) -> Text:
    """The verdict and its reasons; "(causal)" only where a causality claim was judged
    (`claim`: the experiment has expectations; a scan states none)."""
    text = Text("verdict: ", style="bold")
    text.append(judgement.verdict.value.upper(), style=VERDICT_STYLES[judgement.verdict])
    if judgement.verdict is Verdict.PASS and claim:
        text.append(" (causal)", style=VERDICT_STYLES[judgement.verdict])
    for why in judgement.reasons:
        text.append(f"\n  {why}")
    return text


def hits(judgement: Judgement) -> RenderableType:
    if not judgement.hits:
        return Text("")
    table = Table(title="targets", header_style="bold", title_justify="left")
    table.add_column("target", overflow="fold")
    for column in ("variant", "run", "repeats with it"):
        table.add_column(column, no_wrap=True)
    for h in judgement.hits:
        unknown = f" ({h.unknown} unknown)" if h.unknown else ""
        table.add_row(h.target, h.variant, h.run, f"{h.hits}/{h.repeats}{unknown}")
    return table


def render(
    experiment: Experiment,
    builds: Sequence[Build],
    attempts: Sequence[Attempt],
    judgement: Judgement,
    *,
    backend: str = "",
    not_run: Sequence[str] = (),
) -> Group:
    """Everything the terminal shows after a run, in reading order."""
    parts: list[RenderableType] = [
        builds_table(builds),
        cases_table(experiment, builds, attempts, backend),
        signatures(experiment, attempts, signature_view.make(experiment, attempts, builds)),
        hits(judgement),
    ]
    if not_run:
        parts.append(Text("not run:\n" + "\n".join(f"  {n}" for n in not_run), style="yellow"))
    parts.append(verdict_line(judgement, claim=experiment.expect is not None))
    return Group(*parts)
