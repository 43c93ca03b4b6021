"""Reading a results bundle back: its two JSON documents, and the records in them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.bundle.layout import MANIFEST, MANIFEST_SCHEMA, RESULTS, RESULTS_SCHEMA
from orchestrator.errors import BundleError, DocumentError
from orchestrator.files import field, read_json
from orchestrator.judge.causality import Judgement
from orchestrator.model import Attempt, Build, Carried, Experiment, SourceTree


@dataclass(frozen=True)
class Records:
    """A bundle's results as records again (what a re-judge or a report starts from)."""

    experiment: Experiment
    sources: tuple[SourceTree, ...]
    builds: tuple[Build, ...]
    attempts: tuple[Attempt, ...]
    judgement: Judgement | None
    carried: Carried | None = None  # a verdict carried from a stored bundle


def _each(results: Mapping[str, Any], key: str, make: Any, where: Path) -> tuple:
    items = field(results, key, list, where)
    out = []
    for i, item in enumerate(items):
        try:
            out.append(make(item))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DocumentError(where, f"{key}[{i}]", f"cannot be read back: {exc!r}") from None
    return tuple(out)


def records(results: Mapping[str, Any], where: Path | str = RESULTS) -> Records:
    """The records in a results.json document (as `read` returns it); DocumentError naming
    the file (`where`) and the key that is damaged."""
    where = Path(where)
    experiment = field(results, "experiment", dict, where)
    try:
        exp = Experiment.from_dict(experiment)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DocumentError(where, "experiment", f"cannot be read back: {exc!r}") from None
    if beyond := exp.beyond_bounds():
        raise DocumentError(where, "experiment", f"cannot be one csorch ran: {beyond}")
    judgement = field(results, "judgement", (dict, type(None)), where)
    try:
        judged = Judgement.from_dict(judgement) if judgement else None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DocumentError(where, "judgement", f"cannot be read back: {exc!r}") from None
    carried = results.get("carried")
    try:
        carry = Carried.from_dict(carried) if carried is not None else None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DocumentError(where, "carried", f"cannot be read back: {exc!r}") from None
    return Records(
        exp,
        _each(results, "sources", SourceTree.from_dict, where),
        _each(results, "builds", Build.from_dict, where),
        _each(results, "attempts", Attempt.from_dict, where),
        judged,
        carry,
    )


def read(root: Path | str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(results, manifest) of a bundle; BundleError when missing or of another schema."""
    root = Path(root)
    docs = []
    for name, schema in ((RESULTS, RESULTS_SCHEMA), (MANIFEST, MANIFEST_SCHEMA)):
        try:
            docs.append(read_json(root / name, schema))
        except DocumentError as exc:
            missing = exc.problem == "is missing" and not exc.key
            problem = f"no {name}" if missing else f"{name} {exc.problem}"
            raise BundleError(root, problem, hint=exc.hint) from None
    return docs[0], docs[1]
