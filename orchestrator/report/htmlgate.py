"""HTML of a gate's directory (`csorch gate --out`): one self-contained page. The gate's
verdict and reasons first, then each experiment's verdict and first reason linked to its
section, each checker's liveness and the findings the gate weighed or tolerated (what
the gate's report.md says, `report.verdicts.gate_markdown`), then one section per
experiment's bundle (`report.html.section`). The verdict shown is the one the gate
recorded (gate.json); `csorch gate --from` judges again. Every text is escaped and this
machine's paths are written relative (`paths`), as in one bundle's page.
"""

from __future__ import annotations

import html as htmllib
import re
from collections.abc import Sequence
from pathlib import Path

from orchestrator import bundle
from orchestrator.gate import allowances
from orchestrator.gate.allowances import Allowance
from orchestrator.gate.policy import GateResult
from orchestrator.report import html, paths, verdicts
from orchestrator.report.html import VERDICT_COLOURS


def _e(text: object) -> str:
    return htmllib.escape(str(text), quote=True)


def anchor(index: int, name: str) -> str:
    """The id of an experiment's section: unique (its place) and a valid fragment
    whatever the name holds."""
    return f"x{index}-" + re.sub(r"[^A-Za-z0-9_-]", "-", name)[:60]


def _verdict(word: str) -> str:
    colour = VERDICT_COLOURS.get(word.lower(), "#59636e")
    return f'<span class="verdict" style="background:{colour}">{_e(word.upper())}</span>'


def _list(title: str, items: Sequence[str]) -> str:
    if not items:
        return ""
    return f"<p>{_e(title)}</p><ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


def gate_section(result: GateResult, links: dict[str, str]) -> str:
    """The gate's own part of the page; `links`: an experiment's bundle name -> the id
    of its section (an experiment without one is listed, not linked)."""
    rows = []
    for e in result.experiments:
        name = Path(e.bundle).name
        target = links.get(name)
        shown = f'<a href="#{target}">{_e(e.name)}</a>' if target else _e(e.name)
        first = e.reasons[0] if e.reasons else ""
        rows.append(
            f"<tr><th>{shown}</th><td>{_verdict(e.verdict.value)}</td>"
            f'<td class="why">{_e(first)}</td><td><code>{_e(name)}</code></td></tr>'
        )
    live = "".join(
        f"<tr><th>{_e(c.checker.value)}</th><td>"
        + (_e(", ".join(c.caught_by)) if c.caught_by else "<strong>none</strong>")
        + "</td></tr>"
        for c in result.liveness
    )
    unexpected = [
        f"<code>{_e(u.id)}</code> {_e(u.experiment)}/{_e(u.variant)}/{_e(u.run)}: "
        f"<code>{_e(u.signature)}</code> &times;{u.findings}"
        + (f"; to accept it, add to <code>policy.allow</code>: <code>{_e(u.allowance)}</code>"
           if u.allowance else "")
        for u in result.unexpected
    ]  # fmt: skip
    ambient = [
        f"<code>{_e(a.id)}</code> {_e(a.experiment)}/{_e(a.run)}: "
        f"<code>{_e(a.signature)}</code> &times;{a.findings}"
        + (f"; allowance: <code>{_e(a.allowance)}</code>" if a.allowance else "")
        for a in result.ambient
    ]
    tolerated = [
        f"{_e(t.experiment)}/{_e(t.variant)}/{_e(t.run)}: <code>{_e(t.signature)}</code> "
        f"&times;{t.findings}: {_e(t.why)}"
        for t in result.tolerated
    ]
    parts = [
        f"<h1>Release gate {_e(result.name)}</h1>",
        f"<p>{_verdict(result.verdict.value)}</p>",
        "<ul>" + "".join(f"<li>{_e(r)}</li>" for r in result.reasons) + "</ul>"
        if result.reasons
        else "",
        "<h2>Experiments</h2>",
        "<table><tr><th>experiment</th><th>verdict</th><th>first reason</th><th>bundle</th>"
        f"</tr>{''.join(rows)}</table>",
        "<h2>Checkers</h2>",
        f"<table><tr><th>checker</th><th>positive controls caught</th></tr>{live}</table>",
        _list("Unexpected signatures (no target explains them):", unexpected),
        _list(
            "Ambient signatures (every variant shows them, fix and controls alike, and no "
            "frame is the subject's: the environment, not the change):",
            ambient,
        ),
        _list("Tolerated findings (kept and listed, not weighed by the verdict):", tolerated),
        f"<p>{result.allowed} finding(s) tolerated by the policy's allow list.</p>"
        if result.allowed
        else "",
        _list("Expired allowances (each fails the gate):", [_e(e) for e in result.expired]),
        _list("Allowances and suppressions that matched nothing:", [_e(u) for u in result.unused]),
    ]
    return html.scrolled("\n".join(p for p in parts if p))


def gate_dir_page(root: Path, allow: Sequence[Allowance] = ()) -> str:
    """The page of a stored gate directory, from its gate.json and bundles (the findings
    `allow`'s allowances tolerate marked as allowed: give only the live ones)."""
    result, found = verdicts.stored_gate(root)
    # in the order of the gate's table, then any other bundle the directory holds
    order = {Path(e.bundle).name: i for i, e in enumerate(result.experiments)}
    found = sorted(found, key=lambda p: (order.get(p.name, len(order)), p.name))
    links: dict[str, str] = {}
    sections, pairs = [], []
    for i, path in enumerate(found, 1):
        results, manifest = bundle.read(path)
        marked = allowances.mark_results(results, allow)
        links[path.name] = anchor(i, path.name)
        body = html.section(marked, manifest, str(path), shift=1)
        sections.append(f'<section id="{links[path.name]}">\n{body}\n</section>')
        pairs += paths.anchors(manifest, str(path))
    # the gate's reasons quote its experiments' (a patch's path): every bundle's anchors,
    # the longest first, as in each section
    # and the gate's own directory (its bundles' command names it as --out)
    pairs = sorted(
        {**dict(pairs), str(Path(root).resolve()): "<gate>"}.items(), key=lambda p: -len(p[0])
    )
    # each section is scrubbed of its bundle's paths already; the gate's are left
    body = html.scrub("\n".join([gate_section(result, links), *sections]), pairs)
    title = f"csorch gate: {result.name}: {result.verdict.value}"
    return html.page(title, body)
