"""Allowances: findings a gate's policy tolerates, each with a reason and a due date.

    policy:
      allow:
        - {checker: memcheck, kind: api-error, code: cudaErrorLaunchFailure,
           reason: "the context-lost case ends in this error by design", expires: 2027-03-31}

An allowance is a debt, not a waiver: `reason` is required and shown wherever the
findings it tolerates are (gate report, and `csorch report --policy` in every format);
from its `expires` day on it tolerates nothing and fails the gate (`gate.decide`); one
that matches no finding is reported. Matching is the target syntax (`findings.matches`)
plus `code` for API errors.
"""

from __future__ import annotations

import datetime
import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.config.nodes import View
from orchestrator.config.schema import SIGNATURE_KEYS
from orchestrator.findings.signatures import matches, signature
from orchestrator.model import Finding, Signature, TargetPattern
from orchestrator.model.record import Record

ALLOW = {k: f"signature field {k} (glob)" for k in SIGNATURE_KEYS} | {
    "case": "case names (glob)",
    "code": "API error code (glob)",
    "reason": "why the finding is tolerated (required; shown in every report)",
    "expires": "YYYY-MM-DD: from this day on the allowance fails the gate",
}
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class Allowance(Record):
    pattern: TargetPattern
    code: str = ""  # API errors: "cudaErrorLaunchFailure" (not a target field)
    reason: str = ""
    expires: str = ""  # "YYYY-MM-DD"; "" never
    where: str = ""  # "gate.yaml:12", for messages

    def label(self) -> str:
        fields = {k: v for k, v in self.pattern.to_dict().items() if v not in ("", None)}
        if self.code:
            fields["code"] = self.code
        text = ", ".join(f"{k}={v}" for k, v in fields.items())
        return f"allowance {{{text}}} ({self.where})"

    def expired(self, today: datetime.date) -> bool:
        return bool(self.expires) and datetime.date.fromisoformat(self.expires) <= today


def load(view: View) -> Allowance:
    """One `policy.allow` entry; a ConfigError names the file, line and key."""
    f = view.mapping(ALLOW)
    values: dict[str, object] = {}
    for key in SIGNATURE_KEYS + ("case",):
        if (item := f.get(key)) is not None:
            values[key] = item.integer(minimum=0) if key == "size" else item.text()
    code = f.get("code")
    if not values and code is None:
        raise view.error("an allowance needs at least one signature key or 'code'")
    reason = f.get("reason")
    if reason is None or not reason.text().strip():
        raise view.error(
            "an allowance needs a reason: why this finding is tolerated",
            hint='add reason: "..." (and expires: YYYY-MM-DD, when it should be fixed by)',
        )
    return Allowance(
        TargetPattern(**values),  # type: ignore[arg-type]
        code.text() if code else "",
        reason.text().strip(),
        _date(f.get("expires")),
        f"{view.file.name}:{view.line}",
    )


def _date(view: View | None) -> str:
    if view is None:
        return ""
    value = view.value()  # YAML reads an unquoted 2027-03-31 as a date
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, str) and DATE_RE.match(value):
        try:
            return datetime.date.fromisoformat(value).isoformat()
        except ValueError:
            pass
    raise view.error(f"expected a date YYYY-MM-DD, found {view.kind()}")


def find(allow: Sequence[Allowance], sig: Signature) -> Allowance | None:
    """The first allowance that tolerates the signature."""
    return next(
        (
            a
            for a in allow
            if matches(a.pattern, sig) and (not a.code or fnmatch.fnmatchcase(sig.code, a.code))
        ),
        None,
    )


def suggest(sig: Signature) -> str:
    """The `policy.allow` entry that would tolerate `sig`, to paste into a gate config
    (its reason and date are the user's to fill in)."""
    fields: dict[str, object] = {
        "checker": sig.checker,
        "kind": sig.kind,
        "access": sig.access,
        "space": sig.space,
        "size": sig.size,
        "code": sig.code,
        "function": sig.function,
    }
    text = ", ".join(f"{k}: {_yaml(v)}" for k, v in fields.items() if v not in ("", None))
    return "{" + text + ', reason: "...", expires: YYYY-MM-DD}'


def _yaml(value: object) -> str:
    """A flow-mapping value: quoted when YAML would read it otherwise (or as a glob)."""
    text = str(value)
    if isinstance(value, int) or re.fullmatch(r"[A-Za-z_][\w.-]*", text):
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    # fnmatch reads [ ] * ? as a glob: the allowance must match this name only
    escaped = re.sub(r"([\[\]*?])", r"[\1]", escaped)
    return f'"{escaped}"'


def mark_results(results: Mapping[str, Any], allow: Sequence[Allowance]) -> dict[str, Any]:
    """A bundle's results document with every finding an allowance tolerates marked
    `allowed: <reason>` (for reports; the stored bundle is not changed). Suppressed
    findings keep their suppression."""
    out = dict(results)
    attempts = []
    for a in results.get("attempts", []):
        parse = a.get("parse")
        if parse:
            findings = []
            for doc in parse.get("findings", []):
                by = find(allow, signature(Finding.from_dict(doc)))
                if by is not None and not doc.get("suppressed"):
                    doc = {**doc, "suppressed": f"allowed: {by.reason} ({by.where})"}
                findings.append(doc)
            a = {**a, "parse": {**parse, "findings": findings}}
        attempts.append(a)
    out["attempts"] = attempts
    return out
