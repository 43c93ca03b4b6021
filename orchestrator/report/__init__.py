"""Renderers of a run's records: the terminal table (`table`, Rich renderables), and the
text formats of a stored bundle (Markdown, JUnit, SARIF, HTML, JSON, GitHub Actions
annotations) through `render`.
Rich is imported only here and in the CLI.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from orchestrator.report import html, junit, markdown, sarif, workflow


def _json(results: Mapping[str, Any], manifest: Mapping[str, Any]) -> str:
    # bundle.py writes results.json with this very call, and a document read back keeps
    # its key order: the text is the file as stored (plus a final newline)
    return json.dumps(results, indent=1) + "\n"


#: the text formats; `table` is the CLI's, since it prints Rich renderables
FORMATS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], str]] = {
    "markdown": markdown.render,
    "junit": junit.render,
    "sarif": sarif.render,
    "html": html.render,
    "json": _json,
    "github": workflow.render,
}


def render(fmt: str, results: Mapping[str, Any], manifest: Mapping[str, Any]) -> str:
    """A bundle's documents (`bundle.read`) in a text format; KeyError for an unknown one."""
    return FORMATS[fmt](results, manifest)
