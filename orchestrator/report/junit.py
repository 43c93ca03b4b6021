"""JUnit XML of a bundle: one testcase per case node x variant x run x device.

CI systems read JUnit, so a bundle's cases show up beside the project's other tests:
- the classname is `<experiment>.<variant>.<run>[.gpu<device>]` and the name is the
  pytest node id (a command case is one node, named by the case); repeats fold into the
  testcase, as in the other reports (`report.rows`);
- the test's own outcome decides the element: failed -> <failure>, error or a variant
  that did not build -> <error>, skipped -> <skipped>. A test that passed with evidence
  that cannot be trusted (a truncated checker log, a timeout) is an <error> of type
  "inconclusive": never a pass, as in the verdict;
- checker findings are data, not failures (a control is supposed to show them): the
  findings attributed to the node are listed in its <system-out>, grouped by signature,
  and counted in a property beside the variant's role (control or fix);
- an experiment is one <testsuite>, with its verdict and reasons as properties; a case
  that was never attempted (an interrupted run) is a <skipped> testcase, so the counts
  show the gap rather than hide it.
Pure: documents in, text out.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

from orchestrator import bundle, judge
from orchestrator.findings.signatures import group
from orchestrator.model import Attempt, Experiment, Outcome
from orchestrator.model.job import device_label
from orchestrator.report import rows

# XML 1.0 has no escape for most control characters: a log line with an ANSI colour
# code would make the whole document unreadable
_INVALID_XML_RE = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: object) -> str:
    return _INVALID_XML_RE.sub("\ufffd", str(text))


def _element(parent: ET.Element, tag: str, text: str = "", **attrs: object) -> ET.Element:
    child = ET.SubElement(parent, tag, {k: _clean(v) for k, v in attrs.items()})
    if text:
        child.text = _clean(text)
    return child


def _properties(parent: ET.Element, pairs: Sequence[tuple[str, object]]) -> None:
    if pairs:
        props = _element(parent, "properties")
        for name, value in pairs:
            _element(props, "property", name=name, value=value)


def _findings_text(cell: rows.Cell) -> str:
    lines = []
    for sig in group(cell.findings):
        lines.append(f"{sig.count} x {sig.signature.label()} [signature {sig.fingerprint[:12]}]")
        if sig.tolerance():
            lines.append(f"    tolerated: {sig.tolerance()}")
        if sig.example.header:
            lines.append(f"    first: {sig.example.header}")
        lines += [f"    skipped (not the subject's): {frame}" for frame in sig.skipped]
        lines += [f"    at {frame}" for frame in sig.signature.frames]
    return "\n".join(lines)


def _status(cell: rows.Cell) -> tuple[str, str, str]:
    """(element, type, message) for the testcase; element "" for a plain pass."""
    outcome = cell.outcome
    detail = "; ".join(cell.details)
    if cell.not_built:
        return "error", "not built", f"the variant did not build: {cell.not_built}"
    if outcome is Outcome.FAILED:
        n = sum(1 for o in cell.outcomes if o is Outcome.FAILED)
        return "failure", "failed", detail or f"failed in {n} of {cell.repeats} repeats"
    if outcome is Outcome.ERROR:
        return "error", "error", detail or "the test errored"
    if outcome is Outcome.SKIPPED:
        return "skipped", "", detail or "skipped by the test"
    if cell.reasons:
        return "error", "inconclusive", "; ".join(cell.reasons)
    return "", "", ""


def _testcase(
    suite: ET.Element,
    classname: str,
    case: str,
    cell: rows.Cell,
    attempts: Sequence[Attempt],
    props: list[tuple[str, object]],
) -> str:
    name = f"{case} {rows.OUTSIDE}" if cell.node == rows.OUTSIDE else cell.node
    attrs: dict[str, object] = {"name": name, "classname": classname}
    if not any(n.nodeid != cell.node for a in attempts for n in a.nodes):
        # the attempts ran this node alone: their time is its time
        attrs["time"] = f"{sum(a.duration for a in attempts):.3f}"
    testcase = _element(suite, "testcase", **attrs)
    _properties(
        testcase,
        [
            *props,
            ("csorch.repeats", cell.repeats),
            ("csorch.outcomes", ",".join(o.value for o in cell.outcomes)),
            ("csorch.findings", cell.records),
        ],
    )
    element, kind, message = _status(cell)
    if element == "skipped":
        _element(testcase, "skipped", message=message)
    elif element:
        body = "\n".join(cell.reasons) if cell.reasons and kind != "inconclusive" else ""
        _element(testcase, element, body, type=kind, message=message)
    out = _findings_text(cell)
    logs = [f"log: {a.log}" for a in attempts if a.log]
    if out or logs:
        _element(testcase, "system-out", "\n".join([*logs, out]).strip() + "\n")
    return element


def _suite_properties(results: Mapping[str, Any], manifest: Mapping[str, Any], judgement):
    backend = results.get("backend", {})
    host = manifest.get("host", {})
    pairs: list[tuple[str, object]] = [
        ("csorch.verdict", results.get("verdict") or "not judged"),
        *[("csorch.verdict.reason", r) for r in (judgement.reasons if judgement else ())],
        ("csorch.backend", backend.get("name", "")),
        ("csorch.backend.reason", backend.get("reason", "")),
        ("csorch.complete", str(bool(results.get("complete"))).lower()),
        ("csorch.interrupted", str(bool(results.get("interrupted"))).lower()),
        ("csorch.version", results.get("csorch", "")),
        *[("csorch.not_run", n) for n in results.get("not_run", [])],
    ]
    for key in ("torch", "torch_cuda", "driver", "compute_sanitizer", "cc", "cxx", "nvcc"):
        if host.get(key):
            pairs.append((f"host.{key}", host[key]))
    pairs += [("host.gpu", g) for g in host.get("gpus", [])]
    return pairs


def _plan(experiment: Experiment, attempts: Sequence[Attempt]):
    """(variant, run, device, case) in config order, each case on the devices it used."""
    devices: dict[tuple[str, str], list[str]] = {}
    for c in rows.columns(experiment, attempts):
        devices.setdefault((c.variant, c.run), []).append(c.device)
    for v in experiment.variants:
        for r in experiment.runs:
            for device in devices.get((v.name, r.name), [""]):
                for case in experiment.cases:
                    yield v.name, r.name, device, case.name


def render(results: Mapping[str, Any], manifest: Mapping[str, Any]) -> str:
    """JUnit XML (one testsuite: the bundle's experiment) as a string."""
    records = bundle.records(results)
    experiment = records.experiment
    groups = rows.groups(records.attempts)
    broken = judge.failed_builds(records.builds)
    tools = {a.run: a.checker.value for a in records.attempts}
    root = ET.Element("testsuites", name="csorch")
    suite = _element(root, "testsuite", name=experiment.name)
    _properties(suite, _suite_properties(results, manifest, records.judgement))
    counts = {"tests": 0, "failure": 0, "error": 0, "skipped": 0}
    for variant, run, device, case in _plan(experiment, records.attempts):
        classname = f"{experiment.name}.{variant}.{run}"
        classname += f".{device_label(device)}" if device else ""
        props: list[tuple[str, object]] = [
            ("csorch.role", experiment.role(variant) or "other"),
            ("csorch.checker", tools.get(run, experiment.run(run).checker.value)),
        ]
        attempts = groups.get((case, variant, run, device))
        if not attempts:
            testcase = _element(suite, "testcase", name=case, classname=classname)
            _properties(testcase, props)
            _element(testcase, "skipped", message="never attempted (the run did not get to it)")
            counts["tests"] += 1
            counts["skipped"] += 1
            continue
        for node in rows.nodes(attempts, case):
            cell = rows.cell(attempts, node, broken.get(variant, ""))
            element = _testcase(suite, classname, case, cell, attempts, props)
            counts["tests"] += 1
            if element:
                counts[element] += 1
    time = f"{sum(a.duration for a in records.attempts):.3f}"
    totals = {
        "tests": counts["tests"],
        "failures": counts["failure"],
        "errors": counts["error"],
        "skipped": counts["skipped"],
        "time": time,
    }
    for element in (root, suite):
        for key, value in totals.items():
            element.set(key, str(value))
    if results.get("started"):
        # the JUnit schema's timestamp has no zone: the bundle records UTC
        suite.set("timestamp", str(results["started"])[:19])
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
