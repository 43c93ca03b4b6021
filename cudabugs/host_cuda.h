// The few CUDA built-ins and runtime calls that the host-capable programs use, on the
// CPU: a kernel becomes a function called once per thread, one block after another, and
// device memory is heap memory, so AddressSanitizer sees the same out-of-bounds writes
// and leaks that memcheck sees on the GPU. Only for programs whose kernels need no
// shared memory, barriers or warps (oob_write, leak); the others are CUDA-only.
#pragma once

#include <cstdlib>
#include <cstring>

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
static dim3 threadIdx, blockIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __host__

typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorMemoryAllocation = 2 };
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };

// Macros, not functions: ASan's allocation stack must start in the program's own
// function (as memcheck's host backtrace does), not in a wrapper of malloc.
#define cudaMalloc(ptr, bytes) \
    ((*(void **)(ptr) = malloc(bytes)) != nullptr ? cudaSuccess : cudaErrorMemoryAllocation)
#define cudaFree(ptr) (free(ptr), cudaSuccess)
#define cudaMemcpy(dst, src, bytes, kind) (memcpy((dst), (src), (bytes)), cudaSuccess)
#define cudaMemset(ptr, value, bytes) (memset((ptr), (value), (bytes)), cudaSuccess)
#define cudaGetLastError() cudaSuccess
#define cudaDeviceSynchronize() cudaSuccess
#define cudaDeviceReset() cudaSuccess

static inline const char *cudaGetErrorString(cudaError_t err) {
    return err == cudaSuccess ? "no error" : "out of memory";
}

#define LAUNCH(kernel, grid, block, ...)                                        \
    do {                                                                        \
        gridDim = dim3(grid);                                                   \
        blockDim = dim3(block);                                                 \
        for (blockIdx.x = 0; blockIdx.x < gridDim.x; ++blockIdx.x)              \
            for (threadIdx.x = 0; threadIdx.x < blockDim.x; ++threadIdx.x)      \
                kernel(__VA_ARGS__);                                            \
    } while (0)
