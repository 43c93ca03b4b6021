"""The parse state of one compute-sanitizer log: the record being read (`Draft`) and
what the log has said so far (`State`). The record grammars (`cs_log` for memcheck,
initcheck and synccheck, `cs_race` for racecheck, `cs_summary` for the end-of-run
lines) are handlers over these two; `cs_log.parse` drives them line by line."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from orchestrator.backends.cs_frames import HostKeep, trim_host
from orchestrator.model import Checker, Finding, Frame


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
    case: str = ""
    findings: list[Finding] = field(default_factory=list)
    draft: Draft | None = None
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
        if self.draft is not None:
            self.findings.append(self.draft.done())
            self.draft = None

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
