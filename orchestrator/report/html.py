"""HTML of a bundle: one self-contained file for a CI artifact. The verdict and its
reasons, a chart of the checker's findings per case and variant x run (inline SVG), the
per-case table with its reason column (the grid and reasons of `report.rows`), the
signatures (`judge.signature_view`: with their ambient, follow-on and tolerated marks, as
in every report), the targets behind the verdict, what was not run, and how the run was
made and what it ran on (`report.provenance`'s rows, the digests of every tree, patch and
binary): the Markdown report's facts, from the same views. `section` is one bundle's
part of a page; a gate's page (`report.htmlgate`) holds one per experiment.

Self-contained means it opens from a downloaded artifact with no network: the style is
inline, the chart is SVG drawn here, and there is no script at all (the Content Security
Policy in its head says so to the browser too: nothing loads from anywhere). Every text
from the bundle is escaped. Pure: documents in, text out.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from orchestrator import bundle, judge
from orchestrator.judge import signature_view
from orchestrator.judge.causality import Judgement
from orchestrator.model import Attempt, Build, Experiment, Outcome
from orchestrator.report import markdown, paths, provenance, rows
from orchestrator.report.gfm import DASH

#: nothing from the network, no script: the browser refuses anything but inline style
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
VERDICT_COLOURS = {"pass": "#1a7f37", "fail": "#cf222e", "inconclusive": "#9a6700"}
OUTCOME_CLASS = {
    Outcome.PASSED: "passed",
    Outcome.FAILED: "failed",
    Outcome.ERROR: "error",
    Outcome.SKIPPED: "skipped",
}
#: one bar colour per variant x run column, in order (colour-blind safe: Okabe-Ito)
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442")

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1f2328}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:24px 0 8px}
h3{font-size:14px;margin:18px 0 6px} section{border-top:2px solid #d1d9e0;margin-top:28px}
.verdict{display:inline-block;padding:4px 12px;border-radius:6px;color:#fff;font-weight:700}
.muted{color:#59636e} ul{margin:6px 0}
table{border-collapse:collapse;margin:8px 0} th,td{border:1px solid #d1d9e0;padding:4px 8px}
.scroll{overflow-x:auto;max-width:100%} td,li{overflow-wrap:anywhere}
.scroll td{overflow-wrap:break-word}
svg{max-width:100%;height:auto}
@media (max-width:480px){body{margin:8px}}
th{background:#f6f8fa;text-align:left} td.n{text-align:right} td.why{min-width:14em}
.passed{color:#1a7f37} .failed{color:#cf222e} .error{color:#cf222e;font-weight:700}
.skipped{color:#59636e} .inconclusive{color:#9a6700;font-weight:700}
code{font:12px ui-monospace,monospace} li.sub{margin-left:20px}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


#: HTML's inline marks, for the rows `provenance` makes for every format
INK = provenance.Ink(
    esc=_e,
    code=lambda text: f"<code>{_e(text)}</code>" if text else DASH,
    strong=lambda text: f"<strong>{text}</strong>",
)


def _count(attempts: Sequence[Attempt]) -> int:
    return sum(f.count for a in attempts for f in a.findings)


def chart(experiment: Experiment, attempts: Sequence[Attempt], builds: Sequence[Build] = ()) -> str:
    """Inline SVG: for each case, one bar per variant x run column with a checker, its
    height the findings reported there (all repeats); a legend below. A variant that did
    not build has no bar but a dashed gap labelled "not built": nothing was measured,
    which a bar of 0 would claim was."""
    unbuilt = judge.failed_builds(builds)
    columns = [c for c in rows.columns(experiment, attempts) if c.checker.value != "none"]
    if not columns:
        return '<p class="muted">no run with a checker: nothing to chart</p>'
    by = rows.groups(attempts)
    cases = [c.name for c in experiment.cases]
    counts = {
        (case, i): _count(by.get((case, col.variant, col.run, col.device), []))
        for case in cases
        for i, col in enumerate(columns)
    }
    top = max(counts.values(), default=0) or 1
    bar, gap, height, left = 18, 28, 160, 48
    group_w = bar * len(columns)
    bars_end = left + len(cases) * (group_w + gap) + gap // 2
    labels = [f"{c.variant} / {c.label(experiment.run(c.run).checker)}" for c in columns]
    # wide enough for the bars and for the longest legend line (about 7 px a character)
    width = max(
        left + len(cases) * (group_w + gap) + gap,
        left + 24 + 7 * max(len(label) for label in labels),
    )
    legend_y = height + 64
    total_h = legend_y + 20 * len(columns) + 8
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total_h}" '
        f'role="img" aria-label="findings per case and variant x run">',
        f'<line x1="{left}" y1="{height + 10}" x2="{bars_end}" y2="{height + 10}" '
        'stroke="#59636e"/>',
        f'<text x="{left - 6}" y="{18}" text-anchor="end" font-size="11">{top}</text>',
        f'<text x="{left - 6}" y="{height + 10}" text-anchor="end" font-size="11">0</text>',
    ]
    for k, case in enumerate(cases):
        x0 = left + gap + k * (group_w + gap)
        for i, col in enumerate(columns):
            if col.variant in unbuilt:
                x = x0 + i * bar
                parts.append(
                    f'<rect class="unbuilt" x="{x}" y="{height - 30}" width="{bar - 3}" '
                    f'height="40" fill="none" stroke="#9a6700" stroke-dasharray="3 2">'
                    f"<title>{_e(case)}: {_e(col.variant)} / {_e(col.run)}: not built"
                    "</title></rect>"
                )
                parts.append(
                    f'<text x="{x + (bar - 3) / 2}" y="{height - 34}" text-anchor="middle" '
                    'font-size="9" fill="#9a6700">n/b</text>'
                )
                continue
            n = counts[(case, i)]
            h = round((height - 4) * n / top)
            x, y = x0 + i * bar, height + 10 - h
            parts.append(
                f'<rect x="{x}" y="{y}" width="{bar - 3}" height="{h}" '
                f'fill="{PALETTE[i % len(PALETTE)]}"><title>{_e(case)}: {_e(col.variant)} '
                f"/ {_e(col.run)}: {n} finding(s)</title></rect>"
            )
            parts.append(
                f'<text x="{x + (bar - 3) / 2}" y="{y - 3}" text-anchor="middle" '
                f'font-size="10">{n}</text>'
            )
        parts.append(
            f'<text x="{x0 + group_w / 2}" y="{height + 28}" text-anchor="middle" '
            f'font-size="12">{_e(case)}</text>'
        )
    for i, label in enumerate(labels):
        y = legend_y + 20 * i
        parts.append(
            f'<rect x="{left}" y="{y - 10}" width="12" height="12" '
            f'fill="{PALETTE[i % len(PALETTE)]}"/>'
            f'<text x="{left + 18}" y="{y}" font-size="12">{_e(label)}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def _cell(cell: rows.Cell) -> str:
    if cell.not_built:
        return f'<td class="error" title="{_e(cell.not_built)}">not built</td>'
    if cell.reasons:
        return f'<td class="inconclusive" title="{_e("; ".join(cell.reasons))}">inconclusive</td>'
    outcome = cell.outcome
    word = outcome.value if outcome else "-"
    css = OUTCOME_CLASS.get(outcome, "skipped") if outcome else "skipped"
    found = f" {cell.records}" if cell.sanitized else ""
    hits = f" in {cell.hit_repeats}/{cell.repeats}" if cell.sanitized and cell.repeats > 1 else ""
    return f'<td class="{css}">{_e(word)}{found}{hits}</td>'


def table(experiment: Experiment, records: bundle.Records) -> str:
    """Cases x (variant, run, device): each cell the outcome and the findings counted."""
    columns = rows.columns(experiment, records.attempts)
    by = rows.groups(records.attempts)
    broken = judge.failed_builds(records.builds)
    head = "".join(
        f"<th>{_e(c.variant)}<br>{_e(c.label(experiment.run(c.run).checker))}</th>" for c in columns
    )
    body = []
    for case, node in rows.rows(experiment, records.attempts):
        name = _e(case) if node == case else f"{_e(case)} <code>{_e(rows.short(node))}</code>"
        made = []
        for c in columns:
            attempts = by.get((case, c.variant, c.run, c.device))
            made.append(
                (c, rows.cell(attempts, node, broken.get(c.variant, "")) if attempts else None)
            )
        cells = "".join('<td class="skipped">-</td>' if m is None else _cell(m) for _, m in made)
        # why a cell did not pass, once per reason with its columns (as every report says it)
        why = rows.reason(made)
        body.append(f'<tr><th>{name}</th>{cells}<td class="why">{_e(why)}</td></tr>')
    return f"<table><tr><th>case</th>{head}<th>reason</th></tr>{''.join(body)}</table>"


def _signatures(view: signature_view.Signatures) -> str:
    items = []
    for sig in view.signatures:
        # the first finding's frames with file:line, as the Markdown shows them
        frames = " &larr; ".join(_e(f) for f in sig.frames)
        if sig.freed:
            frames += "; freed at " + " &larr; ".join(_e(f) for f in sig.freed)
        if sig.frames and not any(markdown.LINE.search(f) for f in sig.frames):
            frames += f" ({_e(markdown.NO_LINES)})"
        tally = sig.tally()
        marks = [signature_view.AMBIENT] if sig.ambient else []
        marks += [f"follows {sig.follows}"] if sig.follows else []
        marks += [tally.tolerance()] if tally and tally.tolerance() else []
        items.append(
            f"<li>{sig.count} &times; {_e(sig.label)} <code>{sig.id}</code>"
            + "".join(f' <span class="muted">[{_e(m)}]</span>' for m in marks)
            + (f'<br><span class="muted">{frames}</span>' if frames else "")
            + "</li>"
        )
    return f"<ul>{''.join(items)}</ul>" if items else '<p class="muted">none found</p>'


def _targets(judgement: Judgement | None, shift: int) -> str:
    """The expectation's targets and the repeats each variant x run showed them in."""
    if judgement is None or not judgement.hits:
        return ""
    body = "".join(
        f"<tr><td><code>{_e(h.target)}</code></td><td><code>{_e(h.variant)}</code></td>"
        f"<td><code>{_e(h.run)}</code></td><td>{h.hits}/{h.repeats}"
        + (f" ({h.unknown} unknown)" if h.unknown else "")
        + "</td></tr>"
        for h in judgement.hits
    )
    head = "<tr><th>target</th><th>variant</th><th>run</th><th>repeats with it</th></tr>"
    return f"{_h(2, 'Targets', shift)}<table>{head}{body}</table>"


def _provenance(
    results: Mapping[str, Any], manifest: Mapping[str, Any], records: bundle.Records, shift: int
) -> str:
    """How the run was made and on what (the setup), and what each variant was: its
    source tree, patches, build and binaries, the full sha256 digests below."""
    experiment = records.experiment
    tools = {a.run: a.checker for a in records.attempts}
    setup = provenance.setup_rows(results, manifest, experiment, tools, INK)
    complete = "yes" if results.get("complete") else "no (interrupted or still running)"
    setup.append(["complete", complete])
    view = provenance.identities(experiment, records, INK)
    parts = [
        _h(2, "Setup", shift),
        "<table>" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in setup) + "</table>",
        _h(2, "Variants", shift),
        "<table><tr>"
        + "".join(f"<th>{_e(h)}</th>" for h in view.header)
        + "</tr>"
        + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in view.body)
        + "</table>",
    ]
    if view.described:
        parts.append("<p>What each variant is and how it was built:</p>")
        parts.append("<ul>" + "".join(f"<li>{d}</li>" for d in view.described) + "</ul>")
    if view.digests:
        # a variant's source tree, then its patches and binaries indented under it
        items = "".join(
            f'<li class="sub">{text}</li>' if level else f"<li>{text}</li>"
            for level, text in view.digests
        )
        parts.append(f"<details><summary>Full sha256 digests</summary><ul>{items}</ul></details>")
    return "\n".join(parts)


def _h(level: int, text: str, shift: int = 0) -> str:
    n = min(level + shift, 6)
    return f"<h{n}>{_e(text)}</h{n}>"


def section(
    results: Mapping[str, Any], manifest: Mapping[str, Any], where: str = "", shift: int = 0
) -> str:
    """One bundle's part of a page (`bundle.read`'s two documents; `where` the bundle's
    directory), its headings `shift` levels down (1 in a gate's page), with this
    machine's paths written relative (`paths`, as the Markdown)."""
    records = bundle.records(results)
    experiment = records.experiment
    verdict = str(results.get("verdict") or "not judged")
    colour = VERDICT_COLOURS.get(verdict, "#59636e")
    reasons = records.judgement.reasons if records.judgement else ()
    not_run = results.get("not_run", [])
    page = [
        _h(1, experiment.name, shift),
        f'<p class="muted">{_e(experiment.description)}</p>' if experiment.description else "",
        f'<p><span class="verdict" style="background:{colour}">{_e(verdict.upper())}</span></p>',
        "<ul>" + "".join(f"<li>{_e(r)}</li>" for r in reasons) + "</ul>" if reasons else "",
        _h(2, "Findings per case", shift),
        chart(experiment, records.attempts, records.builds),
        _h(2, "Cases", shift),
        table(experiment, records),
        _h(2, "Signatures", shift),
        _signatures(signature_view.make(experiment, records.attempts, records.builds)),
        _targets(records.judgement, shift),
    ]
    if not_run:
        page += [_h(2, "Not run", shift), "<ul>", *[f"<li>{_e(n)}</li>" for n in not_run], "</ul>"]
    page.append(_provenance(results, manifest, records, shift))
    text = "\n".join(p for p in page if p)
    return scrub(scrolled(text), paths.anchors(manifest, where))


def scrub(text: str, pairs: Sequence[tuple[str, str]]) -> str:
    """`paths.scrub` of HTML: the paths as they stand escaped in it, and their names
    escaped (a bare `<bundle>` is an element to a browser, and shows nothing)."""
    return paths.scrub(text, [(_e(path), _e(name)) for path, name in pairs])


def scrolled(text: str) -> str:
    """Every table in a scrolling box of its own: a phone's 390 px never widens the page."""
    return text.replace("<table>", '<div class="scroll"><table>').replace(
        "</table>", "</table></div>"
    )


def page(title: str, body: str) -> str:
    """A whole self-contained document around `body` (already HTML)."""
    return (
        "\n".join(
            [
                "<!DOCTYPE html>",
                '<html lang="en"><head><meta charset="utf-8">',
                f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
                '<meta name="viewport" content="width=device-width, initial-scale=1">',
                f"<title>{_e(title)}</title>",
                f"<style>{STYLE}</style></head><body>",
                body,
                "</body></html>",
            ]
        )
        + "\n"
    )


def render(results: Mapping[str, Any], manifest: Mapping[str, Any], where: str = "") -> str:
    """The bundle as one self-contained HTML page."""
    name = bundle.records(results).experiment.name
    verdict = str(results.get("verdict") or "not judged")
    return page(f"csorch: {name}: {verdict}", section(results, manifest, where))
