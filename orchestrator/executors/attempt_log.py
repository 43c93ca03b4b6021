"""An attempt's logs, read: each launch's log streamed line by line, the last
informative line from its tail, and the launches' parses merged into the attempt's one.

A checker's log can run to gigabytes, so nothing here holds a whole log: the parsers and
`markers.reader.read` take the streamed lines and keep only what they count. Reads files only;
the processes that wrote them are `execute`'s.
"""

from __future__ import annotations

import os
from pathlib import Path

from orchestrator.backends.channel import lines, merge
from orchestrator.files import LinkRefused, NotRegularFile, open_regular

__all__ = ["last_words", "lines", "merge"]


def last_words(path: Path, tail: int = 64 * 1024) -> str:
    """The log's last informative line (pytest's collection error, a traceback's end),
    from its last `tail` bytes."""
    try:
        with open_regular(path) as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - tail))
            lines = f.read().decode("utf-8", errors="replace").splitlines()
    except (FileNotFoundError, NotRegularFile, LinkRefused):
        lines = []
    for line in reversed(lines):
        text = line.strip()
        if text and not text.startswith("[csorch-") and not text.startswith(("Stats:", "  ")):
            return text[:300]
    return "no output"
