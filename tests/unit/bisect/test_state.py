"""bisect: the range narrowing, driven by scripted verdict lists (one mark per commit)."""

from __future__ import annotations

import math
import random

import pytest

from orchestrator.bisect.state import (
    MIDPOINT,
    NEW_END,
    OLD_END,
    Bisection,
    Commit,
    Mark,
    round_of,
    status,
)
from orchestrator.errors import BisectError

G, B, S = Mark.GOOD, Mark.BAD, Mark.SKIP


def commits(n: int) -> tuple[Commit, ...]:
    return tuple(Commit(f"{i:02d}" + "c" * 38, f"commit {i}") for i in range(n))


def run(truth: list[Mark], find_fix: bool = False):
    """Bisect a history whose commit i the evaluator marks truth[i]; returns the final
    status, the indices probed in order, and the state."""
    history = commits(len(truth))
    index = {c.sha: i for i, c in enumerate(history)}
    state = Bisection.start(history, find_fix)
    probed: list[int] = []
    while True:
        s = status(state)
        if s.done:
            return s, probed, state
        i = index[s.next.sha]
        assert i not in probed, f"probed commit {i} twice: {probed}"
        probed.append(i)
        state = state.mark(s.next.sha, truth[i])


def regression(n: int, first_bad: int, skips: frozenset[int] = frozenset()) -> list[Mark]:
    return [S if i in skips else G if i < first_bad else B for i in range(n)]


def fix(n: int, first_fixed: int, skips: frozenset[int] = frozenset()) -> list[Mark]:
    return [S if i in skips else B if i < first_fixed else G for i in range(n)]


def bound(n: int) -> int:
    """Two ends, then a halving of the n - 2 commits between them."""
    return 2 + math.ceil(math.log2(n - 1))


@pytest.mark.parametrize("n", range(2, 34))
def test_every_regression_is_found(n: int) -> None:
    for k in range(1, n):
        s, probed, _ = run(regression(n, k))
        assert s.found == commits(n)[k], (n, k, probed)
        assert not s.ambiguous and s.candidates == (commits(n)[k],)
        assert probed[:2] == [n - 1, 0]  # both ends first, the new end first
        assert len(probed) <= bound(n), (n, k, probed)


@pytest.mark.parametrize("n", range(2, 34))
def test_every_fix_is_found(n: int) -> None:
    for j in range(1, n):
        s, probed, _ = run(fix(n, j), find_fix=True)
        assert s.found == commits(n)[j], (n, j, probed)
        assert len(probed) <= bound(n)


def test_the_midpoint_steps_around_a_skipped_commit() -> None:
    # 10 commits, the defect at 6, commit 4 unbuildable: the first midpoint is 4; then
    # the nearest untested commit to the middle of 0..9 (5), and on as usual
    s, probed, state = run(regression(10, 6, frozenset({4})))
    assert probed == [9, 0, 4, 5, 7, 6]
    assert s.found == commits(10)[6]
    assert state.mark_of(commits(10)[4].sha) is S


def test_roles_of_the_steps() -> None:
    state = Bisection.start(commits(5))
    roles = []
    for mark in (B, G, G, B):
        s = status(state)
        roles.append(s.role)
        state = state.mark(s.next.sha, mark)
    assert roles == [NEW_END, OLD_END, MIDPOINT, MIDPOINT]


@pytest.mark.parametrize(
    ("skips", "answer"),
    [
        ({5}, [5, 6]),  # just before the answer: either could be first
        ({6}, [6, 7]),  # the answer itself: it or the next bad one
        ({5, 6}, [5, 6, 7]),
        ({7}, [6]),  # just after: 6 is bad and 5 good, so 6 is certain
        ({3, 4, 5}, [3, 4, 5, 6]),  # a stretch of skips before it: all of it
        ({7, 8}, [6]),
    ],
)
def test_skips_next_to_the_answer(skips: set[int], answer: list[int]) -> None:
    s, _, state = run(regression(10, 6, frozenset(skips)))
    history = commits(10)
    if len(answer) == 1:
        assert s.found == history[answer[0]]
    else:
        assert s.ambiguous and s.found is None
        assert s.candidates == tuple(history[i] for i in answer)
        # every candidate but the last was skipped; the last re-checked bad
        assert [state.mark_of(c.sha) for c in s.candidates] == [S] * (len(answer) - 1) + [B]


def test_an_all_skipped_range_names_every_commit() -> None:
    s, probed, _ = run([G, S, S, S, S, B])
    assert sorted(probed) == [0, 1, 2, 3, 4, 5]
    assert s.ambiguous and s.candidates == commits(6)[1:]


def test_adjacent_ends_need_no_midpoint() -> None:
    s, probed, _ = run([G, B])
    assert probed == [1, 0] and s.found == commits(2)[1]


@pytest.mark.parametrize("seed", range(300))
def test_random_histories_with_skips_never_give_a_wrong_answer(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(3, 40)
    k = rng.randint(1, n - 1)
    skips = frozenset(i for i in range(1, n - 1) if rng.random() < 0.3)
    find_fix = rng.random() < 0.5
    truth = fix(n, k, skips) if find_fix else regression(n, k, skips)
    s, probed, state = run(truth, find_fix)
    history = commits(n)
    assert s.done and len(probed) <= n
    if s.found is not None:
        assert s.found == history[k] and k not in skips
    else:
        assert history[k] in s.candidates
        idx = [history.index(c) for c in s.candidates]
        assert idx == list(range(idx[0], idx[-1] + 1))  # one contiguous stretch
        assert all(i in skips for i in idx[:-1]) and idx[-1] not in skips


@pytest.mark.parametrize(
    ("truth", "find_fix", "flag", "words"),
    [
        ([G, G, G, G], False, "--bad", "does not show the target"),
        ([G, G, G, S], False, "--bad", "could not be tested"),
        ([B, B, B, B], False, "--good", "shows the target"),
        ([S, G, B, B], False, "--good", "could not be tested"),
        ([B, B, B, B], True, "--bad", "shows the target"),
        ([G, G, G, G], True, "--good", "does not show the target"),
    ],
)
def test_an_end_that_does_not_recheck_is_an_error(truth, find_fix, flag, words) -> None:
    with pytest.raises(BisectError) as info:
        run(truth, find_fix)
    assert info.value.message.startswith(flag) and words in info.value.message
    if flag == "--bad" and not find_fix and truth[-1] is G:
        assert "--find-fix" in info.value.hint  # perhaps it was a fix, not a regression


def test_the_new_end_is_probed_alone_first() -> None:
    # an end that fails stops the search before anything else is built
    history = commits(8)
    state = Bisection.start(history).mark(history[-1].sha, G)
    with pytest.raises(BisectError):
        status(state)
    assert len(state.marks) == 1


def test_contradicting_marks_are_an_error() -> None:
    history = commits(8)
    state = Bisection.start(history)
    for i, mark in ((7, B), (0, G), (3, B), (5, G)):  # 5 good after 3 bad
        state = state.mark(history[i].sha, mark)
    with pytest.raises(BisectError, match="does not change once"):
        status(state)


def test_a_later_mark_replaces_an_earlier_one() -> None:
    history = commits(4)
    state = Bisection.start(history).mark(history[2].sha, S).mark(history[2].sha, B)
    assert state.mark_of(history[2].sha) is B and state.mark_of(history[1].sha) is None


def test_not_a_range() -> None:
    with pytest.raises(BisectError, match="same commit"):
        Bisection.start(commits(1))
    with pytest.raises(BisectError, match="twice"):
        Bisection.start((*commits(3), commits(3)[0]))
    with pytest.raises(ValueError, match="not in the bisected range"):
        Bisection.start(commits(3)).mark("f" * 40, G)


def test_the_state_survives_a_round_trip_mid_search() -> None:
    truth = regression(12, 8, frozenset({5}))
    history = commits(12)
    state = Bisection.start(history)
    for _ in range(4):
        s = status(state)
        state = state.mark(s.next.sha, truth[history.index(s.next)])
    again = Bisection.from_dict(state.to_dict())
    assert again == state and status(again) == status(state)


def test_progress_figures() -> None:
    history = commits(17)
    state = Bisection.start(history)
    first = status(state)
    assert first.untested == 15 and first.steps_left == 2 + 4
    assert state.remaining == 16
    state = state.mark(history[-1].sha, B).mark(history[0].sha, G)
    state = state.mark(history[8].sha, G)
    assert state.remaining == 8 and status(state).untested == 7


# --- multisection: several commits a round, the same answers ---------------------------


def _verdicts(n: int, first_bad: int, skips: frozenset[int]):
    return [Mark.SKIP if i in skips else Mark.BAD if i >= first_bad else Mark.GOOD
            for i in range(n)]  # fmt: skip


def _search(verdicts, probes: int, find_fix: bool = False):
    """Rounds of `round_of` until done: (the final state, the rounds, probes spent)."""
    commits = tuple(Commit(f"{i:040d}") for i in range(len(verdicts)))
    flip = {Mark.GOOD: Mark.BAD, Mark.BAD: Mark.GOOD, Mark.SKIP: Mark.SKIP}
    state = Bisection.start(commits, find_fix)
    rounds = spent = 0
    while picks := round_of(state, probes):
        assert len(picks) <= probes and len({c.sha for c, _ in picks}) == len(picks)
        rounds += 1
        for commit, _ in picks:
            mark = verdicts[int(commit.sha)]
            state = state.mark(commit.sha, flip[mark] if find_fix else mark)
            spent += 1
    return state, rounds, spent


@pytest.mark.parametrize("probes", [2, 3, 4, 7])
def test_multisection_gives_the_answers_of_one_probe_a_round(probes: int) -> None:
    rng = random.Random(probes)
    for _ in range(300):
        n = rng.randint(2, 40)
        first_bad = rng.randint(1, n - 1)
        skips = frozenset(i for i in range(1, n - 1) if rng.random() < 0.2)
        verdicts = _verdicts(n, first_bad, skips)
        for find_fix in (False, True):
            one, _, _ = _search(verdicts, 1, find_fix)
            many, _, _ = _search(verdicts, probes, find_fix)
            a, b = status(one), status(many)
            assert (a.found, a.candidates) == (b.found, b.candidates), (verdicts, probes)


def test_three_probes_find_one_of_24_commits_in_three_rounds() -> None:
    for first_bad in range(1, 24):
        state, rounds, _ = _search(_verdicts(24, first_bad, frozenset()), 3)
        assert status(state).found.sha == f"{first_bad:040d}"
        assert rounds <= 3, (first_bad, rounds)
    _, one_rounds, _ = _search(_verdicts(24, 12, frozenset()), 1)
    assert one_rounds >= 6  # one a round: the ends, then about log2(22) midpoints


def test_an_end_that_rechecks_otherwise_stops_a_multisection_too() -> None:
    verdicts = [Mark.BAD] * 10  # the old end shows the target
    with pytest.raises(BisectError, match="--good"):
        _search(verdicts, 3)
