// Divergent __syncthreads (synccheck).
// block_sum accumulates N = 240 ints in shared memory, 64 per round (two warps), with a
// barrier after each round; the last round's barrier also orders every acc write before
// thread 0 sums them. In the last round only threads 0..47 have an element, so warp 1
// is split. controls/syncdiv.patch moves the round's barrier inside the `if (i < n)`:
// threads 32..47 then wait at a barrier that threads 48..63 of the same warp skip, and
// synccheck reports "Barrier error detected. Divergent thread(s) in warp." (NVIDIA's
// own example of this shape reports 2 errors; the count is measured on the GPU, see
// README.md). The skipping threads exit, which releases the barrier, so the kernel
// completes without the checker too (as in NVIDIA's example).
#include "common.h"

constexpr int THREADS = 64;
constexpr int ROUNDS = 4;
constexpr int N = THREADS * ROUNDS - 16;

__global__ void block_sum(const int *in, int *out, int n) {
    __shared__ int acc[THREADS];
    int t = threadIdx.x;
    acc[t] = 0;
    __syncthreads();
    for (int r = 0; r < ROUNDS; ++r) {
        int i = r * THREADS + t;
        if (i < n)
            acc[t] += in[i];
        __syncthreads();
    }
    if (t == 0) {
        int sum = 0;
        for (int k = 0; k < THREADS; ++k)
            sum += acc[k];
        *out = sum;
    }
}

int main() {
    int in[N];
    int expected = 0;
    for (int i = 0; i < N; ++i) {
        in[i] = i % 7;
        expected += in[i];
    }
    int *d_in = nullptr, *d_out = nullptr;
    CHECK(cudaMalloc(&d_in, sizeof in));
    CHECK(cudaMalloc(&d_out, sizeof(int)));
    CHECK(cudaMemcpy(d_in, in, sizeof in, cudaMemcpyHostToDevice));
    LAUNCH(block_sum, 1, THREADS, d_in, d_out, N);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    int out = 0;
    CHECK(cudaMemcpy(&out, d_out, sizeof out, cudaMemcpyDeviceToHost));
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    if (out != expected) {
        fprintf(stderr, "syncdiv: sum = %d, expected %d\n", out, expected);
        return 1;
    }
    puts("syncdiv: ok");
    return 0;
}
