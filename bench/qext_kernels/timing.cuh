// Shared by the kernel-alone timers of bench/qext_kernels: CUDA error checks and the
// timing of bench/bench_qext.py (CUDA events, 5 warm-ups, median of 50).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(2);                                                                          \
    }                                                                                   \
  } while (0)

template <typename F>
float median_us(F&& f) {
  for (int i = 0; i < 5; ++i) f();
  std::vector<cudaEvent_t> ev(100);
  for (auto& e : ev) CHECK(cudaEventCreate(&e));
  for (int i = 0; i < 50; ++i) {
    CHECK(cudaEventRecord(ev[2 * i]));
    f();
    CHECK(cudaEventRecord(ev[2 * i + 1]));
  }
  CHECK(cudaDeviceSynchronize());
  std::vector<float> ms(50);
  for (int i = 0; i < 50; ++i) CHECK(cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]));
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(ms.begin(), ms.end());
  return 1e3f * 0.5f * (ms[24] + ms[25]);
}
