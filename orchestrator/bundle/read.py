"""Reading a results bundle back: its two JSON documents, and the records in them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.bundle.layout import MANIFEST, MANIFEST_SCHEMA, RESULTS, RESULTS_SCHEMA
from orchestrator.errors import BundleError
from orchestrator.judge.causality import Judgement
from orchestrator.model import Attempt, Build, Experiment, SourceTree


@dataclass(frozen=True)
class Records:
    """A bundle's results as records again (what a re-judge or a report starts from)."""

    experiment: Experiment
    sources: tuple[SourceTree, ...]
    builds: tuple[Build, ...]
    attempts: tuple[Attempt, ...]
    judgement: Judgement | None


def records(results: Mapping[str, Any]) -> Records:
    """The records in a results.json document (as `read` returns it)."""
    judgement = results.get("judgement")
    return Records(
        Experiment.from_dict(results["experiment"]),
        tuple(SourceTree.from_dict(s) for s in results["sources"]),
        tuple(Build.from_dict(b) for b in results["builds"]),
        tuple(Attempt.from_dict(a) for a in results["attempts"]),
        Judgement.from_dict(judgement) if judgement else None,
    )


def read(root: Path | str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(results, manifest) of a bundle; BundleError when missing or of another schema."""
    root = Path(root)
    docs = []
    for name, schema in ((RESULTS, RESULTS_SCHEMA), (MANIFEST, MANIFEST_SCHEMA)):
        try:
            doc = json.loads((root / name).read_text())
        except FileNotFoundError:
            raise BundleError(root, f"no {name}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise BundleError(root, f"{name} is not valid JSON: {exc}") from None
        except OSError as exc:
            raise BundleError(root, f"{name} cannot be read: {exc.strerror or exc}") from None
        if not isinstance(doc, dict):
            raise BundleError(
                root,
                f"{name} is {type(doc).__name__} JSON, not an object",
                hint="the file was damaged or replaced; re-run, or restore the bundle",
            )
        if doc.get("schema") != schema:
            raise BundleError(root, f"{name} has schema {doc.get('schema')!r}, expected {schema}")
        docs.append(doc)
    return docs[0], docs[1]
