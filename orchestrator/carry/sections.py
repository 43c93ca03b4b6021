"""What a binary executes, as digests: the second proof of a carried verdict.

An ELF file's sections that the loader maps (SHF_ALLOC: code, read-only data, data,
relocations, dynamic symbols, unwind tables) are hashed one by one; `.bss` and other
sections without content count by their size. Left out: sections the loader does not
map (debug information, the symbol table, comments), and the build id note, which is a
hash over the whole file, debug information included. Two builds whose loaded sections
match execute the same code on the same data, whatever their line tables say.

A file that is not ELF (a Python module a wheel installs) has no sections: its digest is
the file's. A damaged ELF file raises NotELF, so it is compared as bytes, never trusted.
`executes` gives one digest per built file, the one a build records per artifact: a
Python module by its AST without docstrings, a wheel by its members.
"""

from __future__ import annotations

import hashlib
import io
import mmap
import os
import re
import struct
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from orchestrator import files
from orchestrator.carry.classify import python_form

ELF_MAGIC = b"\x7fELF"
SHF_ALLOC = 0x2
SHT_NOBITS = 8
SKIPPED = frozenset({".note.gnu.build-id"})
MAX_SECTIONS = 65280  # SHN_LORESERVE: more is an extended count this reader does not take


class NotELF(ValueError):
    """The bytes are not an ELF file this reader takes (or a damaged one)."""


@dataclass(frozen=True)
class Table:
    """An ELF file's section headers as read (run/binaries reads the same table)."""

    wide: bool  # 64 bit
    order: str  # struct's byte order: "<" or ">"
    #: each section's raw header: (name, type, flags, addr, offset, size, link, ...)
    headers: tuple[tuple[int, ...], ...]
    names: bytes  # the section name table (b"" where its index is out of range)

    def body(self, data: bytes, header: tuple[int, ...]) -> bytes:
        """A section's bytes (cut at the file's end)."""
        return data[header[4] : header[4] + header[5]]


def table(data: bytes) -> Table:
    """The section headers of the ELF file `data` (none where it has no section table);
    NotELF where it is no ELF file, or one of a class, byte order or header size this
    reader does not take."""
    if data[:4] != ELF_MAGIC or len(data) < 64:
        raise NotELF("no ELF header")
    klass, endian = data[4], data[5]
    if klass not in (1, 2) or endian not in (1, 2):
        raise NotELF("an ELF class or byte order this reader does not know")
    order = "<" if endian == 1 else ">"
    wide = klass == 2
    try:
        if wide:
            (shoff,) = struct.unpack_from(order + "Q", data, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", data, 0x3A)
            fmt = order + "IIQQQQIIQQ"
        else:
            (shoff,) = struct.unpack_from(order + "I", data, 0x20)
            shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", data, 0x2E)
            fmt = order + "IIIIIIIIII"
        if shnum > MAX_SECTIONS or (shnum and shentsize < struct.calcsize(fmt)):
            raise NotELF("no section table this reader takes")
        headers = tuple(struct.unpack_from(fmt, data, shoff + i * shentsize) for i in range(shnum))
    except struct.error as exc:
        raise NotELF(f"a damaged section table ({exc})") from None
    names = b""
    if shstrndx < len(headers):
        names = data[headers[shstrndx][4] : headers[shstrndx][4] + headers[shstrndx][5]]
    return Table(wide, order, headers, names)


def name_at(strings: bytes, offset: int) -> str:
    """The NUL-ended string at `offset` of a string table."""
    end = strings.find(b"\0", offset)
    return strings[offset : end if end >= 0 else len(strings)].decode("utf-8", "replace")


def digests(data: bytes) -> dict[str, str]:
    """Section name -> sha256 (of the content; `size:N` where it has none) of every
    loaded section of the ELF file `data`; NotELF where it is none."""
    elf = table(data)
    if not elf.headers or not elf.names:
        raise NotELF("no section table this reader takes")
    found: dict[str, str] = {}
    for name_offset, kind, flags, _addr, offset, size, *_ in elf.headers:
        if not flags & SHF_ALLOC:
            continue
        name = name_at(elf.names, name_offset)
        if name in SKIPPED:
            continue
        if kind == SHT_NOBITS:
            digest = f"size:{size}"
        else:
            if offset + size > len(data):
                raise NotELF(f"section {name} lies past the file's end")
            digest = hashlib.sha256(data[offset : offset + size]).hexdigest()
        key = name
        n = 1
        while key in found:  # two sections of one name: both count, in file order
            n += 1
            key = f"{name}#{n}"
        found[key] = digest
    return found


def identity(data: bytes) -> dict[str, str]:
    """What executes of a built file: its loaded sections' digests, else (not ELF, or one
    this reader refuses) the whole file's, under the key `file`."""
    try:
        return digests(data)
    except NotELF:
        return {"file": hashlib.sha256(data).hexdigest()}


def differences(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    """The sections whose digest differs, or that one side lacks ([] when the same)."""
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))


#: a wheel's record of its members' hashes: derived from the members, executes nothing
ZIP_SKIPPED = re.compile(r"^[^/]+\.dist-info/RECORD$")
ZIP_MAGIC = b"PK\x03\x04"
ZIPS = (".whl", ".zip", ".egg")
MAX_MEMBER_BYTES = 1 << 30


def executes(name: str, data: bytes | mmap.mmap) -> str:
    """One digest of what the built file `name` (its bytes `data`) executes: an ELF
    file's loaded sections; a Python module's AST without docstrings (the first proof's
    form: a docstring copied into a package is no code); a zip archive (a wheel) by its
    members, each so, its RECORD of hashes left out; anything else, its bytes."""
    return hashlib.sha256(_form(name, data).encode()).hexdigest()


def _form(name: str, data: bytes | mmap.mmap) -> str:
    if data[:4] == ELF_MAGIC:
        try:
            return "elf\n" + "".join(f"{k}={v}\n" for k, v in sorted(digests(data).items()))
        except NotELF:
            pass
    elif name.endswith((".py", ".pyi")):
        try:
            return "python\n" + python_form(data)
        except (SyntaxError, ValueError, RecursionError):
            pass
    elif data[:4] == ZIP_MAGIC and name.endswith(ZIPS):
        members = _members(bytes(data))
        if members is not None:
            return _zip_form(members)
    return "bytes\n" + hashlib.sha256(data).hexdigest()


def _zip_form(members: Mapping[str, str]) -> str:
    return "zip\n" + "".join(f"{k}={v}\n" for k, v in sorted(members.items()))


def _members(data: bytes | BinaryIO) -> dict[str, str] | None:
    """Member name -> `executes` digest of a zip archive (None: not one this reads)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data) if isinstance(data, bytes) else data) as z:
            out = {}
            for info in z.infolist():
                if info.is_dir() or ZIP_SKIPPED.match(info.filename):
                    continue
                if info.file_size > MAX_MEMBER_BYTES:
                    return None
                out[info.filename] = executes(info.filename, z.read(info))
            return out
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError):
        return None


def executes_file(path: Path) -> str:
    """`executes` of the file at `path`, mapped rather than read (a library of a GB)."""
    with files.open_regular(path, files.BINARY) as f:
        if os.fstat(f.fileno()).st_size == 0:
            return executes(path.name, b"")
        if path.name.endswith(ZIPS) and f.read(4) == ZIP_MAGIC:
            members = _members(f)  # read member by member, never the archive whole
            if members is not None:
                return hashlib.sha256(_zip_form(members).encode()).hexdigest()
            f.seek(0)
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return executes(path.name, data)
