"""JSON documents csorch wrote, read back: bounded, schema-checked, and damage named by
file and key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.errors import DocumentError
from orchestrator.files.read import read_text
from orchestrator.files.refusal import DOCUMENT, Kind


def _constant(name: str) -> Any:
    raise ValueError(f"holds {name}, which csorch never writes (JSON has no such number)")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for key, value in pairs:
        if key in doc:
            raise ValueError(f"holds the key {key!r} twice (which one a reader sees is a guess)")
        doc[key] = value
    return doc


def loads(text: str) -> Any:
    """`json.loads` of a document csorch wrote, refusing as a ValueError like any other
    damage what csorch never writes and a hand-made document can hold: nesting too deep
    for the parser (a RecursionError otherwise), NaN and Infinity (Python's extension of
    JSON: a count that equals nothing, a bound that is none), and a key given twice
    (another reader of the same file, jq or a browser, may see the other value)."""
    try:
        return json.loads(text, parse_constant=_constant, object_pairs_hook=_object)
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
