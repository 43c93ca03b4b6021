"""findings.subject: library frames, the subject's frame, and signatures named on the host
side when every device frame is a library's (the CUB excerpt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.backends.compute_sanitizer import log as cs_log
from orchestrator.findings import subject
from orchestrator.findings.signatures import group, signature
from orchestrator.model import Checker, Finding, Frame

GRAMMAR = Path(__file__).resolve().parents[2] / "fixtures" / "compute-sanitizer" / "grammar"


def parse(name: str) -> tuple[Finding, ...]:
    with open(GRAMMAR / name, encoding="utf-8") as lines:
        return cs_log.parse(lines, checker=Checker.MEMCHECK).findings


def test_library_frames_by_namespace_and_module() -> None:
    assert subject.library(Frame("float4 cub::CUB_300001_SM_900::ThreadLoad<0, float4>(float4 *)"))
    assert subject.library(Frame("void thrust::cuda_cub::core::_kernel_agent<>()")) == "Thrust"
    assert subject.library(Frame("void cutlass::Kernel<Gemm>(Gemm::Params)")) == "CUTLASS"
    assert subject.library(Frame("at::native::copy_kernel_cuda(at::TensorIterator&, bool)"))
    assert subject.library(Frame("cuGetProcAddress_v2")) == "CUDA API"
    assert subject.library(Frame("", module="libcudart.so.13")) == "CUDA runtime"
    assert subject.library(Frame("x", module="libtorch_cuda.so")) == "PyTorch"
    assert subject.library(Frame("", module="python")) == "CPython"
    # an argument type of the library's does not make the subject's function a library's
    assert subject.library(Frame("sumext::sum_cuda(at::Tensor const&)", module="_C.so")) == ""


@pytest.mark.parametrize(
    ("function", "library"),
    [
        # CUB_WRAPPED_NAMESPACE=megablocks (megablocks' setup.py): CUB inside the project's own
        ("void megablocks::cub::LoadDirectWarpStriped<short, (int)16, short *>(int)", "CUB"),
        ("megablocks::cub::detail::radix_sort::AgentRadixSortOnesweep<P, false>::Process()", "CUB"),
        ("void ns::thrust::cuda_cub::core::_kernel_agent<F>(F)", "Thrust"),
        # the project's own functions, however alike their names
        ("megablocks::cub_radix_sort<short>", ""),
        ("mylib::cubic::solve(float *)", ""),
        ("void mylib::thrusters::fire()", ""),
    ],
)
def test_cub_and_thrust_in_a_wrapped_namespace(function: str, library: str) -> None:
    assert subject.library(Frame(function)) == library


def test_subject_owns_native_frames_outside_libraries_and_python_only_when_named() -> None:
    ours = Frame("sumext::sum_cuda(at::Tensor const&)", module="_C.so")
    test_frame = Frame("test_freed_input", "test_sum.py", 21)
    assert subject.ANY.owns(ours)
    assert not subject.ANY.owns(test_frame)
    assert not subject.ANY.owns(Frame())
    named = subject.Subject(modules=("_C*.so",), files=("quantizers.py",))
    assert named.owns(ours)
    assert named.owns(Frame("quantize", "quantizers.py", 74))
    assert not named.owns(Frame("other::f()", module="libother.so"))


def test_a_fault_inside_cub_is_named_by_the_extensions_host_frame() -> None:
    fault = next(f for f in parse("memcheck-cub-follow-on.log") if f.kind == "invalid-access")
    first = subject.subject_frame(fault)
    assert first is not None and first.function.startswith("sumext::sum_cuda")
    sig = signature(fault)
    # before: "cub::CUB_300001_SM_900::ThreadLoad<...>", a CUB template, named the defect
    assert sig.function == "sumext::sum_cuda"
    assert sig.frames == ("sumext::sum_cuda (_C.so)",)
    # the library frames are kept beside it, for every report
    (g,) = [g for g in group([fault])]
    assert g.skipped[0].startswith("cub::CUB_300001_SM_900::ThreadLoad<")
    assert "DeviceReduceKernel" in g.skipped[1]


def test_torch_startup_has_no_frame_in_the_subject() -> None:
    findings = parse("memcheck-torch-startup.log")
    assert findings and all(not subject.in_subject(f) for f in findings)
    # an API error's call is the driver's; its host frames are libcuda's, c10's, python's
    assert signature(findings[0]).function == "cuGetProcAddress_v2"


def test_a_device_frame_of_the_subject_names_it_as_before() -> None:
    f = Finding(
        Checker.MEMCHECK,
        "invalid-access",
        frames=(Frame("__ldcs", "sm_32_intrinsics.hpp"), Frame("qext::k(float *)", "k.cu")),
        host_frames=(Frame("qext::launch()", module="_C.so"),),
    )
    assert signature(f).function == "qext::k"
    assert subject.subject_frame(f) == f.frames[1]
