"""The release gate: a policy over experiments, and its verdict from their records.

    # configs/release-gate.yaml
    name: release-gate
    description: every historical qext defect stays fixed
    experiments: [nvfp4-rng-ownership.yaml, noop-swizzle.yaml]   # experiment configs
    policy:
      unexpected: fail          # fail | report: a signature no target explains
      ambient: report           # report | fail: a signature of the environment (judge.ambient)
      allow:                    # signatures tolerated anywhere (target syntax)
        - {checker: memcheck, kind: api-error, code: cudaErrorLaunchFailure,
           reason: "the context-lost case ends in this error by design", expires: 2027-03-31}

The rules (docs/architecture.md, "Verdicts"), in order: a bundle that is incomplete or does not
verify, an experiment missing from the stored bundles, an inconclusive experiment, or a
checker that caught no positive control make the gate INCONCLUSIVE; a fix that is not
causal, or (with `unexpected: fail`) a finding no target explains in any variant, make
it FAIL; so does an allowance past its `expires` date (an allowance is a debt with a
due date, not a permanent waiver); a FAIL outranks an INCONCLUSIVE. Findings an
allowance tolerates, or a run's suppression file marked (`suppressions.py`), are listed
with the reason or the suppression, never dropped; an allowance or a suppression that
matched nothing is reported. An ambient signature (every variant shows it, fix and
controls alike, and none of its frames is the subject's: `judge.ambient`) is the
environment's, not the change's: it is listed in every report as ambient and, with
`ambient: report` (the default), does not fail the gate; `ambient: fail` fails it. A
FAIL for an unexpected or ambient signature names its id and prints the allowance that
would accept it. Liveness is proven per checker across the
whole gate: a control in which that checker's run hit a target. Pure: records in,
`GateResult` out; running and reading bundles is the CLI's business.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator import judge
from orchestrator.config.nodes import load
from orchestrator.errors import ConfigError
from orchestrator.findings import suppressions
from orchestrator.findings.signatures import fingerprint, signature
from orchestrator.gate import allowances
from orchestrator.gate.allowances import Allowance
from orchestrator.model import Attempt, Checker, Experiment, Verdict
from orchestrator.model.record import Record
from orchestrator.model.results import CARRIED_PREFIX

GATE_TOP = {
    "name": "the gate's name",
    "description": "free text for the report",
    "experiments": "experiment configs (paths relative to this file)",
    "policy": "{unexpected: fail | report, ambient: report | fail, "
    "allow: [signature patterns with reason, expires]}",
}
POLICY = {
    "unexpected": "fail: a finding no target explains fails the gate; report: list it only",
    "ambient": "report (default): a signature every variant shows with no frame in the "
    "subject is listed as the environment's; fail: it fails the gate",
    "allow": "signatures tolerated anywhere: a pattern or a list (target syntax)",
}
UNEXPECTED_CHOICES = ("fail", "report")
AMBIENT_CHOICES = ("report", "fail")


@dataclass(frozen=True)
class Policy(Record):
    name: str
    experiments: tuple[Path, ...]
    description: str = ""
    unexpected: str = "fail"
    allow: tuple[Allowance, ...] = ()
    config: Path | None = None
    ambient: str = "report"


def is_gate_config(path: Path | str) -> bool:
    """Whether a YAML file is a gate (it lists experiments) rather than an experiment."""
    root = load(Path(path).resolve())
    return root.is_mapping and "experiments" in root.entries()


def load_policy(path: Path | str) -> Policy:
    """Read and validate a gate config; raises ConfigError naming file, line and key."""
    path = Path(path).resolve()
    root = load(path)
    if root.is_mapping and "experiments" not in root.entries() and "variants" in root.entries():
        raise ConfigError(
            path,
            None,
            "",
            "this is an experiment config; a gate config (name, experiments, policy) was "
            "expected here",
            hint="give the gate config that lists this experiment",
        )
    f = root.mapping(GATE_TOP)
    name = f.require("name").name()
    experiments = []
    listed = f.require("experiments")
    for item in listed.items():
        experiments.append(item.path(directory=False))
    if not experiments:
        raise listed.error("a gate needs at least one experiment")
    description = f.get("description")
    policy = f.get("policy")
    unexpected, allow, ambient = "fail", (), "report"
    if policy is not None:
        p = policy.mapping(POLICY)
        if (u := p.get("unexpected")) is not None:
            unexpected = u.choice(UNEXPECTED_CHOICES)
        if (e := p.get("ambient")) is not None:
            ambient = e.choice(AMBIENT_CHOICES)
        if (a := p.get("allow")) is not None:
            allow = tuple(allowances.load(v) for v in (a.items() if a.is_list else [a]))
    return Policy(
        name,
        tuple(experiments),
        description.text() if description else "",
        unexpected,
        allow,
        path,
        ambient,
    )


def default_policy(configs: Sequence[Path]) -> Policy:
    """The gate over experiment configs given directly on the command line."""
    return Policy("gate", tuple(Path(c).resolve() for c in configs))


# --- judging ------------------------------------------------------------------------


@dataclass(frozen=True)
class Judged:
    """One experiment's records as the gate sees them (run now, or read from a bundle)."""

    experiment: Experiment
    attempts: tuple[Attempt, ...]
    judgement: judge.Judgement
    bundle: str = ""
    problems: tuple[str, ...] = ()  # the bundle is incomplete or does not verify


@dataclass(frozen=True)
class Unexpected(Record):
    experiment: str
    variant: str
    run: str
    signature: str
    findings: int
    id: str = ""  # the signature id (`fingerprint`, 12 hex digits)
    allowance: str = ""  # the `policy.allow` entry that would accept it


@dataclass(frozen=True)
class AmbientFinding(Record):
    """A signature of the environment (`judge.ambient`) in one experiment's run."""

    experiment: str
    run: str
    signature: str
    id: str
    findings: int
    allowance: str = ""  # the `policy.allow` entry that would accept it (ambient: fail)


@dataclass(frozen=True)
class Tolerated(Record):
    """Findings of one signature an allowance or a suppression let through, and why."""

    experiment: str
    variant: str
    run: str
    signature: str
    findings: int
    why: str  # "allowed: <reason>" or "suppressed by <file>#<n>"
    by: str  # the allowance's label or the suppression's source


@dataclass(frozen=True)
class Liveness(Record):
    checker: Checker
    caught_by: tuple[str, ...]  # "experiment/variant": controls whose checker run hit a target

    @property
    def live(self) -> bool:
        return bool(self.caught_by)


@dataclass(frozen=True)
class ExperimentVerdict(Record):
    name: str
    verdict: Verdict
    reasons: tuple[str, ...]
    bundle: str = ""


@dataclass(frozen=True)
class GateResult(Record):
    name: str
    verdict: Verdict
    reasons: tuple[str, ...]
    experiments: tuple[ExperimentVerdict, ...]
    liveness: tuple[Liveness, ...]
    unexpected: tuple[Unexpected, ...]
    allowed: int = 0  # findings an allowance tolerated
    tolerated: tuple[Tolerated, ...] = ()  # allowed or suppressed findings, with why
    unused: tuple[str, ...] = ()  # allowances and suppressions that matched nothing
    expired: tuple[str, ...] = ()  # allowances past their date (each fails the gate)
    ambient: tuple[AmbientFinding, ...] = ()  # the environment's, not the change's


def liveness(judged: Sequence[Judged]) -> tuple[Liveness, ...]:
    """Per checker used (not `none`): the positive controls its runs caught."""
    caught: dict[Checker, list[str]] = {}
    for j in judged:
        tools = {a.run: a.checker for a in j.attempts}
        for checker in tools.values():
            if checker is not Checker.NONE:
                caught.setdefault(checker, [])
        controls = j.experiment.expect.controls if j.experiment.expect else ()
        for hits in j.judgement.hits:
            checker = tools.get(hits.run, Checker.NONE)
            label = f"{j.experiment.name}/{hits.variant}"
            if (
                checker is not Checker.NONE
                and hits.variant in controls
                and hits.hits
                and label not in caught[checker]
            ):
                caught[checker].append(label)
    ordered = sorted(caught.items(), key=lambda item: item[0].value)
    return tuple(Liveness(c, tuple(by)) for c, by in ordered)


def unexpected(
    judged: Sequence[Judged], allow: Sequence[Allowance]
) -> tuple[list[Unexpected], list[Tolerated]]:
    """Findings no target explains, in any variant, less those an allowance tolerates
    (listed apart, with its reason); an expired allowance tolerates nothing."""
    out, tolerated = [], []
    for j in judged:
        for variant, run, sig, count in judge.uncovered(j.experiment, j.attempts):
            by = allowances.find(allow, sig)
            if by is not None:
                where = (j.experiment.name, variant, run, sig.label(), count)
                tolerated.append(Tolerated(*where, f"allowed: {by.reason}", by.label()))
            else:
                out.append(
                    Unexpected(
                        j.experiment.name,
                        variant,
                        run,
                        sig.label(),
                        count,
                        fingerprint(sig)[:12],
                        allowances.suggest(sig),
                    )
                )
    return out, tolerated


def environment(
    judged: Sequence[Judged], allow: Sequence[Allowance]
) -> tuple[list[AmbientFinding], list[Tolerated]]:
    """The ambient signatures of every experiment (`judge.ambient`), less those an
    allowance tolerates (listed apart, with its reason)."""
    out, tolerated = [], []
    for j in judged:
        sigs = {
            fingerprint(s): s for a in j.attempts for s in map(signature, judge.judged_findings(a))
        }
        for amb in j.judgement.ambient:
            sig = sigs.get(amb.fingerprint)
            by = allowances.find(allow, sig) if sig is not None else None
            if by is not None:
                where = (j.experiment.name, "every variant", amb.run, amb.signature, amb.findings)
                tolerated.append(Tolerated(*where, f"allowed: {by.reason}", by.label()))
                continue
            hint = allowances.suggest(sig) if sig is not None else ""
            out.append(
                AmbientFinding(
                    j.experiment.name, amb.run, amb.signature, amb.id, amb.findings, hint
                )
            )
    return out, tolerated


def suppressed(judged: Sequence[Judged]) -> tuple[list[Tolerated], list[str]]:
    """Findings a run's suppression file marked, and the suppressions that matched
    nothing in their run (over every variant of it)."""
    out: dict[tuple[str, str, str, str, str], int] = {}
    unused = []
    for j in judged:
        for run in j.experiment.runs:
            findings = [f for a in j.attempts if a.run == run.name for f in a.findings]
            for a in (a for a in j.attempts if a.run == run.name):
                for f in a.findings:
                    if f.suppressed:
                        key = (
                            j.experiment.name,
                            a.variant,
                            run.name,
                            signature(f).label(),
                            f.suppressed,
                        )
                        out[key] = out.get(key, 0) + f.count
            for s in suppressions.unmatched(run.suppressions, findings):
                unused.append(f"{j.experiment.name}/{run.name}: {suppressions.why_unmatched(s)}")
    rows = [
        Tolerated(e, v, r, label, n, f"suppressed by {source}", source)
        for (e, v, r, label, source), n in out.items()
    ]
    return rows, unused


def not_run(judged: Sequence[Judged]) -> list[str]:
    """A line per case broken in every variant alike (`judge.causality`'s `broken`): not
    run, listed in the gate's reasons whatever its verdict, so that it stays visible."""
    return [
        f"{j.experiment.name}: case not run, broken in every variant alike: {b}"
        for j in judged
        for b in j.judgement.broken
    ]


def decide(
    policy: Policy,
    judged: Sequence[Judged],
    missing: Sequence[str] = (),
    broken: Sequence[str] = (),
    today: datetime.date | None = None,
) -> GateResult:
    """The gate's verdict over the judged experiments; `missing` names experiments the
    policy lists that have no records (a stored bundle without them), `broken` says why
    each unreadable bundle could not be judged; `today` decides which allowances have
    expired (the local date when None)."""
    today = today or datetime.date.today()
    fails: list[str] = []
    unsure = [f"experiment {name}: no results (not in the bundles given)" for name in missing]
    unsure += list(broken)
    verdicts = []
    carried: list[str] = []  # the experiments whose verdict was carried (run/carried.py)
    for j in judged:
        name = j.experiment.name
        verdict, reasons = j.judgement.verdict, j.judgement.reasons
        if j.problems:
            verdict, reasons = Verdict.INCONCLUSIVE, j.problems + reasons
        verdicts.append(ExperimentVerdict(name, verdict, tuple(reasons), j.bundle))
        # a carried verdict's first reason says so; the one it was judged by comes after
        said = [r for r in reasons if not r.startswith(CARRIED_PREFIX)]
        if any(r.startswith(CARRIED_PREFIX) for r in reasons):
            carried.append(name)
        if verdict is Verdict.FAIL:
            fails.append(f"{name}: the fix is not causal: {said[0] if said else '-'}")
        elif verdict is Verdict.INCONCLUSIVE:
            unsure.append(f"{name}: inconclusive: {said[0] if said else 'no reason given'}")
    expired = [a for a in policy.allow if a.expired(today)]
    fails += [
        f"{a.label()} expired on {a.expires} (reason given: {a.reason}): fix the finding, "
        "or renew the allowance with a new date"
        for a in expired
    ]
    live_allow = [a for a in policy.allow if a not in expired]
    surprises, allowed = unexpected(judged, live_allow)
    ambient, ambient_allowed = environment(judged, live_allow)
    allowed += ambient_allowed
    hidden, unused = suppressed(judged)
    used = {t.by for t in allowed}
    unused = [
        f"{a.label()} matched no finding: remove it"
        for a in policy.allow
        if a not in expired and a.label() not in used
    ] + unused
    if surprises and policy.unexpected == "fail":
        first = surprises[0]
        more = f" (+{len(surprises) - 1} more)" if len(surprises) > 1 else ""
        fails.append(
            f"unexpected signature {first.id} in {first.experiment}/{first.variant}/"
            f"{first.run}: {first.signature} x{first.findings}{more}; to accept it, add "
            f"to policy.allow: {first.allowance}"
        )
    if ambient and policy.ambient == "fail":
        first_a = ambient[0]
        more = f" (+{len(ambient) - 1} more)" if len(ambient) > 1 else ""
        fails.append(
            f"ambient signature {first_a.id} in {first_a.experiment}/{first_a.run} (every "
            f"variant, no frame in the subject): {first_a.signature} x{first_a.findings}"
            f"{more}; to accept it, add to policy.allow: {first_a.allowance}"
        )
    live = liveness(judged)
    unsure += [
        f"{c.checker.value} caught no positive control: its liveness is unproven"
        for c in live
        if not c.live
    ]
    if judged and not live:
        unsure.append("no checker ran: nothing proves the gate could catch a defect")
    if not judged and not missing and not broken:
        unsure.append("the gate judged no experiment")
    if fails:
        verdict, reasons = Verdict.FAIL, fails + unsure
    elif unsure:
        verdict, reasons = Verdict.INCONCLUSIVE, unsure
    else:
        verdict = Verdict.PASS
        reasons = [f"{len(judged)} experiment(s) causal"] + [
            f"{c.checker.value} caught {', '.join(c.caught_by)}" for c in live
        ]
    if carried:  # the first line says so, as each carried experiment's own does
        reasons = [
            f"{CARRIED_PREFIX}stored bundles for {len(carried)} of {len(judged)} "
            f"experiment(s): {', '.join(carried)} (no attempt of theirs ran; each one's "
            "first reason names its bundle and the files that changed)",
            *reasons,
        ]
    return GateResult(
        policy.name,
        verdict,
        tuple(dict.fromkeys(reasons + not_run(judged) + unused)),
        tuple(verdicts),
        live,
        tuple(surprises),
        sum(t.findings for t in allowed),
        tuple(allowed + hidden),
        tuple(unused),
        tuple(f"{a.label()} expired on {a.expires}" for a in expired),
        tuple(ambient),
    )
