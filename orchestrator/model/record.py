"""Dict conversion for records: `to_dict`/`from_dict` driven by the dataclass fields.

Records are frozen dataclasses; the bundle stores them as JSON. Instead of a hand-written
pair of methods per record, `Record` walks the field type hints: enums by value, paths as
strings, tuples as lists, nested records as dicts. Unknown keys are an error, so a
corrupted or newer bundle is noticed instead of half-read.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from pathlib import Path
from typing import Any, ClassVar, TypeVar

R = TypeVar("R", bound="Record")


class Record:
    """Mixin for frozen dataclasses that travel through the bundle."""

    _hints: ClassVar[dict[type, dict[str, Any]]] = {}

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict of every field."""
        return {f.name: _dump(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls: type[R], data: dict[str, Any]) -> R:
        """Inverse of `to_dict`; missing keys take the field default."""
        hints = Record._hints.get(cls)
        if hints is None:
            hints = Record._hints[cls] = typing.get_type_hints(cls)
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown keys {unknown}")
        return cls(**{k: _load(hints[k], v) for k, v in data.items()})


def _dump(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_dump(v) for v in value]
    return value


def _load(tp: Any, value: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        return _load(args[0], value)
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_load(args[0], v) for v in value)
        return tuple(_load(a, v) for a, v in zip(args, value, strict=True))
    if isinstance(tp, type):
        if issubclass(tp, Record):
            return tp.from_dict(value)
        if issubclass(tp, enum.Enum):
            return tp(value)
        if tp is Path:
            return Path(value)
        if tp is float and isinstance(value, int):
            return float(value)
    return value
