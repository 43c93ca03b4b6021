"""culprit: the first frame that belongs to the subject names the signature."""

from __future__ import annotations

import pytest

from orchestrator.backends.compute_sanitizer.frames import device_frame, host_frame
from orchestrator.findings.frame_filter import ignored, skipped, subject_frames
from orchestrator.findings.signatures import signature
from orchestrator.model import Checker, Finding, Frame


@pytest.mark.parametrize(
    "text",
    [
        "__ldcs(const float4 *)+0x2a0 in /usr/local/cuda/include/sm_32_intrinsics.hpp:412",
        "float4 __ldg(const float4 *)+0x10",
        "__stcs(float4 *, float4)+0x10 in kernel.cu:3",
        "__cuda_sm70_warpsync+0x30",
        "__syncwarp(unsigned int)+0xf0 in /usr/local/cuda/include/sm_30_intrinsics.hpp:110",
        "$__internal_8_$__cuda_sm10x_tcgen05_guardrail_trap+0x1250 in t.cu:99",
        "void cub::CUB_200200_900_NS::DeviceReduceKernel<Policy>(float *)+0x100",
        "thrust::cuda_cub::core::_kernel_agent<F>(F)+0x40",
        "cuda::std::__4::__atomic_load<int>(int *)+0x10",
        "helper()+0x10 in /opt/cuda-13.0/targets/x86_64-linux/include/cuda/std/atomic:40",
        "0x79d8",
    ],
)
def test_device_frames_outside_the_subject(text: str) -> None:
    assert ignored(device_frame(text))


@pytest.mark.parametrize(
    "text",
    [
        "cudaLaunchKernel [0x745b7] in libcudart.so.13",
        " [0x302cf0] in /lib/x86_64-linux-gnu/libcuda.so.1",
        "std::vector<int>::at(unsigned long) [0x10] in /usr/lib/libstdc++.so.6",
        "__libc_start_main [0x2a28a] in libc.so.6",
    ],
)
def test_host_frames_outside_the_subject(text: str) -> None:
    assert ignored(host_frame(text))


@pytest.mark.parametrize(
    "text",
    [
        "qext::cuda_detail::load_rng(const long *)+0x9a0 in launch.cuh:80",
        "void qext::cuda_detail::nvfp4_col_kernel<qext::InBF16>(const float *)+0x900 in c.cuh:8",
        "my_kernel(float *)+0x10 in /home/me/src/kernels/my.cu:3",
        "qext::cuda::nvfp4_quantize(qext::TensorWrapper const&) [0xc8277] in _C.so",
    ],
)
def test_subject_frames(text: str) -> None:
    frame = host_frame(text) if "[0x" in text else device_frame(text)
    assert not ignored(frame)


def test_the_h200_ldcs_report_is_named_by_the_qext_kernel() -> None:
    frames = (
        device_frame(
            "__ldcs(const float4 *)+0x2a0 in /usr/local/cuda/include/sm_32_intrinsics.hpp:4"
        ),
        device_frame(
            "void qext::cuda_detail::col_kernel<qext::InBF16>(const float *)+0x9 in c.cuh:8"
        ),
    )
    finding = Finding(Checker.MEMCHECK, "invalid-access", "read", 16, "global", frames=frames)
    sig = signature(finding)
    assert sig.function == "qext::cuda_detail::col_kernel<qext::InBF16>"
    assert sig.label() == (
        "memcheck invalid-access global read size 16 in qext::cuda_detail::col_kernel<qext::InBF16>"
    )
    assert [f.function for f in skipped(frames)] == ["__ldcs(const float4 *)"]
    assert finding.frames == frames  # the finding keeps the skipped frame


def test_a_stack_with_no_subject_frame_keeps_its_top_frame() -> None:
    frames = (Frame("__ldg(const float *)"), Frame("cub::Reduce()"))
    assert subject_frames(frames) == frames
    assert skipped(frames) == ()
    assert signature(Finding(Checker.MEMCHECK, "invalid-access", frames=frames)).function


def test_the_asan_malloc_interceptor_of_newer_gcc_is_the_runtimes() -> None:
    """The H200's Ubuntu libasan prints the interceptor without its prefix; the leak's
    culprit is still the program's function below it (measured: it was `malloc`)."""
    from orchestrator.backends.asan import log as asan_log

    log = [
        "==7==ERROR: LeakSanitizer: detected memory leaks",
        "",
        "Direct leak of 4096 byte(s) in 1 object(s) allocated from:",
        "    #0 0x7f1 in malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:69",
        "    #1 0x5a2 in double_values(float*, int) /w/leak.cu:21",
        "    #2 0x5a3 in main /w/leak.cu:40",
        "",
        "SUMMARY: AddressSanitizer: 4096 byte(s) leaked in 1 allocation(s).",
    ]
    (leak,) = asan_log.parse(log).findings
    assert signature(leak).function == "double_values"
    assert [f.function for f in skipped(leak.frames)] == ["malloc"]
