"""files: the schema-checked JSON reader names the file, the key and what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.errors import DocumentError
from orchestrator.files import field, read_json


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (None, "is missing"),
        ("{", "is not valid JSON (line 1)"),
        ("[1, 2]", "is list JSON, not an object"),
        ('{"schema": "x/9"}', "has schema 'x/9', expected csorch.results/1"),
        (b"\xff\xfe", "cannot be read"),
    ],
)
def test_read_json_names_the_file_and_the_problem(tmp_path: Path, text, problem: str) -> None:
    path = tmp_path / "results.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    elif text is not None:
        path.write_text(text)
    with pytest.raises(DocumentError) as caught:
        read_json(path, "csorch.results/1")
    assert caught.value.file == path and problem in caught.value.message
    assert str(path) in caught.value.message and caught.value.hint


def test_read_json_returns_the_object(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text('{"schema": "s/1", "attempts": []}')
    assert read_json(path, "s/1") == {"schema": "s/1", "attempts": []}
    assert read_json(path) == {"schema": "s/1", "attempts": []}


def test_field_names_the_key_and_the_types(tmp_path: Path) -> None:
    where = tmp_path / "results.json"
    assert field({"attempts": []}, "attempts", list, where) == []
    with pytest.raises(DocumentError, match="results.json: attempts: is int, expected list"):
        field({"attempts": 5}, "attempts", list, where)
    with pytest.raises(DocumentError, match="judgement: is str, expected dict or NoneType"):
        field({"judgement": "x"}, "judgement", (dict, type(None)), where)
    with pytest.raises(DocumentError, match="builds: missing"):
        field({}, "builds", list, where)
