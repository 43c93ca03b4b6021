"""JUnit XML of a bundle: one testcase per case node x variant x run x device, valid
against the Apache Ant JUnit schema that CI systems read (tests/fixtures/junit/JUnit.xsd).

CI systems read JUnit, so a bundle's cases show up beside the project's other tests:
- the classname is `<experiment>.<variant>.<run>[.gpu<device>]` and the name is the
  pytest node id (a command case is one node, named by the case); repeats fold into the
  testcase, as in the other reports (`report.rows`);
- the test's own outcome decides the element: failed -> <failure>, error or a variant
  that did not build -> <error>, skipped -> <skipped>. A test that passed with evidence
  that cannot be trusted (a truncated checker log, a timeout) is an <error> of type
  "inconclusive": never a pass, as in the verdict;
- a control's checker findings are data, not failures (a control is supposed to show
  them), and so is a control's failed (or errored) test that a test-outcome target of the
  experiment shows there (`judge.expected_outcomes`): a <skipped> "expected failure", as
  pytest writes an xfail, so that a PASS does not read as failed tests; a control's
  failure that no target explains stays a <failure>. A finding in the fix that counts
  (not ambient, not a follow-on, not suppressed or allowed) makes its case a <failure> of
  type "finding", even where the test passed;
- the verdict is a testcase of its own (`<experiment>.csorch` / `verdict`), first: PASS
  passes, FAIL is a <failure>, INCONCLUSIVE (or no verdict) an <error>, so a CI that only
  counts testcases never shows a red verdict as green; and so is each claim it stands
  on (`judge.Hits`): "control C reproduces [target] in run R" (an <error> where it is not
  demonstrated: k of N repeats, `judge.needed`) and "fix F removes [target] in run R"
  (a <failure> where the fix still shows it, an <error> where its evidence is unsure);
- an experiment is one <testsuite>, with its verdict and reasons as properties; a case
  that was never attempted (an interrupted run) is a <skipped> testcase, so the counts
  show the gap rather than hide it.
The schema allows properties and output on the testsuite only, not on a testcase, so a
testcase's facts (role, checker, repeats, outcomes, findings) are one suite property
named `testcase:<classname>::<name>`, and its findings (by signature, with the marks
every report gives them: `judge.signature_view`) and logs a section of the suite's
<system-out> headed `[<classname>::<name>]`. It also requires what the Ant task always
wrote: the suite's package, id, hostname ("localhost": a bundle records no host name)
and timestamp (zone-less), every testcase's time (0 where the attempt ran several nodes
and no node's own time is known), and <system-out>/<system-err>, even empty.
Pure: documents in, text out.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

from orchestrator import bundle, judge
from orchestrator.judge import signature_view
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


def _findings_text(view: signature_view.Signatures, **scope: str) -> str:
    lines = []
    for sig, tally in view.within(**scope):
        lines.append(f"{tally.count} x {sig.label} [signature {sig.id}]")
        if sig.ambient:
            lines.append(f"    {signature_view.AMBIENT}")
        if sig.follows:
            lines.append(f"    follows {sig.follows}")
        if tally.tolerance():
            lines.append(f"    tolerated: {tally.tolerance()}")
        if tally.example.header:
            lines.append(f"    first: {tally.example.header}")
        lines += [f"    skipped (not the subject's): {frame}" for frame in tally.skipped]
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
    findings: str,
    counting: Sequence[str] = (),
    expected: str = "",
) -> tuple[str, tuple[str, object], str]:
    """Add the testcase; (its element, its suite property, its <system-out> section);
    `findings`: the text of its signatures; `counting`: the labels of the findings that
    fail it (the fix's); `expected`: the target a control's failed test shows (the
    control is meant to fail it)."""
    name = f"{case} {rows.OUTSIDE}" if cell.node == rows.OUTSIDE else cell.node
    alone = not any(n.nodeid != cell.node for a in attempts for n in a.nodes)
    # the attempts ran this node alone: their time is its time
    time = sum(a.duration for a in attempts) if alone else 0.0
    testcase = _element(suite, "testcase", name=name, classname=classname, time=f"{time:.3f}")
    facts = [
        *props,
        ("repeats", cell.repeats),
        ("outcomes", ",".join(o.value for o in cell.outcomes)),
        ("findings", cell.records),
    ]
    key = f"{classname}::{name}"
    prop = (f"testcase:{key}", "; ".join(f"{k}={v}" for k, v in facts))
    element, kind, message = _status(cell)
    if expected and kind in ("failed", "error"):
        element = "skipped"
        message = f"expected failure: the control shows its target [{expected}] ({message})"
    if counting and element in ("", "skipped"):
        element, kind = "failure", "finding"
        message = f"{len(counting)} finding(s) in the fix: " + "; ".join(counting)
    if element == "skipped":
        _element(testcase, "skipped", message=message)
    elif element:
        body = "\n".join(cell.reasons) if cell.reasons and kind != "inconclusive" else ""
        _element(testcase, element, body, type=kind, message=message)
    logs = [f"log: {a.log}" for a in attempts if a.log]
    section = f"[{key}]\n" + "\n".join([*logs, findings]).strip() if findings or logs else ""
    return element, prop, section


#: the classname of the verdict's and its claims' testcases (after the experiment's name)
CLAIMS = "csorch"


def _claims(experiment: Experiment, verdict: str, judgement) -> list[tuple[str, str, str, str]]:
    """(name, element, type, message) of the verdict's testcase, then each claim's;
    element "" for a pass."""
    reasons = "; ".join(judgement.reasons) if judgement else "the bundle holds no verdict"
    element, kind = {"pass": ("", ""), "fail": ("failure", "fail")}.get(
        verdict, ("error", "inconclusive")
    )
    out = [("verdict", element, kind, f"{verdict.upper()}: {reasons}")]
    for h in judgement.hits if judgement else ():
        role = experiment.role(h.variant)
        unsure = f"{h.unknown} of {h.repeats} repeats without conclusive evidence"
        if role == "control":
            k = judge.needed(experiment, experiment.run(h.run))
            name = f"control {h.variant} reproduces [{h.target}] in run {h.run}"
            if h.unknown:
                out.append((name, "error", "inconclusive", unsure))
            elif h.hits < k:
                why = f"shown in {h.hits} of {h.repeats} repeats; needs {k}: not demonstrated"
                out.append((name, "error", "inconclusive", why))
            else:
                out.append((name, "", "", ""))
        elif role == "fix":
            name = f"fix {h.variant} removes [{h.target}] in run {h.run}"
            if h.hits:
                why = f"the fix still shows it in {h.hits} of {h.repeats} repeats"
                out.append((name, "failure", "fail", why))
            elif h.unknown:
                out.append((name, "error", "inconclusive", unsure))
            else:
                out.append((name, "", "", ""))
    return out


def _expected(attempts: Sequence[Attempt], cell: rows.Cell, expected: Mapping[int, str]) -> str:
    """The target that every attempt of a control's cell which did not pass shows ("" where
    one of them shows none: that failure is the test's own)."""
    if cell.not_built:
        return ""
    bad = [a for a in attempts if a.outcome in (Outcome.FAILED, Outcome.ERROR)]
    labels = [expected.get(id(a), "") for a in bad]
    return labels[0] if bad and all(labels) else ""


def _counting(view: signature_view.Signatures, **scope: str) -> list[str]:
    """The labels of the findings in `scope` that count against a fix: not ambient, not
    a follow-on of another fault, not all suppressed or allowed."""
    return [
        sig.label
        for sig, tally in view.within(**scope)
        if not sig.ambient and not sig.follows and tally.suppressed < tally.count
    ]


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
    keys = ("sandbox", "torch", "torch_cuda", "driver", "compute_sanitizer", "cc", "cxx", "nvcc")
    for key in keys:
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
    view = signature_view.make(experiment, records.attempts, records.builds)
    expected = judge.expected_outcomes(experiment, records.attempts)
    tools = {a.run: a.checker.value for a in records.attempts}
    root = ET.Element("testsuites")
    # the Ant schema's order: name, package and id of an aggregated suite first
    suite = _element(root, "testsuite", name=experiment.name, package=experiment.name, id=0)
    properties = _element(suite, "properties")
    pairs = _suite_properties(results, manifest, records.judgement)
    counts = {"tests": 0, "failure": 0, "error": 0, "skipped": 0}
    sections = []
    verdict = str(results.get("verdict") or "not judged")
    for name, element, kind, message in _claims(experiment, verdict, records.judgement):
        testcase = _element(
            suite, "testcase", name=name, classname=f"{experiment.name}.{CLAIMS}", time="0.000"
        )
        if element:
            _element(testcase, element, message, type=kind, message=message)
            counts[element] += 1
        counts["tests"] += 1
    for variant, run, device, case in _plan(experiment, records.attempts):
        classname = f"{experiment.name}.{variant}.{run}"
        classname += f".{device_label(device)}" if device else ""
        props: list[tuple[str, object]] = [
            ("role", experiment.role(variant) or "other"),
            ("checker", tools.get(run, experiment.run(run).checker.value)),
        ]
        attempts = groups.get((case, variant, run, device))
        if not attempts:
            testcase = _element(suite, "testcase", name=case, classname=classname, time="0.000")
            _element(testcase, "skipped", message="never attempted (the run did not get to it)")
            facts = "; ".join(f"{k}={v}" for k, v in props)
            pairs.append((f"testcase:{classname}::{case}", f"{facts}; never attempted"))
            counts["tests"] += 1
            counts["skipped"] += 1
            continue
        for node in rows.nodes(attempts, case):
            cell = rows.cell(attempts, node, broken.get(variant, ""))
            where = {"variant": variant, "run": run, "case": case, "device": device}
            scope = {**where, "node": "" if node == rows.OUTSIDE else node}
            found = _findings_text(view, **scope)
            counting = _counting(view, **scope) if props[0][1] == "fix" else []
            element, prop, section = _testcase(
                suite, classname, case, cell, attempts, props, found, counting,
                _expected(attempts, cell, expected),
            )  # fmt: skip
            pairs.append(prop)
            sections += [section] if section else []
            counts["tests"] += 1
            if element:
                counts[element] += 1
    for name, value in pairs:
        _element(properties, "property", name=name, value=value)
    _element(suite, "system-out", "\n\n".join(sections) + "\n" if sections else "")
    _element(suite, "system-err")
    # the schema's timestamp has no zone (the bundle records UTC) and is required
    stamp = str(results.get("started") or results.get("finished") or "1970-01-01T00:00:00")
    suite.set("timestamp", stamp[:19])
    suite.set("hostname", "localhost")
    totals = {
        "tests": counts["tests"],
        "failures": counts["failure"],
        "errors": counts["error"],
        "skipped": counts["skipped"],
        "time": f"{sum(a.duration for a in records.attempts):.3f}",
    }
    for key, value in totals.items():
        suite.set(key, str(value))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
