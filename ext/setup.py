"""Builds the qext wheel from the same description as the JIT builds (qext/build.py)."""

import importlib.util
from pathlib import Path

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension

ROOT = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("qext_build", ROOT / "qext" / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)

setup(
    name="qext",
    version="0.1.0",
    description="NVFP4 and MXFP8 quantization extension (csorch's subject under test)",
    packages=["qext"],
    ext_modules=[build.setuptools_extension(ROOT)],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
    python_requires=">=3.10",
)
