"""racecheck's records: `--racecheck-report analysis` (the default: one "Race reported
between ..." record per race, its hazards counted in brackets), `hazard` (one record per
hazardous byte: "Potential RAW hazard detected at __shared__ ...", two thread lines and
the values) and `all` (both). Each record has a severity (error, warning; info with
`--print-level info`), and `RACECHECK SUMMARY: N hazards displayed (E errors, W
warnings)` counts the displayed records by it: csorch keeps the severity on each finding
so that its split can be checked against the tool's (`summary`).

The grammar is the `*_RE` patterns below (prefix removed), each with an example; the
wordings follow the Compute Sanitizer documentation ("Understanding Racecheck Analysis
Reports", "... Hazard Reports") and the old CUDA-MEMCHECK `WARN:` form."""

from __future__ import annotations

import re
from dataclasses import replace

from orchestrator.backends.compute_sanitizer.frames import device_frame
from orchestrator.backends.compute_sanitizer.state import (
    DetailHandler,
    Draft,
    Handler,
    State,
    number,
)
from orchestrator.model import Checker

# Error: Race reported between Write access at k(int *)+0x90 in f.cu:41
#   (also "Warning:", and upper case "ERROR:"/"WARNING:"/"WARN:"/"INFO:")
RACE_RE = re.compile(
    r"^(?P<severity>Error|Warning|Info|ERROR|WARNING|WARN|INFO):\s*Race reported between "
    r"(?P<access>\w+) access at (?P<location>.+)$"
)
# and Read access at k(int *)+0x100 in f.cu:51 [508 hazards]     (one line per other access)
RACE_SECOND_RE = re.compile(
    r"^and (?P<access>\w+) access at (?P<location>.+?)"
    r"(?: \[(?P<hazards>[0-9][0-9,]{0,24}) hazards?\])?$"
)
# Error: Potential WAW hazard detected at __shared__ 0x0 in block (0,0,0) :
# Warning: (Warp Level Programming) Potential RAW hazard detected at __shared__ 0x8c in ...
# WARN:(Warp Level Programming) Potential WAR hazard detected at __shared__ 0x3 in block (0, 0, 0) :
HAZARD_RE = re.compile(
    r"^(?P<severity>Error|Warning|Info|ERROR|WARNING|WARN|INFO):\s*"
    r"(?:\((?P<why>[^)]*)\)\s*)?Potential (?P<type>RAW|WAR|WAW) hazard detected at "
    r"__(?P<space>\w+?)__ 0x(?P<address>[0-9a-fA-F]+) in block \((?P<block>[^)]*)\)\s*:?$"
)
# Write Thread (0,0,0) at WAW()+0x2f0 in raceWAW.cu:20
# Read Thread (31, 0, 0) at 0x00000170 in ./race.cu:4:test(int*, int*)    (CUDA-MEMCHECK)
HAZARD_THREAD_RE = re.compile(
    r"^(?P<access>Read|Write) Thread \((?P<thread>[^)]*)\) at (?P<location>.+)$"
)
# Current Value : 1, Incoming Value : 2
VALUES_RE = re.compile(r"^Current Value\s*:.*$")
# Potential invalid __shared__ read of size 4 bytes     (a cluster block not entered or exited)
CLUSTER_RE = re.compile(
    r"^Potential invalid __(?P<space>\w+?)__ (?P<access>read|write) of size "
    r"(?P<size>[0-9][0-9,]{0,24})"
    r"(?: bytes?)?$"
)

_SEVERITY = {"error": "error", "warning": "warning", "warn": "warning", "info": "info"}


def severity(word: str) -> str:
    """`WARN` -> `warning`: the words RACECHECK SUMMARY's split counts by."""
    return _SEVERITY[word.lower()]


def _on_race(s: State, m: re.Match[str], line: str) -> None:
    d = s.new(
        "race",
        line,
        Checker.RACECHECK,
        access=m["access"].lower(),
        severity=severity(m["severity"]),
    )
    d.frames.append(device_frame(m["location"]))


def _on_hazard(s: State, m: re.Match[str], line: str) -> None:
    s.new(
        "race-hazard",
        line,
        Checker.RACECHECK,
        access=m["type"].lower(),
        space=m["space"],
        address=m["address"],
        block=m["block"].replace(" ", ""),
        severity=severity(m["severity"]),
        detail=m["why"] or "",
    )


def _on_cluster(s: State, m: re.Match[str], line: str) -> None:
    s.new(
        "cluster-race",
        line,
        Checker.RACECHECK,
        access=m["access"],
        size=number(m["size"]),
        space=m["space"],
    )


def _on_race_second(d: Draft, m: re.Match[str]) -> None:
    # every other access of the race: "write-read", then "write-read/write" for a third;
    # the others are kept sorted so that the print order does not change the signature
    first, _, others = d.finding.access.partition("-")
    accesses = sorted({*filter(None, others.split("/")), m["access"].lower()})
    hazards = d.finding.hazards
    if m["hazards"]:
        hazards = (hazards or 0) + number(m["hazards"])
    d.finding = replace(d.finding, access=f"{first}-{'/'.join(accesses)}", hazards=hazards)
    d.frames.append(device_frame(m["location"]))


def _on_hazard_thread(d: Draft, m: re.Match[str]) -> None:
    if d.finding.kind != "race-hazard":
        return
    d.frames.append(device_frame(m["location"]))
    d.details.append(f"{m['access'].lower()} by thread ({m['thread'].replace(' ', '')})")


def _on_values(d: Draft, m: re.Match[str]) -> None:
    d.details.append(m[0])


#: header patterns; they come before the generic "Error: ..." tool-error pattern
HEADERS: tuple[tuple[re.Pattern[str], Handler], ...] = (
    (RACE_RE, _on_race),
    (HAZARD_RE, _on_hazard),
    (CLUSTER_RE, _on_cluster),
)
DETAILS: tuple[tuple[re.Pattern[str], DetailHandler], ...] = (
    (RACE_SECOND_RE, _on_race_second),
    (HAZARD_THREAD_RE, _on_hazard_thread),
    (VALUES_RE, _on_values),
)
