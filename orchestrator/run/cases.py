"""Where a variant's pytest cases come from under `cases_from: variant`: its own tree (its
checkout of a git ref, patches applied), so that the tests are the ref's. Each case's path
must be in that tree; one that is not fails the variant (inconclusive, never green)
instead of running the config's side's tests against another ref's build."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from orchestrator import files
from orchestrator.carry import caseforms, classify
from orchestrator.errors import ConfigError
from orchestrator.model import CaseKind, Experiment, SourceTree

PYTEST_FILES = caseforms.PYTEST_FILES
CASE_FILE = files.Kind("a case file", classify.MAX_BYTES)


def cases_root(experiment: Experiment, tree: SourceTree) -> Path:
    """The variant's tree, once every pytest case's path is found in it."""
    for case in experiment.cases:
        if case.kind is not CaseKind.PYTEST:
            continue
        for target in case.pytest:
            path = tree.root / target.partition("::")[0]
            if not path.exists():
                raise ConfigError(
                    experiment.config or experiment.name,
                    None,
                    "cases",
                    f"case {case.name!r}: {target.partition('::')[0]} is not in variant "
                    f"{tree.variant!r}'s tree ({tree.root})",
                    hint="under cases_from: variant the cases are the tree's own; use "
                    "cases_from: config to run this file's side's tests against every variant",
                )
    return tree.root


def forms(experiment: Experiment, root: Path, listing: Mapping[str, str]) -> tuple[str, ...]:
    """The variant's own tests under `cases_from: variant` (carry/caseforms.py), read from
    its tree at `root`, whose listing is `listing`."""

    def read(path: str) -> bytes | None:
        try:
            return files.read_bytes(Path(root) / path, CASE_FILE)
        except OSError:  # a link, too large, gone: its listing entry stands for it
            return None

    return caseforms.forms(experiment, listing, read)
