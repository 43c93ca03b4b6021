// A CUDA API error (memcheck reports it as "Program hit cudaError...").
// release() frees the program's device buffers. controls/api_error.patch adds a stale
// cleanup line that frees the output buffer a second time: cudaFree returns
// cudaErrorInvalidValue, memcheck reports one "Program hit cudaErrorInvalidValue
// (error 1) due to "invalid argument" on CUDA API call to cudaFree." (1 error), and the
// program's CHECK exits 1.
#include "common.h"

constexpr int N = 256;

__global__ void iota(int *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = i;
}

struct Buffers {
    int *out = nullptr;
    int *spare = nullptr;
};

static void release(Buffers &b) {
    CHECK(cudaFree(b.out));
    CHECK(cudaFree(b.spare));
}

int main() {
    Buffers b;
    CHECK(cudaMalloc(&b.out, N * sizeof(int)));
    CHECK(cudaMalloc(&b.spare, N * sizeof(int)));
    LAUNCH(iota, 1, N, b.out);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    int out[N];
    CHECK(cudaMemcpy(out, b.out, sizeof out, cudaMemcpyDeviceToHost));
    release(b);
    for (int i = 0; i < N; ++i) {
        if (out[i] != i) {
            fprintf(stderr, "api_error: out[%d] = %d, expected %d\n", i, out[i], i);
            return 1;
        }
    }
    puts("api_error: ok");
    return 0;
}
