"""YAML read as nodes that know their file and line, so every config error can say
`file:line: key: what is wrong; what is allowed`.

`load` composes the document with `yaml.SafeLoader` (no object construction beyond
plain scalars) and returns a `View` of the root. Views check types, reject unknown
and duplicate keys (suggesting the closest valid key), read the fields every config
shares (safe names, choices, durations, paths relative to the file), and raise
`ConfigError`.
"""

from __future__ import annotations

import difflib
import math
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from orchestrator import files
from orchestrator.config.schema import DURATION_RE, NAME_RE, NAME_RULE, UNITS
from orchestrator.errors import ConfigError

_NAMES = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "NoneType": "empty",
    "list": "a list",
    "dict": "a mapping",
}


#: a config is a page of YAML; a file past this is not one (and is not read whole)
MAX_BYTES = files.CONFIG.limit
#: nodes a document may expand to through its aliases (a billion-laughs bomb expands to
#: 10^9 from a few lines; a real config has a few hundred)
MAX_NODES = 100_000
#: the longest duration a config may give (a timeout of a year is no timeout)
MAX_SECONDS = 365 * 86400
#: a UTF-16 surrogate on its own: YAML's "\\ud800" escape makes one, UTF-8 cannot hold it
_SURROGATE_RE = re.compile("[\\ud800-\\udfff]")


def load(path: Path) -> View:
    """The root of a single-document YAML file: UTF-8, at most MAX_BYTES, its aliases
    expanding to at most MAX_NODES nodes."""
    try:
        data = files.read_bytes(path, files.CONFIG)
    except files.FileRefused as exc:
        raise ConfigError(path, None, "", exc.problem, hint=exc.hint) from None
    except OSError as exc:
        raise ConfigError(path, None, "", f"cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            path,
            line,
            "",
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start}",
            hint="save the file as UTF-8",
        ) from None
    try:
        loader = yaml.SafeLoader(text)  # checks for unprintable characters already
    except yaml.YAMLError as exc:
        raise ConfigError(path, None, "", f"not valid YAML: {exc}") from None
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise ConfigError(path, line, "", f"not valid YAML: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(path, None, "", f"not valid YAML: {exc}") from None
    except RecursionError:  # the composer recurses once per level of nesting
        raise ConfigError(path, None, "", "nested too deeply to be a config") from None
    finally:
        loader.dispose()
    if node is None:
        raise ConfigError(path, 1, "", "the file is empty")
    _check_expansion(path, node)
    return View(path, node, "", yaml.SafeLoader(""))


def _check_expansion(path: Path, root: yaml.Node) -> None:
    """ConfigError when aliases make the document expand past MAX_NODES, or refer to a
    node that contains them. Counted over the node graph (an alias is the same node
    object again), each node once: linear in the file, whatever it expands to."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_: set[int] = set()
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_.discard(key)
            total = 1 + sum(sizes[id(c)] for c in _children(node))
            if total > MAX_NODES:
                raise ConfigError(
                    path,
                    node.start_mark.line + 1,
                    "",
                    f"its aliases expand to more than {MAX_NODES:,} values",
                    hint="a YAML alias bomb? write the values out, or use fewer aliases",
                )
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in open_:
            raise ConfigError(
                path, node.start_mark.line + 1, "", "an alias refers to a node that contains it"
            )
        open_.add(key)
        _check_tag(path, node)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in sizes)


#: the tags a list or a mapping of a config may carry: YAML's own (a `!!python/...`, a
#: `!!set` or an `!!omap` on a collection would be read as a plain list or mapping,
#: silently; on a value, `View.value` refuses it)
_COLLECTION_TAGS = {
    yaml.SequenceNode: "tag:yaml.org,2002:seq",
    yaml.MappingNode: "tag:yaml.org,2002:map",
}


def _check_tag(path: Path, node: yaml.Node) -> None:
    """ConfigError for a list or mapping with a tag other than YAML's plain one."""
    plain = _COLLECTION_TAGS.get(type(node))
    if plain is not None and node.tag != plain:
        raise ConfigError(
            path,
            node.start_mark.line + 1,
            "",
            f"the tag {node.tag} is not read here; a config's lists and mappings are plain",
            hint="remove the tag (the '!...' before the value)",
        )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _found(path: Path) -> str:
    """What is at a config's path that is not the file or directory csorch wanted: "" when
    nothing is, else " (a named pipe is there)", " (a directory is there)", ..."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return ""
    if stat.S_ISDIR(mode):
        return " (a directory is there)"
    return f" ({files.special_kind(mode) or 'a file'} is there)"


class View:
    """A YAML node with its file, line and dotted key path (`variants[1].build.kind`)."""

    def __init__(self, file: Path, node: yaml.Node, key: str, loader: yaml.SafeLoader) -> None:
        self.file = file
        self.node = node
        self.key = key
        self._loader = loader

    @property
    def line(self) -> int:
        return self.node.start_mark.line + 1

    def error(self, problem: str, *, hint: str = "") -> ConfigError:
        return ConfigError(self.file, self.line, self.key, problem, hint=hint)

    def _child(self, node: yaml.Node, key: str) -> View:
        return View(self.file, node, key, self._loader)

    def value(self) -> Any:
        """The plain Python value of a scalar (str, int, float, bool or None)."""
        if not isinstance(self.node, yaml.ScalarNode):
            raise self.error(f"expected a single value, found {self.kind()}")
        try:
            return self._loader.construct_object(self.node, deep=True)
        except yaml.YAMLError as exc:
            raise self.error(f"cannot read this value: {exc}") from None
        except (ValueError, OverflowError) as exc:  # 2001-02-30, a 5000-digit integer
            raise self.error(f"cannot read this value: {exc}", hint="quote it") from None

    def kind(self) -> str:
        if isinstance(self.node, yaml.MappingNode):
            return "a mapping"
        if isinstance(self.node, yaml.SequenceNode):
            return "a list"
        value = self.value()
        return f"{_NAMES.get(type(value).__name__, type(value).__name__)} ({value!r})"

    @property
    def is_mapping(self) -> bool:
        return isinstance(self.node, yaml.MappingNode)

    @property
    def is_list(self) -> bool:
        return isinstance(self.node, yaml.SequenceNode)

    def text(self, what: str = "a string") -> str:
        value = self.value()
        if not isinstance(value, str):
            raise self.error(
                f"expected {what}, found {self.kind()}",
                hint="quote the value if it is meant as text",
            )
        return self._passable(value)

    def word(self) -> str:
        """A string, or a number written without quotes (an argv item, an env value)."""
        value = self.value()
        if isinstance(value, bool) or value is None or not isinstance(value, (str, int, float)):
            raise self.error(
                f"expected a string or number, found {self.kind()}",
                hint='quote it, e.g. "1" or "true"',
            )
        return self._passable(str(value))

    def _passable(self, text: str) -> str:
        """`text`, unless it holds a NUL or a lone surrogate: every string of a config may
        reach an argv, an environment or a path, which are C strings of UTF-8 bytes
        (Python's `ValueError: embedded null byte`, or a `UnicodeEncodeError` from a
        `"\\ud800"` escape, at the child's start or the console's print, before)."""
        if "\0" in text:
            raise self.error(
                "holds a NUL character (\\0), which no argument, environment variable "
                "or path can carry",
                hint="remove the \\0 escape",
            )
        lone = _SURROGATE_RE.search(text)
        if lone:
            raise self.error(
                f"holds a lone surrogate (\\u{ord(lone.group()):04x}), which is no character "
                "and cannot be written as UTF-8 into an argument, environment variable or path",
                hint="remove the \\u escape, or write the character itself",
            )
        return text

    def integer(self, minimum: int | None = None, maximum: int | None = None) -> int:
        value = self.value()
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"expected an integer, found {self.kind()}")
        if minimum is not None and value < minimum:
            raise self.error(f"must be at least {minimum}, not {value}")
        if maximum is not None and value > maximum:
            raise self.error(f"must be at most {maximum:,}, not {value:,}")
        return value

    def name(self) -> str:
        """A safe name: also a directory name in bundles and caches."""
        value = self.text("a name")
        if not NAME_RE.match(value) or value in (".", ".."):
            raise self.error(f"'{value}' is not a safe name; use {NAME_RULE}")
        return value

    def choice(self, allowed: Sequence[str]) -> str:
        value = self.text()
        if value not in allowed:
            raise self.error(f"'{value}' is not allowed; choose one of: {', '.join(allowed)}")
        return value

    def duration(self) -> float:
        """Seconds: a positive number, or a number with s, m or h."""
        value = self.value()
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return self._bounded(float(value))
        m = DURATION_RE.match(value) if isinstance(value, str) else None
        if not m or float(m["n"]) <= 0:
            raise self.error(
                f"expected a positive duration, found {self.kind()}",
                hint="write seconds (600) or a number with s, m or h (10m)",
            )
        seconds = float(m["n"]) * UNITS[m["unit"]]
        return self._bounded(seconds)

    def _bounded(self, seconds: float) -> float:
        """`seconds`, unless it is infinite or past MAX_SECONDS: a timeout reaches the
        bundle's JSON (where `.inf` is no number), Slurm's `--time` and the OS's timers."""
        if not math.isfinite(seconds) or seconds > MAX_SECONDS:
            raise self.error(
                f"must be at most {MAX_SECONDS // 86400} days, not {seconds:g} seconds",
                hint="write seconds (600) or a number with s, m or h (10m)",
            )
        return seconds

    def path(self, *, directory: bool, limit: int | None = None) -> Path:
        """An existing file or directory, relative to the folder of the config file; a
        file of more than `limit` bytes (the bound its reader has) is refused here, by
        key, rather than when a variant is built."""
        text = self.text("a path")
        try:
            path = (self.file.parent / text).resolve()
            is_dir, is_file = path.is_dir(), path.is_file()
            size = path.stat().st_size if is_file and limit is not None else 0
        except (OSError, ValueError) as exc:  # a name too long, a NUL byte
            raise self.error(f"not a usable path: {exc}") from None
        if limit is not None and size > limit:
            raise self.error(
                f"{path} is {size} bytes; it may hold at most {limit}",
                hint="give the file csorch is to read (a patch of one change, not a dump)",
            )
        if directory and not is_dir:
            raise self.error(f"no such directory: {path}{_found(path)}")
        if not directory and not is_file:
            raise self.error(
                f"no such file: {path}{_found(path)}",
                hint="give a regular file (csorch reads no pipe, device or socket)",
            )
        return path

    def items(self) -> Iterator[View]:
        if not isinstance(self.node, yaml.SequenceNode):
            raise self.error(f"expected a list, found {self.kind()}")
        for i, node in enumerate(self.node.value):
            yield self._child(node, f"{self.key}[{i}]")

    def words(self, *, allow_single: bool = True) -> tuple[str, ...]:
        """A list of words; a single word is read as a one-item list when allowed."""
        if allow_single and isinstance(self.node, yaml.ScalarNode):
            return (self.word(),)
        return tuple(item.word() for item in self.items())

    def entries(self) -> dict[str, View]:
        """A free-form mapping (an environment): string keys, no duplicates."""
        return self._entries(None)

    def mapping(self, allowed: Mapping[str, str]) -> Fields:
        """The keys of a mapping, each checked against `allowed` (key -> what it is)."""
        return Fields(self, self._entries(allowed), allowed)

    def _entries(self, allowed: Mapping[str, str] | None) -> dict[str, View]:
        if not isinstance(self.node, yaml.MappingNode):
            raise self.error(f"expected a mapping, found {self.kind()}")
        seen: dict[str, View] = {}
        for key_node, value_node in self.node.value:
            key_view = self._child(key_node, self.key)
            key = key_view.value()
            if not isinstance(key, str):
                raise key_view.error(f"keys must be strings, found {key_view.kind()}")
            path = f"{self.key}.{key}" if self.key else key
            if allowed is not None and key not in allowed:
                close = difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.6)
                guess = f" (did you mean '{close[0]}'?)" if close else ""
                raise ConfigError(
                    self.file,
                    key_view.line,
                    path,
                    f"unknown key{guess}",
                    hint="allowed here: " + ", ".join(allowed),
                )
            if key in seen:
                raise ConfigError(
                    self.file,
                    key_view.line,
                    path,
                    f"duplicate key (first given on line {seen[key].line})",
                )
            seen[key] = self._child(value_node, path)
        return seen


class Fields:
    """The checked keys of one mapping."""

    def __init__(self, owner: View, values: dict[str, View], allowed: Mapping[str, str]) -> None:
        self.owner = owner
        self._values = values
        self._allowed = allowed

    def __contains__(self, key: str) -> bool:
        return key in self._values

    def get(self, key: str) -> View | None:
        view = self._values.get(key)
        # `key:` with nothing after it counts as absent
        if view is not None and isinstance(view.node, yaml.ScalarNode) and view.value() is None:
            return None
        return view

    def require(self, key: str) -> View:
        view = self.get(key)
        if view is None:
            path = f"{self.owner.key}.{key}" if self.owner.key else key
            raise ConfigError(
                self.owner.file, self.owner.line, path, f"missing: {self._allowed[key]}"
            )
        return view
