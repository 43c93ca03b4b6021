"""Files: the one way csorch reads, writes, walks, copies and removes them, and the ways
every stage shares (digests, atomic writes, schema-checked JSON reads).

- `refusal`: the kinds of file read whole with their size bounds (`CONFIG`, `PATCH`,
  `DOCUMENT`, ...) and the errors naming a refused path (`NotRegularFile`, `LinkRefused`,
  `TooLarge`, `TooDeep`, `NotText`: CsorchErrors and OSErrors both);
- `read`: `open_regular`, `read_bytes`, `read_text`, `lines`, `tail`, `file_digest`;
- `write`: `open_dir`, `make_dirs`, `open_file`, `atomic_write`, `remove_partial_writes`;
- `tree`: `walk`, `regular_files`, `glob`, `copy_file`, `copy_tree`,
  `remove_tree`;
- `documents`: `loads`, `load_json`, `read_json`, `field`.

No other module of csorch opens, walks, copies or removes a file itself
(`tests/unit/test_file_seam.py`)."""

from __future__ import annotations

from orchestrator.files.documents import field, load_json, loads, read_json
from orchestrator.files.read import file_digest, lines, open_regular, read_bytes, read_text, tail
from orchestrator.files.refusal import (
    BINARY,
    CONFIG,
    DOCUMENT,
    INPUT,
    JOURNAL,
    MAX_DEPTH,
    PATCH,
    TEXT,
    FileRefused,
    HardLinked,
    Kind,
    LinkRefused,
    NotRegularFile,
    NotText,
    TooDeep,
    TooLarge,
    special_kind,
)
from orchestrator.files.tree import (
    REMOVE_DEPTH,
    copy_file,
    copy_tree,
    glob,
    regular_files,
    remove_tree,
    walk,
)
from orchestrator.files.write import (
    _UMASK,
    PARTIAL_RE,
    atomic_write,
    make_dirs,
    open_dir,
    open_file,
    remove_partial_writes,
)

__all__ = [
    "BINARY",
    "CONFIG",
    "DOCUMENT",
    "INPUT",
    "JOURNAL",
    "MAX_DEPTH",
    "PARTIAL_RE",
    "PATCH",
    "REMOVE_DEPTH",
    "TEXT",
    "_UMASK",
    "FileRefused",
    "HardLinked",
    "Kind",
    "LinkRefused",
    "NotRegularFile",
    "NotText",
    "TooDeep",
    "TooLarge",
    "atomic_write",
    "copy_file",
    "copy_tree",
    "field",
    "glob",
    "file_digest",
    "lines",
    "load_json",
    "loads",
    "make_dirs",
    "open_dir",
    "open_file",
    "open_regular",
    "read_bytes",
    "read_json",
    "read_text",
    "regular_files",
    "remove_partial_writes",
    "remove_tree",
    "special_kind",
    "tail",
    "walk",
]
