"""Streaming parser for compute-sanitizer's text log (memcheck, initcheck, racecheck,
synccheck, leak check), and the old CUDA-MEMCHECK wording.

The grammar is the `*_RE` patterns below, each with an example line (prefix removed).
A checker line starts with the prefix (`=========`); a header line has one space after
it, a detail line is indented further, and a bare prefix ends a record. Lines without
the prefix (the application's own output) are ignored. One small handler per record
kind; `parse` never raises on odd input: unknown checker lines are kept in `unparsed`.

A log is complete only when an `ERROR SUMMARY` (or `RACECHECK SUMMARY`) line closes
it and no record starts after the last summary; anything else (truncated log, crashed
tool, no CUDA use with `--require-cuda-init no`) is incomplete, never clean.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from orchestrator.backends.base import CASE_BEGIN_RE, CASE_END_RE
from orchestrator.backends.cs_frames import device_frame, host_frame, trim_host
from orchestrator.model import Checker, Finding, Frame, ParseResult

PREFIX = "========="
MAX_UNPARSED = 20
# a count or size: at most 25 characters, so that a corrupt line is an unknown line,
# never a crash in int() (which refuses more than 4300 digits) or a bare ","
N = r"[0-9][0-9,]{0,24}"

# --- record headers ---------------------------------------------------------------
# COMPUTE-SANITIZER            (also the old banner: CUDA-MEMCHECK)
BANNER_RE = re.compile(r"^(?:COMPUTE-SANITIZER|CUDA-MEMCHECK)$")
# Invalid __global__ read of size 8 bytes
INVALID_ACCESS_RE = re.compile(
    rf"^Invalid __(?P<space>\w+?)__ (?P<access>read|write|atomic) of size (?P<size>{N})"
    r"(?: bytes?)?$"
)
# Misaligned Shared or Local Address    (also: Out-of-range Shared or Local Address)
SHARED_LOCAL_RE = re.compile(r"^(?P<what>Misaligned|Out-of-range) Shared or Local Address$")
# Uninitialized __global__ memory read of size 4 bytes
UNINITIALIZED_RE = re.compile(
    r"^Uninitialized __(?P<space>\w+?)__ memory (?P<access>read|write) of size "
    rf"(?P<size>{N})(?: bytes?)?$"
)
# Error: Race reported between Write access at k(int *)+0x90 in f.cu:41
RACE_RE = re.compile(
    r"^(?P<severity>Error|Warning|ERROR|WARNING): Race reported between "
    r"(?P<access>\w+) access at (?P<location>.+)$"
)
# Barrier error detected. Divergent thread(s) in block.
BARRIER_RE = re.compile(r"^Barrier error detected\.\s*(?P<detail>.*)$")
# Leaked 64 bytes at 0x7f3c4a000000
LEAK_RE = re.compile(rf"^Leaked (?P<size>{N}) bytes? at 0x(?P<address>[0-9a-fA-F]+).*$")
# Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on
#   CUDA API call to cudaFree.
API_ERROR_RE = re.compile(
    r'^Program hit (?P<code>\S+) \(error (?P<number>\d+)\) due to "(?P<reason>[^"]*)" '
    r"on (?:CUDA )?(?:\w+ )?API call to (?P<call>[\w:]+)\.?$"
)

# --- end-of-run and status lines --------------------------------------------------------
# ERROR SUMMARY: 4,098 errors
ERROR_SUMMARY_RE = re.compile(rf"^ERROR SUMMARY: (?P<count>{N}) errors?$")
# ERROR SUMMARY: 3998 errors were not printed. Use --print-limit option to adjust ...
NOT_PRINTED_RE = re.compile(rf"^ERROR SUMMARY: (?P<count>{N}) errors? (?:was|were) not printed")
# RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
RACECHECK_SUMMARY_RE = re.compile(
    rf"^RACECHECK SUMMARY: (?P<count>{N}) hazards? displayed "
    rf"\((?P<errors>{N}) errors?, (?P<warnings>{N}) warnings?\)$"
)
# LEAK SUMMARY: 64 bytes leaked in 1 allocations
LEAK_SUMMARY_RE = re.compile(rf"^LEAK SUMMARY: {N} bytes? leaked in {N} allocations?$")
# Error: Target application terminated before first instrumented API call
NOT_INSTRUMENTED_RE = re.compile(
    r"^(?:Error: )?Target application terminated before first instrumented API call\.?$"
)
# Target application returned an error
APP_ERROR_RE = re.compile(r"^Target application returned an error$")
# Error: process didn't terminate successfully
APP_CRASHED_RE = re.compile(r"^Error: process didn't terminate successfully$")
# Internal Sanitizer Error: ...          (also any other "Error: ..." from the tool)
TOOL_ERROR_RE = re.compile(r"^(?:Internal Sanitizer Error|Error|ERROR): (?P<message>.+)$")

# --- detail lines (indented) --------------------------------------------------------
# at k(float *, int)+0xb0 in /src/k.cu:41      (location optional without -lineinfo)
AT_RE = re.compile(r"^at (?P<location>.+)$")
# by thread (0,0,0) in block (8,0,0)
THREAD_RE = re.compile(r"^by thread \((?P<thread>[^)]*)\) in block \((?P<block>[^)]*)\)$")
# Access to 0x7f8aa4804208 is out of bounds    (older: "Address 0x... is out of bounds")
ADDRESS_RE = re.compile(
    r"^(?:Address|Access (?:to|at)) 0x(?P<address>[0-9a-fA-F]+) (?P<detail>.+)$"
)
# and is 504 bytes before the nearest allocation at 0x7f8aa4804400 of size 16 bytes
NEAREST_RE = re.compile(r"^and is .+$")
# Saved host backtrace up to driver entry point at kernel launch time
SAVED_BACKTRACE_RE = re.compile(r"^Saved host backtrace up to driver entry point\b.*$")
# Device Frame: helper(float)+0x30 in /src/k.cu:12
DEVICE_FRAME_RE = re.compile(r"^Device Frame:\s*(?P<location>.+)$")
# Host Frame: cudaLaunchKernel [0x4a2b1] in libcudart.so.13
HOST_FRAME_RE = re.compile(r"^Host Frame:\s*(?P<frame>.*)$")
# in /lib/x86_64-linux-gnu/libcuda.so.1    (second line of an older two-line host frame)
HOST_MODULE_RE = re.compile(r"^in (?P<module>\S.*)$")
# and Read access at k(int *)+0x100 in f.cu:51 [508 hazards]
RACE_SECOND_RE = re.compile(
    rf"^and (?P<access>\w+) access at (?P<location>.+?)(?: \[(?P<hazards>{N}) hazards?\])?$"
)


def _int(text: str) -> int:
    return int(text.replace(",", ""))


@dataclass
class _Draft:
    finding: Finding
    frames: list[Frame] = field(default_factory=list)
    host_frames: list[Frame] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    in_host: bool = False

    def done(self) -> Finding:
        detail = "; ".join(d for d in (self.finding.detail, *self.details) if d)
        return replace(
            self.finding,
            frames=tuple(self.frames),
            host_frames=trim_host(self.host_frames),
            detail=detail,
        )


@dataclass
class _State:
    checker: Checker
    case: str = ""
    findings: list[Finding] = field(default_factory=list)
    draft: _Draft | None = None
    error_count: int | None = None
    race_count: int | None = None
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

    def start(self, finding: Finding) -> _Draft:
        self.close()
        self.draft = _Draft(finding)
        self.open_after_summary = True
        return self.draft


Handler = Callable[[_State, re.Match[str], str], None]


def _new(
    state: _State, kind: str, header: str, checker: Checker | None = None, **fields: object
) -> _Draft:
    finding = Finding(
        checker=checker or state.checker,
        kind=kind,
        header=header,
        case=state.case,
        **fields,  # type: ignore[arg-type]
    )
    return state.start(finding)


def _on_invalid_access(s: _State, m: re.Match[str], line: str) -> None:
    _new(s, "invalid-access", line, access=m["access"], size=_int(m["size"]), space=m["space"])


def _on_shared_local(s: _State, m: re.Match[str], line: str) -> None:
    kind = "misaligned-address" if m["what"] == "Misaligned" else "out-of-range-address"
    _new(s, kind, line, space="shared-or-local")


def _on_uninitialized(s: _State, m: re.Match[str], line: str) -> None:
    _new(
        s,
        "uninitialized-access",
        line,
        Checker.INITCHECK,
        access=m["access"],
        size=_int(m["size"]),
        space=m["space"],
    )


def _on_race(s: _State, m: re.Match[str], line: str) -> None:
    d = _new(
        s, "race", line, Checker.RACECHECK, access=m["access"].lower(), detail=m["severity"].lower()
    )
    d.frames.append(device_frame(m["location"]))


def _on_barrier(s: _State, m: re.Match[str], line: str) -> None:
    _new(s, "barrier-error", line, Checker.SYNCCHECK, detail=m["detail"])


def _on_leak(s: _State, m: re.Match[str], line: str) -> None:
    _new(s, "leak", line, size=_int(m["size"]), address=m["address"])


def _on_api_error(s: _State, m: re.Match[str], line: str) -> None:
    # the failing call is the record's only frame, so it becomes the signature's function
    d = _new(s, "api-error", line, code=m["code"], detail=m["reason"])
    d.frames.append(Frame(function=m["call"]))


def _on_error_summary(s: _State, m: re.Match[str], line: str) -> None:
    s.close()
    s.error_count = (s.error_count or 0) + _int(m["count"])
    s.open_after_summary = False
    s.summary_lines.append(line)


def _on_not_printed(s: _State, m: re.Match[str], line: str) -> None:
    s.close()
    s.not_printed += _int(m["count"])
    s.summary_lines.append(line)


def _on_race_summary(s: _State, m: re.Match[str], line: str) -> None:
    s.close()
    s.race_count = (s.race_count or 0) + _int(m["count"])
    s.open_after_summary = False
    s.summary_lines.append(line)


def _on_summary_line(s: _State, m: re.Match[str], line: str) -> None:
    s.close()
    s.summary_lines.append(line)


def _on_banner(s: _State, m: re.Match[str], line: str) -> None:
    s.close()


def _on_app_error(s: _State, m: re.Match[str], line: str) -> None:
    s.close()
    s.app_error = True


def _on_app_crashed(s: _State, m: re.Match[str], line: str) -> None:
    s.close()
    s.app_crashed = True


def _on_tool_error(s: _State, m: re.Match[str], line: str) -> None:
    s.close()
    s.tool_errors.append(line)


# order matters: specific wordings before the generic "Error: ..."
HEADERS: tuple[tuple[re.Pattern[str], Handler], ...] = (
    (BANNER_RE, _on_banner),
    (INVALID_ACCESS_RE, _on_invalid_access),
    (SHARED_LOCAL_RE, _on_shared_local),
    (UNINITIALIZED_RE, _on_uninitialized),
    (RACE_RE, _on_race),
    (BARRIER_RE, _on_barrier),
    (LEAK_RE, _on_leak),
    (API_ERROR_RE, _on_api_error),
    (NOT_PRINTED_RE, _on_not_printed),
    (ERROR_SUMMARY_RE, _on_error_summary),
    (RACECHECK_SUMMARY_RE, _on_race_summary),
    (LEAK_SUMMARY_RE, _on_summary_line),
    (NOT_INSTRUMENTED_RE, _on_tool_error),
    (APP_ERROR_RE, _on_app_error),
    (APP_CRASHED_RE, _on_app_crashed),
    (TOOL_ERROR_RE, _on_tool_error),
)


def _on_at(d: _Draft, m: re.Match[str]) -> None:
    d.frames.insert(0, device_frame(m["location"]))


def _on_thread(d: _Draft, m: re.Match[str]) -> None:
    d.finding = replace(d.finding, thread=m["thread"], block=m["block"])


def _on_address(d: _Draft, m: re.Match[str]) -> None:
    d.finding = replace(d.finding, address=m["address"])
    d.details.append(m["detail"])


def _on_nearest(d: _Draft, m: re.Match[str]) -> None:
    d.details.append(m[0])


def _on_saved_backtrace(d: _Draft, m: re.Match[str]) -> None:
    d.in_host = True


def _on_device_frame(d: _Draft, m: re.Match[str]) -> None:
    d.frames.append(device_frame(m["location"]))


def _on_host_frame(d: _Draft, m: re.Match[str]) -> None:
    d.host_frames.append(host_frame(m["frame"]))


def _on_host_module(d: _Draft, m: re.Match[str]) -> None:
    if d.host_frames and not d.host_frames[-1].module:
        d.host_frames[-1] = replace(d.host_frames[-1], module=m["module"])


def _on_race_second(d: _Draft, m: re.Match[str]) -> None:
    first = d.finding.access
    hazards = _int(m["hazards"]) if m["hazards"] else None
    d.finding = replace(d.finding, access=f"{first}-{m['access'].lower()}", hazards=hazards)
    d.frames.append(device_frame(m["location"]))


DETAILS: tuple[tuple[re.Pattern[str], Callable[[_Draft, re.Match[str]], None]], ...] = (
    (AT_RE, _on_at),
    (THREAD_RE, _on_thread),
    (ADDRESS_RE, _on_address),
    (RACE_SECOND_RE, _on_race_second),
    (NEAREST_RE, _on_nearest),
    (SAVED_BACKTRACE_RE, _on_saved_backtrace),
    (DEVICE_FRAME_RE, _on_device_frame),
    (HOST_FRAME_RE, _on_host_frame),
    (HOST_MODULE_RE, _on_host_module),
)


def parse(
    lines: Iterable[str], *, prefix: str = PREFIX, checker: Checker = Checker.MEMCHECK
) -> ParseResult:
    """Parse a compute-sanitizer text log, one line at a time."""
    state = _State(checker=checker)
    for raw in lines:
        line = raw.rstrip("\r\n")
        # the prefix is followed by a space or nothing ("====== test session starts" is not)
        if not line.startswith(prefix) or line[len(prefix) : len(prefix) + 1] not in ("", " "):
            # a marker does not end a record: the tool and the test write concurrently
            if m := CASE_BEGIN_RE.match(line):
                state.case = m["case"]
            elif CASE_END_RE.match(line):
                state.case = ""
            continue
        body = line[len(prefix) :]
        text = body.strip()
        if not text:
            state.close()  # a bare prefix ends a record
        elif body.startswith("  ") and state.draft is not None:
            for pattern, on_detail in DETAILS:
                if m := pattern.match(text):
                    on_detail(state.draft, m)
                    break
        else:
            for pattern, on_header in HEADERS:
                if m := pattern.match(text):
                    on_header(state, m, text)
                    break
            else:
                state.close()
                if len(state.unparsed) < MAX_UNPARSED:
                    state.unparsed.append(text)
    state.close()
    seen_summary = state.error_count is not None or state.race_count is not None
    complete = seen_summary and not state.open_after_summary
    count = state.error_count if state.error_count is not None else state.race_count
    return ParseResult(
        findings=tuple(state.findings),
        summary_count=count if complete else None,
        not_printed=state.not_printed,
        complete=complete,
        tool_errors=tuple(state.tool_errors),
        app_error=state.app_error,
        app_crashed=state.app_crashed,
        summary_lines=tuple(state.summary_lines),
        unparsed=tuple(state.unparsed),
    )
