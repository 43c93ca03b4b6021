// Uninitialised global read (initcheck).
// scale copies 64 ints to the device and doubles them. controls/uninit.patch gives
// cudaMemcpy the element count instead of the byte count, the classic slip: only the
// first 64 bytes (16 ints) are initialised, so the other 48 threads each read an
// uninitialised int: initcheck reports 48 "Uninitialized __global__ memory read of
// size 4 bytes" (one per thread), and the program's check fails.
#include "common.h"

constexpr int N = 64;

__global__ void scale(const int *in, int *out) {
    int i = threadIdx.x;
    out[i] = 2 * in[i];
}

int main() {
    int in[N];
    for (int i = 0; i < N; ++i)
        in[i] = i + 1;
    int *d_in = nullptr, *d_out = nullptr;
    CHECK(cudaMalloc(&d_in, N * sizeof(int)));
    CHECK(cudaMalloc(&d_out, N * sizeof(int)));
    CHECK(cudaMemcpy(d_in, in, N * sizeof(int), cudaMemcpyHostToDevice));
    LAUNCH(scale, 1, N, d_in, d_out);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    int out[N];
    CHECK(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost));
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    for (int i = 0; i < N; ++i) {
        if (out[i] != 2 * (i + 1)) {
            fprintf(stderr, "uninit: out[%d] = %d, expected %d\n", i, out[i], 2 * (i + 1));
            return 1;
        }
    }
    puts("uninit: ok");
    return 0;
}
