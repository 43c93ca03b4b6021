#!/bin/sh
# A comment-only and docstring-only edit of qext (no line moves): $1 is the tree's root.
set -e
sed -i '1s#^// amax(|x|) on CUDA:#// amax(abs x) on CUDA:#' "$1/ext/csrc/cuda/amax.cu"
sed -i '1s#^// amax and the random Hadamard transform on the CPU.#// amax, and the random Hadamard transform, on the CPU.#' "$1/ext/csrc/cpu/amax_rht.cpp"
sed -i '28s#"""NVFP4 (E2M1 data,#"""NVFP4: E2M1 data,#; 28s#FP32 per-tensor amax)."""#FP32 per-tensor amax."""#' "$1/ext/qext/quantizers.py"
