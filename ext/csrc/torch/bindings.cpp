// Python bindings: the only file that knows about Python objects.
// torch's pybind11 casters (at::Tensor, optional) without <torch/extension.h>, which
// also pulls in the whole C++ frontend (torch/all.h): 18 s to compile here instead of 42.
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "qext_torch.h"

namespace py = pybind11;

namespace qext {

namespace {

const char* const kBufferNames[] = {"rowwise_data",    "rowwise_scale_inv",    "rowwise_amax",
                                    "columnwise_data", "columnwise_scale_inv", "columnwise_amax"};

at::Tensor* buffer_slot(QuantizedBuffers& b, int i) {
  at::Tensor* slots[] = {&b.rowwise_data,    &b.rowwise_scale_inv,    &b.rowwise_amax,
                         &b.columnwise_data, &b.columnwise_scale_inv, &b.columnwise_amax};
  return slots[i];
}

// Reads the buffers of a quantized tensor object; absent or None attributes stay undefined.
QuantizedBuffers read_buffers(const py::object& out, bool with_amax) {
  QuantizedBuffers b;
  for (int i = 0; i < 6; ++i) {
    if (!with_amax && (i == 2 || i == 5)) continue;
    const py::object v = py::getattr(out, kBufferNames[i], py::none());
    if (!v.is_none()) *buffer_slot(b, i) = v.cast<at::Tensor>();
  }
  b.with_gemm_swizzled_scales = py::getattr(out, "with_gemm_swizzled_scales").cast<bool>();
  return b;
}

// Writes the (possibly rebound) buffers back, so that the object is what the kernels wrote.
void write_buffers(py::object& out, QuantizedBuffers& b, bool with_amax) {
  for (int i = 0; i < 6; ++i) {
    if (!with_amax && (i == 2 || i == 5)) continue;
    at::Tensor* t = buffer_slot(b, i);
    py::setattr(out, kBufferNames[i], t->defined() ? py::cast(*t) : py::none());
  }
  py::setattr(out, "with_gemm_swizzled_scales", py::bool_(b.with_gemm_swizzled_scales));
}

void quantize_nvfp4(const at::Tensor& x, py::object out, bool rowwise, bool columnwise,
                    bool stochastic_rounding, bool with_rht, bool optimize_for_gemm,
                    const c10::optional<at::Tensor>& noop_flag,
                    const c10::optional<std::vector<at::Tensor>>& rng_states) {
  QuantizedBuffers b = read_buffers(out, true);
  const NVFP4Options opt{rowwise, columnwise, stochastic_rounding, with_rht, optimize_for_gemm};
  quantize_nvfp4_impl(x, opt, b, noop_flag, rng_states.value_or(std::vector<at::Tensor>{}));
  write_buffers(out, b, true);
}

void quantize_mxfp8(const at::Tensor& x, py::object out, bool rowwise, bool columnwise,
                    bool optimize_for_gemm, const c10::optional<at::Tensor>& noop_flag) {
  QuantizedBuffers b = read_buffers(out, false);
  quantize_mxfp8_impl(x, MXFP8Options{rowwise, columnwise, optimize_for_gemm}, b, noop_flag);
  write_buffers(out, b, false);
}

}  // namespace

}  // namespace qext

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "qext: NVFP4 and MXFP8 quantization kernels (CPU and CUDA)";
  m.def("quantize_nvfp4", &qext::quantize_nvfp4, py::arg("x"), py::arg("out"),
        py::arg("rowwise"), py::arg("columnwise"), py::arg("stochastic_rounding"),
        py::arg("with_rht"), py::arg("optimize_for_gemm"), py::arg("noop_flag") = py::none(),
        py::arg("rng_states") = py::none(),
        "Quantize x to NVFP4 into the buffers of `out` (an NVFP4Tensor).");
  m.def("quantize_mxfp8", &qext::quantize_mxfp8, py::arg("x"), py::arg("out"),
        py::arg("rowwise"), py::arg("columnwise"), py::arg("optimize_for_gemm"),
        py::arg("noop_flag") = py::none(),
        "Quantize x to MXFP8 into the buffers of `out` (an MXFP8Tensor).");
  m.def(
      "swizzle_scales",
      [](const at::Tensor& s, bool transposed) { return qext::swizzle_scales(s, transposed, false); },
      py::arg("scales"), py::arg("transposed") = false, "Compact -> GEMM layout (a new tensor).");
  m.def(
      "unswizzle_scales",
      [](const at::Tensor& s, bool transposed) { return qext::swizzle_scales(s, transposed, true); },
      py::arg("scales"), py::arg("transposed") = false, "GEMM -> compact layout (a new tensor).");
#ifdef QEXT_WITH_CUDA
  m.attr("with_cuda") = true;
#else
  m.attr("with_cuda") = false;
#endif
}
