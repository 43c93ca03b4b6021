"""An attempt's logs, read: each launch's log streamed line by line, the last
informative line from its tail, and the launches' parses merged into the attempt's one.

A checker's log can run to gigabytes, so nothing here holds a whole log: the parsers and
`markers.reader.read` take the streamed lines and keep only what they count. Reads files only;
the processes that wrote them are `execute`'s.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from orchestrator.files import NotRegularFile, open_regular
from orchestrator.model import ParseResult


def lines(path: Path) -> Iterator[str]:
    """The log's lines, streamed: a checker's log can run to gigabytes, and the parsers
    keep only what they count. A missing log has none, and so has a path that is no
    regular file (a named pipe put in a bundle would block the reader forever): either
    way the parse has no summary and is incomplete, never clean, and `bundle.verify`
    names the file."""
    try:
        raw = open_regular(path)
    except (FileNotFoundError, NotRegularFile):
        return
    with io.TextIOWrapper(raw, encoding="utf-8", errors="replace") as f:
        yield from f


def last_words(path: Path, tail: int = 64 * 1024) -> str:
    """The log's last informative line (pytest's collection error, a traceback's end),
    from its last `tail` bytes."""
    try:
        with open_regular(path) as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - tail))
            lines = f.read().decode("utf-8", errors="replace").splitlines()
    except (FileNotFoundError, NotRegularFile):
        lines = []
    for line in reversed(lines):
        text = line.strip()
        if text and not text.startswith("[csorch-") and not text.startswith(("Stats:", "  ")):
            return text[:300]
    return "no output"


def _split_sum(splits: Sequence[tuple[int, int] | None]) -> tuple[int, int] | None:
    present = [s for s in splits if s is not None]
    return (sum(s[0] for s in present), sum(s[1] for s in present)) if present else None


def merge(parses: Sequence[ParseResult]) -> ParseResult:
    """One attempt's launches as one parse: complete only if every launch's log is."""
    counts = [p.summary_count for p in parses]
    return ParseResult(
        findings=tuple(f for p in parses for f in p.findings),
        summary_count=None if not parses or None in counts else sum(counts),  # type: ignore[arg-type]
        not_printed=sum(p.not_printed for p in parses),
        complete=bool(parses) and all(p.complete for p in parses),
        tool_errors=tuple(dict.fromkeys(e for p in parses for e in p.tool_errors)),
        app_error=any(p.app_error for p in parses),
        app_crashed=any(p.app_crashed for p in parses),
        summary_lines=tuple(s for p in parses for s in p.summary_lines),
        unparsed=tuple(u for p in parses for u in p.unparsed)[:20],
        summary_split=_split_sum([p.summary_split for p in parses]),
        count_mismatch="; ".join(dict.fromkeys(c for c in (p.count_mismatch for p in parses) if c)),
    )
