"""JSON documents csorch wrote, read back: bounded, schema-checked, and damage named by
file and key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.errors import DocumentError
from orchestrator.files.read import read_text
from orchestrator.files.refusal import DOCUMENT, Kind


def loads(text: str) -> Any:
    """`json.loads`, with nesting too deep for the parser a ValueError like any other
    damage (it is a RecursionError otherwise: a traceback from a hand-made document)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to be a document csorch wrote") from None


def load_json(path: Path, kind: Kind = DOCUMENT) -> Any:
    """The JSON document in a regular file: OSError (FileNotFoundError, NotRegularFile,
    TooLarge, NotText included) when it cannot be read, ValueError when it is no JSON.
    Every document csorch reads back goes through here or `read_json`."""
    return loads(read_text(path, kind))


def read_json(path: Path, schema: str | None = None) -> dict[str, Any]:
    """A JSON object csorch wrote, with its `schema` checked; DocumentError naming the file
    when it is missing, unreadable, too large, not JSON, not an object or of another
    schema."""
    try:
        text = read_text(path, DOCUMENT)
    except FileNotFoundError:
        raise DocumentError(path, "", "is missing") from None
    except OSError as exc:
        raise DocumentError(path, "", f"cannot be read: {exc.strerror or exc}") from None
    try:
        doc = loads(text)
    except json.JSONDecodeError as exc:
        raise DocumentError(path, "", f"is not valid JSON (line {exc.lineno}): {exc.msg}") from None
    except ValueError as exc:
        raise DocumentError(path, "", f"is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise DocumentError(path, "", f"is {type(doc).__name__} JSON, not an object")
    if schema is not None and doc.get("schema") != schema:
        raise DocumentError(path, "", f"has schema {doc.get('schema')!r}, expected {schema}")
    return doc


def field(doc: Any, key: str, kind: type | tuple[type, ...], where: Path) -> Any:
    """`doc[key]` when it is of `kind`; DocumentError naming `where` and the key if not."""
    if not isinstance(doc, dict) or key not in doc:
        raise DocumentError(where, key, "missing")
    value = doc[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise DocumentError(where, key, f"is {type(value).__name__}, expected {names}")
    return value
