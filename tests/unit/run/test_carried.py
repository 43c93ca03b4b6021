"""run/carried: which differences between the stored experiment and this run's keep a
verdict from carrying. A head checked out elsewhere (a CI clone) and a git source named
by a new ref are the same experiment (the trees compare what they hold); any other key,
a path that did not move with the checkout, or a ref's repository changed, is not."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from orchestrator.model import SourceKind, SourceSpec
from orchestrator.run import carried
from tests.factories import experiment


def _at(root: str, **changes: object):  # type: ignore[no-untyped-def]
    return experiment(
        source=f"{root}/ext",
        config=Path(f"{root}/configs/exp.yaml"),
        cases=("case",),
        **changes,
    )


def test_a_checkout_moved_elsewhere_is_the_same_experiment() -> None:
    carried._same_experiment(_at("/home/a/repo"), _at("/ci/build/7/repo"))


def test_a_path_that_did_not_move_with_the_checkout_differs() -> None:
    moved = dataclasses.replace(
        _at("/ci/build/7/repo"), source=SourceSpec(SourceKind.PATH, "/elsewhere/ext")
    )
    with pytest.raises(carried.NotCarried, match="'source' differs"):
        carried._same_experiment(_at("/home/a/repo"), moved)


def test_a_new_ref_of_the_same_repository_is_compared_by_its_trees() -> None:
    def git(ref: str, where: str = "/src/repo"):  # type: ignore[no-untyped-def]
        return dataclasses.replace(
            _at("/home/a/repo"), source=SourceSpec(SourceKind.GIT, where, ref=ref)
        )

    carried._same_experiment(git("0ec4969"), git("review"))
    with pytest.raises(carried.NotCarried, match="'source' differs"):
        carried._same_experiment(git("0ec4969"), git("0ec4969", "/other/repo"))


def test_any_other_key_differs() -> None:
    with pytest.raises(carried.NotCarried, match="'repeats' differs"):
        carried._same_experiment(_at("/r"), _at("/r", repeats=3))
    with pytest.raises(carried.NotCarried, match="'timeout' differs"):
        carried._same_experiment(_at("/r"), _at("/r", timeout=60.0))
