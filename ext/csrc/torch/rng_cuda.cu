// RNG state on CUDA: reserve from the default CUDA generator and write [seed, offset]
// on the current stream, so the state is produced asynchronously and under graph capture.
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/detail/UnpackRaw.cuh>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

#include <mutex>

#include "qext_torch.h"

namespace qext {

namespace {

constexpr uint64_t kReservePerThread = 1024;

__global__ void write_rng_state_kernel(at::PhiloxCudaState philox, int64_t* state) {
  const auto seeds = at::cuda::philox::unpack(philox);
  state[0] = static_cast<int64_t>(std::get<0>(seeds));
  state[1] = static_cast<int64_t>(std::get<1>(seeds));
}

}  // namespace

at::Tensor reserve_rng_state_cuda(const at::Device& device) {
  auto* gen = at::get_generator_or_default<at::CUDAGeneratorImpl>(
      c10::nullopt, at::cuda::detail::getDefaultCUDAGenerator(device.index()));
  at::PhiloxCudaState philox;
  {
    std::lock_guard<std::mutex> lock(gen->mutex_);
    philox = gen->philox_cuda_state(kReservePerThread);
  }
  at::Tensor state = at::empty({2}, at::TensorOptions().dtype(at::kLong).device(device));
  write_rng_state_kernel<<<1, 1, 0, at::cuda::getCurrentCUDAStream(device.index())>>>(
      philox, state.data_ptr<int64_t>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return state;
}

}  // namespace qext
