"""Every renderer shows the same signatures: one set of records (real captured logs:
torch's start-up API errors, ambient; a CUB fault and the launch failures that follow
it; an allowed ASan use-after-free) in the table, Markdown, HTML, JUnit and SARIF, each
naming the same ids and labels with the same ambient, follow-on and tolerated marks
(`judge.signature_view`, grouped once)."""

from __future__ import annotations

import html as htmllib
import io
import json
import re
import xml.etree.ElementTree as ET
from typing import Any

from rich.console import Console

from orchestrator import judge
from orchestrator.judge import signature_view
from orchestrator.report import html, junit, markdown, sarif, table
from unit.judge.test_signature_view import ATTEMPTS, BUILDS, EXPERIMENT

#: id -> (label, ambient, the fault it follows, tolerated)
Shown = dict[str, tuple[str, bool, str, bool]]


def results() -> dict[str, Any]:
    j = judge.causality(EXPERIMENT, ATTEMPTS, judge.failed_builds(BUILDS))
    return {
        "complete": True,
        "verdict": j.verdict.value,
        "experiment": EXPERIMENT.to_dict(),
        "backend": {"name": "compute-sanitizer", "reason": "the test's"},
        "sources": [],
        "builds": [b.to_dict() for b in BUILDS],
        "attempts": [a.to_dict() for a in ATTEMPTS],
        "not_run": [],
        "judgement": j.to_dict(),
    }


def expected() -> Shown:
    view = signature_view.make(EXPERIMENT, ATTEMPTS, BUILDS)
    return {s.id: (s.label, s.ambient, s.follows, s.tolerated) for s in view.signatures}


def from_table() -> Shown:
    console = Console(record=True, width=200, file=io.StringIO())
    console.print(table.signatures(EXPERIMENT, ATTEMPTS), soft_wrap=True)
    out: Shown = {}
    for line in filter(None, console.export_text().splitlines()[1:]):
        m = re.match(r"\s+\S+ / \S+: \d+ x (.+?) ([0-9a-f]{12})\b(.*)$", line)
        assert m, line
        label, id_, rest = m.groups()
        follows = re.search(r"\[follows ([0-9a-f]{12})\]", rest)
        was = out.get(id_, (label, False, "", False))
        tolerated = was[3] or "suppressed by" in rest or "allowed:" in rest
        out[id_] = (label, "[ambient" in rest, follows.group(1) if follows else "", tolerated)
    return out


def from_markdown() -> Shown:
    text = markdown.render(results(), {})
    section = text.split("### Findings by signature", 1)[1].split("Top frames:", 1)[0]
    out: Shown = {}
    for row in section.splitlines():
        m = re.match(r"\| `(.+?)`(.*?) \| `([0-9a-f]{12})` \|", row)
        if m:
            label, marks, id_ = m.groups()
            follows = re.search(r"\(follows `([0-9a-f]{12})`\)", marks)
            out[id_] = (
                label,
                "(ambient)" in marks,
                follows.group(1) if follows else "",
                "(tolerated)" in marks,
            )
    return out


def from_html() -> Shown:
    page = html.render(results(), {})
    items = re.search(r"<h2>Signatures</h2>\n<ul>(.*?)</ul>", page).group(1)
    out: Shown = {}
    for item in re.findall(r"<li>(.*?)</li>", items):
        text = htmllib.unescape(re.sub(r"<[^>]+>", "", item.split("<br>")[0]))
        m = re.match(r"\d+ × (.+?) ([0-9a-f]{12})(.*)$", text)
        label, id_, rest = m.groups()
        follows = re.search(r"\[follows ([0-9a-f]{12})\]", rest)
        tolerated = "suppressed by" in rest or "allowed:" in rest
        out[id_] = (label, "[ambient" in rest, follows.group(1) if follows else "", tolerated)
    return out


def from_junit() -> Shown:
    root = ET.fromstring(junit.render(results(), {}))
    text = root.find("testsuite/system-out").text or ""
    out: Shown = {}
    current = ""
    for line in text.splitlines():
        m = re.match(r"\d+ x (.+) \[signature ([0-9a-f]{12})\]$", line)
        if m:
            current = m.group(2)
            was = out.get(current, (m.group(1), False, "", False))
            out[current] = was
        elif current and line.startswith("    "):
            label, amb, follows, tol = out[current]
            said = line.strip()
            out[current] = (
                label,
                amb or said.startswith("ambient:"),
                said.split()[1] if said.startswith("follows ") else follows,
                tol or said.startswith("tolerated:"),
            )
    return out


def from_sarif() -> Shown:
    (run,) = json.loads(sarif.render(results(), {}))["runs"]
    labels = {r["id"]: r["shortDescription"]["text"] for r in run["tool"]["driver"]["rules"]}
    out: Shown = {}
    for r in run["results"]:
        if r["ruleId"] == sarif.VERDICT_RULE_ID:
            continue  # the verdict's own result: no signature
        props = r["properties"]
        id_ = r["partialFingerprints"][sarif.FINGERPRINT_KEY][:12]
        was = out.get(id_, (labels[r["ruleId"]], False, "", False))
        out[id_] = (
            was[0],
            was[1] or props.get("ambient", False),
            props.get("follows", was[2]),
            was[3] or props["suppressed"] > 0,
        )
    return out


def test_every_renderer_shows_the_same_signatures_and_marks() -> None:
    want = expected()
    assert any(amb for _, amb, _, _ in want.values())
    assert any(follows for _, _, follows, _ in want.values())
    assert any(tol for *_, tol in want.values())
    for name, shown in (
        ("table", from_table()),
        ("markdown", from_markdown()),
        ("html", from_html()),
        ("junit", from_junit()),
        ("sarif", from_sarif()),
    ):
        assert shown == want, name
