"""A line of a patched file as the repository has it: a frame in a fix variant names the
patched tree's line, which is not the line a reviewer (or code scanning, on the
repository's commit) sees. The variant's unified diffs map it back: a line the patches
kept is moved by the lines they added and removed above it; a line they added maps to
the line of the original it was added at."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from orchestrator import files
from orchestrator.files import file_digest

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _name(header: str) -> str:
    path = header[4:].split("\t", 1)[0].strip()
    return path[2:] if path[:2] in ("a/", "b/") else path


def hunks(patch: str, path: str) -> list[list[str]]:
    """The hunks of `patch` that change `path` (relative to the tree), their lines."""
    out: list[list[str]] = []
    current = False
    for line in patch.splitlines():
        if line.startswith("+++ "):
            current = _name(line) == path
        elif line.startswith("--- "):
            continue
        elif current and line.startswith("@@"):
            out.append([line])
        elif current and out and line[:1] in (" ", "+", "-", "\\"):
            out[-1].append(line)
    return out


def original(patch: str, path: str, line: int) -> int:
    """`line` of `path` after `patch`, as the line of `path` before it."""
    shift = 0  # old - new, for lines below the hunks passed
    for hunk in hunks(patch, path):
        m = _HUNK.match(hunk[0])
        if m is None:
            continue
        old, new = int(m[1]), int(m[3])
        if line < new:
            break
        for body in hunk[1:]:
            kind = body[:1]
            if kind == " ":
                if new == line:
                    return old
                old, new = old + 1, new + 1
            elif kind == "+":
                if new == line:
                    return max(old, 1)  # added: where it went in
                new += 1
            elif kind == "-":
                old += 1
        shift = old - new
    return line + shift


def in_repository(patches: Sequence[tuple[str, str]], path: str, line: int) -> int | None:
    """`line` of `path` after every patch of `patches` ((file, sha256) as the run
    recorded them, applied in order), as the original's line; None where a patch file
    is gone or changed since the run (the patched line is all there is)."""
    texts = []
    for patch, digest in patches:
        try:
            if file_digest(Path(patch), files.PATCH) != digest:
                return None
            texts.append(files.read_text(Path(patch), files.PATCH, errors="replace"))
        except OSError:
            return None
    for text in reversed(texts):  # the last patch applied is undone first
        line = original(text, path, line)
    return line
