// A freed input read by a CUB reduction, then the host keeps calling the runtime.
#include <cub/cub.cuh>
#include <cstdio>
int main() {
  const int n = 24;
  float *in = nullptr, *out = nullptr;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, sizeof(float));
  cudaMemset(in, 0, n * sizeof(float));
  void *tmp = nullptr; size_t bytes = 0;
  cub::DeviceReduce::Sum(tmp, bytes, in, out, n);
  cudaMalloc(&tmp, bytes);
  cudaFree(in);  // the defect: the input is freed before the reduction reads it
  cub::DeviceReduce::Sum(tmp, bytes, in, out, n);
  cudaError_t e = cudaDeviceSynchronize();
  float h = 0;
  cudaMemcpy(&h, out, sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(tmp);
  cudaFree(out);
  printf("sync: %s, last: %s\n", cudaGetErrorString(e), cudaGetErrorString(cudaGetLastError()));
  return 0;
}
