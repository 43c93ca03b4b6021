"""Which frames of a stack belong to the subject: the ignore list, as data.

A signature is named by the first frame that belongs to the code under test, the way
ClusterFuzz's stack analyzer picks a crash state: frames of the checker's runtime, the
C library, the CUDA driver and runtime, CUDA's device intrinsics (`__ldcs`, `__ldg`,
`__syncwarp`, ... inlined from the toolkit's headers), CUB, Thrust, libcu++ and libstdc++
are skipped. On the H200 a use-after-free in qext's columnwise NVFP4 path was reported
as `invalid-access global read size 16 in __ldcs`: the load intrinsic was the top frame,
the qext kernel the one below it. Skipped frames are not dropped: the finding keeps every
frame and reports list the skipped ones beside the culprit.

Each entry is (compiled pattern, why); a frame is ignored when its function, its file or
its module matches. Add entries here, not in code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from orchestrator.model import Frame

# CUB and Thrust, also inside a project's own namespace (CUB_WRAPPED_NAMESPACE,
# THRUST_WRAPPED_NAMESPACE: "void megablocks::cub::LoadDirectWarpStriped<...>(...)")
CUB_RE = re.compile(r"^(?:[\w<>,* ]+ )?(?:cub\w*::|(?:\w+::)+cub::)")
THRUST_RE = re.compile(r"^(?:[\w<>,* ]+ )?(?:\w+::)*thrust::")

# function names, as printed (a return type may precede them: "void cub::...")
FUNCTION_IGNORE: tuple[tuple[re.Pattern[str], str], ...] = (
    # ASan/LSan/UBSan runtime and libc start-up
    (
        re.compile(r"^(__interceptor_|___?interceptor_|__asan_|__sanitizer_|__lsan_|__ubsan_)"),
        "sanitizer runtime",
    ),
    (re.compile(r"^(__libc_start|_start$|start_thread$|clone3?$)"), "C library start-up"),
    # a bare pc ("at 0x79d8": malloc/free errors are reported inside the device runtime)
    (re.compile(r"^0x[0-9a-fA-F]+$"), "unsymbolized pc"),
    # CUDA device intrinsics: __ldcs, __ldg, __stcs, __syncwarp, __shfl_sync, and the
    # compiler's $__internal_..._$__cuda_sm70_warpsync helpers
    (re.compile(r"^(?:[\w:<>,* ]+ )?\$?__(?:ld|st)\w*\b"), "CUDA load/store intrinsic"),
    (re.compile(r"^(?:[\w:<>,* ]+ )?\$?__(?!global__)[A-Za-z]\w*"), "CUDA device intrinsic"),
    (re.compile(r"^(?:[\w:<>,* ]+ )?\$__internal_"), "CUDA compiler helper"),
    # libraries the subject calls into
    (CUB_RE, "CUB"),
    (THRUST_RE, "Thrust"),
    (re.compile(r"^(?:[\w<>,* ]+ )?cuda::(?:std::|__|ptx::|device::)"), "libcu++"),
    (re.compile(r"^(?:[\w<>,* ]+ )?(?:std::|__gnu_cxx::|__cxxabiv1::)"), "C++ standard library"),
)
# source files of device frames (-lineinfo): the toolkit's headers
FILE_IGNORE: tuple[tuple[re.Pattern[str], str], ...] = (
    # the sanitizer runtime's own sources: newer libasan prints its malloc interceptor
    # as plain "malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:69"
    # (seen on the H200's Ubuntu; gcc 12's prints "__interceptor_malloc")
    (re.compile(r"(^|/)(libsanitizer|compiler-rt/lib)/"), "sanitizer runtime"),
    (
        re.compile(
            r"(^|/)(sm_\d+_intrinsics|sm_\d+_atomic_functions|device_functions|"
            r"device_atomic_functions|cuda_fp16|cuda_bf16|cuda_fp8|cuda_fp6|cuda_fp4|"
            r"math_functions|crt/\w+)\.h(pp)?$"
        ),
        "CUDA toolkit header",
    ),
    (re.compile(r"(^|/)(cub|thrust|cuda/std|cuda/__\w+|cuda/ptx)/"), "CUB/Thrust/libcu++ header"),
    (re.compile(r"/cuda[^/]*/(targets/[^/]+/)?include/"), "CUDA toolkit header"),
)
# modules of host frames
MODULE_IGNORE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(^|/)(libasan|libclang_rt\.asan)"), "sanitizer runtime"),
    (re.compile(r"(^|/)libc\.so"), "C library"),
    (re.compile(r"(^|/)(libcuda|libcudart|libnvrtc|libcupti)\.so"), "CUDA driver/runtime"),
    (re.compile(r"(^|/)libstdc\+\+\.so"), "C++ standard library"),
)


def ignored(frame: Frame) -> str:
    """Why `frame` is not the subject's ("" when it is)."""
    for value, table in (
        (frame.function, FUNCTION_IGNORE),
        (frame.file, FILE_IGNORE),
        (frame.module, MODULE_IGNORE),
    ):
        if value:
            for pattern, why in table:
                if pattern.search(value):
                    return why
    return ""


def subject_frames(frames: Iterable[Frame]) -> tuple[Frame, ...]:
    """The frames that belong to the subject, innermost first; all of them when none
    does (a defect inside CUB alone is still named by its top frame, not by nothing)."""
    frames = tuple(frames)
    kept = tuple(f for f in frames if not ignored(f))
    return kept or frames


def skipped(frames: Sequence[Frame]) -> tuple[Frame, ...]:
    """The frames above the culprit that were skipped (for reports: "in k, below __ldcs")."""
    out = []
    for f in frames:
        if not ignored(f):
            return tuple(out)
        out.append(f)
    return ()  # nothing belonged to the subject: the top frame itself was used
