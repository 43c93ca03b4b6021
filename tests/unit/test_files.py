"""files: the schema-checked JSON reader names the file, the key and what is wrong; an
atomic write leaves no temporary behind, and a killed one's debris is known by its name."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from orchestrator import files
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


def test_an_interrupted_atomic_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path,
) -> None:
    path = tmp_path / "results.json"
    files.atomic_write(path, "old")
    with pytest.raises(UnicodeEncodeError):  # fails mid-write, after the open
        files.atomic_write(path, "new \ud800")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_remove_partial_writes_takes_only_atomic_write_temporaries(tmp_path: Path) -> None:
    partial = tmp_path / ".gate.json.1234-89abcdef.tmp"
    partial.write_text("{")
    kept = [tmp_path / ".notes.tmp", tmp_path / "gate.json.1234-89abcdef.tmp"]
    for p in kept:
        p.write_text("mine")
    target = tmp_path / "elsewhere.txt"
    target.write_text("not csorch's")
    link = tmp_path / ".report.md.1-00000000.tmp"
    link.symlink_to(target)
    assert files.PARTIAL_RE.match(partial.name)["name"] == "gate.json"
    assert files.remove_partial_writes(tmp_path) == [partial]
    assert all(p.exists() for p in kept) and link.is_symlink() and target.exists()


@pytest.mark.parametrize("make", ["fifo", "directory", "socket"])
def test_a_reader_refuses_what_is_no_regular_file_without_blocking(tmp_path: Path, make) -> None:
    # a named pipe with no writer: a plain open() would wait for one forever
    path = tmp_path / "results.json"
    if make == "fifo":
        os.mkfifo(path)
    elif make == "directory":
        path.mkdir()
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
    # (a socket cannot even be opened: ENXIO, an OSError as well)
    kind = {"fifo": "a named pipe", "directory": "a directory", "socket": "No such device"}[make]
    with pytest.raises(OSError, match=kind):
        files.file_digest(path)
    with pytest.raises(OSError, match=kind):
        files.load_json(path)
    with pytest.raises(DocumentError, match=f"cannot be read: .*{kind}"):
        read_json(path)


def test_json_nested_past_the_parser_is_a_value_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="nested too deeply"):
        files.load_json(path)
    with pytest.raises(DocumentError, match="nested too deeply"):
        read_json(path)
    assert files.load_json(_write(tmp_path / "ok.json", '{"a": [1]}')) == {"a": [1]}


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_walk_is_os_walk_without_recursion_and_bounded(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "f").write_text("x")
    (tmp_path / "top").write_text("y")
    (tmp_path / "link").symlink_to(tmp_path / "a")  # listed among the directories, not entered
    ours = {(d, tuple(sorted(ds)), tuple(sorted(ns))) for d, ds, ns in files.walk(tmp_path)}
    theirs = {(d, tuple(sorted(ds)), tuple(sorted(ns))) for d, ds, ns in os.walk(tmp_path)}
    assert ours == theirs
    pruned = []
    for here, dirs, _ in files.walk(tmp_path):  # a caller prunes as with os.walk
        pruned.append(here)
        dirs[:] = [d for d in dirs if d != "a"]
    assert pruned == [str(tmp_path)]
    deep = tmp_path / "deep"
    deep.mkdir()
    made = [deep]
    for _ in range(1200):  # past Python's recursion limit
        made.append(made[-1] / "d")
        made[-1].mkdir()
    try:
        with pytest.raises(files.TooDeep, match="nested more than 200 directories deep"):
            list(files.walk(deep))
        assert len(list(files.walk(deep, max_depth=2000))) == 1201
    finally:  # bottom-up: shutil.rmtree (pytest's clean-up of old temp dirs) recurses
        for here in reversed(made):
            here.rmdir()
