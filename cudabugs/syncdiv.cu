// An illegal __syncwarp (synccheck).
// warp_sums: each of the block's two warps stages its 32 values in shared memory, meets
// at __syncwarp, and lane 0 adds its warp's values. __syncwarp(mask) requires the mask
// to name every lane that calls it, the caller included. controls/syncdiv.patch narrows
// the mask to lanes 0..15 while all 32 lanes still call it: on the H200 (sm_90)
// synccheck reports "Barrier error detected. Invalid arguments." at __syncwarp, with the
// kernel as the device frame below it, once per thread (measured counts in README.md).
// A divergent __syncthreads, the pre-Volta example, is not reported on sm_90: threads
// that skip a barrier there are not an error synccheck detects (measured).
#include "common.h"

constexpr int THREADS = 64;
constexpr unsigned FULL_WARP = 0xffffffffu;

__global__ void warp_sums(const int *in, int *out) {
    __shared__ int staged[THREADS];
    int t = threadIdx.x;
    staged[t] = in[t];
    __syncwarp(FULL_WARP);
    if (t % 32 == 0) {
        int sum = 0;
        for (int k = 0; k < 32; ++k)
            sum += staged[t + k];
        out[t / 32] = sum;
    }
}

int main() {
    int in[THREADS];
    int expected[THREADS / 32] = {};
    for (int i = 0; i < THREADS; ++i) {
        in[i] = i % 7;
        expected[i / 32] += in[i];
    }
    int *d_in = nullptr, *d_out = nullptr;
    CHECK(cudaMalloc(&d_in, sizeof in));
    CHECK(cudaMalloc(&d_out, sizeof expected));
    CHECK(cudaMemcpy(d_in, in, sizeof in, cudaMemcpyHostToDevice));
    LAUNCH(warp_sums, 1, THREADS, d_in, d_out);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    int out[THREADS / 32] = {};
    CHECK(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost));
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    for (int w = 0; w < THREADS / 32; ++w) {
        if (out[w] != expected[w]) {
            fprintf(stderr, "syncdiv: warp %d sum = %d, expected %d\n", w, out[w], expected[w]);
            return 1;
        }
    }
    puts("syncdiv: ok");
    return 0;
}
