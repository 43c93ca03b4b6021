"""files: the schema-checked JSON reader names the file, the key and what is wrong; an
atomic write leaves no temporary behind, and a killed one's debris is known by its name."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from orchestrator import files
from orchestrator.errors import CsorchError, DocumentError
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


# --- the one way to read, write, copy and remove --------------------------------------


@pytest.mark.parametrize("make", ["fifo", "link to /dev/zero", "link to a file"])
def test_a_bounded_read_refuses_what_is_no_regular_file_by_name(tmp_path: Path, make) -> None:
    path = tmp_path / "config.yaml"
    if make == "fifo":
        os.mkfifo(path)
    elif make == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    else:
        (tmp_path / "real.yaml").write_text("name: x\n")
        path.symlink_to(tmp_path / "real.yaml")
    if make == "link to a file":  # the user's own input is read where its link leads
        assert files.read_text(path, files.CONFIG) == "name: x\n"
        with pytest.raises(files.LinkRefused, match="config.yaml: is a symlink"):
            files.read_text(path, files.DOCUMENT)  # csorch's own file: never through a link
        return
    with pytest.raises(files.NotRegularFile) as caught:
        files.read_bytes(path, files.CONFIG)
    what = "a named pipe" if make == "fifo" else "links to /dev/zero, a character device"
    assert caught.value.message == f"{path}: {what}, not a regular file"
    assert isinstance(caught.value, CsorchError) and caught.value.hint


def test_a_read_past_its_kind_s_bound_is_refused_before_a_byte_is_read(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.touch()
    os.truncate(path, 3 << 30)  # sparse
    with pytest.raises(files.TooLarge, match="3,221,225,472 bytes; a JSON document csorch"):
        files.read_bytes(path, files.DOCUMENT)
    with pytest.raises(DocumentError, match="is at most 1,073,741,824 bytes"):
        read_json(path)
    small = files.Kind("a note", 4)
    proc_like = tmp_path / "n"
    proc_like.write_bytes(b"12345")
    with pytest.raises(files.TooLarge, match="a note is at most 4 bytes"):
        files.read_bytes(proc_like, small)


def test_text_that_is_not_utf8_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "fix.patch"
    path.write_bytes(b"ok\nbad \xff here\n")
    with pytest.raises(files.NotText, match=r"byte 0xff at offset 7 \(line 2\)"):
        files.read_text(path, files.PATCH)
    assert files.read_text(path, files.PATCH, errors="replace").startswith("ok\nbad ")


@pytest.mark.parametrize("planted", ["logs", "logs/control", ".csorch.lock", "journal.jsonl"])
def test_no_write_goes_through_a_link_planted_below_csorch_s_directory(
    tmp_path: Path, planted: str
) -> None:
    bundle, outside = tmp_path / "bundle", tmp_path / "outside"
    (bundle / "logs").mkdir(parents=True)
    outside.mkdir()
    (outside / "victim").write_text("mine\n")
    link = bundle / planted
    if planted.startswith("logs"):  # a directory: nothing made or written below it
        if planted == "logs":
            link.rmdir()
        link.symlink_to(outside)
        with pytest.raises(files.LinkRefused, match=f"{link}: is a symlink"):
            files.make_dirs(link / "sum", root=bundle)
        with pytest.raises(files.LinkRefused, match=f"{link}: is a symlink"):
            files.atomic_write(link / "r0.log", "x", root=bundle)
        with pytest.raises(files.LinkRefused, match=f"{link}: is a symlink"):
            files.open_file(link / "r0.log", "w", root=bundle)
    else:  # a file: neither appended to nor truncated through the link
        link.symlink_to(outside / "victim")
        for mode in ("a", "a+", "w", "r+"):
            with pytest.raises(files.LinkRefused, match=f"{link}: is a symlink"):
                files.open_file(link, mode, root=bundle)
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]
    assert (outside / "victim").read_text() == "mine\n"
    files.atomic_write(bundle / "results.json", "{}", root=bundle)  # a plain write works
    assert (bundle / "results.json").read_text() == "{}"


def test_a_write_to_a_named_pipe_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "r0.log")
    with pytest.raises(files.NotRegularFile, match="r0.log: a named pipe"):
        files.open_file(tmp_path / "r0.log", "w", binary=True)


def _deep(top: Path, depth: int, name: str) -> Path:
    """`top`/name/name/... `depth` levels, made through descriptors (past PATH_MAX)."""
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir(name, dir_fd=fd)
        below = os.open(name, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = below
    os.close(os.open("bottom.txt", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    os.close(fd)
    return top


def test_remove_tree_takes_a_tree_deeper_than_recursion_and_path_max(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    top = _deep(tmp_path / "deep", 1200, "n" * 20)  # 25,000 characters of path
    (top / "link").symlink_to(outside)  # removed as a link, never entered
    files.remove_tree(top)
    assert not top.exists() and (outside / "keep").exists()
    files.remove_tree(top)  # nothing there: nothing to do
    shallow = _deep(tmp_path / "bounded", 5, "d")
    with pytest.raises(files.TooDeep, match="nested more than 3 directories deep"):
        files.remove_tree(shallow, max_depth=3)
    files.remove_tree(shallow)


def test_copy_tree_copies_links_as_links_and_refuses_pipes_and_depth(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "a" / "b").mkdir(parents=True)
    (src / "a" / "b" / "f.c").write_text("int x;\n")
    (src / "a" / "b" / "f.c").chmod(0o755)
    (src / "a" / "lb").symlink_to("b")
    (src / "skip.o").write_text("")
    files.copy_tree(
        src, tmp_path / "dest", ignore=lambda d, names: [n for n in names if n.endswith(".o")]
    )
    dest = tmp_path / "dest"
    assert os.readlink(dest / "a" / "lb") == "b"
    assert (dest / "a" / "b" / "f.c").read_text() == "int x;\n"
    assert os.access(dest / "a" / "b" / "f.c", os.X_OK) and not (dest / "skip.o").exists()
    os.mkfifo(src / "a" / "events")
    with pytest.raises(files.NotRegularFile, match="events: a named pipe"):
        files.copy_tree(src, tmp_path / "again")
    deep = _deep(tmp_path / "deep", 250, "d")
    with pytest.raises(files.TooDeep, match="nested more than 200 directories deep"):
        files.copy_tree(deep, tmp_path / "deep-copy")
    files.remove_tree(deep)
    files.remove_tree(tmp_path / "deep-copy")


def test_glob_matches_python_s_recursive_glob(tmp_path: Path) -> None:
    import glob as pyglob

    for rel in ("pkg/x.so", "pkg/a/b/y.so", "pkg/.h/z.so", "pkg/a/w.so.1", "top.so"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    for pattern in ("pkg/**/*.so", "**/*.so", "pkg/**/*.so.*", "*.so", "**", "pkg/*"):
        theirs = sorted(pyglob.glob(pattern, root_dir=tmp_path, recursive=True))
        assert files.glob(tmp_path, pattern) == theirs, pattern
    assert "pkg/.h/z.so" in files.glob(tmp_path, "pkg/**/*.so", include_hidden=True)
