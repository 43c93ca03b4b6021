"""compute-sanitizer suppression files, applied by csorch instead of by the tool.

A run may name suppression files (`suppressions: [cublas.xml]`), in the tool's own format
(what `compute-sanitizer --xml --save F` writes, edited to be generic). csorch does NOT
pass them to the tool as `--suppressions`: the tool drops a suppressed record without a
trace (its documentation's example goes from one API error to `ERROR SUMMARY: 0
errors`), so a suppression that is too broad would hide a real defect and nothing would
show it. Instead the tool reports everything, csorch parses everything (so its count
still equals the tool's), and each finding a suppression matches is kept and marked
with it (`Finding.suppressed`): reports show it as suppressed, the gate does not count
it as unexpected, and a suppression that matched nothing in a run is reported.

Matching follows the tool's documented rules ("Error suppression"): the record kinds
must match; an integer field must match exactly; a string field is a regular expression
(matched whole); a stack in the suppression compares frame by frame (function, file,
module, where given) with the finding's, innermost first, and may be shorter. Host
stacks are written outermost first in the XML ("the host stack appears in reverse
order"). csorch keeps only the informative part of a host backtrace, so suppression
frames past what the finding kept are not compared. The first suppression that matches
a finding marks it. A finding that stands for several records (`Finding.count`: the
parser folds the records of one signature in one case past the first few) is marked
as a whole: a suppression that tells records of one signature apart by their address
or message sees only the examples kept.

Kinds: `Api`, `Precise`, `Leak`, `Analysis` (racecheck's default report) and `Synccheck`
are what the H200's XML named (tests/fixtures/compute-sanitizer/cudabugs-h200/*.xml);
`Imprecise`, `MallocFree`, `Initcheck` and `Racecheck` (hazard reports) are csorch's
reading, not yet seen in a capture. A kind csorch does not know matches nothing, and is
reported as unmatched, never silently dropped.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from orchestrator import files
from orchestrator.errors import ConfigError
from orchestrator.findings import frame_filter
from orchestrator.findings.signatures import normalize_function
from orchestrator.model import Finding, Frame, ParseResult, Suppression

ROOT_TAG = "ComputeSanitizerOutput"
#: the tool's record kind -> the finding kinds it covers
KINDS: dict[str, tuple[str, ...]] = {
    "Api": ("api-error",),
    "Precise": ("invalid-access", "misaligned-address", "out-of-range-address"),
    "Imprecise": ("hardware-exception",),
    "MallocFree": ("malloc-free-error",),
    "Leak": ("leak",),
    "Initcheck": ("uninitialized-access", "unused-memory"),
    "Analysis": ("race", "cluster-race"),  # racecheck's default (analysis) records
    "Racecheck": ("race-hazard",),
    "Synccheck": ("barrier-error", "wgmma-error"),
}
#: <what> children compared as integers (the tool: "integer fields must match exactly")
INT_FIELDS = {"result", "size", "address"}
#: <what> children that are display text only
TEXT_ONLY = {"text"}
_API_NUMBER_RE = re.compile(r"\(error (\d+)\)")
_STACKS = {"hostStack": "host", "deviceStack": "device"}


def _compile(pattern: str, file: Path, where: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(
            file, None, where, f"'{pattern}' is not a valid regular expression: {exc}"
        ) from None


def _frames(stack: ET.Element) -> tuple[tuple[str, str, str], ...]:
    out = []
    for frame in stack.iter("frame"):
        function = (frame.findtext("func") or "").strip()
        file = (frame.findtext("file") or frame.findtext("path") or "").strip()
        module = (frame.findtext("module") or "").strip()
        out.append((function, file, module))
    # innermost first, host stacks too: what the H200's 2025.3.1 writes (the documentation
    # says "reverse order"; tests/fixtures/compute-sanitizer/cudabugs-h200/*.xml decide)
    return tuple(out)


def load(path: Path | str) -> tuple[Suppression, ...]:
    """The records of one suppression file; a ConfigError names the file and the record."""
    path = Path(path)
    try:
        data = files.read_bytes(path, files.CONFIG)  # a pipe would hold a parser forever
    except files.FileRefused as exc:
        raise ConfigError(path, None, "", exc.problem, hint=exc.hint) from None
    except OSError as exc:
        raise ConfigError(path, None, "", f"cannot read the suppression file: {exc}") from None
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        line = exc.position[0] if exc.position else None
        raise ConfigError(path, line, "", f"not a valid suppression file: {exc}") from None
    if root.tag != ROOT_TAG:
        raise ConfigError(
            path,
            None,
            "",
            f"the root element is <{root.tag}>, not <{ROOT_TAG}>",
            hint="write it with compute-sanitizer --xml --save FILE, then edit it",
        )
    out = []
    for i, record in enumerate(root.findall("record"), start=1):
        where = f"record {i}"
        kind = (record.findtext("kind") or "").strip()
        if not kind:
            raise ConfigError(path, None, where, "the record has no <kind>")
        what = []
        for child in record.find("what") if record.find("what") is not None else ():
            value = "".join(child.itertext()).strip()
            if child.tag in TEXT_ONLY or not value or len(child):
                continue
            if child.tag not in INT_FIELDS:
                _compile(value, path, f"{where}.what.{child.tag}")
            what.append((child.tag, value))
        frames: tuple[tuple[str, str, str], ...] = ()
        stack = ""
        for tag, name in _STACKS.items():
            element = record.find(tag)
            if element is not None and (found := _frames(element)):
                frames, stack = found, name
                break
        for function, file, module in frames:
            for value in (function, file, module):
                if value:
                    _compile(value, path, f"{where}.frame")
        out.append(Suppression(f"{path}#{i}", kind, tuple(what), frames, stack))
    if not out:
        raise ConfigError(path, None, "", "the file has no <record>: it would suppress nothing")
    return tuple(out)


def _full(pattern: str, *values: str) -> bool:
    return any(re.fullmatch(pattern, v) for v in values if v) or (not any(values) and not pattern)


def _field(finding: Finding, tag: str) -> str | int | None:
    """The finding's value for a <what> child, or None when csorch has no such field."""
    if tag == "api":
        return finding.frames[0].function if finding.frames else ""
    if tag == "error":
        return finding.code
    if tag == "message":
        return finding.detail
    if tag == "result":
        m = _API_NUMBER_RE.search(finding.header)
        return int(m.group(1)) if m else None
    if tag == "size":
        return finding.size
    if tag == "space":
        return finding.space
    if tag == "address":
        return int(finding.address, 16) if finding.address else None
    return None


def _what_matches(finding: Finding, what: Sequence[tuple[str, str]]) -> bool:
    for tag, expected in what:
        value = _field(finding, tag)
        if value is None and tag not in INT_FIELDS:
            continue  # a field csorch does not parse: not compared (the kind still is)
        if tag in INT_FIELDS:
            try:
                if value != int(expected, 0):
                    return False
            except ValueError:
                return False
        elif not re.fullmatch(expected, str(value).strip("_")) and not re.fullmatch(
            expected, str(value)
        ):
            return False
    return True


def _path_matches(pattern: str, value: str) -> bool:
    """A file or module pattern against a finding's: the text log names a module or file
    by its base name where the XML has the full path, so a bare name is compared with
    the pattern's last component too."""
    if not value:
        return not pattern
    if _full(pattern, value, Path(value).name):
        return True
    return "/" not in value and bool(re.fullmatch(pattern.rsplit("/", 1)[-1], value))


def _frame_matches(frame: Frame, expected: tuple[str, str, str]) -> bool:
    function, file, module = expected
    name = frame.function
    if function and not (
        re.fullmatch(function, name) or re.fullmatch(function, normalize_function(name))
    ):
        return False
    if file and not _path_matches(file, frame.file):
        return False
    return not module or _path_matches(module, frame.module)


def _subject(frames: Sequence[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """A suppression's frames that a finding's can be held against: named ones (the XML
    also lists bare pcs) that belong to the subject (the text log trims the driver,
    runtime and libc frames that the XML keeps)."""
    return [
        (fn, file, mod)
        for fn, file, mod in frames
        if fn and not frame_filter.ignored(Frame(function=fn, file=file, module=mod))
    ]


def matches(s: Suppression, finding: Finding) -> bool:
    """Whether the suppression record covers the finding: its kind, its <what> fields,
    and its stack's subject frames against the finding's, innermost first (the shorter
    of the two bounds the comparison)."""
    if finding.kind not in KINDS.get(s.kind, ()):
        return False
    if not _what_matches(finding, s.what):
        return False
    frames = (finding.host_frames or finding.frames) if s.stack == "host" else finding.frames
    ours = [f for f in frames if not frame_filter.ignored(f)]
    return all(_frame_matches(f, e) for f, e in zip(ours, _subject(s.frames), strict=False))


def apply(result: ParseResult, suppressions: Sequence[Suppression]) -> ParseResult:
    """The parse with every finding a suppression covers marked by it (nothing removed)."""
    if not suppressions:
        return result
    marked = []
    for f in result.findings:
        hit = next((s for s in suppressions if matches(s, f)), None)
        marked.append(replace(f, suppressed=hit.source) if hit else f)
    return replace(result, findings=tuple(marked))


def unmatched(
    suppressions: Sequence[Suppression], findings: Iterable[Finding]
) -> tuple[Suppression, ...]:
    """The suppressions that marked none of the findings."""
    used = {f.suppressed for f in findings if f.suppressed}
    return tuple(s for s in suppressions if s.source not in used)


def why_unmatched(s: Suppression) -> str:
    """A line for the report about a suppression that matched nothing."""
    if s.kind not in KINDS:
        return (
            f"suppression {s.source} (kind {s.kind}) matched nothing: csorch does not know "
            f"that kind (known: {', '.join(KINDS)})"
        )
    return f"suppression {s.source} (kind {s.kind}) matched no finding: remove it or fix it"
