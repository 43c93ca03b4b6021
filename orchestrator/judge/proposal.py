"""A target for a config that has none: after a run whose `expect` gives no `target`, the
signatures every control shows (in k of N repeats of a run) and the fix shows in no
repeat, as `TargetPattern`s and as a `target:` block to paste into the config. A plain
run adds the cases every control fails and the fix does not, only where no checker
signature qualifies (a flaky test would make the verdict FAIL), marked so in the block.
Pure."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable

from orchestrator.findings.signatures import fingerprint, signature
from orchestrator.judge.causality import judged_findings
from orchestrator.model import Attempt, Checker, Experiment, Outcome, Run, TargetPattern

# a YAML plain scalar that reads back as the same string (not a number, bool or null)
_PLAIN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*\Z")
_RESERVED = {"true", "false", "yes", "no", "on", "off", "null", "y", "n"}


def _literal(text: str) -> str:
    """A name as an fnmatch glob that matches only itself (`operator[]`, `f<T*>`)."""
    return re.sub(r"([*?\[])", r"[\1]", text)


def _per_repeat(attempts: Iterable[Attempt], run: Run) -> dict[int, dict[str, TargetPattern]]:
    """repeat -> {key: pattern} of what the attempts show in `run`."""
    out: dict[int, dict[str, TargetPattern]] = defaultdict(dict)
    for a in attempts:
        if a.run != run.name:
            continue
        if run.checker is Checker.NONE:
            if a.conclusive and a.outcome is Outcome.FAILED:
                out[a.repeat][f"case:{a.case}"] = TargetPattern(outcome=Outcome.FAILED, case=a.case)
            continue
        for f in judged_findings(a):
            sig = signature(f)
            out[a.repeat][fingerprint(sig)] = TargetPattern(
                checker=sig.checker,
                kind=sig.kind,
                access=sig.access,
                space=sig.space,
                size=sig.size,
                function=_literal(sig.function),
                # no function (a stack without symbols): the top frame names the place
                frame="" if sig.function or not sig.frames else _literal(sig.frames[0]),
            )
    return out


def propose(experiment: Experiment, attempts: Iterable[Attempt]) -> tuple[TargetPattern, ...]:
    """What every control reproduces and the fix never shows (empty: nothing, or the
    config already has targets, or no expectations)."""
    expect = experiment.expect
    if expect is None or expect.targets:
        return ()
    attempts = tuple(attempts)
    found: dict[str, TargetPattern] = {}
    for run in experiment.runs:
        n = experiment.repeats_for(run)
        k = n if expect.min_hits is None else min(expect.min_hits, n)
        shared: dict[str, TargetPattern] | None = None
        for control in expect.controls:
            repeats = _per_repeat((a for a in attempts if a.variant == control), run)
            tally: dict[str, int] = defaultdict(int)
            patterns: dict[str, TargetPattern] = {}
            for seen in repeats.values():
                for key, pattern in seen.items():
                    tally[key] += 1
                    patterns[key] = pattern
            reliable = {key: patterns[key] for key, hits in tally.items() if hits >= k}
            if shared is None:
                shared = reliable
            else:
                shared = {key: shared[key] for key in shared if key in reliable}
        fixed = _per_repeat((a for a in attempts if a.variant == expect.fix), run)
        in_fix = {key for seen in fixed.values() for key in seen}
        for key, pattern in sorted((shared or {}).items()):
            if key not in in_fix:
                found.setdefault(key, pattern)
    proposed = tuple(dict.fromkeys(found.values()))
    # a test's outcome is the weaker evidence: one flaky failure in the fix makes the
    # verdict FAIL; where the checker gives signatures, they are the target alone
    signatures = tuple(p for p in proposed if p.outcome is None)
    return signatures or proposed


#: said beside a proposed test-outcome target
FLAKY = (
    "a test outcome: one flaky failure of this test in the fix makes the verdict FAIL; "
    "keep it only if the test fails every time the defect is there"
)


def _scalar(value: object) -> str:
    if isinstance(value, int):
        return str(value)
    text = str(value)
    if _PLAIN_RE.match(text) and text.lower() not in _RESERVED:
        return text
    return json.dumps(text)  # a JSON string is a YAML double-quoted scalar


def target_block(patterns: Iterable[TargetPattern]) -> str:
    """`target:` and one flow mapping a pattern, ready to paste under `expect:`."""
    lines = ["target:"]
    for p in patterns:
        fields = {k: v for k, v in p.to_dict().items() if v not in ("", None)}
        line = "  - {" + ", ".join(f"{k}: {_scalar(v)}" for k, v in fields.items()) + "}"
        lines.append(line + (f"  # {FLAKY}" if p.outcome is not None else ""))
    return "\n".join(lines) + "\n"
