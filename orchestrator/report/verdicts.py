"""Rich renderings of the gate's verdict and of a pinned-release comparison (the CLI
prints them), and the gate's Markdown summary (the top of the gate's report.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from orchestrator import bundle
from orchestrator.errors import BundleError
from orchestrator.files import load_json
from orchestrator.gate import allowances
from orchestrator.gate.allowances import Allowance
from orchestrator.gate.manifest import GATE
from orchestrator.gate.pipeline import GATE_SCHEMA
from orchestrator.gate.policy import GateResult, Judged
from orchestrator.judge.compare import Comparison
from orchestrator.model import Verdict
from orchestrator.report import markdown, paths, rows

STYLE = {Verdict.PASS: "bold green", Verdict.FAIL: "bold red", Verdict.INCONCLUSIVE: "bold yellow"}
OUTCOME_STYLE = {"passed": "green", "failed": "red", "error": "bold red", "skipped": "dim"}


def _short(digest: str) -> str:
    return digest[:12] if digest else "-"


def gate(result: GateResult) -> RenderableType:
    """The per-experiment verdicts, each checker's liveness, and the gate's verdict."""
    t = Table(title=f"gate {result.name}", title_justify="left")
    t.add_column("experiment")
    t.add_column("verdict")
    t.add_column("first reason", overflow="fold")
    for e in result.experiments:
        t.add_row(
            e.name,
            Text(e.verdict.name, style=STYLE[e.verdict]),
            Text(e.reasons[0] if e.reasons else ""),
        )
    lines: list[RenderableType] = [t]
    for c in result.liveness:
        caught = ", ".join(c.caught_by) if c.live else "no positive control"
        lines.append(Text(f"liveness {c.checker.value}: {caught}"))
    for u in result.unexpected:
        lines.append(
            Text(
                f"unexpected {u.id}: {u.experiment}/{u.variant}/{u.run}: {u.signature} "
                f"x{u.findings}",
                style="red",
            )
        )
    for a in result.ambient:
        lines.append(
            Text(
                f"ambient {a.id}: {a.experiment}/{a.run}: {a.signature} x{a.findings} (every "
                "variant, no frame in the subject)",
                style="yellow",
            )
        )
    for t in result.tolerated:
        lines.append(
            Text(
                f"tolerated: {t.experiment}/{t.variant}/{t.run}: {t.signature} x{t.findings}"
                f" ({t.why})",
                style="yellow",
            )
        )
    verdict = Text("gate: ")
    verdict.append(result.verdict.name, style=STYLE[result.verdict])
    lines.append(verdict)
    lines += [Text(f"  {r}") for r in result.reasons]
    return Group(*lines)


def gate_markdown(result: GateResult) -> str:
    """The gate's own section of report.md; each experiment's section follows it."""
    rows = [
        f"## Release gate `{result.name}`: **{result.verdict.name}**",
        "",
        *[f"- {r}" for r in result.reasons],
        "",
        "| experiment | verdict | first reason | bundle |",
        "|---|---|---|---|",
    ]
    for e in result.experiments:
        reason = (e.reasons[0] if e.reasons else "").replace("|", "\\|")
        # the bundle by its name: it lies in the gate's directory, wherever that is
        rows.append(f"| {e.name} | {e.verdict.name} | {reason} | `{Path(e.bundle).name}` |")
    rows += ["", "| checker | positive controls caught |", "|---|---|"]
    for c in result.liveness:
        rows.append(f"| {c.checker.value} | {', '.join(c.caught_by) or '**none**'} |")
    if result.unexpected:
        rows += ["", "Unexpected signatures (no target explains them):", ""]
        rows += [
            f"- `{u.id}` {u.experiment}/{u.variant}/{u.run}: `{u.signature}` x{u.findings}"
            + (f"; to accept it, add to `policy.allow`: `{u.allowance}`" if u.allowance else "")
            for u in result.unexpected
        ]
    if result.ambient:
        rows += [
            "",
            "Ambient signatures (every variant shows them, fix and controls alike, and no "
            "frame is the subject's: the environment, not the change):",
            "",
        ]
        rows += [
            f"- `{a.id}` {a.experiment}/{a.run}: `{a.signature}` x{a.findings}"
            + (f"; allowance: `{a.allowance}`" if a.allowance else "")
            for a in result.ambient
        ]
    if result.tolerated:
        rows += ["", "Tolerated findings (kept and listed, not weighed by the verdict):", ""]
        rows += [
            f"- {t.experiment}/{t.variant}/{t.run}: `{t.signature}` x{t.findings}: {t.why}"
            for t in result.tolerated
        ]
    if result.allowed:
        rows += ["", f"{result.allowed} finding(s) tolerated by the policy's allow list."]
    if result.expired:
        rows += ["", "Expired allowances (each fails the gate):", ""]
        rows += [f"- {e}" for e in result.expired]
    if result.unused:
        rows += ["", "Allowances and suppressions that matched nothing:", ""]
        rows += [f"- {u}" for u in result.unused]
    return "\n".join(rows) + "\n"


def gate_report(
    result: GateResult, judged: Sequence[Judged], allow: Sequence[Allowance] = ()
) -> str:
    """report.md of a gate: its own section, then each experiment's, from its bundle, the
    findings the policy's allowances tolerate marked `allowed: <reason>` (expired ones
    tolerate nothing: give only the live ones)."""
    sections, manifests = [""], []
    for j in judged:
        if j.bundle and (Path(j.bundle) / bundle.RESULTS).exists():
            results, manifest = bundle.read(j.bundle)
            marked = allowances.mark_results(results, allow)
            sections.append(markdown.render(marked, manifest, str(j.bundle)))
            manifests.append((manifest, Path(j.bundle).parent))
    sections[0] = _scrubbed(gate_markdown(result), manifests)
    return fit(sections)


def _scrubbed(text: str, manifests: Sequence[tuple[Mapping[str, Any], Path]]) -> str:
    """The gate's own section with this machine's paths written as each experiment's
    section writes them (its bundle's anchors: the repository `.`, the cache, the home),
    the gate's directory as `<gate>`."""
    pairs: dict[str, str] = {}
    for manifest, root in manifests:
        pairs.setdefault(str(root), "<gate>")
        for path, name in paths.anchors(manifest):
            if name != "<bundle>":
                pairs.setdefault(path, name)
    return paths.scrub(text, sorted(pairs.items(), key=lambda p: -len(p[0])))


#: GitHub's limit on a comment's (and a job summary's) size, less room for a heading
COMMENT_LIMIT = 65_536 - 1_536


def fit(sections: Sequence[str], limit: int = COMMENT_LIMIT) -> str:
    """The gate's section and each experiment's, joined; where that passes `limit` (a
    gate of several experiments in one pull-request comment), each experiment keeps
    its heading, verdict and reasons, and says how to print the rest; a text still too
    long is cut at a line, saying so. The gate's section always comes whole first."""
    text = "\n".join(sections)
    if len(text) <= limit:
        return text
    short = [sections[0]]
    for section in sections[1:]:
        head = section.split("\n### ", 1)[0].rstrip("\n")
        short.append(
            head + "\n\n_The rest of this section is left out to keep the report under "
            "GitHub's comment limit: `csorch report BUNDLE --format markdown` prints it whole._\n"
        )
    text = "\n".join(short)
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit("\n", 1)[0]
    return cut + "\n\n_Cut here to stay under GitHub's comment limit; report.md is whole._\n"


def stored_gate(root: Path) -> tuple[GateResult, list[Path]]:
    """A gate directory's recorded verdict (gate.json) and the experiment bundles in it;
    BundleError when gate.json cannot be read back."""
    path = Path(root) / GATE
    try:
        doc = load_json(path)
        if not isinstance(doc, dict) or doc.get("schema") != GATE_SCHEMA:
            raise ValueError(f"not a {GATE_SCHEMA} document")
        result = GateResult.from_dict({k: v for k, v in doc.items() if k != "schema"})
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BundleError(
            path,
            f"{GATE} cannot be read back: {exc}",
            hint="re-run the gate, or judge its bundles again: csorch gate --from DIR",
        ) from None
    found = sorted(d for d in Path(root).iterdir() if (d / bundle.RESULTS).is_file())
    return result, found


def gate_dir_report(root: Path, allow: Sequence[Allowance] = ()) -> str:
    """report.md of a stored gate directory, made again from its gate.json and bundles
    (the verdict is the one the gate recorded; `csorch gate --from` judges again)."""
    result, found = stored_gate(root)
    sections, manifests = [""], []
    for path in found:
        results, manifest = bundle.read(path)
        marked = allowances.mark_results(results, allow)
        sections.append(markdown.render(marked, manifest, str(path)))
        manifests.append((manifest, Path(root)))
    sections[0] = _scrubbed(gate_markdown(result), manifests)
    return fit(sections)


def comparison(c: Comparison) -> RenderableType:
    """Identities, per-node outcomes, signature sets, and the two statements."""
    ids = Table(title=f"{c.experiment}: variants", title_justify="left")
    for col in ("variant", "role", "build", "source", "patches", "binaries (sha256)"):
        ids.add_column(col, overflow="fold")
    for i in c.identities:
        ids.add_row(
            Text(i.variant),
            i.role,
            i.kind + ("" if i.built else " [red]not built[/]"),
            _short(i.source_digest),
            "\n".join(f"{p.split()[0]} {_short(p.split()[-1])}" for p in i.patches) or "-",
            "\n".join(f"{b.split()[0]} {_short(b.split()[-1])}" for b in i.binaries) or "-",
        )
    variants = [i.variant for i in c.identities]
    nodes = Table(title="outcomes per case", title_justify="left")
    nodes.add_column("run")
    nodes.add_column("case")
    for v in variants:
        nodes.add_column(v)
    label = rows.labels(row.node for row in c.nodes)
    for row in c.nodes:
        cells = dict(row.outcomes)
        nodes.add_row(
            row.run,
            Text(label[row.node]),  # Text: "[cuda-64x96]" is not Rich markup
            *[
                Text(cells.get(v, "-"), style=OUTCOME_STYLE.get(cells.get(v, ""), ""))
                for v in variants
            ],
        )
    sigs = Table(title="signatures per checker run", title_justify="left")
    sigs.add_column("run")
    sigs.add_column("variant")
    sigs.add_column("signatures (findings)", overflow="fold")
    for s in c.signatures:
        text = "\n".join(f"{label} x{n}" for label, n in s.signatures) or "none"
        sigs.add_row(f"{s.run} ({s.checker})", s.variant, Text(text))
    return Group(ids, nodes, sigs, *[Text(line) for line in c.statements])
