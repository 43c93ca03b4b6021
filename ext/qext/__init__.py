"""qext: NVFP4 and MXFP8 quantization for PyTorch, on the CPU and on CUDA.

The subject under test of csorch. ``qext.reference`` is a pure-torch oracle of every
rule; the extension (``qext._C``) must match it bit for bit.
"""

from . import reference
from .quantizers import MXFP8Quantizer, NVFP4Quantizer, swizzle_scales, unswizzle_scales
from .tensors import MXFP8Tensor, NVFP4Tensor

__all__ = ["MXFP8Quantizer", "MXFP8Tensor", "NVFP4Quantizer", "NVFP4Tensor", "reference",
           "swizzle_scales", "unswizzle_scales"]
__version__ = "0.1.0"
