"""Streaming parser for compute-sanitizer's text log (memcheck, initcheck, racecheck,
synccheck, leak check), and the old CUDA-MEMCHECK wording.

The grammar is the `*_RE` patterns below (memcheck, initcheck and synccheck records),
in `racecheck` (racecheck's records) and in `summary` (the end-of-run lines), each with
an example line (prefix removed). A checker line starts with the prefix (`=========`); a
header line has one space after it, a detail line is indented further, and a bare
prefix ends a record. Lines without the prefix (the application's own output) are
ignored. One small handler per record kind; `parse` never raises on odd input: unknown
checker lines are kept in `unparsed`.

A log is complete only when an `ERROR SUMMARY` (or `RACECHECK SUMMARY`) line closes
it and no record starts after the last summary; anything else (truncated log, crashed
tool, no CUDA use with `--require-cuda-init no`) is incomplete, never clean. A complete
log whose summary counts more (or fewer) records than csorch parsed carries a
`count_mismatch`, which makes it inconclusive too (`summary`).

With `--destroy-on-device-error kernel` the faulting kernel ends and the process goes
on: records of later kernels follow, with no CUDA API error between them; with the
default (`context`) the next CUDA call reports `Program hit cudaErrorLaunchFailure`.
Both are plain sequences of records to this parser.

Records are folded as they are parsed (`findings.folding`: per case and signature the first few
findings whole, the rest counted in `Finding.count`), so memory follows the distinct
signatures, not the records; and a record whose signature already has its examples is
counted without being read line by line (`skim`, which keys a record on its
patterns' named groups: a group named as in `backends.dispatch.VOLATILE` must never reach a
signature), and the records after it shaped as it is are counted at once (`runs`).
The text is read in chunks (`skim.chunks`); each table below is dispatched as one
regex (`backends.dispatch`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from typing import IO

from orchestrator.backends.base import CASE_BEGIN_RE, CASE_END_RE
from orchestrator.backends.compute_sanitizer import racecheck as cs_race
from orchestrator.backends.compute_sanitizer import skim
from orchestrator.backends.compute_sanitizer import summary as cs_summary
from orchestrator.backends.compute_sanitizer.frames import device_frame
from orchestrator.backends.compute_sanitizer.state import (
    DetailHandler,
    Draft,
    Handler,
    State,
    number,
)
from orchestrator.backends.dispatch import Dispatch
from orchestrator.findings import folding
from orchestrator.model import Checker, Frame, ParseResult

PREFIX = "========="
MAX_UNPARSED = 20

# --- record headers (racecheck's: cs_race) ---------------------------------------------
# COMPUTE-SANITIZER            (also the old banner: CUDA-MEMCHECK)
BANNER_RE = re.compile(r"^(?:COMPUTE-SANITIZER|CUDA-MEMCHECK)$")
# Invalid __global__ read of size 8 bytes
INVALID_ACCESS_RE = re.compile(
    r"^Invalid __(?P<space>\w+?)__ (?P<access>read|write|atomic) of size "
    r"(?P<size>[0-9][0-9,]{0,24})"
    r"(?: bytes?)?$"
)
# Misaligned Shared or Local Address    (also: Out-of-range Shared or Local Address)
SHARED_LOCAL_RE = re.compile(r"^(?P<what>Misaligned|Out-of-range) Shared or Local Address$")
# Warp Illegal Address    (hardware exceptions: imprecise, no access size; also Lane/Device)
# Warp assert             (a device-side assert(), e.g. ATen's index checks; 2025.3 writes
#                          it in lower case, so the wording is matched in either case)
HARDWARE_RE = re.compile(
    r"^(?:(?:Warp|Lane|Device) )?(?P<what>(?i:Illegal Address|Misaligned Address|"
    r"Out-of-range Address|Invalid Address Space|Invalid PC|Misaligned PC|Illegal Instruction|"
    r"Hardware Stack Overflow|User Stack Overflow|Assert))$"
)
# Malloc/Free error encountered : Double free
MALLOC_FREE_RE = re.compile(r"^Malloc/Free error encountered\s*:\s*(?P<what>.+)$")
# Uninitialized __global__ memory read of size 4 bytes
UNINITIALIZED_RE = re.compile(
    r"^Uninitialized __(?P<space>\w+?)__ memory (?P<access>read|write) of size "
    r"(?P<size>[0-9][0-9,]{0,24})(?: bytes?)?$"
)
# Unused __global__ memory in allocation 0x7fed9f400000 of size 100 bytes
#   (initcheck --track-unused-memory; also "Unused memory in allocation 0x... called NAME ...")
UNUSED_RE = re.compile(
    r"^Unused (?:__(?P<space>\w+?)__ )?memory in allocation(?: 0x(?P<address>[0-9a-fA-F]+))?"
    r".*? of size (?P<size>[0-9][0-9,]{0,24})(?: bytes?)?.*$"
)
# Barrier error detected. Divergent thread(s) in block.     (also: "... Invalid arguments")
BARRIER_RE = re.compile(r"^Barrier error detected\.\s*(?P<detail>.*)$")
# Warpgroup MMA sequence error detected. ...     (synccheck, wgmma on sm_90a)
WGMMA_RE = re.compile(r"^Warpgroup MMA sequence error detected\.?\s*(?P<detail>.*)$")
# Leaked 64 bytes at 0x7f3c4a000000         (also "... on the device heap", "... called NAME")
LEAK_RE = re.compile(
    r"^Leaked (?P<size>[0-9][0-9,]{0,24}) bytes? at 0x(?P<address>[0-9a-fA-F]+)(?P<rest>.*)$"
)
# Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on
#   CUDA API call to cudaFree.
# Program hit invalid copy direction for memcpy (error 21) on CUDA API call to cudaMemcpy.
API_ERROR_RE = re.compile(
    r"^Program hit (?P<code>.+?) \(error (?P<number>[0-9]{1,9})\)"
    r'(?: due to "(?P<reason>[^"]*)")? on (?:CUDA )?(?:\w+ )?API call to (?P<call>[\w:]+)\.?$'
)

# --- detail lines (indented) --------------------------------------------------------
# at k(float *, int)+0xb0 in /src/k.cu:41      (location optional without -lineinfo)
AT_RE = re.compile(r"^at (?P<location>.+)$")
# by thread (0,0,0) in block (8,0,0)
THREAD_RE = re.compile(r"^by thread \((?P<thread>[^)]*)\) in block \((?P<block>[^)]*)\)$")
# Access to 0x7f8aa4804208 is out of bounds    (older: "Address 0x... is out of bounds")
ADDRESS_RE = re.compile(
    r"^(?:Address|Access (?:to|at)) 0x(?P<address>[0-9a-fA-F]+)(?: (?P<detail>.+))?$"
)
# and is 504 bytes before the nearest allocation at 0x7f8aa4804400 of size 16 bytes
NEAREST_RE = re.compile(r"^and is .+$")
# Saved host backtrace up to driver entry point at kernel launch time
SAVED_BACKTRACE_RE = re.compile(r"^Saved host backtrace up to driver entry point\b.*$")
# Device Frame: helper(float)+0x30 in /src/k.cu:12      (a caller of the `at` frame)
DEVICE_FRAME_RE = re.compile(r"^Device Frame:\s*(?P<location>.+)$")
# Host Frame: cudaLaunchKernel [0x4a2b1] in libcudart.so.13
HOST_FRAME_RE = re.compile(r"^Host Frame:\s*(?P<frame>.*)$")
# in /lib/x86_64-linux-gnu/libcuda.so.1    (second line of an older two-line host frame)
HOST_MODULE_RE = re.compile(r"^in (?P<module>\S.*)$")


def _on_invalid_access(s: State, m: re.Match[str], line: str) -> None:
    s.new("invalid-access", line, access=m["access"], size=number(m["size"]), space=m["space"])


def _on_shared_local(s: State, m: re.Match[str], line: str) -> None:
    kind = "misaligned-address" if m["what"] == "Misaligned" else "out-of-range-address"
    s.new(kind, line, space="shared-or-local")


def _on_hardware(s: State, m: re.Match[str], line: str) -> None:
    s.new("hardware-exception", line, Checker.MEMCHECK, detail=m["what"].lower())


def _on_malloc_free(s: State, m: re.Match[str], line: str) -> None:
    s.new("malloc-free-error", line, Checker.MEMCHECK, detail=m["what"].strip().lower())


def _on_uninitialized(s: State, m: re.Match[str], line: str) -> None:
    s.new(
        "uninitialized-access",
        line,
        Checker.INITCHECK,
        access=m["access"],
        size=number(m["size"]),
        space=m["space"],
    )


def _on_unused(s: State, m: re.Match[str], line: str) -> None:
    s.new(
        "unused-memory",
        line,
        Checker.INITCHECK,
        size=number(m["size"]),
        space=m["space"] or "",
        address=m["address"] or "",
    )


def _on_barrier(s: State, m: re.Match[str], line: str) -> None:
    s.new("barrier-error", line, Checker.SYNCCHECK, detail=m["detail"].rstrip("."))


def _on_wgmma(s: State, m: re.Match[str], line: str) -> None:
    s.new("wgmma-error", line, Checker.SYNCCHECK, detail=m["detail"].rstrip("."))


def _on_leak(s: State, m: re.Match[str], line: str) -> None:
    space = "device-heap" if "on the device heap" in m["rest"] else ""
    s.new("leak", line, size=number(m["size"]), address=m["address"], space=space)


def _on_api_error(s: State, m: re.Match[str], line: str) -> None:
    # the failing call is the record's only frame, so it becomes the signature's function
    d = s.new("api-error", line, code=m["code"], detail=m["reason"] or "")
    d.frames.append(Frame(function=m["call"]))


def _on_banner(s: State, m: re.Match[str], line: str) -> None:
    s.close()


# order matters: record wordings, then racecheck's, then the summary and status lines,
# and the generic "Error: ..." (a tool error) last
HEADERS: tuple[tuple[re.Pattern[str], Handler], ...] = (
    (BANNER_RE, _on_banner),
    (INVALID_ACCESS_RE, _on_invalid_access),
    (SHARED_LOCAL_RE, _on_shared_local),
    (HARDWARE_RE, _on_hardware),
    (MALLOC_FREE_RE, _on_malloc_free),
    (UNINITIALIZED_RE, _on_uninitialized),
    (UNUSED_RE, _on_unused),
    (BARRIER_RE, _on_barrier),
    (WGMMA_RE, _on_wgmma),
    (LEAK_RE, _on_leak),
    (API_ERROR_RE, _on_api_error),
    *cs_race.HEADERS,
    *cs_summary.HEADERS,
    *cs_summary.LAST,
)


def _on_at(d: Draft, m: re.Match[str]) -> None:
    d.frames.insert(0, device_frame(m["location"]))


def _on_thread(d: Draft, m: re.Match[str]) -> None:
    d.finding = replace(d.finding, thread=m["thread"], block=m["block"])


def _on_address(d: Draft, m: re.Match[str]) -> None:
    d.finding = replace(d.finding, address=m["address"])
    if m["detail"]:
        d.details.append(m["detail"])


def _on_nearest(d: Draft, m: re.Match[str]) -> None:
    d.details.append(m[0])


def _on_saved_backtrace(d: Draft, m: re.Match[str]) -> None:
    d.in_host = True


def _on_device_frame(d: Draft, m: re.Match[str]) -> None:
    d.frames.append(device_frame(m["location"]))


def _on_host_frame(d: Draft, m: re.Match[str]) -> None:
    d.host(m["frame"])


def _on_host_module(d: Draft, m: re.Match[str]) -> None:
    if d.host_frames and not d.host_frames[-1].module:
        d.host_frames[-1] = replace(d.host_frames[-1], module=m["module"])


DETAILS: tuple[tuple[re.Pattern[str], DetailHandler], ...] = (
    (AT_RE, _on_at),
    (THREAD_RE, _on_thread),
    (ADDRESS_RE, _on_address),
    *cs_race.DETAILS,
    (NEAREST_RE, _on_nearest),
    (SAVED_BACKTRACE_RE, _on_saved_backtrace),
    (DEVICE_FRAME_RE, _on_device_frame),
    (HOST_FRAME_RE, _on_host_frame),
    (HOST_MODULE_RE, _on_host_module),
)
# each table as one regex (first match, as a loop over it); the row of the line after
# which a record's host backtrace comes (`skim` steps over it)
HEADER_DISPATCH = Dispatch(HEADERS)
DETAIL_DISPATCH = Dispatch(DETAILS)
SAVED_ROW = next(i for i, (p, _) in enumerate(DETAILS) if p is SAVED_BACKTRACE_RE)


def _split(state: State) -> tuple[int, int]:
    """csorch's (errors, warnings) over its racecheck records, as the tool's summary splits."""
    return state.severities.get("error", 0), state.severities.get("warning", 0)


def _line(state: State, line: str, prefix: str) -> str | None:
    """One line (without its line end) through the grammar, but for a header line: its
    text, for the caller (`parse`) to see whether `skim` counts its record, then
    `_header`."""
    line = line.rstrip("\r\n")
    n = len(prefix)
    # the prefix is followed by a space or nothing ("====== test session starts" is not)
    if not line.startswith(prefix) or line[n : n + 1] not in ("", " "):
        # a marker does not end a record: the tool and the test write concurrently
        if m := CASE_BEGIN_RE.match(line):
            state.case = m["case"]
        elif CASE_END_RE.match(line):
            state.case = ""
        return None
    body = line[n:]
    text = body.strip()
    if not text:
        state.close()  # a bare prefix ends a record
    elif body.startswith("  ") and state.draft is not None:
        row, m = DETAIL_DISPATCH.find(text)
        if m is not None:
            DETAILS[row][1](state.draft, m)
    else:
        return text
    return None


def _header(state: State, text: str, row: int) -> None:
    """A header line's `text`, whose pattern is HEADERS[row] (-1: none knows it)."""
    if row >= 0:
        pattern, on_header = HEADERS[row]
        on_header(state, pattern.match(text), text)  # type: ignore[arg-type]
        return
    state.close()
    if len(state.unparsed) < MAX_UNPARSED:
        state.unparsed.append(text)


def parse(
    source: Iterable[str] | IO[str],
    *,
    prefix: str = PREFIX,
    checker: Checker = Checker.MEMCHECK,
    examples: int | None = folding.EXAMPLES,
) -> ParseResult:
    """Parse a compute-sanitizer text log: an open text file (read in chunks) or its
    lines (with or without their line ends). Findings are folded (`findings.folding`): per case and
    signature the first `examples` whole (None: all), the rest counted; a record whose
    signature has its examples is counted without being read (`skim`)."""
    state = State(checker=checker, fold=folding.Fold(examples))
    skimmer = skim.Skimmer(prefix, HEADER_DISPATCH, DETAIL_DISPATCH, SAVED_ROW)
    # fast path: most of a memcheck log's bytes are host frames in this exact layout;
    # any other layout takes the general path, with the same result
    host_line = prefix + "         Host Frame:"
    host_at = len(host_line)
    for text, clean in skim.chunks(source, prefix):
        pos, end = 0, len(text)
        while pos < end:
            nl = text.find("\n", pos)
            if nl < 0:
                nl = end
            line = text[pos:nl]
            pos = nl + 1
            draft = state.draft
            if draft is not None and line.startswith(host_line):
                draft.host(line[host_at:].strip())
                continue
            header = _line(state, line, prefix)
            if header is None:
                continue
            item, key = HEADER_DISPATCH.key(header), None
            if item is not None:
                start = pos - 1 - len(line)  # the header line's
                stop, key = skimmer.skim(state, text, start, pos, clean, item)
                if stop >= 0:  # counted: its signature has its examples
                    pos = stop
                    continue
            _header(state, header, item[0] if item is not None else -1)
            if state.draft is not None and state.draft is not draft:
                state.key = key
    state.close()
    seen_summary = state.error_count is not None or state.race_count is not None
    complete = seen_summary and not state.open_after_summary
    count = state.error_count if state.error_count is not None else state.race_count
    summary_count = count if complete else None
    return ParseResult(
        findings=state.fold.findings(),
        summary_count=summary_count,
        not_printed=state.not_printed,
        complete=complete,
        tool_errors=tuple(state.tool_errors),
        app_error=state.app_error,
        app_crashed=state.app_crashed,
        summary_lines=tuple(state.summary_lines),
        unparsed=tuple(state.unparsed),
        summary_split=state.race_split,
        count_mismatch=cs_summary.mismatch(
            summary_count,
            state.fold.total + state.not_printed,
            state.race_split if state.error_count is None else None,
            _split(state),
        ),
    )
