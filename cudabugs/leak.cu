// Device-memory leak (memcheck --leak-check full; LeakSanitizer on the host build).
// double_values stages the data in a 4096-byte scratch buffer and frees it.
// controls/leak.patch drops that cudaFree: memcheck with --leak-check full reports one
// "Leaked 4096 bytes" record (allocated in double_values), "LEAK SUMMARY: 4096 bytes
// leaked in 1 allocations" and 1 error; the host build under ASan with leak detection
// reports one "Direct leak of 4096 byte(s) in 1 object(s)" allocated in double_values.
// The program's own result stays right: a leak is invisible without the checker.
#include "common.h"

constexpr int N = 1024;
constexpr int BLOCK = 256;

__global__ void copy_values(float *dst, const float *src, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] = src[i];
}

__global__ void twice(float *data, const float *scratch, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] = 2.0f * scratch[i];
}

// noinline: the allocation's backtrace must name this function, under both checkers
__attribute__((noinline)) void double_values(float *d_data, int n) {
    float *d_scratch = nullptr;
    CHECK(cudaMalloc(&d_scratch, n * sizeof(float)));
    LAUNCH(copy_values, (n + BLOCK - 1) / BLOCK, BLOCK, d_scratch, d_data, n);
    LAUNCH(twice, (n + BLOCK - 1) / BLOCK, BLOCK, d_data, d_scratch, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(d_scratch));
}

int main() {
    static float data[N];
    for (int i = 0; i < N; ++i)
        data[i] = float(i);
    float *d_data = nullptr;
    CHECK(cudaMalloc(&d_data, sizeof data));
    CHECK(cudaMemcpy(d_data, data, sizeof data, cudaMemcpyHostToDevice));
    double_values(d_data, N);
    CHECK(cudaMemcpy(data, d_data, sizeof data, cudaMemcpyDeviceToHost));
    CHECK(cudaFree(d_data));
    // load-bearing: memcheck's leak check runs when the context is destroyed
    CHECK(cudaDeviceReset());
    for (int i = 0; i < N; ++i) {
        if (data[i] != 2.0f * float(i)) {
            fprintf(stderr, "leak: data[%d] = %g, expected %g\n", i, data[i], 2.0f * float(i));
            return 1;
        }
    }
    puts("leak: ok");
    return 0;
}
