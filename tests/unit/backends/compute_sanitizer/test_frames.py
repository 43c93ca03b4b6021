"""cs_frames: frame texts as Frames, form by form, and the trimming of host backtraces
(on a whole real log: test_cs_log)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.backends.compute_sanitizer import frames as cs_frames
from orchestrator.backends.compute_sanitizer.frames import (
    MAX_HOST_FUNCTION,
    MAX_NATIVE_FRAMES,
    device_frame,
    host_frame,
    trim_host,
)
from orchestrator.model import Frame


@pytest.mark.parametrize(
    ("text", "frame"),
    [
        (
            "k(float *, int)+0xb0 in /src/k.cu:41",
            Frame("k(float *, int)", "/src/k.cu", 41, "", "b0"),
        ),
        ("k(float *, int)+0xb0", Frame("k(float *, int)", "", None, "", "b0")),
        (
            "0x000000b0 in /src/k.cu:41:k(float*, int)",
            Frame("k(float*, int)", "/src/k.cu", 41, "", "000000b0"),
        ),
        ("0x000000b0 in k(float*)", Frame("k(float*)", "", None, "", "000000b0")),
        ("something else", Frame("something else")),
    ],
)
def test_device_frame_forms(text: str, frame: Frame) -> None:
    assert device_frame(text) == frame


@pytest.mark.parametrize(
    ("text", "frame"),
    [
        ("<module> in run.py:13", Frame("<module>", "run.py", 13)),
        ("test_x in /w/tests/test_a.py:40", Frame("test_x", "/w/tests/test_a.py", 40)),
        (
            "cudaLaunchKernel [0x4a2b1] in /cuda/libcudart.so.13",
            Frame("cudaLaunchKernel", "", None, "/cuda/libcudart.so.13", "4a2b1"),
        ),
        ("[0x2f0b1a]", Frame("", "", None, "", "2f0b1a")),
        ("./a.out [0x1a2b3]", Frame("", "", None, "./a.out", "1a2b3")),
        (
            "/usr/lib/libcuda.so.1 (cuLaunchKernel + 0x2cd) [0x24ed0d]",
            Frame("cuLaunchKernel", "", None, "/usr/lib/libcuda.so.1", "24ed0d"),
        ),
    ],
)
def test_host_frame_forms(text: str, frame: Frame) -> None:
    assert host_frame(text) == frame
    assert host_frame(text).is_python == frame.file.endswith(".py")


def native(function: str, module: str) -> Frame:
    return Frame(function, "", None, module, "1f")


def test_trim_host_keeps_native_frames_to_the_interpreter_and_python_frames_to_the_test() -> None:
    frames = [
        native("cudaLaunchKernel", "libcudart.so.13"),
        native("quantize_impl", "_C.so"),
        native("_PyEval_EvalFrameDefault", "python3.11"),
        native("pymain_run", "libc.so.6"),  # past the interpreter: CPython's
        Frame("quantize", "quantizers.py", 40),
        Frame("test_replay", "test_rng.py", 12),
        Frame("pytest_pyfunc_call", "python.py", 159),  # past the test: pytest's
    ]
    assert [f.function for f in trim_host(frames)] == [
        "cudaLaunchKernel",
        "quantize_impl",
        "quantize",
        "test_replay",
    ]


def test_trim_host_stops_at_libpython_too_and_bounds_native_frames_and_names() -> None:
    long = "pybind11::cpp_function::initialize<" + "at::Tensor const&, " * 40 + ">"
    frames = [native(long, "_C.so")]
    frames += [native(f"f{i}", "_C.so") for i in range(MAX_NATIVE_FRAMES + 5)]
    frames += [native("PyObject_Call", "libpython3.12.so.1.0"), native("after", "_C.so")]
    kept = trim_host(frames)
    assert len(kept) == MAX_NATIVE_FRAMES
    assert len(kept[0].function) == MAX_HOST_FUNCTION and kept[0].function.endswith("…")
    assert all(f.function != "after" for f in kept)


def test_host_keep_parses_only_what_trim_host_keeps() -> None:
    """Every record of a real H200 log: the frames HostKeep lets through trim to exactly
    what the whole backtrace trims to, and most frames are never parsed."""
    log = (
        Path(__file__).resolve().parents[3]
        / "fixtures/compute-sanitizer/h200/rng-owner-scope-memcheck-rng-64x96.log"
    )
    records: list[list[str]] = []
    for line in log.read_text().splitlines():
        if "Saved host backtrace" in line:
            records.append([])
        elif "Host Frame:" in line and records:
            records[-1].append(line.split("Host Frame:", 1)[1].strip())
    assert len(records) == 20
    for texts in records:
        keep = cs_frames.HostKeep()
        kept = [f for f in map(keep.parse, texts) if f is not None]
        assert cs_frames.trim_host(kept) == cs_frames.trim_host(
            [cs_frames.host_frame(t) for t in texts]
        )
        assert len(kept) < len(texts) / 2
