"""Dict conversion for records: `to_dict`/`from_dict` driven by the dataclass fields.

Records are frozen dataclasses; the bundle stores them as JSON. Instead of a hand-written
pair of methods per record, `Record` walks the field type hints: enums by value, paths as
strings, tuples as lists, nested records as dicts. Unknown keys are an error, so a
corrupted or newer bundle is noticed instead of half-read, and so is a value that is not
of its field's type (TypeError naming the field): what the bundle, the journal, the cache
or a gate's directory hold may have been edited by hand, and a record that believed them
would carry a string where a count is compared, a list where a key is hashed, or a
float where `range` wants an int, far from where it was read.
"""

from __future__ import annotations

import dataclasses
import enum
import math
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
        if not isinstance(data, dict):
            raise TypeError(f"{cls.__name__}: is {type(data).__name__}, expected an object")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown keys {unknown}")
        out = {}
        for k, v in data.items():
            try:
                out[k] = _load(hints[k], v)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{cls.__name__}.{k}: {exc}") from None
        return cls(**out)


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
    """`value` (as JSON gives it) as type `tp`; TypeError when it is not one."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        return _load(args[0], value)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"is {type(value).__name__}, expected a list")
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_load(args[0], v) for v in value)
        if len(value) != len(args):
            raise TypeError(f"holds {len(value)} item(s), expected {len(args)}")
        return tuple(_load(a, v) for a, v in zip(args, value, strict=True))
    if isinstance(tp, type):
        if issubclass(tp, Record):
            return tp.from_dict(value)
        if issubclass(tp, enum.Enum):
            if isinstance(value, (dict, list)):
                raise TypeError(f"is {type(value).__name__}, expected one of {tp.__name__}")
            return tp(value)
        if tp is Path:
            return Path(_scalar(str, value))
        if tp in (str, int, float, bool):
            return _scalar(tp, value)
    return value


def _scalar(tp: type, value: Any) -> Any:
    """`value` when it is a `tp` (an int for a float too; a bool is no number, and a float
    is finite); TypeError (ValueError: not finite) otherwise."""
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, tp) or (tp is not bool and isinstance(value, bool)):
        raise TypeError(f"is {type(value).__name__}, expected {tp.__name__}")
    if tp is float and not math.isfinite(value):
        raise ValueError(f"is {value}, expected a finite number")
    return value
