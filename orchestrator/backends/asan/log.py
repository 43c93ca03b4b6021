"""AddressSanitizer's log: the grammar of its reports and the parser that reads them
(the backend that runs it is `asan.py`).

Report floods (issue #14): ASan prints every bad access in full, at milliseconds each.
A run preloads csorch's fold shim (`backends/asan/shim.py`): the first report of each faulting
instruction per case is printed, the rest counted, and the parser adds each count to its
printed report (`Finding.count`), so the summary keeps the true count. A run may set
`ASAN_OPTIONS: halt_on_error=1` to stop each case at its first report instead
(`==PID==ABORTING`; the executor continues the cases after it in a fresh process, and
the summary says that later bad accesses were not counted).

Proving a clean run complete: ASan prints nothing for a clean process and has no
"0 errors" line, so silence would look the same as a runtime that never loaded or a
process that died. `atexit=1` makes the runtime itself print "AddressSanitizer exit
stats:" when the process exits normally; that marker proves both that ASan was live in
the process and that it reached the end. A log is complete when a marker follows the
last report (or a report ends in `==PID==ABORTING`, with halt_on_error=1). Note that
`exit` status 0 proves nothing: in recover mode a process with reports still exits 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from orchestrator.backends.asan import shim as asan_fold
from orchestrator.backends.base import CASE_BEGIN_RE, CASE_END_RE
from orchestrator.model import Checker, Finding, Frame, ParseResult, Stack

# ==4540==ERROR: AddressSanitizer: heap-use-after-free on address 0x603000000048 at pc ...
REPORT_RE = re.compile(
    r"^==(?P<pid>[0-9]{1,9})==ERROR: (?P<tool>AddressSanitizer|LeakSanitizer): "
    r"(?P<what>.+)$"
)
# heap-use-after-free on address 0x603000000048 ...   /  attempting double-free on 0x6020...
KIND_RE = re.compile(r"^(?:attempting )?(?P<kind>[A-Za-z][\w-]*)")
ADDRESS_IN_RE = re.compile(r"\b0x(?P<address>[0-9a-fA-F]+)")
# READ of size 8 at 0x603000000048 thread T0
ACCESS_RE = re.compile(
    r"^(?P<access>READ|WRITE) of size (?P<size>[0-9]{1,18}) at 0x"
    r"(?P<address>[0-9a-fA-F]+) thread (?P<thread>\S+)"
)
# ==4540==The signal is caused by a READ memory access.
SIGNAL_ACCESS_RE = re.compile(r"^==\d+==The signal is caused by a (?P<access>\w+) memory access")
#     #0 0x556d50cdd234 in main /tmp/asantry/uaf.c:3
#     #3 0x556d50cdd0f0 in _start (/tmp/asantry/uaf+0x10f0)   (optionally "(BuildId: ...)")
# (the parts after the pc are found from the end by the suffix patterns below: a lazy
# group before a `\s+` is quadratic in a long run of spaces, and a damaged line can hold
# 200,000 of them)
FRAME_RE = re.compile(r"^\s*#(?P<index>\d+)\s+0x(?P<pc>[0-9a-fA-F]+)(?:\s+in)?\s*(?P<rest>.*)$")
# ... (BuildId: 4f2a)   (its "(" found with rfind, then this from there to the end)
BUILD_ID_RE = re.compile(r"\(BuildId: [0-9a-fA-F]+\)")
# ... (/lib/x86_64-linux-gnu/libc.so.6+0x271ca)
FRAME_MODULE_RE = re.compile(r"\((?P<module>[^()\s]+)\+0x[0-9a-fA-F]+\)$")
# ... +0x271ca)     (the module form's end; the module is what lies between it and the
# first " (/" before it: a path may hold spaces, and ASan quotes nothing)
MODULE_END_RE = re.compile(r"\+0x[0-9a-fA-F]+\)$")
# ... /tmp/asantry/uaf.c:3:12
# (bounded numbers here and in ACCESS_RE: a corrupt line is an unknown line, never a
# crash in int(), which refuses more than 4300 digits)
FRAME_FILE_RE = re.compile(r"\s(?P<file>\S+?):(?P<line>[0-9]{1,9})(?::\d+)?$")
# ... :3:12     (the file form's end; an absolute file is what lies between it and the
# first " /" before it, spaces and all: `in f /src dir/a.c:3` is f in "/src dir/a.c")
LINE_END_RE = re.compile(r":(?P<line>[0-9]{1,9})(?::[0-9]{1,9})?$")
# freed by thread T0 here:   /   previously allocated by thread T0 here:
STACK_ROLE_RE = re.compile(
    r"^(?P<role>freed|previously allocated|allocated) by thread "
    r"(?P<thread>\S+)(?: .*)? here:$"
)
# Thread T1 created by T0 here:
THREAD_CREATED_RE = re.compile(
    r"^Thread (?P<thread>T\d+)(?: .*)? created by (?P<parent>T\d+)"
    r"(?: .*)? here:$"
)
# 0x603000000048 is located 8 bytes inside of 32-byte region [0x603000000040,0x603000000060)
LOCATED_RE = re.compile(r"^0x[0-9a-fA-F]+ is located .+$")
# SUMMARY: AddressSanitizer: heap-use-after-free /tmp/asantry/uaf.c:3 in main
SUMMARY_RE = re.compile(r"^SUMMARY: AddressSanitizer: (?P<text>.+)$")
# AddressSanitizer exit stats:    (atexit=1; may follow text that lacks a newline)
EXIT_STATS_RE = re.compile(r"AddressSanitizer exit stats:")
# ==4540==csorch-asan-exit: _exit(0)   (the fold shim's end record of a process that ended
# with _exit, which skips the runtime's exit stats: dash, multiprocessing's workers)
SHIM_EXIT_RE = re.compile(r"^==\d+==csorch-asan-exit: _exit\([0-9]{1,3}\)$")
# ==4540==ABORTING
ABORTING_RE = re.compile(r"^==\d+==ABORTING$")
# ==123==ASan runtime does not come first in initial library list; you should either ...
# AddressSanitizer: CHECK failed: asan_interceptors.cpp:320 "((__interception::real___cxa_throw))
#   != (0)" (0x0, 0x0) (tid=9986)     (a C++ throw with no libstdc++ loaded: the process aborts)
# ==123==AddressSanitizer CHECK failed: ...    (older runtimes: with the pid, without the colon)
RUNTIME_ERROR_RE = re.compile(
    r"^(?:==\d+==)?(?P<message>(?:ASan runtime does not come first|"
    r"AddressSanitizer:? CHECK failed|Sanitizer:? CHECK failed|"
    r"Shadow memory range interleaves)"
    r".*)$"
)
# ERROR: ld.so: object '/usr/lib/.../libasan.so' from LD_PRELOAD cannot be preloaded ...
PRELOAD_FAILED_RE = re.compile(
    r"^ERROR: ld\.so: object '(?P<object>[^']+)' from LD_PRELOAD "
    r"cannot be preloaded.*$"
)


def frame(text: str) -> Frame:
    """One `#k 0xPC in FUNC FILE:LINE` line (or its module form) as a Frame.

    ASan writes the function, then one space, then the file or `(module+0xOFFSET)`,
    quoting nothing; a function's name holds spaces (`f(int, char)`), and so may a path
    (`/src dir/a.c`). An absolute path (every module's, and a file's from its debug
    info) begins at the first " /" (or " (/") after the function, so that is where the
    split goes; a relative file (`../sysdeps/x.h:58`) is the last word, as before."""
    m = FRAME_RE.match(text)
    if not m:
        return Frame(function=text.strip())
    rest, pc = m["rest"], "0x" + m["pc"]
    at = rest.rfind("(BuildId: ")
    if at > 0 and rest[at - 1].isspace() and BUILD_ID_RE.fullmatch(rest, at):
        rest = rest[:at].rstrip()
    if end := MODULE_END_RE.search(rest):
        start = _absolute(rest, "(/", end.start())
        if start >= 0:
            return Frame(rest[:start].rstrip(), "", None, rest[start + 1 : end.start()], pc)
    if mm := FRAME_MODULE_RE.search(rest):
        return Frame(rest[: mm.start()].rstrip(), "", None, mm["module"], pc)
    if end := LINE_END_RE.search(rest):
        start = _absolute(rest, "/", end.start())
        if start > 0 and rest[:start].strip():
            return Frame(rest[:start].rstrip(), rest[start : end.start()], int(end["line"]), "", pc)
    if (mm := FRAME_FILE_RE.search(rest)) and rest[: mm.start()].strip():
        return Frame(rest[: mm.start()].rstrip(), mm["file"], int(mm["line"]), "", pc)
    return Frame(rest, "", None, "", pc)


def _absolute(rest: str, lead: str, end: int) -> int:
    """Where the first absolute path of `rest` before `end` begins (`lead` at the start or
    after whitespace: "(/" for a module, "/" for a file), or -1."""
    at = rest.find(lead, 0, end)
    while at > 0 and not rest[at - 1].isspace():
        at = rest.find(lead, at + 1, end)
    return at if at >= 0 and at + len(lead) < end else -1


@dataclass
class _Draft:
    finding: Finding
    stacks: list[tuple[str, list[Frame]]] = field(default_factory=lambda: [("access", [])])
    details: list[str] = field(default_factory=list)
    shadow: str = ""  # the shadow byte of the address (the `=>` row's bracketed one)

    def key(self) -> asan_fold.Key:
        f = self.finding
        pc = asan_fold.header_pc(f.header)
        return asan_fold.Key(f.pid, f.case, pc, f.access, f.size, self.shadow)

    def done(self) -> Finding:
        (_, primary), *others = self.stacks
        return replace(
            self.finding,
            frames=tuple(primary),
            related=tuple(Stack(role, tuple(frames)) for role, frames in others),
            detail="; ".join(self.details),
        )


def parse(lines: Iterable[str], *, exit_required: bool = True) -> ParseResult:
    """Parse AddressSanitizer reports out of one log: a process's own file (log_path), or
    a process's combined output. `exit_required=False` for a forked child that never
    exec'd (it may end with `_exit`, which skips the exit stats): its log is complete
    when every report in it is whole (ends with its SUMMARY line)."""
    findings: list[Finding] = []
    keys: list[asan_fold.Key] = []  # findings[i]'s, for the fold shim's counts
    folds: list[asan_fold.Fold] = []
    odd: list[str] = []  # fold lines that FOLD_RE does not read
    draft: _Draft | None = None
    summaries = 0
    ended = False  # an exit-stats marker or ABORTING follows the last report
    halted = False  # ABORTING: the process stopped at a report (halt_on_error=1)
    case = ""
    tool_errors: list[str] = []

    def close() -> None:
        nonlocal draft
        if draft is not None:
            findings.append(draft.done())
            keys.append(draft.key())
            draft = None

    for raw in lines:
        line = raw.rstrip("\r\n")
        text = line.strip()
        if m := CASE_BEGIN_RE.match(line):
            case = m["case"]
        elif CASE_END_RE.match(line):
            case = ""
        elif m := REPORT_RE.match(text):
            close()
            what = m["what"]
            known = KIND_RE.match(what)  # None for a report line damaged after the colon
            kind = (
                "memory-leak"
                if m["tool"] == "LeakSanitizer"
                else known["kind"]
                if known
                else "unknown"
            )
            address = ADDRESS_IN_RE.search(what)
            draft = _Draft(
                Finding(
                    checker=Checker.ASAN,
                    kind=kind,
                    pid=int(m["pid"]),
                    case=case,
                    address=address["address"] if address else "",
                    header=text,
                )
            )
            ended = False
        elif draft is not None and (m := ACCESS_RE.match(text)):
            draft.finding = replace(
                draft.finding,
                access=m["access"].lower(),
                size=int(m["size"]),
                address=m["address"],
                thread=m["thread"],
            )
        elif draft is not None and (m := SIGNAL_ACCESS_RE.match(text)):
            draft.finding = replace(draft.finding, access=m["access"].lower())
        elif draft is not None and FRAME_RE.match(text):
            draft.stacks[-1][1].append(frame(text))
        elif draft is not None and (m := STACK_ROLE_RE.match(text)):
            role = "freed" if m["role"] == "freed" else "allocated"
            draft.stacks.append((role, []))
        elif draft is not None and THREAD_CREATED_RE.match(text):
            draft.stacks.append(("thread-created", []))
        elif draft is not None and LOCATED_RE.match(text):
            draft.details.append(text)
        elif m := SUMMARY_RE.match(text):
            summaries += 1
            if draft is not None:
                km = KIND_RE.match(m["text"])
                if km and draft.finding.kind != "memory-leak":
                    draft.finding = replace(draft.finding, kind=km["kind"])
                close()
        elif m := asan_fold.SHADOW_ROW_RE.match(text):
            # after the SUMMARY line, so it is the last closed report's
            if draft is not None:
                draft.shadow = draft.shadow or m["shadow"].lower()
            elif keys and not keys[-1].shadow:
                keys[-1] = replace(keys[-1], shadow=m["shadow"].lower())
        elif asan_fold.FOLD_ANY_RE.match(text):
            folded = asan_fold.fold(text, case)
            if folded is None:
                odd.append(f"unreadable fold line {text[:120]!r}")
            else:
                folds.append(folded)
        elif ABORTING_RE.match(text) or EXIT_STATS_RE.search(line) or SHIM_EXIT_RE.match(text):
            close()  # the process ended after its reports: nothing more is coming
            ended = True
            halted = halted or bool(ABORTING_RE.match(text))
        elif m := RUNTIME_ERROR_RE.match(text):
            tool_errors.append(m["message"])
        elif PRELOAD_FAILED_RE.match(text):
            tool_errors.append(text)
    close()
    # every report ends with its SUMMARY line: one without it was cut short, even when
    # another process writing to the same log (a wrapper shell) exited normally after it
    whole = summaries >= len(findings)
    ended = (ended or not exit_required) and whole
    counted, unmatched = asan_fold.attach(findings, keys, folds)
    folded = sum(f.count for f in folds)  # the unmatched too: they make the count odd
    return ParseResult(
        # the folded repeats are in their printed report's `Finding.count` (`records`)
        findings=counted,
        summary_count=summaries + folded if ended else None,
        complete=ended,
        tool_errors=tuple(dict.fromkeys(tool_errors)),
        summary_lines=(_summary(summaries, folded, halted),) if ended else (),
        # a count that belongs to no printed report is no count: inconclusive
        count_mismatch="; ".join(dict.fromkeys((*unmatched, *odd))),
    )


def _summary(printed: int, folded: int, halted: bool) -> str:
    line = f"{printed + folded} AddressSanitizer report(s)"
    if folded:
        line += f": {printed} printed, {folded} folded (repeats of a printed one in its case)"
    if halted:
        # ASan counts nothing past the report it halted at: say so, invent no total
        line += "; halted at the first (halt_on_error=1): later bad accesses not counted"
    return line
