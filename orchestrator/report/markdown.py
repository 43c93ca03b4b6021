"""The validation section of a PR, in GitHub Markdown, from a bundle's two documents.

It states what a reviewer needs to accept the verdict, in reading order: the verdict
and its reasons; the backend and why it was chosen, with the host's versions; each
variant's identity (tree digest, patches, build, binaries, cache hit or built); the
outcome of every case node per variant x run x device; the findings grouped by
signature with their counts; the target hits behind the verdict; and what was not run.
The setup and the variants' identities are `provenance`'s sections; the verdict and
what the run found are here. Pure: documents in, text out.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from orchestrator import bundle, judge
from orchestrator.judge import signature_view
from orchestrator.judge.causality import Judgement
from orchestrator.model import Experiment, Outcome
from orchestrator.model.job import device_label
from orchestrator.report import paths, provenance, rows
from orchestrator.report.gfm import DASH, code, esc, table

VERDICT_WORDS = {
    "pass": "PASS: the fix causally removes the defect",
    "fail": "FAIL: the fix does not remove the defect",
    "inconclusive": "INCONCLUSIVE: the evidence cannot support a verdict",
}


# --- sections -----------------------------------------------------------------------


def _verdict(results: Mapping[str, Any], judgement: Judgement | None) -> list[str]:
    if judgement is None:
        return ["**Verdict: not judged** (the run ended before its judgement)", ""]
    lines = [f"**Verdict: {VERDICT_WORDS[judgement.verdict.value]}**", ""]
    lines += [f"- {esc(r)}" for r in judgement.reasons]
    if judgement.unexpected:
        lines += ["", "Signatures the fix shows beyond the targets:"]
        lines += [f"- run `{run}`: {code(label)}" for run, label in judgement.unexpected]
    if judgement.ambient:
        lines += [
            "",
            "Ambient signatures (every variant shows them and no frame is the subject's: "
            "the environment, not the change; not weighed):",
        ]
        lines += [
            f"- run `{a.run}`: {code(a.signature)} {code(a.id)} x{a.findings}"
            for a in judgement.ambient
        ]
    if not results.get("complete", False):
        lines += ["", "> The bundle is **incomplete**: see *What was not run*."]
    return lines + [""]


def _cell_text(cell: rows.Cell | None) -> str:
    if cell is None:
        return DASH
    if cell.not_built:
        return "**not built**"
    outcome = cell.outcome
    if outcome is None and cell.node != rows.OUTSIDE:
        return "inconclusive" if cell.reasons else DASH
    text = ""
    if outcome is not None:
        text = (
            f"**{outcome.value}**" if outcome in (Outcome.FAILED, Outcome.ERROR) else outcome.value
        )
    if cell.sanitized:
        n = cell.records
        count = str(n) if cell.repeats == 1 else f"{n} in {cell.hit_repeats}/{cell.repeats}"
        text += (" " if text else "") + count
    return text + (" ?" if cell.reasons else "")


#: a reason longer than this reads as a wall in a table row: cut at a word, in full below
REASON_CELL = 100


def _outcomes(experiment: Experiment, records: bundle.Records) -> list[str]:
    attempts = records.attempts
    columns = rows.columns(experiment, attempts)
    if not columns:
        return ["### Outcomes", "", "No attempt was recorded.", ""]
    groups = rows.groups(attempts)
    broken = judge.failed_builds(records.builds)
    runs = {r.name: r.checker for r in experiment.runs}
    header = ["case"] + [f"`{c.variant}` {esc(c.label(runs[c.run]))}" for c in columns]
    header.append("reason")
    all_rows = rows.rows(experiment, attempts)
    names = {c.name for c in experiment.cases}
    label = rows.labels(n for _, n in all_rows if n != rows.OUTSIDE and n not in names)
    # Judgement.broken: "run/case: why"
    broken_cases = records.judgement.broken if records.judgement else ()
    not_run = {b.split(": ", 1)[0].split("/", 1)[-1] for b in broken_cases}
    body, last = [], None
    notes: list[str] = []  # reasons too long for a cell, in full under the table

    def short(why: str) -> str:
        if len(why) <= REASON_CELL:
            return esc(why)
        notes.append(why)
        cut = why[:REASON_CELL].rsplit(" ", 1)[0]
        return f"{esc(cut)}… [{len(notes)}]"

    for case, node in all_rows:
        made = []
        for c in columns:
            group = groups.get((case, c.variant, c.run, c.device))
            made.append((c, rows.cell(group, node, broken.get(c.variant, "")) if group else None))
        cells = [_cell_text(cell) for _, cell in made]
        why = rows.reason(made)
        if case in not_run and why:
            why = "not run (broken in every variant alike): " + why
        if node == case:  # a command case, or a case that ran no node: its own row
            body.append([f"**{esc(case)}**", *cells, short(why)])
            continue
        if case != last:  # the case's name heads its nodes
            body.append([f"**{esc(case)}**", *[""] * len(columns), ""])
        last = case
        body.append([code(label.get(node, node)), *cells, short(why)])
    legend = (
        "Each cell: the test's outcome over its repeats; under a checker, the reports "
        "attributed to the node (`3 in 2/3`: 3 reports, in 2 of 3 repeats; folded repeats "
        "included). "
        "`?`: inconclusive evidence (see *What was not run*); `–`: not run there. "
        "Nodes are pytest node ids less the prefix they all share; *reason*: why a cell did "
        "not pass or its evidence is inconclusive, with the columns it holds in."
    )
    full = [f"[{i}] {esc(why)}" for i, why in enumerate(notes, 1)]
    return [
        "### Outcomes per case node", "", legend, "", *table(header, body),
        *([*(f"{line}  " for line in full), ""] if full else []),
    ]  # fmt: skip


#: a frame with a file and line (`sum (pick.c:9)`), not a bare symbol or module offset
LINE = re.compile(r":\d+\)?$")
#: why a signature's frames have no file:line, and what gives them one
NO_LINES = (
    "no file:line: the binary carries no line table (stripped, or built without -g); "
    "build it with -g, or nvcc -lineinfo for device code, to see where"
)


def _findings(view: signature_view.Signatures) -> list[str]:
    pairs = [c for c in view.columns if c.checked]
    shown = [
        sig
        for sig in sorted(view.signatures, key=lambda s: s.label)
        if any(sig.tally(variant=c.variant, run=c.run) for c in pairs)
    ]
    lines = ["### Findings by signature", ""]
    if not shown:
        return [*lines, "No checker finding in any variant or run.", ""]
    header = ["signature", "id"] + [f"`{c.variant}` {c.run}" for c in pairs]
    body, frames = [], []
    for sig in shown:
        counts = []
        for c in pairs:
            tally = sig.tally(variant=c.variant, run=c.run)
            if tally is not None:
                counts.append(f"{tally.count} ({tally.hits}/{c.repeats} repeats)")
            elif c.not_built:
                counts.append("not built")
            else:  # an absence proves something only where the evidence is conclusive
                counts.append("0" if c.conclusive else "0 ?")
        mark = " (tolerated)" if sig.tolerated else ""
        if sig.ambient:
            mark += " (ambient)"
        if sig.follows:
            mark += f" (follows `{sig.follows}`)"
        body.append([code(sig.label) + mark, code(sig.id), *counts])
        if not sig.signature.frames:
            continue
        line = f"- {code(sig.id)}: " + " ← ".join(code(f) for f in sig.frames)
        if sig.library:
            line += f" (below {', '.join(code(f) for f in sig.library)})"
        if sig.freed:
            line += "; freed at " + " ← ".join(code(f) for f in sig.freed)
        if not any(LINE.search(f) for f in sig.frames):
            line += f" ({NO_LINES})"
        frames.append(line)
    note = (
        "Counts are reports, folded repeats included (repeats with the signature out of "
        "N); ids are fingerprints. *ambient*: every variant shows it and no frame is the "
        "subject's (the environment, not the change); *follows*: an API error of the "
        "context the fault with that id destroyed, not weighed on its own. Frames are "
        "the first finding's, with file:line; a use-after-free also names where the "
        "memory was freed."
    )
    out = [*lines, note, "", *table(header, body), "Top frames:", "", *frames, ""]
    # by signature, in the order first seen column by column
    tolerated: dict[str, list[str]] = {}
    for c in pairs:
        for sig, tally in view.within(variant=c.variant, run=c.run):
            if tally.tolerance():
                said = f"`{c.variant}` {c.run}: {tally.tolerance()}"
                tolerated.setdefault(sig.id, []).append(said)
    if tolerated:
        out += ["Suppressed or allowed (kept, not weighed by the verdict):", ""]
        out += [f"- {code(id_)} {esc(w)}" for id_, ws in tolerated.items() for w in ws]
        out.append("")
    return out


def _targets(judgement: Judgement | None) -> list[str]:
    if judgement is None or not judgement.hits:
        return []
    body = [
        [
            code(h.target),
            code(h.variant),
            code(h.run),
            f"{h.hits}/{h.repeats}" + (f" ({h.unknown} unknown)" if h.unknown else ""),
        ]
        for h in judgement.hits
    ]
    return ["### Targets", "", *table(["target", "variant", "run", "repeats with it"], body)]


def _devices(records: bundle.Records) -> list[str]:
    """Per GPU given (--devices): the GPUs its attempts' processes said they used."""
    seen: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for a in records.attempts:
        if a.device:
            seen[a.device][a.gpu or "not reported"] += 1
    if not seen:
        return []
    body = [
        [code(device), ", ".join(f"{code(g)} ({n})" for g, n in gpus.items())]
        for device, gpus in sorted(seen.items())
    ]
    return [
        "### Devices",
        "",
        *table(["CUDA_VISIBLE_DEVICES", "GPU used, by UUID (attempts)"], body),
        "",
    ]


def _not_run(
    results: Mapping[str, Any], experiment: Experiment, records: bundle.Records
) -> list[str]:
    items: list[str] = []
    if not results.get("complete", False):
        why = "was interrupted" if results.get("interrupted") else "did not finish"
        items.append(f"The run {why}: the bundle is incomplete and covers only what ran.")
    items += [f"{esc(n)}" for n in results.get("not_run", [])]
    for variant, error in judge.failed_builds(records.builds).items():
        items.append(f"Variant `{variant}` did not build: {esc(error)}")
    attempted = {(a.variant, a.run, a.case) for a in records.attempts}
    missing = [
        f"`{v.name}` / `{r.name}` / `{c.name}`"
        for v in experiment.variants
        for r in experiment.runs
        for c in experiment.cases
        if (v.name, r.name, c.name) not in attempted
    ]
    if missing:
        items.append("Never attempted: " + ", ".join(missing))
    by_reason: dict[str, list[str]] = defaultdict(list)
    for a in records.attempts:
        if not a.conclusive:
            where = f"`{a.variant}` / `{a.run}` / `{a.case}`" + (
                f" {device_label(a.device)}" if a.device else ""
            )
            by_reason[a.inconclusive_reason].append(f"{where} repeat {a.repeat}")
    for reason, where in by_reason.items():
        items.append(f"Inconclusive ({esc(reason)}): " + ", ".join(where))
    if records.judgement is not None and records.judgement.broken:
        items.append(
            "Broken in every variant alike, fix and controls (not run; no target names or "
            "shows in it, so the verdict stands on the other cases): "
            + ", ".join(esc(b) for b in records.judgement.broken)
        )
    # one line per node (a skip is usually the same in every variant): where, then why
    skipped: dict[tuple[str, str], list[str]] = defaultdict(list)
    for a in records.attempts:
        for n in a.nodes:
            if n.outcome is Outcome.SKIPPED:
                where = f"{a.variant}/{a.run}"
                if where not in skipped[(n.nodeid, n.detail)]:
                    skipped[(n.nodeid, n.detail)].append(where)
    if skipped:
        lines = [
            f"  - {code(node)} in {', '.join(where)}" + (f": {esc(why)}" if why else "")
            for (node, why), where in skipped.items()
        ]
        items.append(
            f"Skipped by the tests themselves ({len(skipped)} node(s)):\n" + "\n".join(lines)
        )
    if not items:
        items.append("Nothing: every planned attempt ran and its evidence is conclusive.")
    return ["### What was not run", "", *[f"- {i}" for i in items], ""]


def render(results: Mapping[str, Any], manifest: Mapping[str, Any], where: str = "") -> str:
    """The Markdown validation section of a bundle (`bundle.read`'s two documents; `where`
    the bundle's directory), with this machine's paths written relative (`paths`)."""
    records = bundle.records(results)
    experiment = records.experiment
    tools = {a.run: a.checker for a in records.attempts}
    verdict = results.get("verdict") or "not judged"
    carried = " (carried: no attempt ran)" if records.carried is not None else ""
    lines = [f"## Validation: `{experiment.name}`: {verdict.upper()}{carried}", ""]
    if experiment.description:
        lines += [f"> {esc(experiment.description)}", ""]
    lines += _verdict(results, records.judgement)
    lines += provenance.setup(results, manifest, experiment, tools)
    lines += provenance.variants(experiment, records)
    lines += _outcomes(experiment, records)
    lines += _findings(signature_view.make(experiment, records.attempts, records.builds))
    lines += _targets(records.judgement)
    lines += _devices(records)
    lines += _not_run(results, experiment, records)
    text = "\n".join(lines).rstrip("\n") + "\n"
    return paths.scrub(text, paths.anchors(manifest, where))
