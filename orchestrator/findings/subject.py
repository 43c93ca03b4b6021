"""Which frames are the subject's, and which belong to a library it calls.

`frame_filter` skips frames that never name a defect (the checker's runtime, intrinsics,
CUB's device code); this module answers the two questions a library-heavy extension
raises:
- a fault whose every device frame is a library's (a CUDA-only extension built on CUB
  was reported as `cub::...::ThreadLoad<...>`, every device frame CUB's, the extension's
  own frames only on the host side): the signature is named by the subject's first frame
  on the host side (`subject_frame`), the library frames listed beside it;
- a finding with no frame in the subject at all (torch's runtime start-up calling
  `cuGetProcAddress_v2` with an argument the driver rejects, in every variant, fix
  included): the environment's, not the change's (`judge.ambient`).

A frame is a library's when its function is in a known namespace (CUB, Thrust, CUTLASS,
libcu++, PyTorch's ATen/c10/torch, pybind11, the C++ standard library, cuBLAS), its
module is a known runtime (libcuda, libcudart, libtorch*, libc10*, libcublas*, python,
cuda-python's bindings)
or it is the CUDA API call an API error names. A Python frame is the subject's only when
`Subject.files` names its file: pytest's and torch's Python frames call the subject, they
are not it. Each entry is (compiled pattern, the library's name); add entries here.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass

from orchestrator.findings import frame_filter
from orchestrator.model import Finding, Frame

# function names, as printed ("void cub::DeviceReduceKernel<...>(...)", "at::native::...")
FUNCTION_LIBRARY: tuple[tuple[re.Pattern[str], str], ...] = (
    (frame_filter.CUB_RE, "CUB"),
    (frame_filter.THRUST_RE, "Thrust"),
    (re.compile(r"^(?:[\w<>,* ]+ )?(?:cutlass|cute)::"), "CUTLASS"),
    (re.compile(r"^(?:[\w<>,* ]+ )?cuda::(?:std::|__|ptx::|device::)"), "libcu++"),
    (re.compile(r"^(?:[\w<>,* ]+ )?(?:at|c10|torch|caffe2)::"), "PyTorch"),
    (re.compile(r"^(?:[\w<>,* ]+ )?pybind11::"), "pybind11"),
    (re.compile(r"^(?:[\w<>,* ]+ )?(?:std::|__gnu_cxx::|__cxxabiv1::)"), "C++ standard library"),
    (re.compile(r"^cublas(?:Lt)?\w*"), "cuBLAS"),
    # the CUDA driver and runtime API: cuGetProcAddress_v2, cudaLaunchKernel, cuLaunchKernel
    (re.compile(r"^(?:cu|cuda)[A-Z]\w*$"), "CUDA API"),
    # CPython's own frames: _PyEval_EvalFrameDefault, PyObject_Call
    (re.compile(r"^_?Py[A-Z]\w*$"), "CPython"),
)
# modules of host frames, as printed ("in libcudart.so.13", "in /usr/lib/.../libcuda.so.1")
MODULE_LIBRARY: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(^|/)(libcuda|libcudart|libnvrtc|libcupti|libnvJitLink)\.so"), "CUDA runtime"),
    (re.compile(r"(^|/)(libtorch\w*|libc10\w*|libshm)\.so"), "PyTorch"),
    (
        re.compile(r"(^|/)(libcublas\w*|libcudnn\w*|libnccl\w*|libcufft\w*|libcusparse\w*)\.so"),
        "CUDA library",
    ),
    (re.compile(r"(^|/)(python[\d.]*|libpython[\d.]*\.so.*)$"), "CPython"),
    (re.compile(r"(^|/)(libc|libm|libpthread|libdl|libstdc\+\+|libgcc_s)\.so"), "C runtime"),
    (re.compile(r"(^|/)torch/"), "PyTorch"),
    # cuda-python's bindings, loaded by torch's and pytest's plugins at start-up:
    # "in cydriver.cpython-312-x86_64-linux-gnu.so", "in driver.cpython-312-...so"
    (
        re.compile(r"(^|/)(cy)?(driver|runtime|nvrtc|nvvm|nvjitlink|nvml)(_ptds)?\.cpython-"),
        "cuda-python",
    ),
    (re.compile(r"(^|/)(cupy|numba|triton)[/_]"), "Python GPU library"),
)


def library(frame: Frame) -> str:
    """The library a frame belongs to ("" when none on the list)."""
    for value, table in ((frame.function, FUNCTION_LIBRARY), (frame.module, MODULE_LIBRARY)):
        if value:
            for pattern, name in table:
                if pattern.search(value):
                    return name
    return ""


@dataclass(frozen=True)
class Subject:
    """What the code under test is, where a config says more than the frame lists do:
    `modules` (globs on a host frame's module: "_C*.so") and `files` (globs on a frame's
    file name: "*.cu", "quantizers.py"). Empty: every frame that is neither skipped
    (`frame_filter`) nor a library's (above) nor Python's is the subject's."""

    modules: tuple[str, ...] = ()
    files: tuple[str, ...] = ()

    def owns(self, frame: Frame) -> bool:
        """Whether `frame` is the subject's."""
        file = frame.file.rsplit("/", 1)[-1]
        module = frame.module.rsplit("/", 1)[-1]
        named = any(fnmatch.fnmatchcase(file, g) for g in self.files if file) or any(
            fnmatch.fnmatchcase(module, g) for g in self.modules if module
        )
        if named:
            return True
        if frame.is_python or frame_filter.ignored(frame) or library(frame):
            return False
        if not (frame.function or frame.file or frame.module):
            return False
        # a config that names its modules or files owns only those
        return not (self.modules or self.files)


ANY = Subject()


def _stacks(finding: Finding) -> tuple[tuple[Frame, ...], tuple[Frame, ...]]:
    """(device frames, host frames); an API error's only device "frame" is the call it
    names, the driver's, never the subject's."""
    device = () if finding.kind == "api-error" else finding.frames
    return device, finding.host_frames


def subject_frame(finding: Finding, subject: Subject = ANY) -> Frame | None:
    """The subject's first frame: on the device side when it has one, else on the host
    side (the launch or call site in the extension), else None."""
    device, host = _stacks(finding)
    for frames in (device, host):
        for f in frames:
            if subject.owns(f):
                return f
    return None


def library_frames(frames: Iterable[Frame]) -> tuple[Frame, ...]:
    """The frames of `frames` that are a library's (what a report lists beside the
    subject frame that names the signature)."""
    return tuple(f for f in frames if library(f) or frame_filter.ignored(f))


def in_subject(finding: Finding, subject: Subject = ANY) -> bool:
    """Whether any frame of the finding, device or host, is the subject's."""
    return subject_frame(finding, subject) is not None
