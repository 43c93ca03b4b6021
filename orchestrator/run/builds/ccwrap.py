"""The compiler wrapper a build runs instead of its compiler (run/builds/wrappers.py writes
the stubs that start it): `python -I -S ccwrap.py CONFIG NAME ARGS...`.

It runs the real compiler NAME (an absolute path in CONFIG) with ARGS and, where the
invocation compiles or links, the checker's flags added last, so that a Makefile that sets
its own CFLAGS cannot drop them (for gcc the last -fsanitize/-fno-sanitize wins). Each
compile or link that succeeds is one JSON line in CONFIG's record file: its argv, cwd,
sources, outputs and inputs, with the sha256 of each output and input, which csorch checks
after the build (run/builds/units.py). Standard library only, no site: it starts once per
compile."""

import hashlib
import json
import os
import shlex
import sys

SOURCE_EXT = (".c", ".cc", ".cp", ".cpp", ".cxx", ".c++", ".C", ".CPP", ".cu", ".i", ".ii",
              ".s", ".S", ".sx", ".m", ".mm")  # fmt: skip
# options whose value is the next argument (gcc's and nvcc's), so that it is not an input
_VALUED = (
    "-o -I -D -U -include -imacros -isystem -iquote -idirafter -x -MF -MT -MQ -L -l -T "
    "-Xlinker -Xassembler -Xpreprocessor -Xcompiler -Xptxas -Xnvlink -Xfatbin -Xcudafe "
    "-Xarchive -z -u -e --param -isysroot -iprefix -iwithprefix -iwithprefixbefore -ccbin "
    "--compiler-bindir -arch -gencode -code -cudart --cudart -odir --output-directory -std "
    "-maxrregcount -t --threads -rdc --relocatable-device-code --compiler-options "
    "--linker-options --generate-code --gpu-architecture --gpu-code --output-file "
    "--include-path --define-macro --library --library-path --pre-include -MJ"
)
VALUED = frozenset(_VALUED.split())
COMPILE_ONLY = frozenset({"-c", "-S", "--compile", "-ptx", "-cubin", "-fatbin", "-optix-ir"})
PREPROCESS = frozenset({"-E", "-M", "-MM", "--preprocess", "-dryrun", "--dryrun"})
DEVICE_LINK = frozenset({"-dlink", "--device-link", "-lib", "--lib"})


#: what lets a build put programs of its own in the compiler's place (cc1, as, collect2)
#: or edit what the compiler made before it is assembled: under a sanitizer, refused where
#: the build could have written what they name (`foreign`). The instrumented code must be
#: the compiler's own output, or the unit's debug information (which names -fsanitize=)
#: vouches for code the sanitizer never saw.
DRIVER_SWITCHES = ("-B", "-wrapper", "-specs", "--specs", "-fplugin=", "-fpass-plugin=")
ASSEMBLY = (".s", ".S", ".sx", ".asm")
ASSEMBLER_LANGUAGES = ("assembler", "assembler-with-cpp")
#: the environment that points the compiler driver at other programs, or a compiler
#: cache at another compiler or a command before it: never passed on
DRIVER_ENV = ("GCC_EXEC_PREFIX", "COMPILER_PATH", "CCACHE_PREFIX", "CCACHE_PREFIX_CPP",
              "CCACHE_COMPILER", "CCACHE_CC", "CCACHE_PATH")  # fmt: skip


def _writable(value, own=()):
    """Whether the program, directory or file a driver switch names could be the build's
    own: writable now (in csorch's sandbox only the build's tree, output and private /tmp
    are), and, where `own` names the build's directories (its tree, its output, the
    temporary ones), inside one of them: unsandboxed, a toolchain the user may write (a
    conda environment's `-B .../compiler_compat`) is not the build's. A name without a
    slash is looked up where the driver looks: not the build's."""
    if not value:
        return False
    path = value.split(",")[0] if "/" in value else ""
    if not path:
        return False
    real = os.path.realpath(path)
    if own and not any(real == d or real.startswith(d.rstrip("/") + "/") for d in own):
        return False
    return os.access(real, os.W_OK)


def foreign(args, own=()):
    """Why this argv is no compile by the compiler's own programs ("" when it is): a switch
    that hands a stage to a program or file the build could have written (-B, -wrapper,
    -specs, a plugin), or assembly as input (`-x assembler`, a .s or .S file: a compiler's
    -S output can be edited before it is assembled, and assembly carries no checks the
    compiler made)."""
    language = ""
    for i, a in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else ""
        prev = args[i - 1] if i else ""
        if a in ("-B", "-wrapper", "-specs"):
            if _writable(nxt, own):
                return f"{a} {nxt}"
        elif a.startswith(DRIVER_SWITCHES):
            value = a[2:] if a.startswith("-B") else a.partition("=")[2]
            if _writable(value, own):
                return a
        if a == "-x":
            language = nxt
        elif a.startswith("-x") and len(a) > 2:
            language = a[2:]
        elif a.startswith("-") or prev in VALUED or prev in ("-B", "-wrapper", "-specs"):
            continue
        elif language in ASSEMBLER_LANGUAGES or (language in ("", "none") and a.endswith(ASSEMBLY)):
            return f"{a} (assembly)"
    return ""


#: the chain of wrapped tools running (gcc inside nvcc); a tool inside itself (a compiler
#: cache that looks its compiler up on PATH finds this stub again) runs the real one as is
ACTIVE = "CSORCH_CCWRAP_ACTIVE"


def _file(path):
    """A file an invocation read or wrote: its sha256, mtime and kind (object, elf, ar,
    other)."""
    h, head = hashlib.sha256(), b""
    try:
        st = os.stat(path)
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                head = head or chunk[:18]
                h.update(chunk)
    except OSError:
        return {"path": path, "sha256": "", "mtime_ns": 0, "kind": "missing"}
    kind = "other"
    if head.startswith(b"\x7fELF"):  # e_type 1: a relocatable object
        kind = "object" if head[16:18] in (b"\x01\x00", b"\x00\x01") else "elf"
    kind = "ar" if head.startswith((b"!<arch>\n", b"!<thin>\n")) else kind
    return {"path": path, "sha256": h.hexdigest(), "mtime_ns": st.st_mtime_ns, "kind": kind}


def _expand(args, depth=0):
    """`args` with gcc's @FILE response files read in (for reading the argv only)."""
    out = []
    for a in args:
        if a.startswith("@") and depth < 8 and os.path.isfile(a[1:]):
            try:
                with open(a[1:], encoding="utf-8", errors="surrogateescape") as f:
                    out += _expand(shlex.split(f.read()), depth + 1)
                continue
            except (OSError, ValueError):
                pass
        out.append(a)
    return out


def parse(args):
    """(mode, sources, other inputs, -o, -L dirs, -l names) of a gcc- or nvcc-like argv."""
    sources, inputs, libdirs, libs = [], [], [], []
    output, mode, i = "", "link", 0
    while i < len(args):
        a = args[i]
        value = args[i + 1] if a in VALUED and i + 1 < len(args) else None
        if a in COMPILE_ONLY:
            mode = "compile" if mode == "link" else mode
        elif a in PREPROCESS:
            mode = "other"
        elif a in DEVICE_LINK:
            mode = "device-link" if mode == "link" else mode
        elif a in ("-o", "--output-file") and value is not None:
            output = value
        elif a.startswith("-o") and len(a) > 2 and not a.startswith("-odir"):
            output = a[2:]
        elif a.startswith("--output-file="):
            output = a.partition("=")[2]
        elif a == "-L" and value is not None:
            libdirs.append(value)
        elif a.startswith("-L"):
            libdirs.append(a[2:])
        elif a == "-l" and value is not None:
            libs.append(value)
        elif a.startswith("-l") and len(a) > 2:
            libs.append(a[2:])
        elif a.startswith("-Wl,"):
            inputs += [w for w in a[4:].split(",") if w.endswith((".o", ".a", ".so"))]
        elif a == "-" or not a.startswith("-"):
            (sources if a == "-" or a.endswith(SOURCE_EXT) else inputs).append(a)
        i += 2 if value is not None else 1
    if not sources and not inputs:
        mode = "other"  # a query: --version, -print-file-name=, -dumpmachine
    elif mode == "link" and sources:
        mode = "compile+link"
    return mode, sources, inputs, output, libdirs, libs


def _libraries(libdirs, libs, cwd):
    """The build's own libraries a link's -l names: only the -L directories it gives."""
    found = []
    for name in libs:
        for d in libdirs:
            for suffix in (".so", ".a"):
                path = os.path.join(cwd, d, f"lib{name}{suffix}")
                if os.path.isfile(path):
                    found.append(os.path.normpath(path))
    return found


def _outputs(mode, sources, output, cwd):
    if output:
        return [os.path.join(cwd, output)]
    if mode == "compile":
        return [os.path.join(cwd, os.path.splitext(os.path.basename(s))[0] + ".o") for s in sources]
    return [os.path.join(cwd, "a.out")] if mode != "other" else []


#: a link's switches that strip its output: left out under a sanitizer (`keep_debug`)
STRIPS = frozenset({"-s", "--strip-all", "--strip-debug", "-S", "--strip-unneeded"})
LINKER_PASS = ("-Xlinker", "--linker-options")


def unstripped(args):
    """`args` without the switches that strip a link's output: `-s`, and those that
    `-Wl,` or `-Xlinker` hand to the linker (`-s`, `-S`, `--strip-all`, `--strip-debug`)."""
    out, skip = [], False
    for i, a in enumerate(args):
        if skip:
            skip = False
            continue
        if a == "-s":
            continue
        if a.startswith("-Wl,"):
            kept = [w for w in a[4:].split(",") if w not in STRIPS]
            if kept:
                out.append("-Wl," + ",".join(kept))
            continue
        if a in LINKER_PASS and i + 1 < len(args) and args[i + 1] in STRIPS:
            skip = True
            continue
        out.append(a)
    return out


def added(cfg, mode, nvcc):
    """The checker's flags this invocation gets (nvcc: host flags through -Xcompiler)."""
    flags = []
    if mode in ("compile", "compile+link"):
        flags += cfg["cflags"]
    if mode in ("link", "compile+link"):
        flags += [f for f in cfg["ldflags"] if f not in flags]
    if not flags:
        return []
    if nvcc:
        return ["-Xcompiler=" + ",".join(flags)] if cfg["nvcc_host"] else []
    return flags


def _unpreload(drop):
    """The libraries csorch preloads for the build's own loader (the ASan runtime, for a
    build description that imports what it built) left out of LD_PRELOAD: a compiler or
    linker run under the ASan runtime takes a quarter more CPU and gains nothing."""
    preload = os.environ.get("LD_PRELOAD")
    if not drop or preload is None:
        return
    kept = [p for p in preload.replace(" ", ":").split(":") if p and p not in drop]
    if kept:
        os.environ["LD_PRELOAD"] = ":".join(kept)
    else:
        del os.environ["LD_PRELOAD"]


def main(argv):
    config, name, args = argv[1], argv[2], argv[3:]
    with open(config, encoding="utf-8") as f:
        cfg = json.load(f)
    real = cfg["compilers"][name]
    _unpreload(cfg.get("unpreload") or ())
    active = os.environ.get(ACTIVE, "").split(":")
    if name in active:
        os.execv(real, [real, *args])
    # under another wrapped call (nvcc's host compiler): its CPU is in that call's already
    nested = any(active)
    os.environ[ACTIVE] = ":".join([*active, name]).strip(":")
    nvcc = os.path.basename(real).startswith("nvcc")
    expanded = _expand(args)
    mode, sources, inputs, output, libdirs, libs = parse(expanded)
    env = {k: v for k, v in os.environ.items() if k not in DRIVER_ENV}
    why = ""
    if cfg.get("sanitizer") and mode != "other":
        why = foreign(expanded, [os.path.realpath(d) for d in cfg.get("own") or ()])
    if why:
        sys.stderr.write(
            f"csorch: refused under the sanitizer: {name} {why}: it lets the build change "
            "what the compiler runs or what it made before it is assembled, so the "
            "unit's debug information could name -fsanitize= for code the sanitizer never "
            "instrumented. Compile C, C++ or CUDA sources by name, without -B, -wrapper, "
            "-specs, plugins or assembly input.\n"
        )
        return 1
    if cfg.get("keep_debug") and mode in ("link", "compile+link"):
        args = unstripped(args)
    command = [*cfg["launcher"], real, *args, *added(cfg, mode, nvcc)]
    cwd = os.getcwd()
    link_inputs = []
    if mode in ("link", "compile+link", "device-link"):
        link_inputs = [_file(os.path.join(cwd, p)) for p in inputs if os.path.isfile(p)]
        link_inputs += [_file(p) for p in _libraries(libdirs, libs, cwd)]
    pid = os.posix_spawn(command[0], command, env)
    _, status, usage = os.wait4(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == 0 and mode != "other":
        line = {
            "tool": name,
            "compiler": real,
            "mode": mode,
            "argv": command,
            "cwd": cwd,
            "sources": [os.path.normpath(os.path.join(cwd, s)) for s in sources],
            "outputs": [_file(os.path.normpath(p)) for p in _outputs(mode, sources, output, cwd)],
            "inputs": link_inputs,
            # the compiler's CPU (ccache's too): what this unit cost, served or compiled
            "cpu": round(usage.ru_utime + usage.ru_stime, 4),
            "nested": nested,
        }
        data = (json.dumps(line) + "\n").encode()
        fd = os.open(cfg["record"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
