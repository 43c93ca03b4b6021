"""The parse state of one compute-sanitizer log: the record being read (`Draft`) and
what the log has said so far (`State`). The record grammars (`log` for memcheck,
initcheck and synccheck, `racecheck` for racecheck, `summary` for the end-of-run
lines) are handlers over these two; `log.parse` drives them line by line.

Records are folded as they close (`findings.folding`): per case and signature the first few are
kept whole, the rest only counted. `skim` counts a record without reading it whole
once its signature is known from its first lines (`State.signatures`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from orchestrator.backends.compute_sanitizer.frames import HostKeep, trim_host
from orchestrator.findings.folding import Fold, Group
from orchestrator.findings.signatures import signature
from orchestrator.model import Checker, Finding, Frame, Signature


def number(text: str) -> int:
    """`4,096` -> 4096 (the tool prints thousands separators)."""
    return int(text.replace(",", ""))


@dataclass
class Draft:
    """A record being read: its header made the finding, detail lines add to it."""

    finding: Finding
    frames: list[Frame] = field(default_factory=list)
    host_frames: list[Frame] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    in_host: bool = False
    keep: HostKeep = field(default_factory=HostKeep)

    def host(self, text: str) -> None:
        """One `Host Frame:` text; not parsed at all when trim_host could not keep it."""
        if (frame := self.keep.parse(text)) is not None:
            self.host_frames.append(frame)

    def done(self) -> Finding:
        detail = "; ".join(d for d in (self.finding.detail, *self.details) if d)
        return replace(
            self.finding,
            frames=tuple(self.frames),
            host_frames=trim_host(self.host_frames),
            detail=detail,
        )


@dataclass
class State:
    checker: Checker
    fold: Fold = field(default_factory=Fold)
    case: str = ""
    draft: Draft | None = None
    key: tuple | None = None  # the open record's skim key (`skim`), when it has one
    # skim key -> what a record with it counts as: (signature, checker, severity)
    signatures: dict[tuple, tuple[Signature, Checker, str]] = field(default_factory=dict)
    severities: dict[str, int] = field(default_factory=dict)  # racecheck records by severity
    error_count: int | None = None  # sum of the ERROR SUMMARY lines
    race_count: int | None = None  # sum of the RACECHECK SUMMARY lines' hazards displayed
    race_split: tuple[int, int] | None = None  # their (errors, warnings)
    not_printed: int = 0
    open_after_summary: bool = False
    tool_errors: list[str] = field(default_factory=list)
    summary_lines: list[str] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)
    app_error: bool = False
    app_crashed: bool = False

    def close(self) -> None:
        """The open record is complete: fold it in."""
        if self.draft is None:
            return
        finding = self.draft.done()
        key, self.draft, self.key = self.key, None, None
        known = self.signatures.get(key) if key is not None else None
        sig = known[0] if known is not None else signature(finding)
        # device frames (from the header and the lines before the host backtrace, which
        # the key holds) make the signature; without them it comes from host frames
        if key is not None and known is None and finding.frames:
            self.signatures[key] = (sig, finding.checker, finding.severity)
        self.tally(finding.checker, finding.severity)
        self.fold.add(finding, sig)

    def tally(self, checker: Checker, severity: str, n: int = 1) -> None:
        """Count `n` records' severity (racecheck's summary splits its count by it)."""
        if checker is Checker.RACECHECK:
            self.severities[severity] = self.severities.get(severity, 0) + n

    def skip(self, group: Group, checker: Checker, severity: str, n: int = 1) -> None:
        """`n` records start whose signature (known from their key) has its examples
        (`group`, `Fold.full`): they are counted, not read. A header ends the record
        before it, as any header does."""
        self.close()
        self.open_after_summary = True
        self.tally(checker, severity, n)
        self.fold.count(group, n)

    def start(self, finding: Finding) -> Draft:
        self.close()
        self.draft = Draft(finding)
        self.open_after_summary = True
        return self.draft

    def new(
        self, kind: str, header: str, checker: Checker | None = None, **fields: object
    ) -> Draft:
        """Start a record of `kind`; `checker` when the wording belongs to one tool."""
        finding = Finding(
            checker=checker or self.checker,
            kind=kind,
            header=header,
            case=self.case,
            **fields,  # type: ignore[arg-type]
        )
        return self.start(finding)


#: a header line's handler: the state, the header's match, the header text
Handler = Callable[[State, re.Match[str], str], None]
#: a detail line's handler: the open record and the detail's match
DetailHandler = Callable[[Draft, re.Match[str]], None]
