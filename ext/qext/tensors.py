"""Quantized tensor objects: the buffers the extension fills, and dequantization."""

from __future__ import annotations

import torch

from . import reference


class NVFP4Tensor:
    """NVFP4 data, E4M3 block scales and FP32 amax, rowwise and/or columnwise.

    Columnwise data is the quantized transpose (of RHT(x^T) when ``with_rht``).
    """

    def __init__(self, shape, dtype, device, *, rowwise_data=None, rowwise_scale_inv=None,
                 rowwise_amax=None, columnwise_data=None, columnwise_scale_inv=None,
                 columnwise_amax=None, with_gemm_swizzled_scales=False, with_rht=False):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = torch.device(device)
        self.rowwise_data = rowwise_data
        self.rowwise_scale_inv = rowwise_scale_inv
        self.rowwise_amax = rowwise_amax
        self.columnwise_data = columnwise_data
        self.columnwise_scale_inv = columnwise_scale_inv
        self.columnwise_amax = columnwise_amax
        self.with_gemm_swizzled_scales = with_gemm_swizzled_scales
        self.with_rht = with_rht

    def compact_scales(self, columnwise: bool = False) -> torch.Tensor:
        """The scales of one direction in the compact layout (unswizzled if needed)."""
        s = self.columnwise_scale_inv if columnwise else self.rowwise_scale_inv
        if s is None:
            raise ValueError(f"this tensor has no {'columnwise' if columnwise else 'rowwise'} data")
        return reference.unswizzle(s) if self.with_gemm_swizzled_scales else s

    def dequantize(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """Dequantizes from rowwise data if present, else from columnwise data."""
        columnwise = self.rowwise_data is None
        data = self.columnwise_data if columnwise else self.rowwise_data
        amax = self.columnwise_amax if columnwise else self.rowwise_amax
        k = self.shape[-1]
        m = 1
        for d in self.shape[:-1]:
            m *= d
        out = reference.nvfp4_dequantize(data, self.compact_scales(columnwise), amax,
                                         columnwise=columnwise, with_rht=self.with_rht,
                                         shape=(m, k))
        return out.reshape(self.shape).to(dtype)

    def __repr__(self) -> str:
        pairs = (("rowwise", self.rowwise_data), ("columnwise", self.columnwise_data))
        usages = [u for u, d in pairs if d is not None]
        return (f"NVFP4Tensor(shape={self.shape}, dtype={self.dtype}, device={self.device}, "
                f"usages={usages}, swizzled={self.with_gemm_swizzled_scales}, rht={self.with_rht})")


class MXFP8Tensor:
    """MXFP8 (E4M3) data with E8M0 block scales, rowwise and/or columnwise."""

    def __init__(self, shape, dtype, device, *, rowwise_data=None, rowwise_scale_inv=None,
                 columnwise_data=None, columnwise_scale_inv=None, with_gemm_swizzled_scales=False):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = torch.device(device)
        self.rowwise_data = rowwise_data
        self.rowwise_scale_inv = rowwise_scale_inv
        self.columnwise_data = columnwise_data
        self.columnwise_scale_inv = columnwise_scale_inv
        self.with_gemm_swizzled_scales = with_gemm_swizzled_scales

    def compact_scales(self, columnwise: bool = False) -> torch.Tensor:
        """The scales of one direction in the compact layout (unswizzled if needed)."""
        s = self.columnwise_scale_inv if columnwise else self.rowwise_scale_inv
        if s is None:
            raise ValueError(f"this tensor has no {'columnwise' if columnwise else 'rowwise'} data")
        if not self.with_gemm_swizzled_scales:
            return s
        return reference.unswizzle(s, transposed=columnwise)

    def dequantize(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """Dequantizes from rowwise data if present, else from columnwise data."""
        columnwise = self.rowwise_data is None
        data = self.columnwise_data if columnwise else self.rowwise_data
        out = reference.mxfp8_dequantize(data, self.compact_scales(columnwise),
                                         columnwise=columnwise)
        return out.reshape(self.shape).to(dtype)

    def __repr__(self) -> str:
        pairs = (("rowwise", self.rowwise_data), ("columnwise", self.columnwise_data))
        usages = [u for u, d in pairs if d is not None]
        return (f"MXFP8Tensor(shape={self.shape}, dtype={self.dtype}, device={self.device}, "
                f"usages={usages}, swizzled={self.with_gemm_swizzled_scales})")
