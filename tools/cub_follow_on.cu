// A read of freed memory inside CUB, then the calls a destroyed context fails: the
// capture behind tests/fixtures/compute-sanitizer/grammar/memcheck-cub-follow-on.log
// (written by hand until this program's log replaces it). Every device frame of the
// fault is CUB's (ThreadLoad under DeviceReduceKernel); the program's own frames
// (sum_freed, main) are on the host side only.
//
//   nvcc -O2 -lineinfo -std=c++17 -arch=sm_90 -o /tmp/cub_follow_on tools/cub_follow_on.cu
//   compute-sanitizer --tool memcheck --print-limit 100 /tmp/cub_follow_on > cub.log 2>&1
//
// Expected: "Invalid __global__ read" records in cub::...::ThreadLoad, then "Program hit
// cudaErrorLaunchFailure ... on CUDA API call to" cudaGetLastError, cudaMemcpy and
// cudaFree (the sticky error of the context the fault destroyed), ERROR SUMMARY.
#include <cub/device/device_reduce.cuh>
#include <cuda_runtime.h>

#include <cstdio>

static int sum_freed(int n) {
    float *in = nullptr, *out = nullptr;
    void *scratch = nullptr;
    size_t bytes = 0;
    cudaMalloc(&in, n * sizeof(float));
    cudaMalloc(&out, sizeof(float));
    cudaMemset(in, 0, n * sizeof(float));
    cub::DeviceReduce::Sum(scratch, bytes, in, out, n);  // size query: no kernel
    cudaMalloc(&scratch, bytes);
    cudaFree(in);  // the defect: the input freed before the reduction reads it
    cub::DeviceReduce::Sum(scratch, bytes, in, out, n);
    cudaError_t launched = cudaGetLastError();
    float host = 0.0f;
    cudaError_t copied = cudaMemcpy(&host, out, sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(scratch);
    cudaFree(out);
    std::printf("launch: %s, copy: %s, sum %f\n", cudaGetErrorString(launched),
                cudaGetErrorString(copied), host);
    return copied == cudaSuccess ? 0 : 1;
}

int main() { return sum_freed(1 << 20); }
