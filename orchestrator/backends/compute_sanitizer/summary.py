"""The end of a compute-sanitizer log: its summary and status lines, and the check that
csorch's parse accounts for what the tool itself counted.

What the tool counts (Compute Sanitizer documentation, "Leak Checking in Compute
Sanitizer" and "CUDA API Error Checking", and published memcheck runs): memcheck's
`ERROR SUMMARY` counts every record it prints (invalid and misaligned accesses, hardware
exceptions, malloc/free errors, CUDA API errors, and each leaked allocation under
`--leak-check full`), plus the records `--print-limit` kept from printing ("N errors were
not printed"); initcheck's and synccheck's count their records the same way. racecheck
prints no ERROR SUMMARY: `RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)`
counts its displayed records (a race in analysis mode is one record however many
hazards it groups), split by severity. So csorch's count is its records plus the
unprinted ones, and for racecheck its split by severity too; where they differ from the
tool's, a record went unparsed and the log's evidence is not trusted
(`ParseResult.count_mismatch`).
"""

from __future__ import annotations

import re

from orchestrator.backends.compute_sanitizer.state import Handler, State, number

# ERROR SUMMARY: 4,098 errors
ERROR_SUMMARY_RE = re.compile(r"^ERROR SUMMARY: (?P<count>[0-9][0-9,]{0,24}) errors?$")
# ERROR SUMMARY: 3998 errors were not printed. Use --print-limit option to adjust ...
NOT_PRINTED_RE = re.compile(
    r"^ERROR SUMMARY: (?P<count>[0-9][0-9,]{0,24}) errors? (?:was|were) not printed"
)
# RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
RACECHECK_SUMMARY_RE = re.compile(
    r"^RACECHECK SUMMARY: (?P<count>[0-9][0-9,]{0,24}) hazards? displayed "
    r"\((?P<errors>[0-9][0-9,]{0,24}) errors?, (?P<warnings>[0-9][0-9,]{0,24}) warnings?\)$"
)
# LEAK SUMMARY: 64 bytes leaked in 1 allocations
LEAK_SUMMARY_RE = re.compile(
    r"^LEAK SUMMARY: [0-9][0-9,]{0,24} bytes? leaked in [0-9][0-9,]{0,24} allocations?$"
)
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


def _on_error_summary(s: State, m: re.Match[str], line: str) -> None:
    s.close()
    s.error_count = (s.error_count or 0) + number(m["count"])
    s.open_after_summary = False
    s.summary_lines.append(line)


def _on_not_printed(s: State, m: re.Match[str], line: str) -> None:
    s.close()
    s.not_printed += number(m["count"])
    s.summary_lines.append(line)


def _on_race_summary(s: State, m: re.Match[str], line: str) -> None:
    s.close()
    s.race_count = (s.race_count or 0) + number(m["count"])
    errors, warnings = s.race_split or (0, 0)
    s.race_split = (errors + number(m["errors"]), warnings + number(m["warnings"]))
    s.open_after_summary = False
    s.summary_lines.append(line)


def _on_summary_line(s: State, m: re.Match[str], line: str) -> None:
    s.close()
    s.summary_lines.append(line)


def _on_app_error(s: State, m: re.Match[str], line: str) -> None:
    s.close()
    s.app_error = True


def _on_app_crashed(s: State, m: re.Match[str], line: str) -> None:
    s.close()
    s.app_crashed = True


def _on_tool_error(s: State, m: re.Match[str], line: str) -> None:
    s.close()
    s.tool_errors.append(line)


#: "not printed" before the plain ERROR SUMMARY; the generic "Error: ..." last of all
HEADERS: tuple[tuple[re.Pattern[str], Handler], ...] = (
    (NOT_PRINTED_RE, _on_not_printed),
    (ERROR_SUMMARY_RE, _on_error_summary),
    (RACECHECK_SUMMARY_RE, _on_race_summary),
    (LEAK_SUMMARY_RE, _on_summary_line),
    (NOT_INSTRUMENTED_RE, _on_tool_error),
    (APP_ERROR_RE, _on_app_error),
    (APP_CRASHED_RE, _on_app_crashed),
)
LAST: tuple[tuple[re.Pattern[str], Handler], ...] = ((TOOL_ERROR_RE, _on_tool_error),)


def mismatch(
    tool_count: int | None,
    parsed_count: int,
    tool_split: tuple[int, int] | None,
    parsed_split: tuple[int, int],
) -> str:
    """Why csorch's count differs from the tool's summary ("" when they agree, or when
    there is no summary to compare with: that is `complete`'s business)."""
    if tool_count is None:
        return ""
    if parsed_count != tool_count:
        return (
            f"the tool's summary counts {tool_count} record(s) but csorch parsed "
            f"{parsed_count} (printed + not printed): a record csorch does not know went "
            "unparsed"
        )
    if tool_split is not None and parsed_split != tool_split:
        return (
            f"RACECHECK SUMMARY says {tool_split[0]} error(s), {tool_split[1]} warning(s) "
            f"but csorch parsed {parsed_split[0]} and {parsed_split[1]}"
        )
    return ""
