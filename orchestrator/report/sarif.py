"""SARIF 2.1.0 of a bundle: one run, one rule per finding signature, one result per
(signature, variant, run, case).

Stable identities are the point of SARIF here: code-scanning services match results
across uploads by rule id and fingerprint, and a gate compares them across bundles.
Both come from `findings.signature`/`findings.fingerprint`, the identity the judge
compares: the signature keeps (checker, kind, access, space, size, code, function, top
frames) and drops addresses, pcs, thread/block ids, line numbers and directories, and
the fingerprint is the sha256 of its JSON with sorted keys. So the same defect gets the
same rule id and fingerprint on another machine, in another build directory, from
another Python (no `hash()`, which is salted per process), and after a patch that
shifts line numbers.

Levels: a finding in a control variant is the defect the control exists to reproduce,
so it is a "note"; anywhere else (the fix, other variants) it is an "error".
Locations come from the top frame that has a file and a line (the frame the signature
starts from, noise skipped); a file inside the variant's tree is given relative to the
source (`SRCROOT`), since every variant builds in its own scratch copy. Pure.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from orchestrator import bundle
from orchestrator.findings.signatures import (
    SignatureCount,
    fingerprint,
    group,
    signature,
    top_frames,
)
from orchestrator.model import Attempt, Experiment, Finding, Frame, Signature, SourceKind

SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
VERSION = "2.1.0"
FINGERPRINT_KEY = "csorchSignature/v1"
BASE = "SRCROOT"

_WORD_RE = re.compile(r"[^A-Za-z0-9]+")


def rule_id(sig: Signature, fingerprint: str) -> str:
    """`asan.heap-buffer-overflow.c9c53e2d1ae7f0a1`: readable, and as stable as the
    fingerprint it ends with (64 bits of it keep a run's few signatures apart)."""
    head = ".".join(_WORD_RE.sub("-", part).strip("-") for part in (sig.checker, sig.kind))
    return f"{head}.{fingerprint[:16]}"


def _rule_name(sig: Signature) -> str:
    words = _WORD_RE.split(" ".join((sig.checker, sig.kind, sig.access)))
    return "".join(w[:1].upper() + w[1:] for w in words if w)


def _rule(sig: SignatureCount) -> dict[str, Any]:
    label = sig.signature.label()
    frames = " <- ".join(sig.signature.frames)
    return {
        "id": rule_id(sig.signature, sig.fingerprint),
        "name": _rule_name(sig.signature),
        "shortDescription": {"text": label},
        "fullDescription": {"text": label + (f"; top frames: {frames}" if frames else "")},
        "defaultConfiguration": {"level": "error"},
        "properties": {
            "signature": sig.signature.to_dict(),
            "fingerprint": sig.fingerprint,
            "tags": [t for t in (sig.signature.checker, sig.signature.kind) if t],
        },
    }


def _relative(file: str, roots: Sequence[Path]) -> str | None:
    """`file` relative to the variant's tree, or None when it lies outside.

    A cached build carries the debug paths of the run that built it, in a scratch tree
    that no longer exists, so a root matches by its tail (`<variant>/tree`, at least two
    components) as well as whole.
    """
    parts = PurePosixPath(file).parts
    for root in roots:
        rparts = Path(root).parts
        for k in range(len(rparts), 1, -1):
            tail = rparts[-k:]
            for i in range(len(parts) - k - 1, -1, -1):
                if parts[i : i + k] == tail:
                    return "/".join(parts[i + k :])
    return None


def _frame(finding: Finding) -> Frame | None:
    """The top frame with a file and a line, among the frames the signature keeps."""
    frames = top_frames(finding.frames) or top_frames(f for f in finding.host_frames if f.function)
    return next((f for f in frames if f.file and f.line), None)


def _location(
    finding: Finding, sig: Signature, roots: Sequence[Path], base: str
) -> list[dict[str, Any]]:
    location: dict[str, Any] = {}
    frame = _frame(finding)
    if frame is not None:
        rel = _relative(frame.file, roots)
        if rel:
            artifact = {"uri": quote(rel), "uriBaseId": base}
        elif frame.file.startswith("/"):
            artifact = {"uri": Path(frame.file).as_uri()}
        else:
            artifact = {"uri": quote(frame.file)}
        location["physicalLocation"] = {
            "artifactLocation": artifact,
            "region": {"startLine": int(frame.line)},
        }
    if sig.function:
        location["logicalLocations"] = [{"name": sig.function, "kind": "function"}]
    return [location] if location else []


def _bases(experiment: Experiment) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """variant -> its uriBaseId, and the ids that map to a local directory."""
    ids, uris = {}, {}
    for v in experiment.variants:
        spec = experiment.source_for(v)
        base = BASE if v.source is None else f"{BASE}_{_WORD_RE.sub('_', v.name)}"
        ids[v.name] = base
        if spec.location.startswith("/"):  # a URL of a remote repository maps to no file
            where = Path(spec.location) / (spec.subdir if spec.kind is SourceKind.GIT else "")
            uris[base] = {"uri": where.as_uri().rstrip("/") + "/"}
    return ids, uris


def _results(
    experiment: Experiment, records: bundle.Records
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(results, rules): rules in the order their first result came."""
    rules: dict[str, dict[str, Any]] = {}
    index: dict[str, int] = {}
    by: dict[tuple[str, str, str], list[Attempt]] = defaultdict(list)
    for a in records.attempts:
        by[(a.variant, a.run, a.case)].append(a)
    trees = {s.variant: [s.root] for s in records.sources}
    bases, _ = _bases(experiment)
    out = []
    keys = [
        (v.name, r.name, c.name)
        for v in experiment.variants
        for r in experiment.runs
        for c in experiment.cases
    ]
    for variant, run, case in keys:
        attempts = by.get((variant, run, case), [])
        role = experiment.role(variant)
        seen = [(a, {fingerprint(signature(f)) for f in a.findings}) for a in attempts]
        for sig in group(f for a in attempts for f in a.findings):
            with_it = [a for a, fps in seen if sig.fingerprint in fps]
            repeats = len({a.repeat for a in with_it})
            n = experiment.repeats_for(experiment.run(run))
            label = sig.signature.label()
            rid = rule_id(sig.signature, sig.fingerprint)
            if rid not in rules:
                rules[rid] = _rule(sig)
                index[rid] = len(index)
            plural = "s" if sig.count != 1 else ""
            message = (
                f"{label}: {sig.count} finding{plural} in {repeats} of {n} repeats of case "
                f"{case} (variant {variant}{f', the {role}' if role else ''}; run {run})"
            )
            roots = trees.get(variant, [])
            result: dict[str, Any] = {
                "ruleId": rid,
                "ruleIndex": index[rid],
                "level": "note" if role == "control" else "error",
                "message": {"text": message},
                "locations": _location(sig.example, sig.signature, roots, bases[variant]),
                "partialFingerprints": {FINGERPRINT_KEY: sig.fingerprint},
                "properties": {
                    "variant": variant,
                    "role": role or "other",
                    "run": run,
                    "case": case,
                    "checker": sig.signature.checker,
                    "count": sig.count,
                    "repeats": repeats,
                    "of": n,
                    "devices": sorted({a.device for a in with_it if a.device}),
                    "nodes": sorted({f.case for a in with_it for f in a.findings if f.case}),
                    "skippedFrames": list(sig.skipped),
                    "suppressed": sig.suppressed,
                },
            }
            if sig.suppressed == sig.count:
                # SARIF's own field: viewers show the result as suppressed, not as open
                result["suppressions"] = [
                    {"kind": "external", "status": "accepted", "justification": sig.tolerance()}
                ]
            out.append(result)
    return out, list(rules.values())


def render(results: Mapping[str, Any], manifest: Mapping[str, Any]) -> str:
    """The SARIF 2.1.0 log of a bundle, as JSON text."""
    records = bundle.records(results)
    experiment = records.experiment
    found, rules = _results(experiment, records)
    _, uris = _bases(experiment)
    judgement = records.judgement
    backend = results.get("backend", {})
    invocation: dict[str, Any] = {
        # whether csorch's run got to its end (an interrupted one leaves the bundle
        # incomplete); the verdict on the fix is in the run's properties
        "executionSuccessful": bool(results.get("complete")),
        "properties": {"interrupted": bool(results.get("interrupted"))},
    }
    if manifest.get("command"):
        invocation["commandLine"] = " ".join(["csorch", *manifest["command"][1:]])
    for key, field in (("started", "startTimeUtc"), ("finished", "endTimeUtc")):
        if results.get(key):
            invocation[field] = results[key]
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "csorch",
                "version": str(results.get("csorch", "")),
                "rules": rules,
            }
        },
        "automationDetails": {"id": f"csorch/{experiment.name}/"},
        "invocations": [invocation],
        "results": found,
        "properties": {
            "experiment": experiment.name,
            "verdict": results.get("verdict") or "not judged",
            "reasons": list(judgement.reasons) if judgement else [],
            "backend": backend.get("name", ""),
            "backendReason": backend.get("reason", ""),
            "notRun": list(results.get("not_run", [])),
        },
    }
    if uris:
        run["originalUriBaseIds"] = uris
    log = {"$schema": SCHEMA, "version": VERSION, "runs": [run]}
    return json.dumps(log, indent=1) + "\n"
