"""Checker opt-outs a fix adds (carry/optouts.py finds them in each variant's tree): a fix
that switches the checker off for some code, or lets code tell that a checker watches it,
removes a finding without proving the defect gone. Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from orchestrator.model import Build


def of(builds: Iterable[Build]) -> dict[str, tuple[str, ...]]:
    """variant -> its tree's opt-outs ("MARKER PATH:LINE"), for the builds that succeeded."""
    return {b.variant: b.opt_outs for b in builds if b.ok}


def _split(mark: str) -> tuple[str, str]:
    word, _, where = mark.partition(" ")
    return word, where


def added(fix: Sequence[str], controls: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
    """(marker, where) for each marker the fix's tree has more of than every control's
    (moving one from file to file adds none); `where` is an occurrence in a file that has
    more of it than the same file of every control (else the first). [] without controls."""
    if not controls:
        return []
    counts = [Counter(_split(m)[0] for m in c) for c in controls]
    by_file = [
        Counter((w, where.rpartition(":")[0]) for w, where in map(_split, c)) for c in controls
    ]
    mine = Counter(_split(m)[0] for m in fix)
    out = []
    for word, n in sorted(mine.items()):
        if n <= max(c[word] for c in counts):
            continue
        places = [where for w, where in map(_split, fix) if w == word]
        own = Counter(p.rpartition(":")[0] for p in places)
        new = [
            p
            for p in places
            if own[p.rpartition(":")[0]] > max(f[(word, p.rpartition(":")[0])] for f in by_file)
        ]
        out.append((word, (new or places)[0]))
    return out


def reasons(fix: str, controls: Sequence[str], marks: Mapping[str, Sequence[str]]) -> list[str]:
    """The verdict's reasons to doubt a clean fix: one per opt-out it adds."""
    if fix not in marks:
        return []
    against = [marks[c] for c in controls if c in marks]
    return [
        f"fix {fix} adds {word} ({where}), which none of the controls has: code that takes "
        "the checker away from some code, or tells that a checker watches it, makes the "
        "fix's clean run no evidence; take it out of the fix, or show the defect gone "
        "without it"
        for word, where in added(marks[fix], against)
    ]
