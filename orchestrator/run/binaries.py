"""Whether a build really holds what its checker needs, read from its ELF binaries:
an AddressSanitizer build must be instrumented (a binary that references `__asan_init`
or another `__asan_` symbol, or needs libasan), a compute-sanitizer build must carry
device code (an `.nv_fatbin` or `__nv_relfatbin` section: what `cuobjdump --list-elf`
lists). A build that does not is inconclusive, never a clean run of nothing: a setup.py
that builds CUDA only when `torch.cuda.is_available()` silently builds CPU-only on a
host without a GPU, and a Makefile that sets CFLAGS drops csorch's flags.

The reader is pure Python over the file (section headers, .dynsym, .dynamic): no
process, no tool needed. Files that are not ELF (wheels, scripts) are not read."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from orchestrator import files
from orchestrator.carry import sections
from orchestrator.model import Build, BuildKind, Variant

SHT_DYNSYM, SHT_DYNAMIC = 11, 6
DT_NEEDED = 1
DEVICE_SECTIONS = (".nv_fatbin", "__nv_relfatbin", ".nvFatBinSegment")
MAX_BYTES = files.BINARY.limit  # a binary past this is not read (its check is skipped, and said)


@dataclass(frozen=True)
class Elf:
    """What the checks need from one ELF file."""

    sections: tuple[str, ...]
    symbols: frozenset[str]  # dynamic symbols, defined or not
    needed: tuple[str, ...]  # DT_NEEDED libraries

    @property
    def asan(self) -> bool:
        return any(s.startswith("__asan_") for s in self.symbols) or any(
            n.startswith("libasan") for n in self.needed
        )

    @property
    def device_code(self) -> bool:
        return any(s in DEVICE_SECTIONS for s in self.sections)


def read_elf(data: bytes) -> Elf | None:
    """The sections, dynamic symbols and needed libraries of an ELF image (32 or 64 bit,
    either byte order; its section table read by carry/sections.table); None when `data`
    is not ELF or is malformed."""
    try:
        elf = sections.table(data)
    except sections.NotELF:
        return None
    headers, order = elf.headers, elf.order
    try:
        names = tuple(sections.name_at(elf.names, h[0]) for h in headers)
        symbols: set[str] = set()
        needed: list[str] = []
        for h in headers:
            if h[1] == SHT_DYNSYM:
                strings = elf.body(data, headers[h[6]])
                size = 24 if elf.wide else 16
                entries = elf.body(data, h)
                for off in range(size, len(entries) - size + 1, size):  # entry 0 is null
                    at = struct.unpack_from(order + "I", entries, off)[0]
                    symbols.add(sections.name_at(strings, at))
            elif h[1] == SHT_DYNAMIC:
                strings = elf.body(data, headers[h[6]])
                fmt, size = (order + "qQ", 16) if elf.wide else (order + "iI", 8)
                entries = elf.body(data, h)
                for off in range(0, len(entries) - size + 1, size):
                    tag, value = struct.unpack_from(fmt, entries, off)
                    if tag == DT_NEEDED:
                        needed.append(sections.name_at(strings, value))
    except (struct.error, IndexError):
        return None
    return Elf(names, frozenset(symbols - {""}), tuple(needed))


def elves(root: Path, relpaths: Iterable[str]) -> dict[str, Elf]:
    """The ELF files among a build entry's recorded binaries, by path."""
    out = {}
    for rel in relpaths:
        path = root / rel
        try:
            if not path.is_file() or path.stat().st_size > MAX_BYTES:
                continue
            with files.open_regular(path) as handle:
                if handle.read(4) != sections.ELF_MAGIC:
                    continue
            elf = read_elf(files.read_bytes(path, files.BINARY))
        except OSError:
            continue
        if elf is not None:
            out[rel] = elf
    return out


def _names(paths: Iterable[str]) -> str:
    listed = sorted(paths)
    return ", ".join(listed[:4]) + (f" (+{len(listed) - 4} more)" if len(listed) > 4 else "")


def problem(
    root: Path,
    relpaths: Iterable[str],
    *,
    sanitizer: str,
    device_code: bool,
    prebuilt: bool = False,
) -> str:
    """Why the build's binaries cannot serve its checker ("" when they can, or when it
    has no ELF binary to judge): `sanitizer` "address" asks for ASan instrumentation,
    `device_code` for GPU code (an extension under compute-sanitizer)."""
    found = elves(root, relpaths)
    if not found:
        return ""
    if sanitizer == "address":
        if any(e.asan for e in found.values()):
            return ""
        if prebuilt:
            return (
                f"the prebuilt binary ({_names(found)}) is not instrumented for ASan, as a "
                "release binary is not, so ASan would watch none of its code: run a prebuilt "
                "control under compute-sanitizer (it needs no rebuild), or use a rebuilt "
                "control (the release's source with `build: pip`) under ASan"
            )
        return (
            f"no binary of this ASan build is instrumented ({_names(found)}: none references "
            "__asan_init or links libasan), so ASan would watch nothing: the build dropped "
            "csorch's flags. A jit description must pass --sanitize address (or $CFLAGS, "
            "$CXXFLAGS, $LDFLAGS) to its compiler; a Makefile must add to CFLAGS/LDFLAGS "
            "(CFLAGS += ...), not set them; a setup.py must not replace extra_compile_args "
            "from the environment"
        )
    if not device_code or any(e.device_code for e in found.values()):
        return ""
    return (
        f"no binary of this build has GPU device code ({_names(found)}: no .nv_fatbin "
        "section), so compute-sanitizer would watch no kernel. A setup.py that builds CUDA "
        "only when torch.cuda.is_available() (or a CUDA_HOME check) builds CPU-only where "
        "no GPU is visible at build time: force it in the variant's build env, e.g. "
        "build: {kind: wheel, env: {FORCE_CUDA: '1', TORCH_CUDA_ARCH_LIST: '9.0'}}; check "
        "with cuobjdump --list-elf on the built .so"
    )


def require(entry: Path, build: Build, variant: Variant, sanitizer: str, device_code: bool, fail):  # type: ignore[no-untyped-def]
    """Raise `fail(problem)` (a BuildError: the variant is not built, its attempts are
    inconclusive) when the finished build cannot serve its checker. The device-code
    check is for extensions (jit, wheel); a command build's programs may be CPU-side."""
    needs_gpu = device_code and variant.build.kind is not BuildKind.COMMAND
    why = problem(
        entry,
        [a.path for a in build.artifacts],
        sanitizer=sanitizer,
        device_code=needs_gpu,
        prebuilt=variant.build.kind is BuildKind.PREBUILT,
    )
    if why:
        raise fail(why)
