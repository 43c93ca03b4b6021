"""Facts about qext/reference.py itself: format rules, Philox, swizzle, RHT, error bounds.

The reference is loaded from its file, so these tests need no built extension.
"""

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REFERENCE_PATH = Path(__file__).resolve().parents[2] / "ext" / "qext" / "reference.py"


def _load_reference():
    spec = importlib.util.spec_from_file_location("qext_reference_standalone", REFERENCE_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref = _load_reference()


def assert_equal(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    """Exact equality (bitwise for floats) that names the first mismatching index."""
    shapes = tuple(actual.shape), tuple(expected.shape)
    assert shapes[0] == shapes[1], f"{what}: shape {shapes[0]} != {shapes[1]}"
    a, e = actual, expected
    if a.dtype == torch.float32:
        a = a.contiguous().view(torch.int32)
    if e.dtype == torch.float32:
        e = e.contiguous().view(torch.int32)
    bad = (a != e).nonzero()
    if bad.numel():
        idx = tuple(bad[0].tolist())
        raise AssertionError(f"{what}: {bad.shape[0]} of {a.numel()} differ; first at {idx}: "
                             f"got {actual[idx].item()!r}, expected {expected[idx].item()!r}")


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _state(seed: int, offset: int) -> torch.Tensor:
    return torch.tensor([seed, offset], dtype=torch.int64)


def test_reference_imports_without_the_extension():
    code = ("import importlib.util, sys\n"
            f"s = importlib.util.spec_from_file_location('r', {str(REFERENCE_PATH)!r})\n"
            "m = importlib.util.module_from_spec(s); s.loader.exec_module(m)\n"
            "bad = [k for k in sys.modules if k == 'qext' or k.startswith('qext.')]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# ---- E4M3 -------------------------------------------------------------------------


def _e4m3_sweep() -> torch.Tensor:
    g = _gen(0)
    # Every E4M3 value, every midpoint between neighbours (the ties), and values either side.
    vals = ref.e4m3_decode(torch.arange(256, dtype=torch.int64).to(torch.uint8))
    vals = vals[~torch.isnan(vals)].sort().values
    mids = (vals[1:] + vals[:-1]) / 2
    near = torch.cat([torch.nextafter(mids, torch.full_like(mids, math.inf)),
                      torch.nextafter(mids, torch.full_like(mids, -math.inf))])
    dense = torch.cat([torch.linspace(-448, 448, 400_001), torch.linspace(-0.03, 0.03, 100_001)])
    n = 200_000
    exps = torch.randint(-30, 12, (n,), generator=g).float()
    wide = torch.randn(n, generator=g) * torch.exp2(exps)
    bits = torch.randint(-2**31, 2**31, (n,), generator=g, dtype=torch.int64)
    bits = bits.to(torch.int32).view(torch.float32)
    specials = torch.tensor([0.0, -0.0, 2.0**-10, -2.0**-10, 1e-45])
    x = torch.cat([vals, mids, near, dense, wide, bits, specials])
    x = x[torch.isfinite(x)]
    return x.clamp(-448.0, 448.0)  # torch's float8 cast does not saturate


def test_e4m3_encode_matches_torch_float8_e4m3fn():
    x = _e4m3_sweep()
    assert_equal(ref.e4m3_encode(x), x.to(torch.float8_e4m3fn).view(torch.uint8), "e4m3_encode")


def test_e4m3_decode_matches_torch_float8_e4m3fn():
    b = torch.arange(256, dtype=torch.int64).to(torch.uint8)
    got = ref.e4m3_decode(b)
    want = b.view(torch.float8_e4m3fn).to(torch.float32)
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    assert torch.isnan(got).sum() == 2  # 0x7F and 0xFF
    keep = ~torch.isnan(want)
    assert_equal(got[keep], want[keep], "e4m3_decode")
    assert ref.e4m3_decode(torch.tensor([0x7E], dtype=torch.uint8)).item() == 448.0
    assert ref.e4m3_decode(torch.tensor([0x01], dtype=torch.uint8)).item() == 2.0**-9


@pytest.mark.parametrize("value, byte", [
    (448.0, 0x7E), (449.0, 0x7E), (464.0, 0x7E), (1e6, 0x7E), (math.inf, 0x7E), (3e38, 0x7E),
    (-448.0, 0xFE), (-1e6, 0xFE), (-math.inf, 0xFE),
    (math.nan, 0x7F),
    (0.0, 0x00), (-0.0, 0x80),
    (2.0**-10, 0x00), (-2.0**-10, 0x80),  # tie between 0 and 2^-9 goes to even (0), sign kept
    (3 * 2.0**-10, 0x02),                 # tie between 1 and 2 (x 2^-9) goes to 2
    (2.0**-6, 0x08), (1.0, 0x38), (1.0625, 0x38), (1.1875, 0x3A), (-1.5, 0xBC),
])
def test_e4m3_encode_special_values(value, byte):
    got = ref.e4m3_encode(torch.tensor([value], dtype=torch.float32))
    assert got.item() == byte, f"e4m3({value}) = {got.item():#04x}, want {byte:#04x}"


def test_e4m3_round_trip_of_every_byte():
    b = torch.arange(256, dtype=torch.int64).to(torch.uint8)
    keep = (b.to(torch.int64) & 0x7F) != 0x7F
    assert_equal(ref.e4m3_encode(ref.e4m3_decode(b))[keep], b[keep], "encode(decode(b))")


# ---- E2M1 -------------------------------------------------------------------------


@pytest.mark.parametrize("value, code", [
    # The ties: each goes to the even code (0, 2, 4, 6).
    (0.25, 0), (0.75, 2), (1.25, 2), (1.75, 4), (2.5, 4), (3.5, 6), (5.0, 6),
    (-0.25, 8), (-0.75, 10), (-1.25, 10), (-1.75, 12), (-2.5, 12), (-3.5, 14), (-5.0, 14),
    # Representable values.
    (0.0, 0), (0.5, 1), (1.0, 2), (1.5, 3), (2.0, 4), (3.0, 5), (4.0, 6), (6.0, 7),
    (-0.0, 8), (-6.0, 15),
    # Saturation and NaN.
    (6.5, 7), (100.0, 7), (math.inf, 7), (-math.inf, 15), (math.nan, 7),
])
def test_e2m1_rn_ties_and_specials(value, code):
    assert ref.e2m1_rn(torch.tensor([value])).item() == code


@pytest.mark.parametrize("tie", [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])
def test_e2m1_rn_just_off_each_tie(tie):
    t = torch.tensor([tie], dtype=torch.float32)
    below = torch.nextafter(t, torch.tensor([0.0]))
    above = torch.nextafter(t, torch.tensor([math.inf]))
    lo, hi = ref.e2m1_neighbours(t)
    assert ref.e2m1_value(ref.e2m1_rn(below)).item() == lo.item()
    assert ref.e2m1_value(ref.e2m1_rn(above)).item() == hi.item()
    assert ref.e2m1_value(ref.e2m1_rn(-above)).item() == -hi.item()


def test_e2m1_value_table():
    got = ref.e2m1_value(torch.arange(16, dtype=torch.int64).to(torch.uint8))
    mags = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    assert got.tolist() == mags + [-m for m in mags]
    assert torch.signbit(got[8])  # code 8 is -0.0


def test_e2m1_rn_is_nearest():
    x = torch.linspace(-7, 7, 70_001)
    q = ref.e2m1_value(ref.e2m1_rn(x))
    grid = ref.e2m1_value(torch.arange(16, dtype=torch.int64).to(torch.uint8))
    best = (x.clamp(-6, 6).unsqueeze(-1) - grid).abs().min(-1).values
    assert torch.equal((x.clamp(-6, 6) - q).abs(), best)


def test_e2m1_sr_lands_on_a_neighbour_for_every_byte():
    x = torch.cat([torch.linspace(-7, 7, 2801), torch.tensor([0.0, -0.0, 6.0, -6.0, 0.1, 5.99])])
    lo, hi = ref.e2m1_neighbours(x)
    for byte in range(256):
        q = ref.e2m1_value(ref.e2m1_sr(x, torch.full(x.shape, byte, dtype=torch.uint8)))
        ok = (q == lo) | (q == hi)
        assert ok.all(), f"byte {byte}: x={x[~ok][0].item()} gave {q[~ok][0].item()}"
        assert torch.equal(torch.signbit(q), torch.signbit(x))


def test_e2m1_sr_is_unbiased_over_all_bytes():
    # Averaged over the 256 equally likely bytes, SR returns the exact value to within
    # step/256 (the random byte's resolution), inside the unsaturated range.
    x = torch.linspace(-5.99, 5.99, 1199)
    total = torch.zeros_like(x)
    for byte in range(256):
        total += ref.e2m1_value(ref.e2m1_sr(x, torch.full(x.shape, byte, dtype=torch.uint8)))
    step = torch.where(x.abs() < 2, 0.5, torch.where(x.abs() < 4, 1.0, 2.0))
    assert ((total / 256 - x).abs() <= step / 256 + 1e-6).all()


@pytest.mark.parametrize("value, byte, want", [
    (0.3, 0, 0.0), (0.3, 102, 0.0), (0.3, 103, 0.5), (0.3, 255, 0.5),  # up iff byte/256 >= 0.4
    (1.9, 51, 1.5), (1.9, 52, 2.0),  # crossing into the step-1 range
    (5.0, 127, 4.0), (5.0, 128, 6.0), (7.0, 255, 6.0), (math.nan, 0, 6.0), (-0.3, 255, -0.5),
])
def test_e2m1_sr_thresholds(value, byte, want):
    q = ref.e2m1_sr(torch.tensor([value]), torch.tensor([byte], dtype=torch.uint8))
    assert ref.e2m1_value(q).item() == want


# ---- Philox -----------------------------------------------------------------------

# Random123's published known answers for Philox4x32-10: (counter, key) -> output.
PHILOX_KAT = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
     (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF),
     (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def _to_int64(u: int) -> int:
    return u - (1 << 64) if u >= 1 << 63 else u


@pytest.mark.parametrize("ctr, key, want", PHILOX_KAT)
def test_philox_known_answers(ctr, key, want):
    seed = key[0] | key[1] << 32
    offset = ctr[0] | ctr[1] << 32
    item = ctr[2] | ctr[3] << 32
    got = ref.philox4x32_10(seed, offset, torch.tensor([_to_int64(item)], dtype=torch.int64))
    assert [int(w) for w in got[0]] == list(want)


def _philox_scalar(seed: int, offset: int, item: int) -> list:
    # An independent big-integer implementation, straight from the algorithm's definition.
    m32 = 0xFFFFFFFF
    c = [offset & m32, offset >> 32, item & m32, item >> 32]
    k = [seed & m32, seed >> 32]
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & m32, (p0 >> 32) ^ c[3] ^ k[1], p0 & m32]
        k = [(k[0] + 0x9E3779B9) & m32, (k[1] + 0xBB67AE85) & m32]
    return c


def test_philox_vectorised_matches_big_integer_version():
    g = _gen(3)
    for seed, offset in [(0, 0), (0xDEADBEEFCAFEF00D, 0x123456789), ((1 << 64) - 1, (1 << 63) + 5)]:
        items = torch.cat([torch.arange(40), torch.randint(-2**62, 2**62, (40,), generator=g),
                           torch.tensor([-1, 2**63 - 1, -2**63])])
        got = ref.philox4x32_10(seed, offset, items)
        for n, item in enumerate(items.tolist()):
            assert got[n].tolist() == _philox_scalar(seed, offset, item & ((1 << 64) - 1))


def test_block_random_bytes_layout():
    # Element e of block b uses byte e % 4 of word e / 4 of item (base + b).
    rb = ref.block_random_bytes(_state(-5, 1 << 40), 2, 3, item_base=7)
    words = ref.philox4x32_10((1 << 64) - 5, 1 << 40, torch.tensor([7 + 4]))[0].tolist()
    want = [(words[e // 4] >> (8 * (e % 4))) & 0xFF for e in range(16)]
    assert rb.shape == (2, 3, 16)
    assert rb[1, 1].tolist() == want


# ---- Swizzle ----------------------------------------------------------------------

SWIZZLE_SHAPES = [(128, 4), (128, 8), (256, 4), (384, 20), (512, 12)]


def _compact_with_padding(rows, cols, used_rows, used_cols, seed=0):
    s = torch.zeros(rows, cols, dtype=torch.uint8)
    used = torch.randint(1, 256, (used_rows, used_cols), generator=_gen(seed))
    s[:used_rows, :used_cols] = used.to(torch.uint8)
    return s


@pytest.mark.parametrize("shape", SWIZZLE_SHAPES)
def test_swizzle_formula_equals_permute_form(shape):
    r, c = shape
    s = torch.randint(0, 256, shape, generator=_gen(r + c)).to(torch.uint8)
    i = torch.arange(r).unsqueeze(1).expand(r, c)
    j = torch.arange(c).unsqueeze(0).expand(r, c)
    want = torch.zeros(r * c, dtype=torch.uint8)
    want[ref.swizzle_offset(i, j, c).reshape(-1)] = s.reshape(-1)
    assert_equal(ref.swizzle(s), want.reshape(r, c), "swizzle")
    assert_equal(ref.unswizzle(ref.swizzle(s)), s, "unswizzle(swizzle(s))")
    assert_equal(ref.swizzle(ref.unswizzle(s)), s, "swizzle(unswizzle(s))")


def test_swizzle_offset_is_a_bijection():
    r, c = 256, 12
    i = torch.arange(r).unsqueeze(1).expand(r, c)
    j = torch.arange(c).unsqueeze(0).expand(r, c)
    assert torch.equal(ref.swizzle_offset(i, j, c).reshape(-1).sort().values, torch.arange(r * c))


@pytest.mark.parametrize("rows, cols, used_rows, used_cols",
                         [(128, 4, 16, 2), (256, 8, 130, 5), (128, 4, 48, 1)])
def test_swizzle_keeps_padding_zero(rows, cols, used_rows, used_cols):
    s = _compact_with_padding(rows, cols, used_rows, used_cols)
    z = ref.swizzle(s)
    assert (z != 0).sum() == used_rows * used_cols
    i = torch.arange(rows).unsqueeze(1).expand(rows, cols)
    j = torch.arange(cols).unsqueeze(0).expand(rows, cols)
    pad = (i >= used_rows) | (j >= used_cols)
    assert (z.reshape(-1)[ref.swizzle_offset(i, j, cols)[pad]] == 0).all()
    assert_equal(ref.unswizzle(z), s, "unswizzle")


@pytest.mark.parametrize("shape", [(4, 128), (8, 256), (20, 384)])
def test_swizzle_transposed_is_swizzle_of_the_transpose(shape):
    s = torch.randint(0, 256, shape, generator=_gen(9)).to(torch.uint8)
    z = ref.swizzle(s, transposed=True)
    assert z.shape == s.shape
    assert_equal(z.reshape(-1), ref.swizzle(s.t().contiguous()).reshape(-1), "transposed swizzle")
    assert_equal(ref.unswizzle(z, transposed=True), s, "transposed unswizzle")


@pytest.mark.parametrize("shape, transposed",
                         [((100, 4), False), ((128, 6), False), ((4, 100), True)])
def test_swizzle_rejects_unpadded_shapes(shape, transposed):
    with pytest.raises(ValueError, match="swizzle"):
        ref.swizzle(torch.zeros(shape, dtype=torch.uint8), transposed=transposed)


# ---- RHT --------------------------------------------------------------------------


def test_rht_matrix_is_orthogonal_and_as_specified():
    w = ref.rht(torch.eye(16)).t()  # column j is RHT(e_j), so w[i, j] = W[i][j]
    assert torch.equal(w @ w.t(), torch.eye(16))  # entries are +-1/4: the products are exact
    h = torch.tensor([[(-1.0) ** bin(i & j).count("1") for j in range(16)] for i in range(16)])
    signs = torch.tensor([1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1],
                         dtype=torch.float32)
    assert torch.equal(w, signs.unsqueeze(1) * h / 4)


def test_rht_inverse_inverts_it():
    a = torch.randn(24, 64, generator=_gen(4))
    torch.testing.assert_close(ref.rht_inverse(ref.rht(a)), a, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(ref.rht(ref.rht_inverse(a)), a, rtol=1e-5, atol=1e-6)


def test_rht_sums_in_the_contract_order():
    # Values whose sum depends on the order: only a left-to-right fp32 sum gives this result.
    v = torch.zeros(1, 16)
    v[0, 0], v[0, 1], v[0, 2] = 1.0, 2.0**24, -(2.0**24)
    out = ref.rht(v)
    # Row 0 of H is all +1: ((1 + 2^24) - 2^24) = 0 in fp32 (1 + 2^24 rounds to 2^24).
    assert out[0, 0].item() == 0.0
    # Row 1 is (+,-,+,-,...): ((1 - 2^24) - 2^24) ... = -2^25 + 1 -> rounds; check vs a scalar loop.
    h = [[(-1) ** bin(i & j).count("1") for j in range(16)] for i in range(16)]
    for i in range(16):
        acc = torch.zeros((), dtype=torch.float32)
        for j in range(16):
            acc = acc + (v[0, j] if h[i][j] > 0 else -v[0, j])
        want = (acc * 0.25) * ref.RHT_SIGNS[i]
        assert out[0, i].item() == want.item()


def test_rht_rejects_unblocked_width():
    with pytest.raises(ValueError, match="16"):
        ref.rht(torch.zeros(4, 24))


# ---- MXFP8 ------------------------------------------------------------------------


@pytest.mark.parametrize("k", [-126, -100, -20, -1, 0, 1, 5, 20, 100, 119])
def test_mxfp8_exponent_on_powers_of_two_and_just_above(k):
    # bamax / 448 is exactly 2^k (k >= -126 keeps it normal): e = k.
    # One part in 2^20 more: e = k + 1.
    at = torch.tensor([448.0 * 2.0**k], dtype=torch.float32)
    above = torch.tensor([448.0 * 2.0**k * (1 + 2.0**-20)], dtype=torch.float32)
    assert ref.mxfp8_exponent(at).item() == k
    assert ref.mxfp8_exponent(above).item() == k + 1
    # The element at the block max lands on 448 exactly (0x7E); just above, it lands near 224.
    x = torch.zeros(32, 32)
    x[0, 0], x[1, 0] = at.item(), above.item()
    out = ref.mxfp8_quantize(x)
    assert out["rowwise_scale_inv"][0, 0] == k + 127 and out["rowwise_data"][0, 0] == 0x7E
    assert out["rowwise_scale_inv"][1, 0] == k + 128 and out["rowwise_data"][1, 0] == 0x76  # 224


@pytest.mark.parametrize("bamax, e", [
    (0.0, -127), (1e-45, -127), (448.0, 0), (449.0, 1), (447.0, 0), (1.0, -8),
    (3.4e38, 120), (math.inf, 127),            # FLT_MAX / 448 is about 2^119.2; only inf clamps
    (448.0 * 2.0**-130, -127),                 # subnormal ratio 2^-130, clamped
    (672.0 * 2.0**-127, -126),                 # subnormal ratio 1.5 * 2^-127 rounds up to 2^-126
    (448.0 * 2.0**-127, -127),                 # subnormal ratio exactly 2^-127
])
def test_mxfp8_exponent_edges(bamax, e):
    assert ref.mxfp8_exponent(torch.tensor([bamax], dtype=torch.float32)).item() == e


def test_mxfp8_block_max_lands_at_or_below_448_without_saturating():
    g = _gen(5)
    block_exp = torch.randint(-30, 30, (64, 4, 1), generator=g).float()
    x = torch.randn(64, 128, generator=g) * torch.exp2(block_exp).repeat(1, 1, 32).reshape(64, 128)
    out = ref.mxfp8_quantize(x, optimize_for_gemm=False)
    for direction, columnwise in (("rowwise", False), ("columnwise", True)):
        y = ref.mxfp8_dequantize(out[f"{direction}_data"], out[f"{direction}_scale_inv"],
                                 columnwise=columnwise)
        rel = (y - x).abs() / x.abs().clamp_min(1e-30)
        top_scale = out[f"{direction}_scale_inv"].float().max().item() - 127
        normal = x.abs() >= 2.0**-6 * 2.0**top_scale
        assert rel[normal].max() <= 2.0**-4, direction  # 3 mantissa bits: half an ulp
        codes = out[f"{direction}_data"].to(torch.int64) & 0x7F
        assert codes.max() <= 0x7E and (codes == 0x7E).sum() <= x.numel() // 32 * 2


def test_mxfp8_shapes_and_scale_bytes():
    x = torch.zeros(64, 96)
    x[0, 0] = 448.0 * 4    # rowwise block (0, 0) and columnwise block (0, 0) -> e = 2
    x[40, 95] = 448.0 / 8  # rowwise block (40, 2), columnwise block (1, 95) -> e = -3
    out = ref.mxfp8_quantize(x)
    rs, cs = out["rowwise_scale_inv"], out["columnwise_scale_inv"]
    assert rs.shape == (128, 4) and cs.shape == (4, 128)
    assert rs[0, 0] == 129 and rs[40, 2] == 124 and rs[1, 0] == 0
    assert rs[64:].eq(0).all() and rs[:, 3].eq(0).all()
    assert cs[0, 0] == 129 and cs[1, 95] == 124 and cs[0, 1] == 0
    assert cs[2:].eq(0).all() and cs[:, 96:].eq(0).all()
    assert out["rowwise_data"][0, 0] == 0x7E and out["columnwise_data"][40, 95] == 0x7E
    sw = ref.mxfp8_quantize(x, optimize_for_gemm=True)
    assert sw["with_gemm_swizzled_scales"] is True
    assert_equal(sw["rowwise_scale_inv"], ref.swizzle(rs), "rowwise swizzled")
    assert_equal(sw["columnwise_scale_inv"], ref.swizzle(cs, transposed=True),
                 "columnwise swizzled")


@pytest.mark.parametrize("shape", [(16, 32), (32, 48), (32, 32, 1)])
def test_mxfp8_rejects_shapes_not_multiple_of_32(shape):
    with pytest.raises(ValueError, match="multiple of 32"):
        ref.mxfp8_quantize(torch.zeros(shape))


# ---- NVFP4 ------------------------------------------------------------------------


def _wide(shape, seed):
    g = _gen(seed)
    exps = torch.randint(-12, 12, shape, generator=g).float()
    return torch.randn(shape, generator=g) * torch.exp2(exps)


@pytest.mark.parametrize("shape", [(16, 32), (48, 96), (128, 320), (3, 64, 32)])
def test_nvfp4_buffer_shapes_and_padding(shape):
    x = torch.randn(shape, generator=_gen(1)) + 3.0  # no zero blocks, so no zero scales inside
    out = ref.nvfp4_quantize(x)
    k = shape[-1]
    m = x.numel() // k
    assert out["rowwise_data"].shape == (m, k // 2) and out["columnwise_data"].shape == (k, m // 2)
    rs, cs = out["rowwise_scale_inv"], out["columnwise_scale_inv"]
    assert rs.shape == (ref._roundup(m, 128), ref._roundup(k // 16, 4))
    assert cs.shape == (ref._roundup(k, 128), ref._roundup(m // 16, 4))
    for s, r, c in ((rs, m, k // 16), (cs, k, m // 16)):
        assert (s[:r, :c] != 0).all() and s[r:].eq(0).all() and s[:, c:].eq(0).all()
    assert out["rowwise_amax"].item() == out["columnwise_amax"].item() == x.abs().max().item()


def test_nvfp4_zero_input():
    out = ref.nvfp4_quantize(torch.zeros(32, 64))
    for key in ("rowwise_data", "rowwise_scale_inv", "columnwise_data", "columnwise_scale_inv"):
        assert out[key].eq(0).all(), key
    assert out["rowwise_amax"].item() == 0.0
    assert ref.nvfp4_encode_scale(0.0).item() == 1.0
    y = ref.nvfp4_dequantize(out["rowwise_data"], out["rowwise_scale_inv"], 0.0, shape=(32, 64))
    assert y.eq(0).all()


@pytest.mark.parametrize("c", [3.0, 0.1, -1.5, 1e-20, 7e30])
def test_nvfp4_constant_input_is_max_code_with_max_scale(c):
    out = ref.nvfp4_quantize(torch.full((32, 64), c))
    byte = 0xFF if c < 0 else 0x77
    assert out["rowwise_data"].eq(byte).all() and out["columnwise_data"].eq(byte).all()
    assert out["rowwise_scale_inv"][:32, :4].eq(0x7E).all()
    y = ref.nvfp4_dequantize(out["rowwise_data"], out["rowwise_scale_inv"], out["rowwise_amax"],
                             shape=(32, 64))
    torch.testing.assert_close(y, torch.full((32, 64), c), rtol=1e-6, atol=0)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("dist", ["randn", "wide"])
def test_nvfp4_dequantize_error_is_bounded(seed, dist):
    x = torch.randn(64, 128, generator=_gen(seed)) if dist == "randn" else _wide((64, 128), seed)
    out = ref.nvfp4_quantize(x)
    for direction, columnwise in (("rowwise", False), ("columnwise", True)):
        y = ref.nvfp4_dequantize(out[f"{direction}_data"], out[f"{direction}_scale_inv"],
                                 out[f"{direction}_amax"], columnwise=columnwise, shape=x.shape)
        blocks = (x if not columnwise else x.t()).reshape(-1, 16)
        err = (y if not columnwise else y.t()).reshape(-1, 16) - blocks
        bamax = blocks.abs().amax(-1, keepdim=True)
        # Half the top E2M1 step (1 of 6) plus the scale's E4M3 rounding (2^-4), relative
        # to the block max.
        assert (err.abs() <= bamax * (1 / 6) * (1 + 2.0**-4) * 1.0001 + 1e-30).all(), direction
        if dist == "randn":
            assert (err.norm() / x.norm()).item() < 0.12


@pytest.mark.parametrize("dtype, with_rht",
                         [(torch.float32, False), (torch.bfloat16, False), (torch.bfloat16, True)])
def test_nvfp4_sr_mean_beats_rn_and_each_value_is_adjacent(dtype, with_rht):
    x = torch.randn(32, 64, generator=_gen(11)).to(dtype)
    x32 = x.float()
    rn = ref.nvfp4_quantize(x, with_rht=with_rht)
    n_states = ref.nvfp4_state_count(x, True, True, with_rht, True)
    assert n_states == 2
    operands = {"rowwise": x32, "columnwise": ref.rht(x32.t()) if with_rht else x32.t()}
    total = {d: torch.zeros(32, 64) for d in operands}
    draws = 64
    for n in range(draws):
        states = [_state(1000 + n, 3), _state(5000 + n, 3)]
        sr = ref.nvfp4_quantize(x, with_rht=with_rht, stochastic_rounding=True, rng_states=states)
        for d, a in operands.items():
            assert_equal(sr[f"{d}_scale_inv"], rn[f"{d}_scale_inv"], f"{d} scales (SR vs RN)")
            _, v = ref.nvfp4_scaled_operand(a, sr[f"{d}_amax"])
            q = ref.e2m1_value(ref.unpack_e2m1(sr[f"{d}_data"]))
            lo, hi = ref.e2m1_neighbours(v)
            assert ((q == lo) | (q == hi)).all(), f"{d}: SR value not adjacent to the exact one"
            total[d] += ref.nvfp4_dequantize(sr[f"{d}_data"], sr[f"{d}_scale_inv"],
                                             sr[f"{d}_amax"], columnwise=d == "columnwise",
                                             with_rht=with_rht, shape=x.shape)
    for d in operands:
        y_rn = ref.nvfp4_dequantize(rn[f"{d}_data"], rn[f"{d}_scale_inv"], rn[f"{d}_amax"],
                                    columnwise=d == "columnwise", with_rht=with_rht, shape=x.shape)
        err_rn = (y_rn - x32).norm()
        err_sr = (total[d] / draws - x32).norm()
        assert err_sr < 0.5 * err_rn, f"{d}: mean of SR {err_sr:.4g} vs RN {err_rn:.4g}"


def test_nvfp4_sr_seeds_and_offsets_change_the_bytes():
    x = torch.randn(32, 64, generator=_gen(2))

    def q(s):
        out = ref.nvfp4_quantize(x, columnwise=False, stochastic_rounding=True, rng_states=[s])
        return out["rowwise_data"]

    a = q(_state(1, 0))
    assert torch.equal(a, q(_state(1, 0)))
    assert not torch.equal(a, q(_state(2, 0)))
    assert not torch.equal(a, q(_state(1, 1)))


def test_nvfp4_path_choice_and_state_counts():
    bf = torch.zeros(128, 256, dtype=torch.bfloat16)
    assert ref.nvfp4_is_fused(bf, True, True, True, True)
    assert not ref.nvfp4_is_fused(bf.float(), True, True, True, True)
    assert not ref.nvfp4_is_fused(bf[:96], True, True, True, True)        # rows % 64
    assert not ref.nvfp4_is_fused(bf[:, :192], True, True, True, True)    # cols % 128
    assert not ref.nvfp4_is_fused(bf, True, False, True, True)
    assert not ref.nvfp4_is_fused(bf, True, True, False, True)
    assert ref.nvfp4_state_count(bf, True, True, True, True) == 1
    assert ref.nvfp4_state_count(bf, True, True, False, True) == 2
    assert ref.nvfp4_state_count(bf, False, True, True, True) == 1
    assert ref.nvfp4_state_count(bf, True, True, True, False) == 0


def test_nvfp4_fused_path_draws_columnwise_items_after_the_rowwise_ones():
    x = torch.randn(128, 256, generator=_gen(6)).to(torch.bfloat16)
    s = _state(77, 9)
    out = ref.nvfp4_quantize(x, with_rht=True, stochastic_rounding=True, rng_states=[s])
    a = ref.rht(x.float().t())
    amax_c = a.abs().amax()
    assert out["columnwise_amax"].item() == amax_c.item()
    base = 128 * 256 // 16
    data, _ = ref.nvfp4_quantize_operand(a, amax_c, s, base)
    assert_equal(out["columnwise_data"], data, "fused columnwise")
    data0, _ = ref.nvfp4_quantize_operand(a, amax_c, s, 0)
    assert not torch.equal(out["columnwise_data"], data0)
    row, _ = ref.nvfp4_quantize_operand(x.float(), x.float().abs().amax(), s, 0)
    assert_equal(out["rowwise_data"], row, "fused rowwise")


def test_nvfp4_rht_columnwise_amax_is_of_the_transform():
    x = torch.randn(32, 64, generator=_gen(8)).to(torch.bfloat16)
    out = ref.nvfp4_quantize(x, with_rht=True)
    assert out["columnwise_amax"].item() == ref.rht(x.float().t()).abs().max().item()
    assert out["rowwise_amax"].item() == x.float().abs().max().item()
    assert out["columnwise_amax"].item() != out["rowwise_amax"].item()


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(x=torch.zeros(32, 64, dtype=torch.int32)), TypeError, "dtype"),
    (dict(x=torch.zeros(32, 64, dtype=torch.float64)), TypeError, "dtype"),
    (dict(x=torch.zeros(16, 24)), ValueError, "multiple of 16"),
    (dict(x=torch.zeros(24, 32)), ValueError, "multiple of 16"),
    (dict(x=torch.zeros(32, 64), with_rht=True), ValueError, "RHT"),
    (dict(x=torch.zeros(32, 64, dtype=torch.float16), with_rht=True), ValueError, "RHT"),
    (dict(x=torch.zeros(32, 64), stochastic_rounding=True), ValueError, "rng state"),
    (dict(x=torch.zeros(32, 64), stochastic_rounding=True,
          rng_states=[torch.zeros(2, dtype=torch.int64)]), ValueError, "rng state"),
    (dict(x=torch.zeros(32, 64), columnwise=False, stochastic_rounding=True,
          rng_states=[torch.zeros(2)]), ValueError, "int64"),
    (dict(x=torch.zeros(32, 64), rowwise=False, columnwise=False), ValueError, "rowwise"),
])
def test_nvfp4_rejects_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        ref.nvfp4_quantize(**kwargs)
