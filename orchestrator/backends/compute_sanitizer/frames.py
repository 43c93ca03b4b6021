"""Frames of compute-sanitizer's records: the text after `at`, `Device Frame:` and
`Host Frame:` as a `Frame`, and the trimming of host backtraces to their informative
part. Pure: text in, records out; the grammar is the `*_RE` patterns, each with an
example."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from orchestrator.model import Frame

# line numbers have at most 9 digits: a corrupt one leaves the frame unparsed instead of
# crashing int() (which refuses more than 4300 digits)
# k(float *, int)+0xb0 in /src/k.cu:41
DEVICE_LOC_RE = re.compile(
    r"^(?P<function>.+?)\+0x(?P<offset>[0-9a-fA-F]+)(?: in (?P<file>.+?):(?P<line>[0-9]{1,9}))?$"
)
# 0x000000b0 in /src/k.cu:41:k(float *, int)   (older CUDA-MEMCHECK order; a file's path
# may hold spaces, as every path here may: the tool quotes none)
DEVICE_LOC_OLD_RE = re.compile(
    r"^0x(?P<offset>[0-9a-fA-F]+) in (?:(?P<file>[^:]+):(?P<line>[0-9]{1,9}):)?(?P<function>.+)$"
)
# <module> in run.py:13     (a Python frame; a function's name never holds " in ", so the
# first one ends it: `test_a in /my dir/test_a.py:3` is test_a in "/my dir/test_a.py")
HOST_PYTHON_RE = re.compile(r"^(?P<function>.+?) in (?P<file>.+\.py):(?P<line>[0-9]{1,9})$")
# cudaLaunchKernel [0x4a2b1] in /usr/local/cuda/lib64/libcudart.so.13   (symbol optional;
# one space before the `[`: with `\s*` there a long run of spaces made the lazy match
# quadratic, 8 s for one damaged 100 KB line)
HOST_NATIVE_RE = re.compile(
    r"^(?P<function>.*?) ?\[0x(?P<offset>[0-9a-fA-F]+)\](?: in (?P<module>.+))?$"
)
# /lib/x86_64-linux-gnu/libcuda.so.1 (cuLaunchKernel + 0x2cd) [0x24ed0d]   (older)
HOST_OLD_RE = re.compile(
    r"^(?P<module>\S+) \((?P<function>.*?)(?: \+ 0x[0-9a-fA-F]+)?\) \[0x(?P<offset>[0-9a-fA-F]+)\]$"
)


def device_frame(text: str) -> Frame:
    m = DEVICE_LOC_RE.match(text) or DEVICE_LOC_OLD_RE.match(text)
    if not m:
        return Frame(function=text)
    line = m["line"]
    return Frame(m["function"], m["file"] or "", int(line) if line else None, "", m["offset"])


def host_frame(text: str) -> Frame:
    # the lazy Python pattern is slow on a 2 KB pybind11 frame; ".py:" is necessary for it
    if ".py:" in text and (m := HOST_PYTHON_RE.match(text)):
        return Frame(m["function"], m["file"], int(m["line"]))
    if m := HOST_OLD_RE.match(text):
        return Frame(m["function"], "", None, m["module"], m["offset"])
    if m := HOST_NATIVE_RE.match(text):
        function, module = m["function"].rstrip(), m["module"] or ""
        if not module and "/" in function:  # older "Host Frame:./a.out [0x1a2b3]"
            function, module = "", function
        return Frame(function, "", None, module, m["offset"])
    return Frame(function=text)


#: a host backtrace keeps at most this many native frames, and this many Python frames
MAX_NATIVE_FRAMES = 12
MAX_PYTHON_FRAMES = 8
MAX_HOST_FUNCTION = 240  # characters of a host frame's function kept
#: the plugin's per-case trampoline frame: "Host Frame: csorch_case_0 in plugin.py:2"
CASE_FRAME_PREFIX = "csorch_case_"
# python3.12 | libpython3.12.so.1.0   (the interpreter: every native frame past it is CPython)
INTERPRETER_RE = re.compile(r"^(?:lib)?python[\d.]*(?:\.so[\d.]*)?$")


def trim_host(frames: list[Frame]) -> tuple[Frame, ...]:
    """The informative part of a host backtrace: native frames down to the interpreter,
    then Python frames out to the test function. A memcheck run of a pytest case prints
    ~100 frames per error, thousands of errors a case: kept whole, a bundle grew to 10 MB
    of CPython and pytest internals that no signature or reader uses."""
    native = []
    for f in frames:
        if f.is_python or INTERPRETER_RE.match(f.module.rsplit("/", 1)[-1]):
            break
        native.append(f)
    python = []
    after_test = False
    for f in (f for f in frames if f.is_python):
        if after_test:
            # csorch's plugin calls each test through a frame naming its case (the tool's
            # own log has no case markers: backends/channel.attribute reads it)
            if f.function.startswith(CASE_FRAME_PREFIX):
                python.append(f)
            break
        python.append(f)
        if f.function.startswith("test"):  # the pytest case; what follows is pytest
            after_test = True
    case_frame = None
    if after_test and python[-1].function.startswith(CASE_FRAME_PREFIX):
        case_frame = python.pop()
    kept = native[:MAX_NATIVE_FRAMES] + python[:MAX_PYTHON_FRAMES]
    if case_frame is not None and len(python) <= MAX_PYTHON_FRAMES:
        kept.append(case_frame)
    # pybind11's dispatcher lambdas spell out every argument type twice (2 KB a frame)
    return tuple(
        replace(f, function=f.function[: MAX_HOST_FUNCTION - 1] + "…")
        if len(f.function) > MAX_HOST_FUNCTION
        else f
        for f in kept
    )


@dataclass
class HostKeep:
    """Follows what `trim_host` will keep of one backtrace as its frames arrive, so that
    a frame it would drop is not parsed at all: a pytest case's backtrace is ~80 frames,
    many of 300+ characters, thousands of records a log. Mutable, one per record."""

    natives: int = 0  # native frames before the first Python or interpreter frame
    natives_closed: bool = False  # a Python or interpreter frame has been seen
    pythons: int = 0
    after_test: bool = False  # the test function's frame was seen: only csorch's may follow
    done: bool = False  # trim_host keeps nothing after this point

    def parse(self, text: str) -> Frame | None:
        """The frame of a `Host Frame:` text, or None when trim_host could not keep it."""
        if self.done:
            return None
        # only a text with ".py:" can parse as a Python frame (HOST_PYTHON_RE)
        if ".py:" not in text and (self.natives_closed or self.natives >= MAX_NATIVE_FRAMES):
            return None
        frame = host_frame(text)
        if frame.is_python and self.after_test:
            self.done = True
            return frame if frame.function.startswith(CASE_FRAME_PREFIX) else None
        if frame.is_python:
            self.natives_closed = True
            self.pythons += 1
            if frame.function.startswith("test"):
                self.after_test = True
            elif self.pythons >= MAX_PYTHON_FRAMES:
                self.done = True
        elif INTERPRETER_RE.match(frame.module.rsplit("/", 1)[-1]):
            self.natives_closed = True
        elif not self.natives_closed:
            self.natives += 1
        return frame
