// Misaligned global access (memcheck).
// The input is a header followed by float2 pairs; sum_pairs reads each pair with one
// 8-byte vector load, which must be 8-byte aligned. The fixed layout pads the header to
// two floats. controls/misaligned.patch shrinks it to one float, so all 32 threads'
// loads are 4 bytes off: memcheck reports 32 "Invalid __global__ read of size 8 bytes"
// whose address "is misaligned" (one per thread), then the failed
// cudaDeviceSynchronize as an API error (default --destroy-on-device-error context).
#include "common.h"

constexpr int PAIRS = 32;
constexpr int HEADER = 2;  // floats before the first pair; keeps the pairs 8-byte aligned

__global__ void sum_pairs(const float *in, float *out, int header) {
    const float2 *pairs = reinterpret_cast<const float2 *>(in + header);
    float2 p = pairs[threadIdx.x];
    out[threadIdx.x] = p.x + p.y;
}

int main() {
    const int n = HEADER + 2 * PAIRS;
    float in[n];
    for (int i = 0; i < n; ++i)
        in[i] = i < HEADER ? -1.0f : float(i - HEADER);
    float *d_in = nullptr, *d_out = nullptr;
    CHECK(cudaMalloc(&d_in, sizeof in));
    CHECK(cudaMalloc(&d_out, PAIRS * sizeof(float)));
    CHECK(cudaMemcpy(d_in, in, sizeof in, cudaMemcpyHostToDevice));
    LAUNCH(sum_pairs, 1, PAIRS, d_in, d_out, HEADER);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());  // load-bearing: the kernel's faults surface here
    float out[PAIRS];
    CHECK(cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost));
    CHECK(cudaFree(d_in));
    CHECK(cudaFree(d_out));
    for (int i = 0; i < PAIRS; ++i) {
        float expected = float(2 * i) + float(2 * i + 1);
        if (out[i] != expected) {
            fprintf(stderr, "misaligned: out[%d] = %g, expected %g\n", i, out[i], expected);
            return 1;
        }
    }
    puts("misaligned: ok");
    return 0;
}
