// What every cudabugs program shares: CHECK, which reports a failed CUDA call and exits
// non-zero, and LAUNCH, a real <<<grid, block>>> launch under nvcc and a loop over the
// grid when the C++ compiler builds a host-capable program (host_cuda.h), so that
// AddressSanitizer can stand in for memcheck on a machine without a GPU.
#pragma once

#include <cstdio>
#include <cstdlib>

#ifdef __CUDACC__
#include <cuda_runtime.h>
#define LAUNCH(kernel, grid, block, ...) kernel<<<(grid), (block)>>>(__VA_ARGS__)
#else
#include "host_cuda.h"
#endif

#define CHECK(call) cudabugs_check((call), #call, __FILE__, __LINE__)

static inline void cudabugs_check(cudaError_t err, const char *what, const char *file, int line) {
    if (err != cudaSuccess) {
        fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, what, cudaGetErrorString(err));
        exit(1);
    }
}
