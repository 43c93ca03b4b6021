"""First-match dispatch over a table of (pattern, handler) rows, in one regex call.

The grammar (`compute_sanitizer.log.HEADERS`, `.DETAILS`) is tables of anchored patterns tried
in order; the first that matches a line handles it. A loop over a table costs one
regex call per pattern before the right one (twelve for a racecheck hazard header). A
`Dispatch` joins the table's patterns as the alternatives of one regex, which the
regex engine tries in the same order, so it finds the same row in one call; the row's
own pattern then gives the handler its named groups.

It also gives a line's skim key (`compute_sanitizer.skim`): the row and the groups of its
pattern that can reach a signature, that is all but the `VOLATILE` ones.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from operator import attrgetter, methodcaller
from typing import Any

#: named groups that never reach a signature: a record's addresses, thread and block
#: ids, its hazard count. A grammar pattern must not use these names for anything else.
VOLATILE = frozenset({"address", "block", "thread", "hazards"})


def kept(pattern: re.Pattern[str]) -> tuple[int, ...]:
    """The groups of `pattern` a skim key keeps (all but the VOLATILE ones), in order."""
    volatile = {i for name, i in pattern.groupindex.items() if name in VOLATILE}
    return tuple(i for i in range(1, pattern.groups + 1) if i not in volatile)


def _alternative(pattern: re.Pattern[str]) -> str:
    """`pattern`'s source with its kept groups made plain capturing groups and every
    other group non-capturing (named groups may not repeat across alternatives)."""
    source, out, i = pattern.pattern, [], 0
    keep = set(kept(pattern))
    number = 0  # the original number of the capturing group being opened
    in_class = False
    while i < len(source):
        c = source[i]
        if c == "\\":
            out.append(source[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            # "]" first in a class ("[]x]", "[^]x]") is a literal, not its end
            j = i + 1 + (source[i + 1 : i + 2] == "^")
            if source[j : j + 1] == "]":
                out.append(source[i : j + 1])
                i = j + 1
                continue
        elif c == "(":
            if source.startswith("(?P<", i):
                number += 1
                i = source.index(">", i) + 1
                out.append("(" if number in keep else "(?:")
                continue
            if not source.startswith("(?", i):
                number += 1
                out.append("(" if number in keep else "(?:")
                i += 1
                continue
            if source.startswith("(?P=", i) or source.startswith("(?(", i):
                raise ValueError(f"{pattern.pattern!r}: back-references cannot be joined")
        out.append(c)
        i += 1
    return "".join(out)


class Dispatch:
    """One table's patterns as one regex (see the module's docstring)."""

    def __init__(self, table: Sequence[tuple[re.Pattern[str], Any]]) -> None:
        self.patterns = [p for p, _ in table]
        self.kept = [kept(p) for p in self.patterns]
        parts: list[str] = []
        # the number of each alternative's outer group -> (row, its kept groups' numbers)
        self._rows: dict[int, tuple[int, tuple[int, ...]]] = {}
        groups = 0
        for row, pattern in enumerate(self.patterns):
            outer, n = groups + 1, len(kept(pattern))
            parts.append(f"({_alternative(pattern)})")
            self._rows[outer] = (row, tuple(range(outer + 1, outer + 1 + n)))
            groups = outer + n
        self.regex = re.compile("|".join(parts))
        assert self.regex.groups == groups, "a pattern's groups were not all rewritten"
        self._outer = {row: (outer, inner) for outer, (row, inner) in self._rows.items()}

    def find(self, text: str) -> tuple[int, re.Match[str] | None]:
        """(row, the row's own match) of the first pattern matching `text`; (-1, None)."""
        m = self.regex.match(text)
        if m is None:
            return -1, None
        row = self._rows[m.lastindex][0]  # type: ignore[index]
        return row, self.patterns[row].match(text)

    def key(self, text: str) -> tuple | None:
        """(row, the groups a skim key keeps) of the first pattern matching `text`."""
        m = self.regex.match(text)
        if m is None:
            return None
        row, inner = self._rows[m.lastindex]  # type: ignore[index]
        return _key(row, m, inner)

    def all_keyed(self, texts: list[str], item: tuple) -> bool:
        """Whether `key(text)` is `item` for every one of `texts` (`()`: no pattern matches
        any), as `key` finds it but in C-level passes over them: no Python call per text."""
        found = list(map(self.regex.match, texts))
        if not item or not found:
            return found.count(None) == len(found)
        if None in found:
            return False
        outer, inner = self._outer[item[0]]
        if set(map(_LASTINDEX, found)) != {outer}:
            return False
        if not inner:
            return True
        groups = item[1] if len(inner) == 1 else item[1:]
        return set(map(methodcaller("group", *inner), found)) == {groups}

    def key_of(self, row: int, m: re.Match[str]) -> tuple:
        """The skim key of a line that `find` matched as (row, m)."""
        return _key(row, m, self.kept[row])


_LASTINDEX = attrgetter("lastindex")  # the outer group of the alternative that matched


def _key(row: int, m: re.Match[str], groups: tuple[int, ...]) -> tuple:
    if not groups:
        return (row,)
    if len(groups) == 1:
        return (row, m.group(groups[0]))
    return (row, *m.group(*groups))
