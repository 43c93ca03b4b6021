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

A result's properties say where its signature showed (its repeats, devices and case
nodes) and carry the marks every report gives it (`judge.signature_view`): `ambient`
(every variant, no frame in the subject) and `follows` (the id of the fault whose
destroyed context it reports), each only where it holds.

Levels: a finding in a control variant is the defect the control exists to reproduce,
so it is a "note"; anywhere else (the fix, other variants) it is an "error". A verdict
other than PASS is an "error" result of its own (rule `csorch.verdict`, at the config
file), first: an INCONCLUSIVE bundle (evidence that does not verify, a timeout) whose
findings are all notes must not read as a clean scan in a code-scanning view.

Upload-safe locations: code scanning (GitHub's, and others) places a result only at a
path relative to the repository it analyzes, and drops a result with no location. So
every URI is relative to the repository root (`%SRCROOT%`: the nearest directory with a
`.git` above the experiment's source, or `root=` given; the source itself when there
is none), never an absolute `file://` of the machine that ran, and every result has one
physical location: the top frame whose file lies in the variant's tree (a file in the
scratch copy or the cached build is mapped back to the source it came from), else the
case's test file, else the experiment's config, else the repository root. A frame
outside the tree (a system or torch header) is kept as text in the result's
`topFrame` property, and `locationFrom` says which of those the location is.
Pure but for one look: whether a `.git` exists above the source.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from orchestrator import bundle
from orchestrator.findings.signatures import top_frames
from orchestrator.judge import signature_view
from orchestrator.model import Experiment, Finding, Signature, SourceKind
from orchestrator.report import patchlines
from orchestrator.sandbox import BUILD_TREE

SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
VERSION = "2.1.0"
FINGERPRINT_KEY = "csorchSignature/v1"
#: the result's own: the signature in one variant and run (`_result_fingerprint`)
RESULT_KEY = "csorchResult/v1"
#: the repository root, as code scanning names it (CodeQL writes the same)
BASE = "%SRCROOT%"

_WORD_RE = re.compile(r"[^A-Za-z0-9]+")


def rule_id(sig: Signature, fingerprint: str) -> str:
    """`asan.heap-buffer-overflow.c9c53e2d1ae7f0a1`: readable, and as stable as the
    fingerprint it ends with (64 bits of it keep a run's few signatures apart)."""
    head = ".".join(_WORD_RE.sub("-", part).strip("-") for part in (sig.checker, sig.kind))
    return f"{head}.{fingerprint[:16]}"


def _rule_name(sig: Signature) -> str:
    words = _WORD_RE.split(" ".join((sig.checker, sig.kind, sig.access)))
    return "".join(w[:1].upper() + w[1:] for w in words if w)


def _rule(sig: signature_view.SignatureView) -> dict[str, Any]:
    label = sig.label
    frames = " <- ".join(sig.signature.frames)
    full = label + (f"; top frames: {frames}" if frames else "")
    help_text = (
        f"{sig.signature.checker} reported {label}. In the fix variant it means the fix "
        "does not remove this defect (or adds it); in a control it is the defect the "
        "control exists to reproduce. The result's properties name the variant, run, "
        "case and repeats; `csorch report BUNDLE` shows the bundle, and its logs hold "
        "the checker's whole report."
    )
    return {
        "id": rule_id(sig.signature, sig.fingerprint),
        "name": _rule_name(sig.signature),
        "shortDescription": {"text": label},
        "fullDescription": {"text": full},
        # code scanning asks every rule for help (GitHub's ingestion rule GH2012)
        "help": {
            "text": help_text,
            "markdown": help_text.replace(label, f"`{label}`", 1)
            + (f"\n\nTop frames: `{frames}`" if frames else ""),
        },
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


def repository(directory: Path) -> Path | None:
    """The repository holding `directory`: the nearest directory with a `.git` (a
    directory, or a worktree's file), or None."""
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


class _Places:
    """Where an experiment's files are, relative to the repository root."""

    def __init__(self, experiment: Experiment, root: Path | None) -> None:
        main = experiment.source
        local = Path(main.location) if main.location.startswith("/") else None
        here = local / (main.subdir if main.kind is SourceKind.GIT else "") if local else None
        self.root = root or (repository(local) if local else None) or here
        self.experiment = experiment

    def relative(self, path: str | Path) -> str | None:
        """`path` relative to the root, or None when it lies outside (or there is none)."""
        if self.root is None or not str(path).startswith("/"):
            return None
        try:
            rel = PurePosixPath(Path(path)).relative_to(PurePosixPath(self.root))
        except ValueError:
            return None
        return None if ".." in rel.parts else str(rel)

    def tree(self, variant: str) -> str | None:
        """The variant's source directory relative to the root ("" for the root itself),
        or None when it lies outside the repository (a remote one, another checkout)."""
        spec = self.experiment.source_for(self.experiment.variant(variant))
        if not spec.location.startswith("/"):
            return None
        rel = self.relative(
            Path(spec.location) / (spec.subdir if spec.kind is SourceKind.GIT else "")
        )
        return None if rel is None else "" if rel == "." else rel

    def fallbacks(self, case: str) -> list[tuple[str, str]]:
        """(uri, what) for a result no frame places: the case's test file, the config."""
        out = []
        the_case = next((c for c in self.experiment.cases if c.name == case), None)
        for target in the_case.pytest if the_case else ():
            rel = self.relative(target.partition("::")[0])
            if rel:
                out.append((rel, "test"))
        if self.experiment.config is not None:
            rel = self.relative(self.experiment.config)
            if rel:
                out.append((rel, "config"))
        return out


def _location(
    finding: Finding,
    sig: Signature,
    roots: Sequence[Path],
    tree: str | None,
    fallbacks: Sequence[tuple[str, str]],
    patches: Sequence[tuple[str, str]] = (),
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """([the one location], the properties saying where it came from); a frame's line
    in a patched tree is mapped back to the repository's through `patches` (the
    variant's (file, sha256), `patchlines`)."""
    frames = top_frames(finding.frames) or top_frames(f for f in finding.host_frames if f.function)
    with_file = [f for f in frames if f.file and f.line]
    physical: dict[str, Any] = {}
    source = ""
    moved: dict[str, Any] = {}
    for frame in with_file:
        rel = _relative(frame.file, roots) if tree is not None else None
        if rel:
            uri = f"{tree}/{rel}" if tree else rel
            line = int(frame.line or 0)
            if patches:
                back = patchlines.in_repository(patches, rel, line)
                if back is None:  # a patch gone or changed since: say whose line it is
                    moved = {"lineIn": "patched tree"}
                elif back != line:
                    moved = {"patchedLine": line}
                    line = back
            physical = {
                "artifactLocation": {"uri": quote(uri), "uriBaseId": BASE},
                "region": {"startLine": line},
            }
            source = "frame"
            break
    if not physical:
        uri, source = next(iter(fallbacks), (".", "repository"))
        physical = {"artifactLocation": {"uri": quote(uri), "uriBaseId": BASE}}
    location: dict[str, Any] = {"physicalLocation": physical}
    if sig.function:
        location["logicalLocations"] = [{"name": sig.function, "kind": "function"}]
    props: dict[str, Any] = {"locationFrom": source, **moved}
    if with_file and source != "frame":
        props["topFrame"] = f"{with_file[0].file}:{with_file[0].line}"
    return [location], props


def _patches(manifest: Mapping[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """Each variant's patches as the run recorded them: (file, sha256), in order."""
    out: dict[str, list[tuple[str, str]]] = {}
    for source in manifest.get("sources") or ():
        if isinstance(source, Mapping) and isinstance(source.get("variant"), str):
            out[source["variant"]] = [
                (str(p.get("path", "")), str(p.get("sha256", "")))
                for p in source.get("patches") or ()
                if isinstance(p, Mapping)
            ]
    return out


def _result_fingerprint(fingerprint: str, variant: str, run: str) -> str:
    """The result's own identity: the signature's, in this variant and run. Code scanning
    merges results that share their fingerprints: the fix's finding must not vanish into
    the control's alert of the same defect."""
    return hashlib.sha256(f"{fingerprint}/{variant}/{run}".encode()).hexdigest()[:32]


def _outcome_results(
    experiment: Experiment, records: bundle.Records, places: _Places, rules: dict
) -> list[dict[str, Any]]:
    """A result per failed case where a target is a test's outcome (a regression signal
    with no checker finding): an error in the fix, a note in a control, at the case's
    test file."""
    wanted = [t for t in (experiment.expect.targets if experiment.expect else ()) if t.outcome]
    if not wanted:
        return []
    out = []
    failed: dict[tuple[str, str, str], int] = {}
    for a in records.attempts:
        if a.conclusive and a.outcome in {t.outcome for t in wanted}:
            key = (a.variant, a.run, a.case)
            failed[key] = failed.get(key, 0) + 1
    for (variant, run, case), count in sorted(failed.items()):
        role = experiment.role(variant)
        rid = f"outcome.case-{_WORD_RE.sub('-', case).strip('-')}"
        if rid not in rules:
            text = f"case {case} ended as a target names (a test outcome, no checker finding)"
            rules[rid] = {
                "id": rid,
                "name": "CaseOutcome",
                "shortDescription": {"text": f"case {case} failed"},
                "fullDescription": {"text": text},
                "help": {"text": text, "markdown": text},
                "defaultConfiguration": {"level": "error"},
            }
        uri, source = next(iter(places.fallbacks(case)), (".", "repository"))
        where = {"artifactLocation": {"uri": quote(uri), "uriBaseId": BASE}}
        n = experiment.repeats_for(experiment.run(run))
        out.append(
            {
                "ruleId": rid,
                "level": "note" if role == "control" else "error",
                "message": {
                    "text": f"case {case} failed in {count} of {n} repeats (variant {variant}"
                    f"{f', the {role}' if role else ''}; run {run})"
                },
                "locations": [{"physicalLocation": where}],
                "partialFingerprints": {
                    FINGERPRINT_KEY: hashlib.sha256(rid.encode()).hexdigest(),
                    RESULT_KEY: _result_fingerprint(rid, variant, run),
                },
                "properties": {"variant": variant, "role": role or "other", "run": run,
                               "case": case, "repeats": count, "of": n, "locationFrom": source},
            }
        )  # fmt: skip
    return out


#: the rule of a verdict other than PASS (`_verdict_result`)
VERDICT_RULE_ID = "csorch.verdict"
_VERDICT_HELP = (
    "csorch's verdict on the experiment is not PASS: FAIL (the fix does not remove what "
    "the controls reproduce) or INCONCLUSIVE (the evidence cannot carry a verdict: a "
    "variant that did not build, a timeout, a checker log that is incomplete, a bundle "
    "that does not verify). The message gives the first reason; `csorch report BUNDLE` "
    "and `csorch verify BUNDLE` give them all."
)
VERDICT_RULE: dict[str, Any] = {
    "id": VERDICT_RULE_ID,
    "name": "VerdictNotPass",
    "shortDescription": {"text": "the verdict is not PASS"},
    "fullDescription": {"text": _VERDICT_HELP},
    "help": {"text": _VERDICT_HELP, "markdown": _VERDICT_HELP},
    "defaultConfiguration": {"level": "error"},
}


def _verdict_result(
    name: str, verdict: str, reasons: Sequence[str], places: _Places, index: int
) -> dict[str, Any]:
    """The error result of a verdict other than PASS, at the config file (else the root)."""
    uri, source = next(iter(places.fallbacks("")), (".", "repository"))
    why = reasons[0] if reasons else "the bundle holds no verdict"
    return {
        "ruleId": VERDICT_RULE_ID,
        "ruleIndex": index,
        "level": "error",
        "message": {"text": f"{name}: verdict {verdict.upper()}: {why}"},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": quote(uri),
                                                                 "uriBaseId": BASE}}}],
        "partialFingerprints": {
            FINGERPRINT_KEY: hashlib.sha256(f"verdict/{name}".encode()).hexdigest(),
            RESULT_KEY: _result_fingerprint(f"verdict/{name}", verdict, ""),
        },
        "properties": {"verdict": verdict, "reasons": list(reasons), "locationFrom": source},
    }  # fmt: skip


def _results(
    experiment: Experiment,
    records: bundle.Records,
    places: _Places,
    patches: Mapping[str, Sequence[tuple[str, str]]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(results, rules): rules in the order their first result came."""
    rules: dict[str, dict[str, Any]] = {}
    index: dict[str, int] = {}
    view = signature_view.make(experiment, records.attempts, records.builds)
    # a frame names the file where the build saw its tree (sandbox.BUILD_TREE), or, from a
    # build without the sandbox, in the scratch copy it was built from
    trees = {s.variant: [Path(BUILD_TREE), s.root] for s in records.sources}
    out = []
    keys = [
        (v.name, r.name, c.name)
        for v in experiment.variants
        for r in experiment.runs
        for c in experiment.cases
    ]
    for variant, run, case in keys:
        role = experiment.role(variant)
        for sig, tally in view.within(variant=variant, run=run, case=case):
            repeats = tally.hits
            n = experiment.repeats_for(experiment.run(run))
            label = sig.label
            rid = rule_id(sig.signature, sig.fingerprint)
            if rid not in rules:
                rules[rid] = _rule(sig)
                index[rid] = len(index)
            plural = "s" if tally.count != 1 else ""
            message = (
                f"{label}: {tally.count} finding{plural} in {repeats} of {n} repeats of case "
                f"{case} (variant {variant}{f', the {role}' if role else ''}; run {run})"
            )
            roots = trees.get(variant, [])
            locations, where = _location(
                tally.example, sig.signature, roots, places.tree(variant),
                places.fallbacks(case), patches.get(variant, ()),
            )  # fmt: skip
            marks: dict[str, Any] = {"ambient": True} if sig.ambient else {}
            if sig.follows:
                marks["follows"] = sig.follows
            result: dict[str, Any] = {
                "ruleId": rid,
                "ruleIndex": index[rid],
                "level": "note" if role == "control" else "error",
                "message": {"text": message},
                "locations": locations,
                "partialFingerprints": {
                    FINGERPRINT_KEY: sig.fingerprint,
                    RESULT_KEY: _result_fingerprint(sig.fingerprint, variant, run),
                },
                "properties": {
                    "variant": variant,
                    "role": role or "other",
                    "run": run,
                    "case": case,
                    "checker": sig.signature.checker,
                    "count": tally.count,
                    "repeats": repeats,
                    "of": n,
                    "devices": list(tally.devices),
                    "nodes": list(tally.nodes),
                    "skippedFrames": list(tally.skipped),
                    "suppressed": tally.suppressed,
                    **marks,
                    **where,
                },
            }
            if tally.suppressed == tally.count:
                # SARIF's own field: viewers show the result as suppressed, not as open
                result["suppressions"] = [
                    {"kind": "external", "status": "accepted", "justification": tally.tolerance()}
                ]
            out.append(result)
    for result in _outcome_results(experiment, records, places, rules):
        index.setdefault(result["ruleId"], len(index))
        result["ruleIndex"] = index[result["ruleId"]]
        out.append(result)
    return out, list(rules.values())


def render(
    results: Mapping[str, Any], manifest: Mapping[str, Any], *, root: Path | None = None
) -> str:
    """The SARIF 2.1.0 log of a bundle, as JSON text; URIs relative to `root` (default:
    the repository holding the experiment's source)."""
    return json.dumps(log(results, manifest, root=root), indent=1) + "\n"


def log(
    results: Mapping[str, Any], manifest: Mapping[str, Any], *, root: Path | None = None
) -> dict[str, Any]:
    """The SARIF 2.1.0 log of a bundle, as a document (`render`'s, not yet text)."""
    records = bundle.records(results)
    experiment = records.experiment
    places = _Places(experiment, root)
    found, rules = _results(experiment, records, places, _patches(manifest))
    judgement = records.judgement
    verdict = str(results.get("verdict") or "not judged")
    if verdict != "pass":
        rules.append(VERDICT_RULE)
        reasons = list(judgement.reasons) if judgement else []
        found.insert(0, _verdict_result(experiment.name, verdict, reasons, places, len(rules) - 1))
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
    # no absolute URI of the machine that ran: the consumer knows its own checkout
    run["originalUriBaseIds"] = {
        BASE: {"description": {"text": "the root of the repository the experiment's source is in"}}
    }
    return {"$schema": SCHEMA, "version": VERSION, "runs": [run]}
