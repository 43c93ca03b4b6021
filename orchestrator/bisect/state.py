"""Bisection state: which commit to probe next, and what the answer is. Pure.

The history is the first-parent chain from the old end (`--good`) to the new end
(`--bad`), oldest first. The evaluator marks each probed commit BAD (the target shows in
k of N repeats), GOOD (in none) or SKIP (untestable). Which end a mark sends a commit to
depends on the search:
- a regression search (the default) looks for the first commit that shows the target:
  GOOD belongs to the old side, BAD to the new side;
- a fix search (`find_fix`) looks for the first commit at which it is gone: BAD belongs
  to the old side, GOOD to the new side.
Both ends are probed first, the new end first (if it does not show what the search
assumes, nothing else is worth building). An end that re-checks otherwise, SKIP
included, is an error, never an answer. Then the range between the last old-side commit
and the first new-side commit is halved, stepping around skipped commits; when only
skipped commits are left in it, every candidate is named, as git bisect does.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace

from orchestrator.errors import BisectError
from orchestrator.model.record import Record


class Mark(enum.Enum):
    """What the evaluator says about one commit (git bisect's words)."""

    GOOD = "good"  # the target is absent
    BAD = "bad"  # the target shows in k of N repeats
    SKIP = "skip"  # untestable: no build, inconclusive evidence, or 1..k-1 of N


class Side(enum.Enum):
    OLD = "old"
    NEW = "new"


#: the role of the commit probed at a step, as the reporter names it
NEW_END, OLD_END, MIDPOINT = "new end", "old end", "midpoint"


@dataclass(frozen=True)
class Commit(Record):
    sha: str
    subject: str = ""

    @property
    def short(self) -> str:
        return self.sha[:10]


@dataclass(frozen=True)
class Status:
    """Where a bisection stands. `next` is None once it is done; then `found` is the
    answer, or None when skips leave several `candidates` (ambiguous)."""

    next: Commit | None
    role: str  # NEW_END, OLD_END or MIDPOINT ("" when done)
    found: Commit | None
    candidates: tuple[Commit, ...]  # where the first new-side commit can still be
    untested: int  # candidates not yet probed (skipped ones excluded)

    @property
    def done(self) -> bool:
        return self.next is None

    @property
    def ambiguous(self) -> bool:
        return self.done and self.found is None

    @property
    def steps_left(self) -> int:
        """About how many more probes a halving search needs (the ends included)."""
        ends = 2 if self.role == NEW_END else 1 if self.role == OLD_END else 0
        return ends + math.ceil(math.log2(self.untested + 1))


@dataclass(frozen=True)
class Bisection(Record):
    """The history and the marks so far (a later mark of a commit replaces an earlier)."""

    commits: tuple[Commit, ...]  # oldest first: commits[0] the old end, [-1] the new end
    find_fix: bool = False
    marks: tuple[tuple[str, Mark], ...] = ()

    @classmethod
    def start(cls, commits: tuple[Commit, ...], find_fix: bool = False) -> Bisection:
        """A fresh bisection over `commits`; BisectError when they are not a range."""
        if len(commits) < 2:
            raise BisectError(
                "--good and --bad are the same commit: there is nothing to bisect",
                hint="give the last commit known good and the first known bad",
            )
        if len({c.sha for c in commits}) != len(commits):
            raise BisectError("the history lists a commit twice")
        return cls(tuple(commits), find_fix)

    def mark(self, sha: str, mark: Mark) -> Bisection:
        """The state with `sha` marked; ValueError for a commit outside the range."""
        if not any(c.sha == sha for c in self.commits):
            raise ValueError(f"{sha} is not in the bisected range")
        return replace(self, marks=(*self.marks, (sha, mark)))

    def mark_of(self, sha: str) -> Mark | None:
        found = None
        for marked, mark in self.marks:
            if marked == sha:
                found = mark
        return found

    def side(self, mark: Mark | None) -> Side | None:
        if mark is None or mark is Mark.SKIP:
            return None
        old = Mark.BAD if self.find_fix else Mark.GOOD
        return Side.OLD if mark is old else Side.NEW

    @property
    def wanted(self) -> dict[Side, Mark]:
        """The mark each end must re-check with."""
        if self.find_fix:
            return {Side.OLD: Mark.BAD, Side.NEW: Mark.GOOD}
        return {Side.OLD: Mark.GOOD, Side.NEW: Mark.BAD}

    def bounds(self) -> tuple[int, int]:
        """(last old-side index, first new-side index), the ends standing in for
        unprobed ones; no validation (see `status`)."""
        sides = [self.side(self.mark_of(c.sha)) for c in self.commits]
        old = [i for i, s in enumerate(sides) if s is Side.OLD]
        new = [i for i, s in enumerate(sides) if s is Side.NEW]
        return max(old, default=0), min(new, default=len(self.commits) - 1)

    @property
    def remaining(self) -> int:
        """How many commits can still be the answer (never raises)."""
        lo, hi = self.bounds()
        return max(hi - lo, 0)


def _check_end(state: Bisection, index: int, side: Side) -> None:
    commit = state.commits[index]
    got = state.mark_of(commit.sha)
    want = state.wanted[side]
    if got is want:
        return
    flag = "--bad" if side is Side.NEW else "--good"
    search = "a fix" if state.find_fix else "a regression"
    if got is Mark.SKIP:
        problem = "could not be tested (no build, or inconclusive evidence)"
    else:
        shows = "shows the target" if got is Mark.BAD else "does not show the target"
        problem = f"{shows}, but a search for {search} needs it {want.value}"
    if got is Mark.SKIP:
        hint = "check its step bundle (build log, checker log) and pick another end"
    else:
        hint = "check its step bundle; pick other ends" + (
            "" if state.find_fix else ", or pass --find-fix to look for the fixing commit"
        )
    raise BisectError(f"{flag} {commit.short} ({commit.subject}) {problem}", hint=hint)


def status(state: Bisection) -> Status:
    """The next commit to probe, or the answer. BisectError when an end re-checked
    otherwise than the search assumes, or marks contradict each other."""
    commits = state.commits
    last = len(commits) - 1
    for index, side, role in ((last, Side.NEW, NEW_END), (0, Side.OLD, OLD_END)):
        if state.mark_of(commits[index].sha) is None:
            return Status(commits[index], role, None, commits[1:], last - 1)
        _check_end(state, index, side)
    lo, hi = state.bounds()
    if hi <= lo:
        raise BisectError(
            f"{commits[lo].short} is on the old side but comes after {commits[hi].short}, "
            f"which is on the new side: the target does not change once in this range",
            hint="the target may be flaky (raise repeats and min_hits) or come and go; "
            "bisect a narrower range",
        )
    inner = range(lo + 1, hi)
    untested = [i for i in inner if state.mark_of(commits[i].sha) is None]
    candidates = commits[lo + 1 : hi + 1]
    if untested:
        # the untested commit nearest the middle; ties go to the older one
        pick = min(untested, key=lambda i: (abs(2 * i - (lo + hi)), i))
        return Status(commits[pick], MIDPOINT, None, candidates, len(untested))
    if hi == lo + 1:
        return Status(None, "", commits[hi], candidates, 0)
    return Status(None, "", None, candidates, 0)  # only skipped commits between lo and hi


def round_of(state: Bisection, probes: int) -> tuple[tuple[Commit, str], ...]:
    """The commits to probe at once when `probes` can run side by side (multisection):
    the ends not yet probed, then untested commits that cut the range between the last
    old-side and the first new-side commit into `probes + 1` even parts (the ends assumed
    to re-check as the search needs). With `probes` 1 this is `status`'s one commit; the
    answer is the same whatever `probes` (the search ends where only skipped commits lie
    between the two sides). () once done; BisectError as `status`."""
    now = status(state)
    if now.next is None:
        return ()
    if probes <= 1:
        return ((now.next, now.role),)
    commits = state.commits
    last = len(commits) - 1
    picks: list[tuple[int, str]] = [
        (i, role)
        for i, role in ((last, NEW_END), (0, OLD_END))
        if state.mark_of(commits[i].sha) is None
    ]
    lo, hi = state.bounds()
    untested = [i for i in range(lo + 1, hi) if state.mark_of(commits[i].sha) is None]
    room = min(probes - len(picks), len(untested))
    if room > 0:
        chosen: list[int] = []
        for k in range(1, room + 1):
            target = lo + (hi - lo) * k / (room + 1)
            left = [i for i in untested if i not in chosen]
            # the untested commit nearest each cut; ties go to the older one
            chosen.append(min(left, key=lambda i: (abs(i - target), i)))
        picks += [(i, MIDPOINT) for i in sorted(chosen)]
    return tuple((commits[i], role) for i, role in picks)
