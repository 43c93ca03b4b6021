// Out-of-bounds global write (memcheck; ASan on the host build).
// fill_squares writes one element per thread. The grid is rounded up to whole blocks
// (1024 threads for N = 1000), so the guard `i < n` keeps the last block's 24 extra
// threads inside the buffer. controls/oob_write.patch removes the guard: each of those
// 24 threads writes 4 bytes past the end, and memcheck reports 24 "Invalid __global__
// write of size 4 bytes" (one per faulting thread), then (default
// --destroy-on-device-error context) the failed cudaDeviceSynchronize as an API error.
// The host build under ASan reports 24 heap-buffer-overflow WRITEs of size 4.
#include "common.h"

constexpr int N = 1000;
constexpr int BLOCK = 128;

__global__ void fill_squares(int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = i * i;
}

int main() {
    int *d_out = nullptr;
    CHECK(cudaMalloc(&d_out, N * sizeof(int)));
    LAUNCH(fill_squares, (N + BLOCK - 1) / BLOCK, BLOCK, d_out, N);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());  // load-bearing: the kernel's faults surface here, before the checks
    static int out[N];
    CHECK(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost));
    CHECK(cudaFree(d_out));
    for (int i = 0; i < N; ++i) {
        if (out[i] != i * i) {
            fprintf(stderr, "oob_write: out[%d] = %d, expected %d\n", i, out[i], i * i);
            return 1;
        }
    }
    puts("oob_write: ok");
    return 0;
}
