"""Findings -> signatures: what makes two reports "the same defect".

A signature keeps (checker, kind, access, space, size, code, function, top frames) and
drops everything that changes from run to run or build to build: addresses, thread and
block ids, pcs and offsets, line numbers (a patch shifts them), directories (each
variant builds in its own tree) and the argument lists of demangled names (they
depend on `--demangle`). Frames that do not belong to the subject (the checker's
runtime, the C library, CUDA's runtime and intrinsics, CUB, Thrust, libstdc++: the
ignore list in `frame_filter`) are skipped before taking the top ones, as ClusterFuzz does;
the finding itself keeps them. When every device frame is a library's (a fault inside
CUB's `ThreadLoad` that the extension's host code launched), the subject's host frames
name the signature and the library frames are listed beside it (`findings.subject`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from orchestrator.findings import frame_filter, subject
from orchestrator.model import Finding, Frame, Signature, TargetPattern
from orchestrator.model.record import Record

TOP_FRAMES = 3

# "kernel(float *)+0xb0", "foo [clone .constprop.0]"
_OFFSET_RE = re.compile(r"\s*\+\s*0x[0-9a-fA-F]+$")
_CLONE_RE = re.compile(r"\s*\[clone [^\]]*\]")
_QUALIFIERS_RE = re.compile(r"(\s+(const|volatile|&&?|noexcept))+$")


def normalize_function(name: str) -> str:
    """`void ns::k<float, 4>(const float *, int) const+0x10` -> `ns::k<float, 4>`."""
    name = _CLONE_RE.sub("", _OFFSET_RE.sub("", name.strip()))
    name = _QUALIFIERS_RE.sub("", name)
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                # keep "operator()" and friends whole
                if i > 0 and not name[:i].endswith("operator"):
                    name = name[:i]
                break
    # a return type is whatever precedes the last space outside template brackets
    depth, cut = 0, -1
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == " " and depth == 0 and not name[:i].endswith("operator"):
            cut = i
    return name[cut + 1 :] if cut >= 0 else name


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def normalize_frame(frame: Frame) -> str:
    """`function (file)`, or the module when the frame has no symbol."""
    function = normalize_function(frame.function) if frame.function else ""
    where = _basename(frame.file) if frame.file else _basename(frame.module)
    if function and where:
        return f"{function} ({where})"
    return function or where or "?"


def located(frame: Frame) -> str:
    """`function (file:line)` for a report: the frame as the log gave it, less argument
    lists and directories (`normalize_frame` plus the line)."""
    text = normalize_frame(frame)
    if frame.line is not None and frame.file and text.endswith(")"):
        return text[:-1] + f":{frame.line})"
    return text


def is_noise(frame: Frame) -> bool:
    """Whether the frame belongs to a checker, runtime or library (`frame_filter`'s ignore list)."""
    return bool(frame_filter.ignored(frame))


def top_frames(frames: Iterable[Frame], n: int = TOP_FRAMES) -> tuple[Frame, ...]:
    """The top `n` frames that belong to the subject (`frame_filter.subject_frames`)."""
    return frame_filter.subject_frames(frames)[:n]


def _library_only(finding: Finding) -> tuple[Frame, ...]:
    """The subject's host frames, when every device frame is a library's (CUB, Thrust,
    CUTLASS, ...) and the host side has frames of the subject: what names the signature
    then (`findings.subject`); () otherwise."""
    if finding.kind == "api-error" or not finding.frames:
        return ()
    if any(not frame_filter.ignored(f) for f in finding.frames):
        return ()
    if not any(subject.library(f) for f in finding.frames):
        return ()  # a bare pc or an intrinsic alone: the top frame, as before
    return tuple(f for f in finding.host_frames if subject.ANY.owns(f))


def named_frames(finding: Finding) -> tuple[tuple[Frame, ...], tuple[Frame, ...]]:
    """(the frames that name the signature, the library frames listed beside them)."""
    host = _library_only(finding)
    if host:
        return host[:TOP_FRAMES], finding.frames[:TOP_FRAMES]
    frames = finding.frames or tuple(f for f in finding.host_frames if f.function)
    return top_frames(frames), frame_filter.skipped(frames)


def signature(finding: Finding) -> Signature:
    """The normalized identity of one finding."""
    frames, _ = named_frames(finding)
    names = tuple(normalize_frame(f) for f in frames)
    function = normalize_function(frames[0].function) if frames and frames[0].function else ""
    return Signature(
        checker=finding.checker.value,
        kind=finding.kind,
        access=finding.access,
        space=finding.space,
        size=finding.size,
        code=finding.code,
        function=function,
        frames=names,
    )


def fingerprint(sig: Signature) -> str:
    """Stable sha256 of the signature (the SARIF partial fingerprint)."""
    text = json.dumps(sig.to_dict(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class SignatureCount(Record):
    signature: Signature
    count: int  # records, folded ones included
    fingerprint: str
    example: Finding  # the first finding seen with this signature
    suppressed: int = 0  # of `count`, findings a suppression (or an allowance) marked
    suppressed_by: tuple[str, ...] = ()  # what marked them ("supp.xml#1", "allowed: ...")
    # frames above the culprit, not the subject's (`frame_filter`); when every device frame
    # is a library's, those library frames (the signature is named on the host side)
    skipped: tuple[str, ...] = ()

    def tolerance(self) -> str:
        """`suppressed by supp.xml#1` / `allowed: <reason>` / `2 of 5 suppressed by ...`;
        "" when nothing marked them: how every report shows a tolerated finding."""
        if not self.suppressed:
            return ""
        why = "; ".join(
            w if w.startswith("allowed") else f"suppressed by {w}" for w in self.suppressed_by
        )
        return why if self.suppressed == self.count else f"{self.suppressed} of {self.count}: {why}"


def _skipped(finding: Finding) -> tuple[str, ...]:
    return tuple(normalize_frame(f) for f in named_frames(finding)[1])


def total(findings: Iterable[Finding]) -> int:
    """The records `findings` stand for (each finding's `count`: a parser folds repeats)."""
    return sum(f.count for f in findings)


def group(findings: Iterable[Finding]) -> tuple[SignatureCount, ...]:
    """Findings grouped by signature, most frequent first (ties by fingerprint); counts
    are records (`Finding.count`), the example is the first finding of each."""
    counts: dict[Signature, int] = {}
    examples: dict[Signature, Finding] = {}
    marked: dict[Signature, dict[str, int]] = {}
    for finding in findings:
        sig = signature(finding)
        counts[sig] = counts.get(sig, 0) + finding.count
        examples.setdefault(sig, finding)
        if finding.suppressed:
            by = marked.setdefault(sig, {})
            by[finding.suppressed] = by.get(finding.suppressed, 0) + finding.count
    groups = [
        SignatureCount(
            s,
            c,
            fingerprint(s),
            examples[s],
            sum(marked.get(s, {}).values()),
            tuple(sorted(marked.get(s, {}))),
            _skipped(examples[s]),
        )
        for s, c in counts.items()
    ]
    return tuple(sorted(groups, key=lambda g: (-g.count, g.fingerprint)))


def tolerate(finding: Finding, why: str) -> Finding:
    """The finding marked as tolerated (`why`: a suppression's source or `allowed: ...`),
    unless something marked it already."""
    return finding if finding.suppressed else replace(finding, suppressed=why)


def matches(pattern: TargetPattern, sig: Signature) -> bool:
    """Whether a signature fits a target pattern's signature fields."""
    if pattern.outcome is not None:
        return False
    if pattern.size is not None and sig.size != pattern.size:
        return False
    fields = (
        (pattern.checker, sig.checker),
        (pattern.kind, sig.kind),
        (pattern.access, sig.access),
        (pattern.space, sig.space),
        (pattern.function, sig.function),
    )
    if not all(fnmatch.fnmatchcase(value, glob) for glob, value in fields if glob):
        return False
    return not pattern.frame or any(fnmatch.fnmatchcase(f, pattern.frame) for f in sig.frames)


#: a pattern's signature fields, in the order a near miss names them
_FIELDS = ("kind", "function", "access", "space", "size", "frame", "checker")


def near_miss(pattern: TargetPattern, sig: Signature) -> str:
    """Where `sig` misses `pattern` by one field alone: that field as the signature has
    it ("kind=heap-buffer-overflow": a misspelled or too narrow target); "" where it
    matches, or misses by more than one field."""
    if pattern.outcome is not None or matches(pattern, sig):
        return ""
    for name in _FIELDS:
        if getattr(pattern, name) in ("", None):
            continue
        if matches(replace(pattern, **{name: None if name == "size" else ""}), sig):
            if name == "frame":
                return f"frames={','.join(sig.frames[:3])}"
            return f"{name}={getattr(sig, name)}"
    return ""
