// Wrappers, streams and RNG reservation for the torch layer.
#include <ATen/CPUGeneratorImpl.h>

#include <mutex>

#include "qext_torch.h"

#ifdef QEXT_WITH_CUDA
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace qext {

namespace {

DType to_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return DType::kFloat32;
    case at::kBFloat16: return DType::kBFloat16;
    case at::kHalf: return DType::kFloat16;
    case at::kByte: return DType::kByte;
    case at::kLong: return DType::kInt64;
    default: break;
  }
  TORCH_CHECK_TYPE(false, "qext: tensors of dtype ", t, " cannot be passed to a kernel");
}

}  // namespace

TensorWrapper wrap(const at::Tensor& t) {
  if (!t.defined()) return TensorWrapper();
  TORCH_INTERNAL_ASSERT(t.is_contiguous(), "qext: kernels need contiguous tensors");
  std::vector<size_t> shape(t.sizes().begin(), t.sizes().end());
  return TensorWrapper(t.data_ptr(), std::move(shape), to_dtype(t.scalar_type()));
}

Stream current_stream(const at::Device& device) {
#ifdef QEXT_WITH_CUDA
  return at::cuda::getCurrentCUDAStream(device.index()).stream();
#else
  (void)device;
  return nullptr;
#endif
}

#ifdef QEXT_WITH_CUDA
void check_cuda_launch() { C10_CUDA_KERNEL_LAUNCH_CHECK(); }
#endif

at::Tensor reserve_rng_state(const at::Device& device) {
#ifdef QEXT_WITH_CUDA
  if (device.is_cuda()) return reserve_rng_state_cuda(device);
#endif
  auto* gen = at::get_generator_or_default<at::CPUGeneratorImpl>(
      c10::nullopt, at::detail::getDefaultCPUGenerator());
  uint64_t seed, offset;
  {
    std::lock_guard<std::mutex> lock(gen->mutex_);
    seed = gen->random64();
    offset = gen->random64() >> 32;
  }
  at::Tensor state = at::empty({2}, at::TensorOptions().dtype(at::kLong));
  state.data_ptr<int64_t>()[0] = static_cast<int64_t>(seed);
  state.data_ptr<int64_t>()[1] = static_cast<int64_t>(offset);
  return state;
}

}  // namespace qext
