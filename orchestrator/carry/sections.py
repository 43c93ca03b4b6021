"""What a binary executes, as digests: the second proof of a carried verdict.

An ELF file's sections that the loader maps (SHF_ALLOC: code, read-only data, data,
relocations, dynamic symbols, unwind tables) are hashed one by one; `.bss` and other
sections without content count by their size. Left out: sections the loader does not
map (debug information, the symbol table, comments), and the build id note, which is a
hash over the whole file, debug information included. Two builds whose loaded sections
match execute the same code on the same data, whatever their line tables say.

A file that is not ELF (a Python module a wheel installs) has no sections: its digest is
the file's. A damaged ELF file raises NotELF, so it is compared as bytes, never trusted.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping

ELF_MAGIC = b"\x7fELF"
SHF_ALLOC = 0x2
SHT_NOBITS = 8
SKIPPED = frozenset({".note.gnu.build-id"})
MAX_SECTIONS = 65280  # SHN_LORESERVE: more is an extended count this reader does not take


class NotELF(ValueError):
    """The bytes are not an ELF file this reader takes (or a damaged one)."""


def digests(data: bytes) -> dict[str, str]:
    """Section name -> sha256 (of the content; `size:N` where it has none) of every
    loaded section of the ELF file `data`; NotELF where it is none."""
    if data[:4] != ELF_MAGIC or len(data) < 64:
        raise NotELF("no ELF header")
    klass, order = data[4], data[5]
    if klass not in (1, 2) or order not in (1, 2):
        raise NotELF("an ELF class or byte order this reader does not know")
    end = "<" if order == 1 else ">"
    wide = klass == 2
    try:
        if wide:
            (shoff,) = struct.unpack_from(end + "Q", data, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", data, 0x3A)
            fmt = end + "IIQQQQIIQQ"
        else:
            (shoff,) = struct.unpack_from(end + "I", data, 0x20)
            shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", data, 0x2E)
            fmt = end + "IIIIIIIIII"
        if shnum == 0 or shnum > MAX_SECTIONS or shentsize < struct.calcsize(fmt):
            raise NotELF("no section table this reader takes")
        headers = [struct.unpack_from(fmt, data, shoff + i * shentsize) for i in range(shnum)]
        names = headers[shstrndx]
        strtab = data[names[4] : names[4] + names[5]]
    except (struct.error, IndexError) as exc:
        raise NotELF(f"a damaged section table ({exc})") from None
    found: dict[str, str] = {}
    for name_at, kind, flags, _addr, offset, size, *_ in headers:
        if not flags & SHF_ALLOC:
            continue
        end_of_name = strtab.find(b"\0", name_at)
        name = strtab[name_at : end_of_name if end_of_name >= 0 else None].decode(
            "utf-8", errors="replace"
        )
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
