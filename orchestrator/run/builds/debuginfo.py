"""Per-unit instrumentation read from the built binary itself, a proof that does not lean on
the compiler wrappers' record (which the build, running as the same user, could write to).

Every compile through csorch's wrappers under a sanitizer carries `-g` and
`-grecord-gcc-switches` (FLAGS: run/build.py adds them to the checker's), so each unit
of a linked binary has a DWARF compile unit whose producer names the switches it was
compiled with, and covers the addresses of its code.
Read from each ELF library and program the build made:
- every function in an executable section (its symbol table; the dynamic one where it is
  stripped) must lie in a compile unit: a function that lies in none was compiled without
  debug information, so by no wrapper (a compiler run by absolute path, an object that
  came with the source, debug information stripped);
- the unit it lies in must name the sanitizer as its producer's switches leave it (the last
  `-fsanitize=`/`-fno-sanitize=` wins), without a switch that takes it away from some code
  (an ignore list, an `asan-*` parameter), and must have recorded its switches at all.
The C runtime's start-up functions (crt1.o, crti.o, crtbegin.o: built without debug
information by the toolchain) may lie outside any unit, one each; so may the sanitizer's
own constructor and destructor that the compiler adds to each instrumented unit (local,
no more of each than there are units that carry the sanitizer), and a function that a
system or toolchain archive the link read defines (`libcudadevrt.a`, a static
`libstdc++.a`: units.system_archives, the archive itself read for its symbols).

The reader is pure Python (DWARF 2 to 5: .debug_info's first entry of each unit, its
.debug_abbrev, .debug_str, .debug_line_str, .debug_str_offsets, .debug_addr, and the
unit's ranges from .debug_aranges, its low/high pc, .debug_ranges or .debug_rnglists;
zlib-compressed sections are inflated). A binary it cannot read is named, never passed."""

from __future__ import annotations

import bisect
import functools
import re
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator import files
from orchestrator.carry import sections
from orchestrator.run.builds import units as records

SHF_EXECINSTR = 0x4
SHF_COMPRESSED = 0x800
SHT_SYMTAB, SHT_DYNSYM, SHT_NOBITS = 2, 11, 8
STT_NOTYPE, STT_FUNC, STT_GNU_IFUNC = 0, 2, 10
STB_LOCAL = 0
SHN_UNDEF, SHN_LORESERVE = 0, 0xFF00
ET_EXEC, ET_DYN = 2, 3
ELFCOMPRESS_ZLIB = 1
MAX_INFLATED = 4 << 30
#: the C runtime's own functions, built without debug information (crt1.o, crti.o,
#: crtbegin.o, crtend.o, glibc's static part): each may lie outside every unit, once
RUNTIME = frozenset(
    {
        "_start",
        "_init",
        "_fini",
        "_dl_relocate_static_pie",
        "deregister_tm_clones",
        "register_tm_clones",
        "__do_global_dtors_aux",
        "frame_dummy",
        "__libc_csu_init",
        "__libc_csu_fini",
    }
)
#: what the compiler adds to each unit it instruments, without debug information (gcc's
#: and clang's names): local, at most one each per instrumented unit
PER_UNIT = re.compile(r"^(?:_sub_[ID]_00099_\d+|asan\.module_[cd]tor(?:\.\d+)?)$")
#: the sanitizer runtimes' own interface: a binary that defines one of these replaces the
#: checker's (__asan_default_options, __asan_on_error, __sanitizer_report_error_summary,
#: an __asan_report_* entry point)
INTERFACE = re.compile(r"^__+(?:asan|lsan|hwasan|msan|tsan|ubsan|sanitizer|interceptor)_")
#: what the linker's --wrap=X makes of a definition of X
WRAPPED = re.compile(r"^__(?:wrap|real)_")
#: what every compile under a sanitizer gets (run/build.py adds them to the checker's)
FLAGS = ("-g", "-grecord-gcc-switches")
DW_TAG_COMPILE_UNIT, DW_TAG_PARTIAL_UNIT, DW_TAG_SKELETON_UNIT = 0x11, 0x3C, 0x4A
DW_AT_NAME, DW_AT_LOW_PC, DW_AT_HIGH_PC, DW_AT_PRODUCER = 0x03, 0x11, 0x12, 0x25
DW_AT_RANGES, DW_AT_STR_OFFSETS_BASE, DW_AT_ADDR_BASE, DW_AT_RNGLISTS_BASE = 0x55, 0x72, 0x73, 0x74
DW_AT_GNU_RANGES_BASE, DW_AT_GNU_ADDR_BASE = 0x2132, 0x2133
STRING_FORMS = {0x08, 0x0E, 0x1F, 0x1A, 0x25, 0x26, 0x27, 0x28, 0x1F02, 0x1D, 0x1F21}
ADDRESS_FORMS = {0x01, 0x1B, 0x29, 0x2A, 0x2B, 0x2C, 0x1F01}


class Unreadable(ValueError):
    """The binary's debug information cannot be read by this reader (damaged, or a form or
    compression it does not know)."""


@dataclass(frozen=True)
class Unit:
    """One compile unit: its source as the compiler named it, its producer (the compiler
    and, recorded, its switches), the address ranges of its code."""

    name: str
    producer: str
    ranges: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Function:
    name: str
    address: int
    local: bool


class _Reader:
    """A cursor over one section's bytes."""

    def __init__(self, data: bytes, order: str, pos: int = 0) -> None:
        self.data, self.order, self.pos = data, order, pos

    def fixed(self, size: int) -> int:
        if self.pos + size > len(self.data):
            raise Unreadable("debug information runs past its section's end")
        value = int.from_bytes(
            self.data[self.pos : self.pos + size], "little" if self.order == "<" else "big"
        )
        self.pos += size
        return value

    def uleb(self) -> int:
        value = shift = 0
        while True:
            if self.pos >= len(self.data) or shift > 63 * 2:
                raise Unreadable("a damaged LEB128 number")
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    def sleb(self) -> int:
        start = self.pos
        value = self.uleb()
        bits = 7 * (self.pos - start)
        return value - (1 << bits) if value & (1 << (bits - 1)) else value

    def cstring(self) -> str:
        end = self.data.find(b"\0", self.pos)
        if end < 0:
            raise Unreadable("a string without its end")
        text = self.data[self.pos : end].decode("utf-8", "replace")
        self.pos = end + 1
        return text

    def skip(self, size: int) -> None:
        if size < 0 or self.pos + size > len(self.data):
            raise Unreadable("debug information runs past its section's end")
        self.pos += size

    def length(self) -> tuple[int, int]:
        """An initial length: (the unit's length, its offsets' size)."""
        n = self.fixed(4)
        if n == 0xFFFFFFFF:
            return self.fixed(8), 8
        if n >= 0xFFFFFFF0:
            raise Unreadable("a reserved unit length")
        return n, 4


@dataclass
class _Elf:
    data: bytes
    table: sections.Table

    @property
    def order(self) -> str:
        return self.table.order

    def named(self) -> Iterator[tuple[str, tuple[int, ...]]]:
        for h in self.table.headers:
            yield sections.name_at(self.table.names, h[0]), h

    def section(self, name: str) -> bytes:
        for n, h in self.named():
            if n == name and h[1] != SHT_NOBITS:
                return self._inflated(name, h)
        return b""

    def _inflated(self, name: str, h: tuple[int, ...]) -> bytes:
        body = self.table.body(self.data, h)
        if not h[2] & SHF_COMPRESSED:
            return body
        fmt = self.order + ("IIQQ" if self.table.wide else "III")
        try:
            kind, *rest = struct.unpack_from(fmt, body, 0)
        except struct.error:
            raise Unreadable(f"{name}: a damaged compression header") from None
        if kind != ELFCOMPRESS_ZLIB:
            raise Unreadable(f"{name}: compressed in a way this reader does not inflate ({kind})")
        size = rest[1] if self.table.wide else rest[0]
        if size > MAX_INFLATED:
            raise Unreadable(f"{name}: {size} bytes inflated, past the reader's bound")
        try:
            return zlib.decompressobj().decompress(body[struct.calcsize(fmt) :], size)
        except zlib.error as exc:
            raise Unreadable(f"{name}: {exc}") from None


def _abbrevs(
    data: bytes, order: str, offset: int
) -> dict[int, tuple[int, list[tuple[int, int, int]]]]:
    """The abbreviation table at `offset`: code -> (tag, [(attribute, form, constant)])."""
    r = _Reader(data, order, offset)
    out: dict[int, tuple[int, list[tuple[int, int, int]]]] = {}
    while True:
        code = r.uleb()
        if code == 0:
            return out
        tag = r.uleb()
        r.skip(1)  # children
        specs = []
        while True:
            attr, form = r.uleb(), r.uleb()
            if attr == 0 and form == 0:
                break
            specs.append((attr, form, r.sleb() if form == 0x21 else 0))
        out[code] = (tag, specs)


def _value(r: _Reader, form: int, version: int, offset_size: int, address_size: int) -> object:
    """One attribute's raw value (an int, a str, or bytes for blocks)."""
    if form == 0x16:  # indirect
        return _value(r, r.uleb(), version, offset_size, address_size)
    sizes = {0x0B: 1, 0x0C: 1, 0x11: 1, 0x05: 2, 0x12: 2, 0x06: 4, 0x13: 4, 0x1C: 4, 0x07: 8,
             0x14: 8, 0x20: 8, 0x24: 8, 0x1E: 16, 0x25: 1, 0x26: 2, 0x27: 3, 0x28: 4,
             0x29: 1, 0x2A: 2, 0x2B: 3, 0x2C: 4}  # fmt: skip
    if form in sizes:
        return r.fixed(sizes[form])
    if form == 0x01:
        return r.fixed(address_size)
    if form in (0x0E, 0x17, 0x1F, 0x1D, 0x1F20, 0x1F21):
        return r.fixed(offset_size)
    if form == 0x10:  # ref_addr: the address's size in DWARF 2
        return r.fixed(address_size if version == 2 else offset_size)
    if form in (0x0F, 0x15, 0x1A, 0x1B, 0x22, 0x23, 0x1F01, 0x1F02):
        return r.uleb()
    if form == 0x0D:
        return r.sleb()
    if form == 0x08:
        return r.cstring()
    if form in (0x19, 0x21):  # flag_present, implicit_const
        return 0
    block = {0x0A: 1, 0x03: 2, 0x04: 4}
    if form in block or form in (0x09, 0x18):
        n = r.fixed(block[form]) if form in block else r.uleb()
        start = r.pos
        r.skip(n)
        return r.data[start : r.pos]
    raise Unreadable(f"a DWARF form this reader does not know (0x{form:x})")


def units(data: bytes) -> list[Unit]:
    """The compile units of the linked ELF file `data`, each with its producer and code
    ranges ([] where it has no debug information); Unreadable where it cannot be read."""
    try:
        elf = _Elf(data, sections.table(data))
    except sections.NotELF as exc:
        raise Unreadable(str(exc)) from None
    info = elf.section(".debug_info")
    if not info:
        return []
    abbrev = elf.section(".debug_abbrev")
    strs = {
        n: elf.section(n)
        for n in (".debug_str", ".debug_line_str", ".debug_str_offsets", ".debug_addr")
    }
    aranges = _aranges(elf.section(".debug_aranges"), elf.order)
    out = []
    r = _Reader(info, elf.order)
    try:
        while r.pos < len(info):
            start = r.pos
            length, offset_size = r.length()
            end = r.pos + length
            version = r.fixed(2)
            if version < 2 or version > 5:
                raise Unreadable(f"DWARF version {version}")
            if version == 5:
                unit_type, address_size, abbrev_offset = (
                    r.fixed(1),
                    r.fixed(1),
                    r.fixed(offset_size),
                )
                if unit_type in (4, 5):  # skeleton, split compile: a dwo id
                    r.skip(8)
                elif unit_type in (2, 6):  # type units: signature and type offset
                    r.skip(8 + offset_size)
            else:
                abbrev_offset, address_size = r.fixed(offset_size), r.fixed(1)
            code = r.uleb()
            table = _abbrevs(abbrev, elf.order, abbrev_offset)
            if code in table and table[code][0] in (
                DW_TAG_COMPILE_UNIT,
                DW_TAG_PARTIAL_UNIT,
                DW_TAG_SKELETON_UNIT,
            ):
                attrs = {}
                for attr, form, constant in table[code][1]:
                    value = _value(r, form, version, offset_size, address_size)
                    attrs[attr] = (form, constant if form == 0x21 else value)
                out.append(
                    _unit(
                        attrs, elf, strs, aranges.get(start, ()), offset_size, address_size, version
                    )
                )
            elif code and code not in table:
                raise Unreadable(f"unit at 0x{start:x}: abbreviation {code} not in its table")
            r.pos = end
    except (struct.error, IndexError) as exc:
        raise Unreadable(f"damaged debug information ({exc})") from None
    return out


def _aranges(data: bytes, order: str) -> dict[int, list[tuple[int, int]]]:
    """.debug_aranges: unit offset -> its [low, high) ranges."""
    out: dict[int, list[tuple[int, int]]] = {}
    r = _Reader(data, order)
    while r.pos < len(data):
        set_start = r.pos
        length, offset_size = r.length()
        end = r.pos + length
        r.skip(2)  # version
        unit, address_size, _segment = r.fixed(offset_size), r.fixed(1), r.fixed(1)
        if address_size not in (4, 8):
            raise Unreadable(f".debug_aranges: an address size of {address_size}")
        r.pos += (-(r.pos - set_start)) % (2 * address_size)
        while r.pos + 2 * address_size <= end:
            low, size = r.fixed(address_size), r.fixed(address_size)
            if low == 0 and size == 0:
                break
            out.setdefault(unit, []).append((low, low + size))
        r.pos = end
    return out


def _unit(
    attrs: dict[int, tuple[int, object]],
    elf: _Elf,
    strs: dict[str, bytes],
    aranged: Sequence[tuple[int, int]],
    offset_size: int,
    address_size: int,
    version: int,
) -> Unit:
    def base(*keys: int) -> int:
        for k in keys:
            if k in attrs and isinstance(attrs[k][1], int):
                return int(attrs[k][1])  # type: ignore[arg-type]
        return 8 if version == 5 else 0  # the first entry after a v5 table's header

    def string(key: int) -> str:
        if key not in attrs:
            return ""
        form, value = attrs[key]
        if isinstance(value, str):
            return value
        assert isinstance(value, int)
        if form in (0x0E,):
            return sections.name_at(strs[".debug_str"], value)
        if form == 0x1F:
            return sections.name_at(strs[".debug_line_str"], value)
        if form in (0x1A, 0x25, 0x26, 0x27, 0x28, 0x1F02):
            at = base(DW_AT_STR_OFFSETS_BASE) + value * offset_size
            r = _Reader(strs[".debug_str_offsets"], elf.order, at)
            return sections.name_at(strs[".debug_str"], r.fixed(offset_size))
        raise Unreadable(f"a string in a form this reader does not resolve (0x{form:x})")

    def address(key: int) -> int | None:
        if key not in attrs:
            return None
        form, value = attrs[key]
        assert isinstance(value, int)
        if form == 0x01:
            return value
        if form in (0x1B, 0x29, 0x2A, 0x2B, 0x2C, 0x1F01):
            at = base(DW_AT_ADDR_BASE, DW_AT_GNU_ADDR_BASE) + value * address_size
            return _Reader(strs[".debug_addr"], elf.order, at).fixed(address_size)
        return None

    ranges = list(aranged)
    low = address(DW_AT_LOW_PC)
    if not ranges and DW_AT_HIGH_PC in attrs and low is not None:
        form, value = attrs[DW_AT_HIGH_PC]
        high = address(DW_AT_HIGH_PC) if form in ADDRESS_FORMS else low + int(value)  # type: ignore[call-overload]
        if high is not None:
            ranges.append((low, high))
    if not ranges and DW_AT_RANGES in attrs:
        ranges = _ranges(elf, attrs, low or 0, offset_size, address_size, version, strs, base)
    return Unit(string(DW_AT_NAME), string(DW_AT_PRODUCER), tuple(r for r in ranges if r[1] > r[0]))


def _ranges(
    elf, attrs, low, offset_size, address_size, version, strs, base
) -> list[tuple[int, int]]:  # type: ignore[no-untyped-def]
    """A unit's DW_AT_ranges: .debug_ranges (DWARF 2-4) or .debug_rnglists (5)."""
    form, value = attrs[DW_AT_RANGES]
    out: list[tuple[int, int]] = []
    if version < 5:
        r = _Reader(
            elf.section(".debug_ranges"), elf.order, int(value) + base(DW_AT_GNU_RANGES_BASE)
        )
        top = (1 << (8 * address_size)) - 1
        while True:
            a, b = r.fixed(address_size), r.fixed(address_size)
            if a == 0 and b == 0:
                return out
            if a == top:
                low = b
            else:
                out.append((low + a, low + b))
    lists = elf.section(".debug_rnglists")
    at = int(value)
    if form == 0x23:  # rnglistx: an index into the offsets after the table's header
        list_base = base(DW_AT_RNGLISTS_BASE)
        at = list_base + _Reader(lists, elf.order, list_base + at * offset_size).fixed(offset_size)
    r = _Reader(lists, elf.order, at)

    def addrx(i: int) -> int:
        return _Reader(
            strs[".debug_addr"], elf.order, base(DW_AT_ADDR_BASE) + i * address_size
        ).fixed(address_size)

    while True:
        kind = r.fixed(1)
        if kind == 0:
            return out
        if kind == 1:
            low = addrx(r.uleb())
        elif kind == 2:
            out.append((addrx(r.uleb()), addrx(r.uleb())))
        elif kind == 3:
            s = addrx(r.uleb())
            out.append((s, s + r.uleb()))
        elif kind == 4:
            a, b = r.uleb(), r.uleb()
            out.append((low + a, low + b))
        elif kind == 5:
            low = r.fixed(address_size)
        elif kind == 6:
            out.append((r.fixed(address_size), r.fixed(address_size)))
        elif kind == 7:
            s = r.fixed(address_size)
            out.append((s, s + r.uleb()))
        else:
            raise Unreadable(f".debug_rnglists: an entry kind this reader does not know ({kind})")


def _symbols(data: bytes, both: bool = False) -> Iterator[tuple[str, int, int, int, int, bool]]:
    """(name, type, section index, value, size, local) of each symbol the ELF file `data`
    defines, from its symbol table (the dynamic one where it has none; `both`: each)."""
    elf = _Elf(data, sections.table(data))
    headers = elf.table.headers
    static = [h for h in headers if h[1] == SHT_SYMTAB]
    dynamic = [h for h in headers if h[1] == SHT_DYNSYM]
    fmt, size = (elf.order + "IBBHQQ", 24) if elf.table.wide else (elf.order + "IIIBBH", 16)
    for h in [*static, *dynamic] if both else static or dynamic:
        strings = elf.table.body(data, headers[h[6]]) if h[6] < len(headers) else b""
        body = elf.table.body(data, h)
        for off in range(size, len(body) - size + 1, size):
            if elf.table.wide:
                name, info, _other, shndx, value, length = struct.unpack_from(fmt, body, off)
            else:
                name, value, length, info, _other, shndx = struct.unpack_from(fmt, body, off)
            if shndx == SHN_UNDEF:
                continue
            local = info >> 4 == STB_LOCAL
            yield sections.name_at(strings, name), info & 0xF, shndx, value, length, local


def functions(data: bytes) -> list[Function]:
    """The functions defined in an executable section of the ELF file `data` (its symbol
    table; the dynamic one where it has none), each with its address."""
    headers = sections.table(data).headers
    out = []
    for name, kind, shndx, value, length, local in _symbols(data):
        if kind not in (STT_FUNC, STT_GNU_IFUNC) or shndx >= SHN_LORESERVE:
            continue
        if shndx >= len(headers) or not headers[shndx][2] & SHF_EXECINSTR or length == 0:
            continue
        out.append(Function(name, value, local))
    return out


@functools.cache
def runtime_functions(sanitizer: str) -> frozenset[str]:
    """The functions the `sanitizer` runtime the compiler links exports (its interface and
    its interceptors: malloc, free, memcpy, ...); empty where there is none to read."""
    if sanitizer != "address":
        return frozenset()
    from orchestrator.backends.asan.backend import find_runtime
    from orchestrator.errors import CheckerUnavailable

    try:
        data = files.read_bytes(find_runtime(), records.LINKED)
        return frozenset(
            name
            for name, kind, _shndx, _value, _size, local in _symbols(data, both=True)
            if not local and kind in (STT_FUNC, STT_GNU_IFUNC) and name not in RUNTIME
        )
    except (CheckerUnavailable, OSError, sections.NotELF, struct.error, IndexError):
        return frozenset()


def replaced(
    data: bytes,
    sanitizer: str,
    system: frozenset[str] = frozenset(),
    inside: Callable[[int], bool] = lambda _address: True,
) -> list[str]:
    """The sanitizer runtime's own symbols that the ELF file `data` defines (a symbol of its
    interface, `__asan_*`, `__sanitizer_*`, ..., or one the runtime intercepts, `malloc`;
    under `--wrap=X` as `__wrap_X`): the binary's definition is the one its calls reach,
    and the checker's (its options, its report path, its report entry points, the
    allocator whose redzones it watches) never runs. Whatever the source spells (an asm
    label, a linker's `--defsym` or `--wrap`), the symbol table shows it. A function that a
    system archive the link read defines (`system`: a static runtime) passes, and so does
    an intercepted name outside the build's own units (`inside(address)`: a static C++
    runtime's `__cxa_throw`)."""
    ours = runtime_functions(sanitizer)
    out: list[str] = []
    for name, kind, _shndx, value, _size, local in _symbols(data, both=True):
        if kind not in (STT_NOTYPE, STT_FUNC, STT_GNU_IFUNC) or name in system or name in out:
            continue  # a data object: the runtime's own variable, copied in by the link
        bare = WRAPPED.sub("", name)
        if INTERFACE.match(bare) or (not local and bare in ours and inside(value)):
            out.append(name)
    return out


def switches(producer: str) -> list[str]:
    """The switches a producer string records (after the compiler's name and version)."""
    words = producer.split()
    first = next((i for i, w in enumerate(words) if w.startswith("-")), len(words))
    return words[first:]


def carries(producer: str, sanitizer: str) -> str:
    """Why the unit a producer describes does not carry `sanitizer` ("" when it does)."""
    words = switches(producer)
    if not words:
        who = producer or "no producer"
        return f"its switches are not recorded ({who}): not compiled by csorch's wrappers"
    on = False
    for w in words:
        for prefix, value in (("-fsanitize=", True), ("-fno-sanitize=", False)):
            if w.startswith(prefix):
                names = w[len(prefix) :].split(",")
                if sanitizer in names or (not value and "all" in names):
                    on = value
    bad = records.opt_out(words)
    if bad:
        return f"compiled with {bad}, which takes {sanitizer} away again"
    if not on:
        return f"compiled without -fsanitize={sanitizer} ({producer[:160]})"
    return ""


def archived(paths: Iterable[str]) -> frozenset[str]:
    """The functions the objects of the ar archives at `paths` define."""
    out: set[str] = set()
    for path in paths:
        for _name, body in records.members(path) or []:
            try:
                out.update(f.name for f in functions(body))
            except (sections.NotELF, struct.error, IndexError):
                continue
    return frozenset(out)


def _in(spans: Sequence[tuple[int, int, Unit]], address: int) -> Unit | None:
    """The unit of `spans` (sorted (low, high, unit)) whose code holds `address`."""
    i = bisect.bisect_right(spans, address, key=lambda s: s[0]) - 1
    return next(
        (
            spans[j][2]
            for j in range(i, max(i - 64, -1), -1)
            if spans[j][0] <= address < spans[j][1]
        ),
        None,
    )


def problems(
    data: bytes, sanitizer: str, shown: str, system: frozenset[str] = frozenset()
) -> list[str]:
    """What in the linked binary `data` (named `shown`) is not instrumented with
    `sanitizer`, function by function, read from its own debug information; [] when every
    function lies in a unit that carries it (or, outside every unit, is one of `system`:
    what a system archive the link read defines)."""
    head = data[:18]
    if len(head) < 18 or int.from_bytes(head[16:18], "little" if head[5] == 1 else "big") not in (
        ET_EXEC,
        ET_DYN,
    ):
        return []
    try:
        found = units(data)
        funcs = functions(data)
        spans = sorted(((lo, hi, u) for u in found for lo, hi in u.ranges), key=lambda s: s[:2])
        theirs = replaced(data, sanitizer, system, lambda a: _in(spans, a) is not None)
    except (Unreadable, sections.NotELF, struct.error) as exc:
        return [
            f"{shown}: its debug information cannot be read ({exc}), so its units cannot be checked"
        ]
    out: list[str] = []
    if theirs:
        first = ", ".join(theirs[:3]) + (f" (+{len(theirs) - 3} more)" if len(theirs) > 3 else "")
        out.append(
            f"{shown}: defines {first}, the {sanitizer} sanitizer runtime's own: its calls "
            "reach the binary's definition, never the checker's (remove the definition, "
            "the asm label or the linker's --defsym/--wrap that makes it)"
        )
    runtime_seen: set[str] = set()
    bad_units: dict[str, str] = {}
    instrumented = sum(1 for u in found if u.ranges and not carries(u.producer, sanitizer))
    per_unit: dict[str, int] = {}
    outside: list[str] = []  # the functions in no unit
    for f in sorted(funcs, key=lambda f: f.address):
        unit = _in(spans, f.address)
        if unit is None:
            if f.name in RUNTIME and f.name not in runtime_seen:
                runtime_seen.add(f.name)
                continue
            if f.local and PER_UNIT.match(f.name) and per_unit.get(f.name, 0) < instrumented:
                per_unit[f.name] = per_unit.get(f.name, 0) + 1
                continue
            if f.name in system:
                continue
            outside.append(f.name or hex(f.address))
            continue
        why = carries(unit.producer, sanitizer)
        if why and unit.name not in bad_units:
            bad_units[unit.name] = why
            out.append(f"{shown}: unit {unit.name or '(unnamed)'} (function {f.name}) {why}")
    if len(outside) == 1:
        out.insert(0, f"{shown}: function {outside[0]} lies in no unit compiled with debug "
                      "information (compiled past csorch's wrappers, or its debug information "
                      "stripped)")  # fmt: skip
    elif outside:  # a stripped binary: every function; one line for them all
        first = ", ".join(outside[:3])
        out.insert(0, f"{shown}: {len(outside)} functions ({first}, ...) lie in no unit "
                      "compiled with debug information (compiled past csorch's wrappers, "
                      "or the binary stripped after its link)")  # fmt: skip
    return out


def checked(
    binaries: Iterable[Path],
    sanitizer: str,
    show: Callable[[Path], str],
    system: frozenset[str] = frozenset(),
) -> list[str]:
    """problems() of each ELF library and program among `binaries` (objects, archives and
    files that are not ELF pass: what runs is what was linked)."""
    out: list[str] = []
    for path in binaries:
        try:
            with files.open_regular(path, records.LINKED) as handle:
                if handle.read(4) != sections.ELF_MAGIC:
                    continue
            data = files.read_bytes(path, records.LINKED)
        except OSError:
            continue  # gone since: the record's check names what it linked
        out += problems(data, sanitizer, show(path), system)
    return out
