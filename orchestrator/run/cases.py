"""Where a variant's pytest cases come from under `cases_from: variant`: its own tree (its
checkout of a git ref, patches applied), so that the tests are the ref's. Each case's path
must be in that tree; one that is not fails the variant (inconclusive, never green)
instead of running the config's side's tests against another ref's build."""

from __future__ import annotations

import hashlib
from pathlib import Path

from orchestrator import files
from orchestrator.carry import classify
from orchestrator.errors import ConfigError
from orchestrator.model import CaseKind, CasesFrom, Experiment, SourceTree
from orchestrator.run.sources import walk_source

#: pytest's configuration files: one in a directory above a case changes what runs
PYTEST_FILES = ("conftest.py", "pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
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


def forms(experiment: Experiment, root: Path) -> tuple[str, ...]:
    """What the variant's own tests are, under `cases_from: variant` ("PATH DIGEST" per file,
    sorted): each pytest case's directory, all of it (helpers, data, conftest.py), and
    pytest's configuration files of every directory above it within the tree. A Python
    file's digest is of its AST without docstrings (carry/classify: a comment or a reworded
    docstring is the same test); any other file's, of its bytes. The judge compares the
    fix's with each control's (judge/causality: a fix that changes its own test is no
    evidence that its code removed the defect). () unless `cases_from: variant`."""
    if experiment.cases_from is not CasesFrom.VARIANT:
        return ()
    root = Path(root)
    found: dict[str, Path] = {}
    for case in experiment.cases:
        if case.kind is not CaseKind.PYTEST:
            continue
        for target in case.pytest:
            path = root / target.partition("::")[0]
            directory = path if path.is_dir() else path.parent
            if not directory.is_dir() or not directory.resolve().is_relative_to(root.resolve()):
                continue
            for rel in walk_source(directory):
                found[(directory / rel).relative_to(root).as_posix()] = directory / rel
            up = directory
            while up != root and root in up.parents:
                up = up.parent
                for name in PYTEST_FILES:
                    if (up / name).is_file():
                        found[(up / name).relative_to(root).as_posix()] = up / name
    return tuple(f"{rel} {_form(rel, path)}" for rel, path in sorted(found.items()))


def _form(rel: str, path: Path) -> str:
    try:
        data = files.read_bytes(path, CASE_FILE)
    except OSError as exc:  # a link, too large, gone: named as such, never equal by accident
        return f"unreadable:{type(exc).__name__}"
    if rel.endswith(classify.PYTHON):
        try:
            return "ast:" + hashlib.sha256(classify.python_form(data).encode()).hexdigest()
        except (SyntaxError, ValueError, RecursionError):
            pass
    return hashlib.sha256(data).hexdigest()
