"""HTML of a bundle: one self-contained file for a CI artifact. The verdict and its
reasons, a chart of the checker's findings per case and variant x run (inline SVG), the
per-case table (the grid of `report.rows`), the signatures (`judge.signature_view`: with
their ambient, follow-on and tolerated marks, as in every report), and what was not run.

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
from orchestrator.model import Attempt, Build, Experiment, Outcome
from orchestrator.report import markdown, paths, provenance, rows

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
.verdict{display:inline-block;padding:4px 12px;border-radius:6px;color:#fff;font-weight:700}
.muted{color:#59636e} ul{margin:6px 0}
table{border-collapse:collapse;margin:8px 0} th,td{border:1px solid #d1d9e0;padding:4px 8px}
.scroll{overflow-x:auto;max-width:100%} td,li{overflow-wrap:anywhere}
svg{max-width:100%;height:auto}
@media (max-width:480px){body{margin:8px}}
th{background:#f6f8fa;text-align:left} td.n{text-align:right}
.passed{color:#1a7f37} .failed{color:#cf222e} .error{color:#cf222e;font-weight:700}
.skipped{color:#59636e} .inconclusive{color:#9a6700;font-weight:700}
code{font:12px ui-monospace,monospace}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


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
        name = case if node == case else f"{case} <code>{_e(rows.short(node))}</code>"
        cells = []
        for c in columns:
            attempts = by.get((case, c.variant, c.run, c.device))
            if not attempts:
                cells.append('<td class="skipped">-</td>')
                continue
            cells.append(_cell(rows.cell(attempts, node, broken.get(c.variant, ""))))
        body.append(f"<tr><th>{_e(case) if node == case else name}</th>{''.join(cells)}</tr>")
    return f"<table><tr><th>case</th>{head}</tr>{''.join(body)}</table>"


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


def render(results: Mapping[str, Any], manifest: Mapping[str, Any]) -> str:
    """The bundle as one self-contained HTML page."""
    records = bundle.records(results)
    experiment = records.experiment
    verdict = str(results.get("verdict") or "not judged")
    colour = VERDICT_COLOURS.get(verdict, "#59636e")
    reasons = records.judgement.reasons if records.judgement else ()
    backend = results.get("backend", {})
    host = manifest.get("host", {})
    facts = [
        ("backend", f"{backend.get('name', '')} ({backend.get('reason', '')})"),
        ("csorch", results.get("csorch", "")),
        ("started", results.get("started", "")),
        ("complete", "yes" if results.get("complete") else "no (interrupted or still running)"),
        ("sandbox", provenance.sandboxing(host)),
        *[(k, host[k]) for k in ("torch", "driver", "compute_sanitizer") if host.get(k)],
        *[("gpu", g) for g in host.get("gpus", [])],
    ]
    not_run = results.get("not_run", [])
    page = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>csorch: {_e(experiment.name)}: {_e(verdict)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{_e(experiment.name)}</h1>",
        f'<p class="muted">{_e(experiment.description)}</p>' if experiment.description else "",
        f'<p><span class="verdict" style="background:{colour}">{_e(verdict.upper())}</span></p>',
        "<ul>" + "".join(f"<li>{_e(r)}</li>" for r in reasons) + "</ul>" if reasons else "",
        "<h2>Findings per case</h2>",
        chart(experiment, records.attempts, records.builds),
        "<h2>Cases</h2>",
        table(experiment, records),
        "<h2>Signatures</h2>",
        _signatures(signature_view.make(experiment, records.attempts, records.builds)),
    ]
    if not_run:
        page += ["<h2>Not run</h2><ul>", *[f"<li>{_e(n)}</li>" for n in not_run], "</ul>"]
    page += [
        "<h2>Run</h2><table>",
        *[f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in facts],
        "</table></body></html>",
    ]
    text = "\n".join(p for p in page if p) + "\n"
    # every table scrolls in its own box: a phone's 390 px never widens the page
    text = text.replace("<table>", '<div class="scroll"><table>').replace(
        "</table>", "</table></div>"
    )
    return paths.scrub(text, paths.anchors(manifest))
