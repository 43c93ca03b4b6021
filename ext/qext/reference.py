"""Pure-torch oracle of every qext rule (docs/qext-internals.md).

Bit for bit with the C++ kernels (ext/csrc/common/*.h): all math is IEEE fp32 in the
contract's operation order; uint32 words and bit patterns are carried in int64 tensors.
This module imports nothing from the extension, so it can be loaded on its own.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

FLT_MAX = 3.4028234663852886e38  # largest finite float32 (0x7F7FFFFF)
E4M3_MAX = 448.0
E2M1_MAX = 6.0
NVFP4_BLOCK = 16
MXFP8_BLOCK = 32
NVFP4_GLOBAL = E4M3_MAX * E2M1_MAX  # 2688

RHT_SIGNS = (1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1)
E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)

_MASK32 = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1
_PHILOX_M0, _PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
_PHILOX_W0, _PHILOX_W1 = 0x9E3779B9, 0xBB67AE85
_INPUT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _roundup(x: int, m: int) -> int:
    return (x + m - 1) // m * m


def _full(like: torch.Tensor, value: float) -> torch.Tensor:
    # A full fp32 operand, so that every division is a true elementwise IEEE division.
    return torch.full(like.shape, value, dtype=torch.float32, device=like.device)


def _bits(t: torch.Tensor) -> torch.Tensor:
    """fp32 -> int64 holding its uint32 bit pattern."""
    return t.to(torch.float32).contiguous().view(torch.int32).to(torch.int64) & _MASK32


def _from_bits(b: torch.Tensor) -> torch.Tensor:
    """int64 holding a uint32 bit pattern -> fp32."""
    b = b & _MASK32
    return torch.where(b >= 1 << 31, b - (1 << 32), b).to(torch.int32).view(torch.float32)


# ---- E4M3 -------------------------------------------------------------------------


def e4m3_encode(t: torch.Tensor) -> torch.Tensor:
    """fp32 -> E4M3 (fn) bytes: RNE, saturate to 448, subnormals, sign from signbit, NaN->0x7F."""
    bits = _bits(t)
    sign = (bits >> 31) * 0x80
    abits = bits & 0x7FFFFFFF
    a = _from_bits(abits)
    # Below 2^-6: subnormal, step 2^-9; a * 512 is exact and torch.round is rintf (RNE).
    sub = torch.round(torch.where(a < 0.015625, a, torch.zeros_like(a)) * 512.0).to(torch.int64)
    exp = (abits >> 23) - 127
    mant = abits & 0x7FFFFF
    keep = mant >> 20
    rest = mant & 0xFFFFF
    keep = keep + ((rest > 0x80000) | ((rest == 0x80000) & ((keep & 1) == 1))).to(torch.int64)
    normal = torch.clamp((exp + 7) * 8 + keep, max=0x7E)  # the mantissa carry may bump the exponent
    code = torch.where(a < 0.015625, sub, normal)
    code = torch.where(a >= E4M3_MAX, torch.full_like(code, 0x7E), code)
    code = sign | code
    code = torch.where(abits > 0x7F800000, torch.full_like(code, 0x7F), code)
    return code.to(torch.uint8)


def e4m3_decode(u: torch.Tensor) -> torch.Tensor:
    """E4M3 (fn) bytes -> fp32 (0x7F/0xFF are NaN)."""
    b = u.to(torch.int64)
    exp = (b >> 3) & 0xF
    mant = b & 0x7
    normal = _from_bits(((exp + 120) << 23) | (mant << 20))
    sub = mant.to(torch.float32) * 0.001953125  # 2^-9
    v = torch.where(exp == 0, sub, normal)
    v = torch.where((b & 0x7F) == 0x7F, torch.full_like(v, float("nan")), v)
    return torch.where((b & 0x80) != 0, -v, v)


# ---- E2M1 -------------------------------------------------------------------------


def e2m1_value(codes: torch.Tensor) -> torch.Tensor:
    """E2M1 codes (0..15, bit 3 the sign) -> fp32 values."""
    c = codes.to(torch.int64)
    v = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float32, device=c.device)[c & 7]
    return torch.where((c & 8) != 0, -v, v)


def e2m1_rn(v: torch.Tensor) -> torch.Tensor:
    """fp32 -> E2M1 codes, round to nearest with ties to the even code, saturating at 6."""
    v = v.to(torch.float32)
    a = v.abs()
    code = torch.zeros(v.shape, dtype=torch.int64, device=v.device)
    for thr, inclusive in ((0.25, True), (0.75, False), (1.25, True), (1.75, False),
                           (2.5, True), (3.5, False), (5.0, True)):
        # `inclusive`: a value equal to the threshold still rounds down (tie to the even code).
        code += (a > thr if inclusive else a >= thr).to(torch.int64)
    code = code | (torch.signbit(v).to(torch.int64) << 3)
    code = torch.where(torch.isnan(v), torch.full_like(code, 7), code)
    return code.to(torch.uint8)


def _e2m1_step(a: torch.Tensor) -> torch.Tensor:
    return torch.where(a < 2.0, _full(a, 0.5), torch.where(a < 4.0, _full(a, 1.0), _full(a, 2.0)))


def e2m1_sr(v: torch.Tensor, random_bytes: torch.Tensor) -> torch.Tensor:
    """fp32 -> E2M1 codes by stochastic rounding, one random byte (0..255) per element."""
    v = v.to(torch.float32)
    a = v.abs()
    u = random_bytes.to(torch.int64).to(torch.float32) * 0.00390625  # exact
    t = a + u * _e2m1_step(a)
    st = _e2m1_step(t)
    q = torch.clamp(torch.floor(t / st) * st, max=E2M1_MAX)
    q = torch.nan_to_num(q, nan=0.0)  # NaN lanes are overridden below
    mag = torch.where(q < 2.0, q * 2.0, torch.where(q < 4.0, q + 2.0,
                      torch.where(q < 6.0, _full(q, 6.0), _full(q, 7.0))))
    code = mag.to(torch.int64) | (torch.signbit(v).to(torch.int64) << 3)
    code = torch.where(torch.isnan(v), torch.full_like(code, 7), code)
    return code.to(torch.uint8)


def e2m1_neighbours(exact: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The two E2M1 values adjacent to `exact` (after saturation to +-6): (toward 0, away from 0).

    Both carry the sign of `exact`; they are equal when `exact` is representable."""
    v = exact.to(torch.float32)
    a = torch.clamp(v.abs(), max=E2M1_MAX)
    grid = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float32, device=v.device)
    lo = grid[(grid <= a.unsqueeze(-1)).sum(-1) - 1]
    hi = grid[len(grid) - (grid >= a.unsqueeze(-1)).sum(-1)]
    neg = torch.signbit(v)
    return torch.where(neg, -lo, lo), torch.where(neg, -hi, hi)


# ---- Philox4x32-10 ----------------------------------------------------------------


def _mulhilo(a: int, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    # a * b for uint32 a (a Python int) and b (int64 in [0, 2^32)), split into 16-bit halves
    # of b so that no partial product reaches 2^63.
    pl = a * (b & 0xFFFF)           # < 2^48
    ph = a * (b >> 16)              # < 2^48
    s = pl + ((ph & 0xFFFF) << 16)  # < 2^49
    return (ph >> 16) + (s >> 32), s & _MASK32


def philox4x32_10(seed: int, offset: int, items: torch.Tensor) -> torch.Tensor:
    """Philox4x32-10 words [..., 4] (uint32 in int64) for counter (offset lo, offset hi,
    item lo, item hi) and key (seed lo, seed hi)."""
    seed = int(seed) & _MASK64
    offset = int(offset) & _MASK64
    items = torch.as_tensor(items, dtype=torch.int64)
    k0, k1 = seed & _MASK32, seed >> 32
    c0 = torch.full_like(items, offset & _MASK32)
    c1 = torch.full_like(items, offset >> 32)
    c2 = items & _MASK32
    c3 = (items >> 32) & _MASK32
    for _ in range(10):
        hi0, lo0 = _mulhilo(_PHILOX_M0, c0)
        hi1, lo1 = _mulhilo(_PHILOX_M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + _PHILOX_W0) & _MASK32
        k1 = (k1 + _PHILOX_W1) & _MASK32
    return torch.stack([c0, c1, c2, c3], dim=-1)


def _state_of(rng_state) -> tuple[int, int]:
    s = torch.as_tensor(rng_state)
    if s.dtype != torch.int64 or tuple(s.shape) != (2,):
        raise ValueError("rng state must be an int64 tensor of shape [2], "
                         f"got {s.dtype} {tuple(s.shape)}")
    return int(s[0]) & _MASK64, int(s[1]) & _MASK64


def block_random_bytes(rng_state, n_rows: int, n_blocks: int, item_base: int = 0) -> torch.Tensor:
    """Random bytes [n_rows, n_blocks, 16] for the 16 elements of each NVFP4 block."""
    seed, offset = _state_of(rng_state)
    items = item_base + torch.arange(n_rows * n_blocks, dtype=torch.int64).reshape(n_rows, n_blocks)
    words = philox4x32_10(seed, offset, items)  # [R, B, 4]
    e = torch.arange(NVFP4_BLOCK)
    return (words[..., e // 4] >> (8 * (e % 4))) & 0xFF


# ---- RHT --------------------------------------------------------------------------


def _hadamard16(device=None) -> torch.Tensor:
    return torch.tensor([[1.0 if bin(i & j).count("1") % 2 == 0 else -1.0 for j in range(16)]
                         for i in range(16)], dtype=torch.float32, device=device)


def rht(a: torch.Tensor) -> torch.Tensor:
    """W = diag(signs) * H16 / 4 on each 16-block of the last dim, in the contract's order."""
    a = a.to(torch.float32)
    if a.shape[-1] % 16:
        raise ValueError(f"RHT needs a last dim that is a multiple of 16, got {tuple(a.shape)}")
    v = a.reshape(*a.shape[:-1], a.shape[-1] // 16, 16)
    h = _hadamard16(a.device)
    acc = torch.zeros(v.shape, dtype=torch.float32, device=a.device)
    for j in range(16):
        # acc[i] += (H[i][j] > 0 ? v[j] : -v[j]); multiplying by -1 is an exact negation.
        acc = acc + v[..., j:j + 1] * h[:, j]
    w = (acc * 0.25) * torch.tensor(RHT_SIGNS, dtype=torch.float32, device=a.device)
    return w.reshape(a.shape)


def rht_inverse(w: torch.Tensor) -> torch.Tensor:
    """Inverse of `rht`: H16/4 * diag(signs) on each 16-block of the last dim."""
    w = w.to(torch.float32)
    if w.shape[-1] % 16:
        raise ValueError(f"RHT needs a last dim that is a multiple of 16, got {tuple(w.shape)}")
    signs = torch.tensor(RHT_SIGNS, dtype=torch.float32, device=w.device)
    v = w.reshape(*w.shape[:-1], w.shape[-1] // 16, 16) * signs
    h = _hadamard16(w.device)
    acc = torch.zeros(v.shape, dtype=torch.float32, device=w.device)
    for j in range(16):
        acc = acc + v[..., j:j + 1] * h[:, j]
    return (acc * 0.25).reshape(w.shape)


# ---- Swizzle ----------------------------------------------------------------------


def swizzle_offset(i, j, cols: int):
    """Offset of compact (i, j) in the GEMM layout of a buffer with `cols` columns."""
    return ((i // 128) * (cols // 4) + j // 4) * 512 + (i % 32) * 16 + ((i % 128) // 32) * 4 + j % 4


def _check_swizzle_shape(rows: int, cols: int) -> None:
    if rows % 128 or cols % 4:
        raise ValueError(f"swizzle needs rows % 128 == 0 and cols % 4 == 0, got [{rows}, {cols}]")


def swizzle(s: torch.Tensor, transposed: bool = False) -> torch.Tensor:
    """Compact scales -> GEMM layout, same shape. `transposed`: swizzle s^T (MXFP8 columnwise)."""
    if s.dim() != 2:
        raise ValueError(f"swizzle needs a 2-D scale buffer, got {tuple(s.shape)}")
    if transposed:
        return swizzle(s.t().contiguous()).reshape(s.shape)
    r, c = s.shape
    _check_swizzle_shape(r, c)
    return s.reshape(r // 128, 4, 32, c // 4, 4).permute(0, 3, 2, 1, 4).contiguous().reshape(r, c)


def unswizzle(z: torch.Tensor, transposed: bool = False) -> torch.Tensor:
    """Exact inverse of `swizzle`."""
    if z.dim() != 2:
        raise ValueError(f"unswizzle needs a 2-D scale buffer, got {tuple(z.shape)}")
    if transposed:
        r, c = z.shape
        return unswizzle(z.reshape(c, r)).t().contiguous()
    r, c = z.shape
    _check_swizzle_shape(r, c)
    # (0, 3, 2, 1, 4) swaps two axes, so it is its own inverse.
    return z.reshape(r // 128, c // 4, 32, 4, 4).permute(0, 3, 2, 1, 4).contiguous().reshape(r, c)


# ---- NVFP4 ------------------------------------------------------------------------


def nvfp4_encode_scale(amax) -> torch.Tensor:
    """Per-tensor S_enc = 2688 / amax, fp32 [1] (clamped to FLT_MAX; 1 if amax or it is 0)."""
    amax = torch.as_tensor(amax, dtype=torch.float32).reshape(1)
    s = torch.minimum(_full(amax, NVFP4_GLOBAL) / amax, _full(amax, FLT_MAX))
    if float(amax) == 0.0 or float(s) == 0.0:
        s = _full(amax, 1.0)
    return s


def nvfp4_scaled_operand(a: torch.Tensor, amax) -> tuple[torch.Tensor, torch.Tensor]:
    """Block scales s_b [R, C/16] (E4M3 bytes) and the scaled elements A * m [R, C] (fp32)."""
    a = a.to(torch.float32)
    if a.dim() != 2 or a.shape[1] % NVFP4_BLOCK:
        raise ValueError("NVFP4 operand must be [R, C] with C a multiple of 16, "
                         f"got {tuple(a.shape)}")
    r, c = a.shape
    s_enc = nvfp4_encode_scale(amax)
    s_dec = _full(s_enc, 1.0) / s_enc
    blocks = a.reshape(r, c // NVFP4_BLOCK, NVFP4_BLOCK)
    bamax = blocks.abs().amax(dim=-1)
    scaled = (bamax * s_enc) / _full(bamax, E2M1_MAX)
    s_b = e4m3_encode(torch.minimum(scaled, _full(scaled, FLT_MAX)))
    denom = e4m3_decode(s_b) * s_dec
    m = torch.minimum(_full(denom, 1.0) / denom, _full(denom, FLT_MAX))
    return s_b, (blocks * m.unsqueeze(-1)).reshape(r, c)


def pack_e2m1(codes: torch.Tensor) -> torch.Tensor:
    """Codes [R, C] -> bytes [R, C/2], even index in the low nibble."""
    c = codes.to(torch.int64)
    return (c[..., 0::2] | (c[..., 1::2] << 4)).to(torch.uint8)


def unpack_e2m1(data: torch.Tensor) -> torch.Tensor:
    """Bytes [R, C/2] -> codes [R, C]."""
    d = data.to(torch.int64)
    codes = torch.stack([d & 0xF, d >> 4], dim=-1)
    return codes.reshape(*d.shape[:-1], d.shape[-1] * 2).to(torch.uint8)


def nvfp4_quantize_operand(a: torch.Tensor, amax, rng_state=None, item_base: int = 0
                           ) -> tuple[torch.Tensor, torch.Tensor]:
    """One operand A [R, C] -> (data [R, C/2] uint8, compact scales [R', C'] uint8),
    R' = roundup(R, 128), C' = roundup(C/16, 4).

    RN without `rng_state`; SR with it, block b of row r drawing item
    `item_base + r * C/16 + b`."""
    s_b, v = nvfp4_scaled_operand(a, amax)
    r, c = v.shape
    nb = c // NVFP4_BLOCK
    if rng_state is None:
        codes = e2m1_rn(v)
    else:
        rnd = block_random_bytes(rng_state, r, nb, item_base).reshape(r, c).to(v.device)
        codes = e2m1_sr(v, rnd)
    scales = torch.zeros(_roundup(r, 128), _roundup(nb, 4), dtype=torch.uint8, device=v.device)
    scales[:r, :nb] = s_b
    return pack_e2m1(codes), scales


def _flatten_input(x: torch.Tensor, block: int, fmt: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{fmt} input must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in _INPUT_DTYPES:
        raise TypeError(f"{fmt} input dtype must be float32, bfloat16 or float16, got {x.dtype}")
    if x.dim() < 2:
        raise ValueError(f"{fmt} input must have at least 2 dims, got shape {tuple(x.shape)}")
    k = x.shape[-1]
    m = x.numel() // k if k else 0
    if m == 0 or m % block or k % block:
        raise ValueError(f"{fmt} input shape flattened to [M, K] = [{m}, {k}]: both must be a "
                         f"positive multiple of {block}")
    return x.reshape(m, k).to(torch.float32)


def nvfp4_is_fused(x: torch.Tensor, rowwise: bool, columnwise: bool, with_rht: bool,
                   stochastic_rounding: bool) -> bool:
    """Whether qext takes the fused path (one RNG state for both operands)."""
    k = x.shape[-1]
    m = x.numel() // k
    return (stochastic_rounding and with_rht and rowwise and columnwise
            and x.dtype == torch.bfloat16 and m % 64 == 0 and k % 128 == 0)


def nvfp4_state_count(x: torch.Tensor, rowwise: bool, columnwise: bool, with_rht: bool,
                      stochastic_rounding: bool) -> int:
    """How many RNG states a quantization takes: 0 (RN), 1, or 2 (unfused SR, both usages)."""
    if not stochastic_rounding:
        return 0
    if rowwise and columnwise and not nvfp4_is_fused(x, rowwise, columnwise, with_rht, True):
        return 2
    return 1


def nvfp4_quantize(x: torch.Tensor, rowwise: bool = True, columnwise: bool = True,
                   with_rht: bool = False, stochastic_rounding: bool = False,
                   optimize_for_gemm: bool = False,
                   rng_states: Sequence[torch.Tensor] | None = None) -> dict:
    """NVFP4 of x (flattened to [M, K]); buffers named as on qext's NVFP4Tensor.

    `rng_states`: int64 [2] tensors [seed, offset], required with SR: two on the unfused
    path with both usages (rowwise first), one otherwise."""
    if not (rowwise or columnwise):
        raise ValueError("at least one of rowwise and columnwise must be requested")
    x2 = _flatten_input(x, NVFP4_BLOCK, "NVFP4")
    if with_rht and x.dtype != torch.bfloat16:
        raise ValueError(f"RHT is only supported for bfloat16 input, got {x.dtype}")
    m, k = x2.shape
    n_states = nvfp4_state_count(x, rowwise, columnwise, with_rht, stochastic_rounding)
    states = list(rng_states) if (n_states and rng_states is not None) else []
    if len(states) != n_states:
        raise ValueError(f"this quantization takes {n_states} rng state(s), got {len(states)}")
    fused = nvfp4_is_fused(x, rowwise, columnwise, with_rht, stochastic_rounding)
    amax = x2.abs().amax().reshape(1)
    out = dict(rowwise_data=None, rowwise_scale_inv=None, rowwise_amax=None,
               columnwise_data=None, columnwise_scale_inv=None, columnwise_amax=None,
               with_gemm_swizzled_scales=bool(optimize_for_gemm), with_rht=bool(with_rht))
    fix = swizzle if optimize_for_gemm else (lambda s: s)
    if rowwise:
        data, scales = nvfp4_quantize_operand(x2, amax, states[0] if states else None, 0)
        out.update(rowwise_data=data, rowwise_scale_inv=fix(scales), rowwise_amax=amax.clone())
    if columnwise:
        a = x2.t()
        amax_c = amax
        if with_rht:
            a = rht(a)
            amax_c = a.abs().amax().reshape(1)
        base = m * k // NVFP4_BLOCK if fused else 0
        data, scales = nvfp4_quantize_operand(a, amax_c, states[-1] if states else None, base)
        out.update(columnwise_data=data, columnwise_scale_inv=fix(scales),
                   columnwise_amax=amax_c.clone())
    return out


def nvfp4_dequantize(data: torch.Tensor, scales_compact: torch.Tensor, amax, *,
                     columnwise: bool = False, with_rht: bool = False,
                     shape: Sequence[int]) -> torch.Tensor:
    """fp32 x (of the input's `shape`, i.e. [M, K] for a 2-D input) from one direction's buffers.

    Columnwise data holds x^T (RHT(x^T) when `with_rht`); compact (unswizzled) scales."""
    shape = tuple(shape)
    k = shape[-1]
    m = 1
    for d in shape[:-1]:
        m *= d
    r, c = (k, m) if columnwise else (m, k)
    nb = c // NVFP4_BLOCK
    vals = e2m1_value(unpack_e2m1(data.reshape(r, c // 2))).reshape(r, nb, NVFP4_BLOCK)
    sb = e4m3_decode(scales_compact[:r, :nb]).unsqueeze(-1)
    amax_t = torch.as_tensor(amax, dtype=torch.float32, device=data.device).reshape(1)
    y = ((vals * sb) * amax_t) / _full(vals, NVFP4_GLOBAL)
    if float(amax_t) == 0.0:
        y = torch.zeros_like(y)
    y = y.reshape(r, c)
    if columnwise:
        if with_rht:
            y = rht_inverse(y)
        y = y.t()
    return y.reshape(shape).contiguous()


# ---- MXFP8 ------------------------------------------------------------------------


def mxfp8_exponent(bamax: torch.Tensor) -> torch.Tensor:
    """e = ceil(log2(bamax / 448)) from the bits, clamped to [-127, 127]; -127 for 0 (int64)."""
    bamax = bamax.to(torch.float32)
    ratio = bamax / _full(bamax, E4M3_MAX)
    bits = _bits(ratio)
    biased = (bits >> 23) & 0xFF
    mant = bits & 0x7FFFFF
    e_normal = biased - 127 + (mant != 0).to(torch.int64)
    # Subnormal ratio mant * 2^-149: float(mant) is exact, so its exponent is mant's top bit
    # and its fraction is non-zero exactly when lower bits are set.
    mbits = _bits(mant.to(torch.float32))
    e_sub = ((mbits >> 23) & 0xFF) - 127 - 149 + ((mbits & 0x7FFFFF) != 0).to(torch.int64)
    e_sub = torch.where(mant == 0, torch.full_like(e_sub, -127), e_sub)
    e = torch.where(biased == 0, e_sub, e_normal)
    e = torch.where(bamax == 0, torch.full_like(e, -127), e)
    return torch.clamp(e, -127, 127)


def exp2_from_bits(e: torch.Tensor) -> torch.Tensor:
    """2^e (fp32) for integer e in [-127, 127]; 2^-127 is the subnormal 0x00400000."""
    e = e.to(torch.int64)
    return _from_bits(torch.where(e <= -127, torch.full_like(e, 0x00400000),
                                  (torch.clamp(e, min=-126) + 127) << 23))


def mxfp8_quantize(x: torch.Tensor, rowwise: bool = True, columnwise: bool = True,
                   optimize_for_gemm: bool = False) -> dict:
    """MXFP8 of x (flattened to [M, K]); buffers named as on qext's MXFP8Tensor."""
    if not (rowwise or columnwise):
        raise ValueError("at least one of rowwise and columnwise must be requested")
    x2 = _flatten_input(x, MXFP8_BLOCK, "MXFP8")
    m, k = x2.shape
    out = dict(rowwise_data=None, rowwise_scale_inv=None, columnwise_data=None,
               columnwise_scale_inv=None, with_gemm_swizzled_scales=bool(optimize_for_gemm))
    if rowwise:
        blocks = x2.reshape(m, k // MXFP8_BLOCK, MXFP8_BLOCK)
        e = mxfp8_exponent(blocks.abs().amax(dim=-1))
        data = e4m3_encode(blocks / exp2_from_bits(e).unsqueeze(-1)).reshape(m, k)
        scales = torch.zeros(_roundup(m, 128), _roundup(k // MXFP8_BLOCK, 4), dtype=torch.uint8,
                             device=x2.device)
        scales[:m, :k // MXFP8_BLOCK] = (e + 127).to(torch.uint8)
        out.update(rowwise_data=data,
                   rowwise_scale_inv=swizzle(scales) if optimize_for_gemm else scales)
    if columnwise:
        blocks = x2.reshape(m // MXFP8_BLOCK, MXFP8_BLOCK, k)
        e = mxfp8_exponent(blocks.abs().amax(dim=1))
        data = e4m3_encode(blocks / exp2_from_bits(e).unsqueeze(1)).reshape(m, k)
        scales = torch.zeros(_roundup(m // MXFP8_BLOCK, 4), _roundup(k, 128), dtype=torch.uint8,
                             device=x2.device)
        scales[:m // MXFP8_BLOCK, :k] = (e + 127).to(torch.uint8)
        out.update(columnwise_data=data,
                   columnwise_scale_inv=(swizzle(scales, transposed=True)
                                         if optimize_for_gemm else scales))
    return out


def mxfp8_dequantize(data: torch.Tensor, scales_compact: torch.Tensor, *, columnwise: bool = False,
                     shape: Sequence[int] | None = None) -> torch.Tensor:
    """fp32 x from one direction's MXFP8 data ([M, K] E4M3 bytes) and compact scales."""
    shape = tuple(shape) if shape is not None else tuple(data.shape)
    k = shape[-1]
    m = data.numel() // k
    vals = e4m3_decode(data.reshape(m, k))
    p = exp2_from_bits(scales_compact.to(torch.int64) - 127)
    if columnwise:
        y = vals.reshape(m // MXFP8_BLOCK, MXFP8_BLOCK, k) * p[:m // MXFP8_BLOCK, :k].unsqueeze(1)
    else:
        y = vals.reshape(m, k // MXFP8_BLOCK, MXFP8_BLOCK) * p[:m, :k // MXFP8_BLOCK].unsqueeze(-1)
    return y.reshape(shape)
