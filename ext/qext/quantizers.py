"""Quantizers: settings plus the calls into the extension."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from . import _C
from .tensors import MXFP8Tensor, NVFP4Tensor


def _roundup(v: int, m: int) -> int:
    return (v + m - 1) // m * m


def _flat_shape(shape: Sequence[int]) -> tuple[int, int]:
    if len(shape) < 2:
        raise ValueError(f"qext: input must have at least 2 dimensions, got shape {tuple(shape)}")
    k = shape[-1]
    m = 1
    for d in shape[:-1]:
        m *= d
    return m, k


class NVFP4Quantizer:
    """NVFP4 (E2M1 data, E4M3 scales per 16 elements, FP32 per-tensor amax)."""

    def __init__(self, rowwise: bool = True, columnwise: bool = True,
                 stochastic_rounding: bool = False, with_rht: bool = False,
                 optimize_for_gemm: bool = False):
        if not (rowwise or columnwise):
            raise ValueError("qext NVFP4: the quantizer needs rowwise=True or columnwise=True")
        self.rowwise = rowwise
        self.columnwise = columnwise
        self.stochastic_rounding = stochastic_rounding
        self.with_rht = with_rht
        self.optimize_for_gemm = optimize_for_gemm

    def make_empty(self, shape: Sequence[int], dtype: torch.dtype = torch.float32,
                   device: torch.device | str = "cpu") -> NVFP4Tensor:
        """Buffers for an input of ``shape``; scales and amax are zero-filled."""
        m, k = _flat_shape(shape)
        if m % 16 or k % 16:
            raise ValueError(f"qext NVFP4: the input flattened to [M, K] = [{m}, {k}] must have "
                             "M and K positive multiples of 16")
        u8 = dict(dtype=torch.uint8, device=device)
        f32 = dict(dtype=torch.float32, device=device)
        bufs = {}
        if self.rowwise:
            bufs.update(rowwise_data=torch.empty(m, k // 2, **u8),
                        rowwise_scale_inv=torch.zeros(_roundup(m, 128), _roundup(k // 16, 4), **u8),
                        rowwise_amax=torch.zeros(1, **f32))
        if self.columnwise:
            bufs.update(columnwise_data=torch.empty(k, m // 2, **u8),
                        columnwise_scale_inv=torch.zeros(_roundup(k, 128), _roundup(m // 16, 4),
                                                         **u8),
                        columnwise_amax=torch.zeros(1, **f32))
        return NVFP4Tensor(shape, dtype, device, with_gemm_swizzled_scales=self.optimize_for_gemm,
                           with_rht=self.with_rht and self.columnwise, **bufs)

    def quantize(self, x: torch.Tensor, out: NVFP4Tensor | None = None,
                 noop_flag: torch.Tensor | None = None,
                 rng_states: Sequence[torch.Tensor] | None = None) -> NVFP4Tensor:
        """Quantizes ``x``; with ``out``, updates it in place (a no-op when noop_flag is 1)."""
        if out is None:
            out = self.make_empty(x.shape, x.dtype, x.device)
        elif not isinstance(out, NVFP4Tensor):
            raise ValueError(f"qext NVFP4: out must be an NVFP4Tensor, got {type(out).__name__}")
        elif out.with_rht != (self.with_rht and self.columnwise):
            raise ValueError(f"qext NVFP4: out was made with with_rht={out.with_rht}, "
                             f"but the quantizer has with_rht={self.with_rht}")
        _C.quantize_nvfp4(x, out, self.rowwise, self.columnwise, self.stochastic_rounding,
                          self.with_rht, self.optimize_for_gemm, noop_flag,
                          list(rng_states) if rng_states is not None else None)
        out.shape, out.dtype = tuple(x.shape), x.dtype
        return out

    __call__ = quantize

    def __repr__(self) -> str:
        return (f"NVFP4Quantizer(rowwise={self.rowwise}, columnwise={self.columnwise}, "
                f"stochastic_rounding={self.stochastic_rounding}, with_rht={self.with_rht}, "
                f"optimize_for_gemm={self.optimize_for_gemm})")


class MXFP8Quantizer:
    """MXFP8 (E4M3 data, E8M0 scales per 32 elements)."""

    def __init__(self, rowwise: bool = True, columnwise: bool = True,
                 optimize_for_gemm: bool = False):
        if not (rowwise or columnwise):
            raise ValueError("qext MXFP8: the quantizer needs rowwise=True or columnwise=True")
        self.rowwise = rowwise
        self.columnwise = columnwise
        self.optimize_for_gemm = optimize_for_gemm

    def make_empty(self, shape: Sequence[int], dtype: torch.dtype = torch.float32,
                   device: torch.device | str = "cpu") -> MXFP8Tensor:
        """Buffers for an input of ``shape``; scales are zero-filled."""
        m, k = _flat_shape(shape)
        if m % 32 or k % 32:
            raise ValueError(f"qext MXFP8: the input flattened to [M, K] = [{m}, {k}] must have "
                             "M and K positive multiples of 32")
        u8 = dict(dtype=torch.uint8, device=device)
        bufs = {}
        if self.rowwise:
            bufs.update(rowwise_data=torch.empty(m, k, **u8),
                        rowwise_scale_inv=torch.zeros(_roundup(m, 128), _roundup(k // 32, 4), **u8))
        if self.columnwise:
            bufs.update(columnwise_data=torch.empty(m, k, **u8),
                        columnwise_scale_inv=torch.zeros(_roundup(m // 32, 4), _roundup(k, 128),
                                                         **u8))
        return MXFP8Tensor(shape, dtype, device, with_gemm_swizzled_scales=self.optimize_for_gemm,
                           **bufs)

    def quantize(self, x: torch.Tensor, out: MXFP8Tensor | None = None,
                 noop_flag: torch.Tensor | None = None) -> MXFP8Tensor:
        """Quantizes ``x``; with ``out``, updates it in place (a no-op when noop_flag is 1)."""
        if out is None:
            out = self.make_empty(x.shape, x.dtype, x.device)
        elif not isinstance(out, MXFP8Tensor):
            raise ValueError(f"qext MXFP8: out must be an MXFP8Tensor, got {type(out).__name__}")
        _C.quantize_mxfp8(x, out, self.rowwise, self.columnwise, self.optimize_for_gemm, noop_flag)
        out.shape, out.dtype = tuple(x.shape), x.dtype
        return out

    __call__ = quantize

    def __repr__(self) -> str:
        return (f"MXFP8Quantizer(rowwise={self.rowwise}, columnwise={self.columnwise}, "
                f"optimize_for_gemm={self.optimize_for_gemm})")


def swizzle_scales(scales: torch.Tensor, transposed: bool = False) -> torch.Tensor:
    """Compact scales -> GEMM layout (``transposed`` for MXFP8 columnwise scales)."""
    return _C.swizzle_scales(scales, transposed)


def unswizzle_scales(scales: torch.Tensor, transposed: bool = False) -> torch.Tensor:
    """GEMM layout -> compact scales; the exact inverse of :func:`swizzle_scales`."""
    return _C.unswizzle_scales(scales, transposed)
