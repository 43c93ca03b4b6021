"""qext on the CPU against qext.reference: bytes, SR, RHT, swizzle, no-op updates, bad input.

Needs the built extension (`import qext` with ext/ on the path). Error-message words these
tests rely on (regexes): "dtype", "multiples? of 16", "multiples? of 32", "RHT", "noop",
"out", "rng".
"""

import pytest
import qext
import torch
from ext_util import assert_same_bytes
from qext import reference as ref

NVFP4_BUFFERS = ("rowwise_data", "rowwise_scale_inv", "rowwise_amax",
                 "columnwise_data", "columnwise_scale_inv", "columnwise_amax")
MXFP8_BUFFERS = ("rowwise_data", "rowwise_scale_inv", "columnwise_data", "columnwise_scale_inv")
DATA_BUFFERS = ("rowwise_data", "columnwise_data")

NVFP4_SHAPES = [(16, 32), (128, 320), (256, 512), (48, 96), (3, 64, 32)]
MXFP8_SHAPES = [(32, 32), (128, 320), (256, 512), (96, 160), (3, 64, 32)]
DTYPES = [torch.float32, torch.bfloat16, torch.float16]
USAGES = {"both": (True, True), "rowwise": (True, False), "columnwise": (False, True)}


# ---- helpers ----------------------------------------------------------------------


def assert_matches(t, expected: dict, names) -> None:
    """Every buffer of quantized tensor `t` equals the reference's; None where not requested."""
    for name in names:
        want, got = expected[name], getattr(t, name)
        if want is None:
            assert got is None, f"{name}: expected None (usage not requested)"
            continue
        if name in DATA_BUFFERS and got is not None and got.dim() != want.dim():
            got = got.reshape(-1, got.shape[-1])  # data of an N-D input may keep leading dims
        assert_same_bytes(got, want, name)
    swizzled = expected["with_gemm_swizzled_scales"]
    assert t.with_gemm_swizzled_scales == swizzled, "with_gemm_swizzled_scales"


def snapshot(t, names) -> dict:
    """Copies and addresses of every buffer of `t`."""
    return {n: (b.clone(), b.data_ptr()) for n in names if (b := getattr(t, n)) is not None}


def assert_unchanged(t, before: dict, names, what: str) -> None:
    now = snapshot(t, names)
    assert now.keys() == before.keys(), f"{what}: buffers {sorted(now)} != {sorted(before)}"
    for n, (copy, ptr) in before.items():
        assert_same_bytes(getattr(t, n), copy, f"{what}: {n}")
        assert getattr(t, n).data_ptr() == ptr, f"{what}: {n} was reallocated"


def make_input(shape, dtype=torch.float32, kind="randn", seed=0) -> torch.Tensor:
    """Deterministic test data of one kind, cast to `dtype`."""
    g = torch.Generator().manual_seed(seed)
    if kind == "randn":
        x = torch.randn(shape, generator=g)
    elif kind == "zeros":
        x = torch.zeros(shape)
    elif kind == "constant":
        x = torch.full(shape, -2.75)
    elif kind == "wide":  # large dynamic range, within float16's range
        span = 10 if dtype == torch.float16 else 40
        x = torch.randn(shape, generator=g)
        x = x * torch.exp2(torch.randint(-span, span // 2, shape, generator=g).float())
    elif kind == "sparse":  # whole zero blocks, -0.0, and isolated large values
        x = torch.randn(shape, generator=g)
        flat = x.view(-1, 32)
        flat[::3] = 0.0
        flat[1::5] = -0.0
        flat[2::7, 5] = 1000.0
    else:
        raise ValueError(kind)
    return x.to(dtype)


def state(seed: int, offset: int = 0) -> torch.Tensor:
    return torch.tensor([seed, offset], dtype=torch.int64)


def sr_states(x, rowwise, columnwise, with_rht, seed) -> list:
    n = ref.nvfp4_state_count(x, rowwise, columnwise, with_rht, True)
    return [state(seed + 7919 * i, 4 * i) for i in range(n)]


def flat(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(-1, x.shape[-1]).float()


# ---- NVFP4 round to nearest -------------------------------------------------------


@pytest.mark.parametrize("usage", list(USAGES))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", NVFP4_SHAPES, ids=str)
def test_nvfp4_rn_matches_reference(shape, dtype, usage):
    rowwise, columnwise = USAGES[usage]
    x = make_input(shape, dtype, seed=1)
    t = qext.NVFP4Quantizer(rowwise=rowwise, columnwise=columnwise)(x)
    assert_matches(t, ref.nvfp4_quantize(x, rowwise, columnwise), NVFP4_BUFFERS)
    assert tuple(t.shape) == tuple(shape) and t.dtype == dtype


@pytest.mark.parametrize("kind", ["zeros", "constant", "wide", "sparse"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(48, 96), (128, 320)], ids=str)
def test_nvfp4_rn_special_inputs_match_reference(shape, dtype, kind):
    x = make_input(shape, dtype, kind, seed=2)
    t = qext.NVFP4Quantizer()(x)
    assert_matches(t, ref.nvfp4_quantize(x), NVFP4_BUFFERS)


def test_nvfp4_call_equals_quantize_and_make_empty_fill():
    x = make_input((48, 96), seed=3)
    q = qext.NVFP4Quantizer()
    empty = q.make_empty(x.shape, x.dtype, x.device)
    for name in ("rowwise_scale_inv", "columnwise_scale_inv", "rowwise_amax", "columnwise_amax"):
        assert getattr(empty, name).eq(0).all(), f"make_empty: {name} not zero-filled"
    q.quantize(x, out=empty)
    expected = ref.nvfp4_quantize(x)
    assert_matches(empty, expected, NVFP4_BUFFERS)
    assert_matches(q(x), expected, NVFP4_BUFFERS)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape", [(48, 96), (3, 64, 32)], ids=str)
def test_nvfp4_dequantize_matches_reference(shape, dtype):
    x = make_input(shape, dtype, seed=4)
    t = qext.NVFP4Quantizer(optimize_for_gemm=True)(x)
    r = ref.nvfp4_quantize(x)
    y = t.dequantize(dtype=torch.float32)
    want = ref.nvfp4_dequantize(r["rowwise_data"], r["rowwise_scale_inv"], r["rowwise_amax"],
                                shape=x.shape)
    assert y.shape == x.shape and y.dtype == torch.float32
    torch.testing.assert_close(y, want, rtol=0, atol=0)


# ---- MXFP8 ------------------------------------------------------------------------


@pytest.mark.parametrize("usage", list(USAGES))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", MXFP8_SHAPES, ids=str)
def test_mxfp8_matches_reference(shape, dtype, usage):
    rowwise, columnwise = USAGES[usage]
    x = make_input(shape, dtype, seed=5)
    t = qext.MXFP8Quantizer(rowwise=rowwise, columnwise=columnwise)(x)
    assert_matches(t, ref.mxfp8_quantize(x, rowwise, columnwise), MXFP8_BUFFERS)


@pytest.mark.parametrize("kind", ["zeros", "constant", "wide", "sparse"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_mxfp8_special_inputs_match_reference(dtype, kind):
    x = make_input((96, 160), dtype, kind, seed=6)
    assert_matches(qext.MXFP8Quantizer()(x), ref.mxfp8_quantize(x), MXFP8_BUFFERS)


def test_mxfp8_dequantize_matches_reference():
    x = make_input((64, 96), seed=7)
    t = qext.MXFP8Quantizer(optimize_for_gemm=True)(x)
    r = ref.mxfp8_quantize(x)
    want = ref.mxfp8_dequantize(r["rowwise_data"], r["rowwise_scale_inv"])
    torch.testing.assert_close(t.dequantize(), want, rtol=0, atol=0)
    torch.testing.assert_close(t.dequantize(), x, rtol=2.0**-4, atol=0)


# ---- NVFP4 stochastic rounding ----------------------------------------------------

SR_CASES = [
    # shape, dtype, rowwise, columnwise, with_rht       (path; states)
    ((128, 320), torch.float32, True, True, False),    # unfused; two states
    ((48, 96), torch.bfloat16, True, False, False),    # one state
    ((48, 96), torch.float32, False, True, False),     # one state, columnwise
    ((48, 96), torch.bfloat16, True, True, True),      # unfused RHT (48 % 64 != 0); two states
    ((128, 192), torch.bfloat16, True, True, True),    # unfused RHT (192 % 128 != 0); two states
    ((64, 128), torch.bfloat16, False, True, True),    # RHT columnwise only; one state
    ((128, 256), torch.bfloat16, True, True, True),    # fused; one state for both
    ((3, 64, 128), torch.bfloat16, True, True, True),  # fused, 3-D input
    ((128, 256), torch.float16, True, True, False),    # no RHT: unfused; two states
]


def _sr_id(case):
    shape, dtype, rowwise, columnwise, with_rht = case
    usage = "both" if rowwise and columnwise else ("rowwise" if rowwise else "columnwise")
    return f"{shape}-{str(dtype)[6:]}-{usage}{'-rht' if with_rht else ''}"


@pytest.mark.parametrize("case", SR_CASES, ids=_sr_id)
def test_nvfp4_sr_with_explicit_states_matches_reference(case):
    shape, dtype, rowwise, columnwise, with_rht = case
    x = make_input(shape, dtype, seed=8)
    states = sr_states(x, rowwise, columnwise, with_rht, seed=123)
    q = qext.NVFP4Quantizer(rowwise, columnwise, stochastic_rounding=True, with_rht=with_rht)
    t = q.quantize(x, rng_states=states)
    expected = ref.nvfp4_quantize(x, rowwise, columnwise, with_rht, True, rng_states=states)
    assert_matches(t, expected, NVFP4_BUFFERS)
    # The same states give the same bytes again.
    assert_matches(q.quantize(x, rng_states=states), expected, NVFP4_BUFFERS)


@pytest.mark.parametrize("case", [SR_CASES[0], SR_CASES[6]], ids=_sr_id)
def test_nvfp4_sr_seed_changes_the_bytes(case):
    shape, dtype, rowwise, columnwise, with_rht = case
    x = make_input(shape, dtype, seed=9)
    q = qext.NVFP4Quantizer(rowwise, columnwise, stochastic_rounding=True, with_rht=with_rht)
    a = q.quantize(x, rng_states=sr_states(x, rowwise, columnwise, with_rht, seed=1))
    b = q.quantize(x, rng_states=sr_states(x, rowwise, columnwise, with_rht, seed=2))
    for name in DATA_BUFFERS:
        if getattr(a, name) is not None:
            assert not torch.equal(getattr(a, name), getattr(b, name)), f"{name}: seed ignored"


@pytest.mark.parametrize("case", [SR_CASES[0], SR_CASES[6]], ids=_sr_id)
def test_nvfp4_sr_from_the_generator_is_seeded_by_manual_seed(case):
    shape, dtype, rowwise, columnwise, with_rht = case
    x = make_input(shape, dtype, seed=10)
    q = qext.NVFP4Quantizer(rowwise, columnwise, stochastic_rounding=True, with_rht=with_rht)

    def seeded(seed):
        torch.manual_seed(seed)
        return q(x)

    a, b, c = seeded(11), seeded(11), seeded(12)
    assert_matches(b, {**{n: getattr(a, n) for n in NVFP4_BUFFERS},
                       "with_gemm_swizzled_scales": False}, NVFP4_BUFFERS)
    assert not torch.equal(a.rowwise_data, c.rowwise_data), "manual_seed did not change SR bytes"
    assert not torch.equal(a.columnwise_data, c.columnwise_data)


def _operands(x: torch.Tensor, with_rht: bool) -> dict:
    x2 = flat(x)
    return {"rowwise": x2, "columnwise": ref.rht(x2.t()) if with_rht else x2.t()}


@pytest.mark.parametrize("case", [SR_CASES[0], SR_CASES[3], SR_CASES[6]], ids=_sr_id)
def test_nvfp4_sr_values_are_adjacent_to_the_exact_ones(case):
    shape, dtype, rowwise, columnwise, with_rht = case
    x = make_input(shape, dtype, "wide", seed=11)
    q = qext.NVFP4Quantizer(rowwise, columnwise, stochastic_rounding=True, with_rht=with_rht)
    torch.manual_seed(5)
    t = q(x)
    for d, a in _operands(x, with_rht).items():
        _, exact = ref.nvfp4_scaled_operand(a, getattr(t, f"{d}_amax"))
        got = ref.e2m1_value(ref.unpack_e2m1(getattr(t, f"{d}_data").reshape(a.shape[0], -1)))
        lo, hi = ref.e2m1_neighbours(exact)
        bad = ((got != lo) & (got != hi)).nonzero()
        assert bad.numel() == 0, (f"{d}: at {tuple(bad[0].tolist())} SR gave {got[tuple(bad[0])]}"
                                  f" for exact {exact[tuple(bad[0])]}")


@pytest.mark.parametrize("dtype, with_rht, usage", [
    (torch.float32, False, "rowwise"), (torch.float32, False, "columnwise"),
    (torch.bfloat16, False, "rowwise"), (torch.bfloat16, True, "columnwise"),
], ids=str)
def test_nvfp4_mean_of_sr_beats_rn(dtype, with_rht, usage):
    rowwise, columnwise = USAGES[usage]
    x = make_input((32, 64), dtype, seed=12)
    exact = x.float()
    rn = qext.NVFP4Quantizer(rowwise, columnwise, with_rht=with_rht)(x).dequantize()
    sr = qext.NVFP4Quantizer(rowwise, columnwise, stochastic_rounding=True, with_rht=with_rht)
    torch.manual_seed(13)
    draws = 64
    mean = sum(sr(x).dequantize() for _ in range(draws)) / draws
    err_rn, err_sr = (rn - exact).norm().item(), (mean - exact).norm().item()
    assert err_sr < 0.5 * err_rn, f"mean of {draws} SR: {err_sr:.4g}, RN: {err_rn:.4g}"


# ---- RHT --------------------------------------------------------------------------


@pytest.mark.parametrize("usage", ["both", "columnwise"])
@pytest.mark.parametrize("shape", NVFP4_SHAPES, ids=str)
def test_nvfp4_rht_rn_matches_reference(shape, usage):
    rowwise, columnwise = USAGES[usage]
    x = make_input(shape, torch.bfloat16, seed=14)
    t = qext.NVFP4Quantizer(rowwise, columnwise, with_rht=True)(x)
    expected = ref.nvfp4_quantize(x, rowwise, columnwise, with_rht=True)
    assert_matches(t, expected, NVFP4_BUFFERS)
    assert t.columnwise_amax.item() == ref.rht(flat(x).t()).abs().max().item()


def test_nvfp4_fused_path_uses_one_state_for_both_directions():
    x = make_input((128, 256), torch.bfloat16, seed=15)
    s = state(99, 3)
    q = qext.NVFP4Quantizer(stochastic_rounding=True, with_rht=True)
    t = q.quantize(x, rng_states=[s])
    assert_matches(t, ref.nvfp4_quantize(x, with_rht=True, stochastic_rounding=True,
                                         rng_states=[s]), NVFP4_BUFFERS)
    # Columnwise items follow the rowwise ones in the single stream: item base M * K / 16.
    a = ref.rht(flat(x).t())
    data, _ = ref.nvfp4_quantize_operand(a, a.abs().max(), s, item_base=128 * 256 // 16)
    assert_same_bytes(t.columnwise_data, data, "fused columnwise data")


# ---- GEMM-swizzled scales ---------------------------------------------------------

GEMM_CASES = [  # (format, shape, dtype, sr+rht fused)
    ("nvfp4", (128, 320), torch.float32, False), ("nvfp4", (256, 512), torch.bfloat16, False),
    ("nvfp4", (48, 96), torch.float16, False), ("nvfp4", (3, 64, 32), torch.float32, False),
    ("nvfp4", (128, 256), torch.bfloat16, True),
    ("mxfp8", (128, 320), torch.float32, False), ("mxfp8", (256, 512), torch.bfloat16, False),
    ("mxfp8", (96, 160), torch.float16, False),
]


def _quantizer(fmt, fused=False, **kw):
    if fmt == "mxfp8":
        return qext.MXFP8Quantizer(**kw)
    return qext.NVFP4Quantizer(stochastic_rounding=fused, with_rht=fused, **kw)


@pytest.mark.parametrize("fmt, shape, dtype, fused", GEMM_CASES, ids=str)
def test_optimize_for_gemm_scales_are_swizzled_reference(fmt, shape, dtype, fused):
    x = make_input(shape, dtype, seed=16)
    q = _quantizer(fmt, fused, optimize_for_gemm=True)
    if fmt == "mxfp8":
        t, names = q(x), MXFP8_BUFFERS
        compact = ref.mxfp8_quantize(x)
    else:
        states = [state(5, 1)] if fused else None
        t, names = q.quantize(x, rng_states=states), NVFP4_BUFFERS
        compact = ref.nvfp4_quantize(x, with_rht=fused, stochastic_rounding=fused,
                                     rng_states=states)
    assert t.with_gemm_swizzled_scales is True
    for d in ("rowwise", "columnwise"):
        transposed = fmt == "mxfp8" and d == "columnwise"
        want = ref.swizzle(compact[f"{d}_scale_inv"], transposed=transposed)
        got = getattr(t, f"{d}_scale_inv")
        assert_same_bytes(got, want, f"{d}_scale_inv")
        assert_same_bytes(qext.unswizzle_scales(got, transposed), compact[f"{d}_scale_inv"],
                          f"unswizzle_scales({d}_scale_inv)")
    expected = {**compact, "with_gemm_swizzled_scales": True}
    for d in ("rowwise", "columnwise"):
        transposed = fmt == "mxfp8" and d == "columnwise"
        expected[f"{d}_scale_inv"] = ref.swizzle(compact[f"{d}_scale_inv"], transposed=transposed)
    assert_matches(t, expected, names)


@pytest.mark.parametrize("shape, transposed", [
    ((128, 4), False), ((256, 8), False), ((384, 20), False),
    ((4, 128), True), ((8, 256), True), ((20, 384), True),
], ids=str)
def test_swizzle_scales_match_reference(shape, transposed):
    g = torch.Generator().manual_seed(17)
    s = torch.randint(0, 256, shape, generator=g).to(torch.uint8)
    z = qext.swizzle_scales(s, transposed)
    assert_same_bytes(z, ref.swizzle(s, transposed), "swizzle_scales")
    assert_same_bytes(qext.unswizzle_scales(s, transposed), ref.unswizzle(s, transposed),
                      "unswizzle_scales")
    assert_same_bytes(qext.unswizzle_scales(z, transposed), s, "unswizzle(swizzle(s))")
    padded = s.clone()
    padded[s.shape[0] // 2:] = 0  # padding stays zero through the round trip
    assert_same_bytes(qext.unswizzle_scales(qext.swizzle_scales(padded, transposed), transposed),
                      padded, "padded round trip")


# ---- No-op updates ----------------------------------------------------------------

NOOP_CASES = [(fmt, shape, usage, gemm)
              for fmt in ("nvfp4", "mxfp8")
              for shape in ((256, 512), (128, 320))
              for usage in USAGES
              for gemm in (False, True)]


@pytest.mark.parametrize("fmt, shape, usage, gemm", NOOP_CASES, ids=str)
def test_noop_update(fmt, shape, usage, gemm):
    rowwise, columnwise = USAGES[usage]
    q = _quantizer(fmt, rowwise=rowwise, columnwise=columnwise, optimize_for_gemm=gemm)
    names = NVFP4_BUFFERS if fmt == "nvfp4" else MXFP8_BUFFERS
    x1, x2 = make_input(shape, seed=18), make_input(shape, seed=19)
    t = q(x1)
    before = snapshot(t, names)
    for repeat in range(2):  # a second no-op must not re-swizzle what the first left alone
        q.quantize(x2, out=t, noop_flag=torch.ones(1))
        assert_unchanged(t, before, names, f"noop update {repeat}")
        assert t.with_gemm_swizzled_scales == gemm
    q.quantize(x2, out=t, noop_flag=torch.zeros(1))
    for n, (_, ptr) in before.items():
        assert getattr(t, n).data_ptr() == ptr, f"flag 0: {n} was reallocated"
    fresh = q(x2)
    assert_matches(t, {**{n: getattr(fresh, n) for n in names},
                       "with_gemm_swizzled_scales": gemm}, names)
    if fmt == "nvfp4":
        expected = ref.nvfp4_quantize(x2, rowwise, columnwise, optimize_for_gemm=gemm)
    else:
        expected = ref.mxfp8_quantize(x2, rowwise, columnwise, optimize_for_gemm=gemm)
    assert_matches(t, expected, names)


@pytest.mark.parametrize("gemm", [False, True])
def test_noop_update_on_the_fused_path(gemm):
    q = qext.NVFP4Quantizer(stochastic_rounding=True, with_rht=True, optimize_for_gemm=gemm)
    x1 = make_input((128, 256), torch.bfloat16, seed=20)
    x2 = make_input((128, 256), torch.bfloat16, seed=21)
    t = q.quantize(x1, rng_states=[state(1)])
    before = snapshot(t, NVFP4_BUFFERS)
    q.quantize(x2, out=t, noop_flag=torch.ones(1), rng_states=[state(2)])
    assert_unchanged(t, before, NVFP4_BUFFERS, "fused noop update")
    q.quantize(x2, out=t, noop_flag=torch.zeros(1), rng_states=[state(2)])
    expected = ref.nvfp4_quantize(x2, with_rht=True, stochastic_rounding=True,
                                  optimize_for_gemm=gemm, rng_states=[state(2)])
    assert_matches(t, expected, NVFP4_BUFFERS)


# ---- Bad input --------------------------------------------------------------------

BAD_INPUTS = [
    # id, quantizer kwargs (fmt first), input, call kwargs, exception, match
    ("nvfp4-int32", ("nvfp4", {}), lambda: torch.zeros(32, 64, dtype=torch.int32), {},
     TypeError, "dtype"),
    ("nvfp4-float64", ("nvfp4", {}), lambda: torch.zeros(32, 64, dtype=torch.float64), {},
     TypeError, "dtype"),
    ("mxfp8-int32", ("mxfp8", {}), lambda: torch.zeros(32, 64, dtype=torch.int32), {},
     TypeError, "dtype"),
    ("mxfp8-float64", ("mxfp8", {}), lambda: torch.zeros(32, 64, dtype=torch.float64), {},
     TypeError, "dtype"),
    ("nvfp4-cols-24", ("nvfp4", {}), lambda: torch.zeros(16, 24), {},
     ValueError, r"multiples? of 16"),
    ("nvfp4-rows-24", ("nvfp4", {}), lambda: torch.zeros(24, 32), {},
     ValueError, r"multiples? of 16"),
    ("nvfp4-3d-rows", ("nvfp4", {}), lambda: torch.zeros(3, 5, 32), {},
     ValueError, r"multiples? of 16"),
    ("mxfp8-cols-48", ("mxfp8", {}), lambda: torch.zeros(32, 48), {},
     ValueError, r"multiples? of 32"),
    ("mxfp8-rows-16", ("mxfp8", {}), lambda: torch.zeros(16, 32), {},
     ValueError, r"multiples? of 32"),
    ("rht-fp32", ("nvfp4", {"with_rht": True}), lambda: torch.zeros(32, 64), {},
     (TypeError, ValueError), "RHT"),
    ("rht-fp16", ("nvfp4", {"with_rht": True}), lambda: torch.zeros(32, 64, dtype=torch.float16),
     {}, (TypeError, ValueError), "RHT"),
    ("rht-fp32-columnwise", ("nvfp4", {"with_rht": True, "rowwise": False}),
     lambda: torch.zeros(32, 64), {}, (TypeError, ValueError), "RHT"),
    ("nvfp4-noop-float64", ("nvfp4", {}), lambda: torch.zeros(32, 64),
     {"noop_flag": torch.ones(1, dtype=torch.float64)}, (TypeError, ValueError), "noop"),
    ("nvfp4-noop-int32", ("nvfp4", {}), lambda: torch.zeros(32, 64),
     {"noop_flag": torch.ones(1, dtype=torch.int32)}, (TypeError, ValueError), "noop"),
    ("nvfp4-noop-shape-2", ("nvfp4", {}), lambda: torch.zeros(32, 64),
     {"noop_flag": torch.ones(2)}, ValueError, "noop"),
    ("nvfp4-noop-shape-0", ("nvfp4", {}), lambda: torch.zeros(32, 64),
     {"noop_flag": torch.ones(0)}, ValueError, "noop"),
    ("mxfp8-noop-float64", ("mxfp8", {}), lambda: torch.zeros(32, 64),
     {"noop_flag": torch.ones(1, dtype=torch.float64)}, (TypeError, ValueError), "noop"),
    ("mxfp8-noop-shape-2", ("mxfp8", {}), lambda: torch.zeros(32, 64),
     {"noop_flag": torch.ones(2)}, ValueError, "noop"),
    ("sr-one-state-for-two", ("nvfp4", {"stochastic_rounding": True}),
     lambda: torch.zeros(32, 64), {"rng_states": [torch.zeros(2, dtype=torch.int64)]},
     ValueError, "rng"),
    ("sr-state-float", ("nvfp4", {"stochastic_rounding": True, "columnwise": False}),
     lambda: torch.zeros(32, 64), {"rng_states": [torch.zeros(2)]}, (TypeError, ValueError),
     "rng"),
]


@pytest.mark.parametrize("quantizer, make_x, kwargs, exc, match",
                         [pytest.param(*c[1:], id=c[0]) for c in BAD_INPUTS])
def test_bad_input_raises_a_clear_error(quantizer, make_x, kwargs, exc, match):
    fmt, qkw = quantizer
    q = qext.NVFP4Quantizer(**qkw) if fmt == "nvfp4" else qext.MXFP8Quantizer(**qkw)
    with pytest.raises(exc, match=match):
        q.quantize(make_x(), **kwargs)


@pytest.mark.parametrize("fmt", ["nvfp4", "mxfp8"])
def test_out_of_the_other_format_is_rejected(fmt):
    x = torch.zeros(64, 64)
    other = qext.MXFP8Quantizer()(x) if fmt == "nvfp4" else qext.NVFP4Quantizer()(x)
    with pytest.raises((TypeError, ValueError), match="out"):
        _quantizer(fmt).quantize(x, out=other)


@pytest.mark.parametrize("fmt", ["nvfp4", "mxfp8"])
@pytest.mark.parametrize("out_shape", [(32, 64), (64, 32), (128, 64)], ids=str)
def test_out_of_the_wrong_shape_is_rejected(fmt, out_shape):
    q = _quantizer(fmt)
    out = q(torch.zeros(out_shape))
    before = snapshot(out, NVFP4_BUFFERS if fmt == "nvfp4" else MXFP8_BUFFERS)
    with pytest.raises(ValueError, match="out"):
        q.quantize(torch.ones(64, 64), out=out)
    assert_unchanged(out, before, list(before), "rejected update")


def test_out_made_for_other_usages_is_rejected():
    out = qext.NVFP4Quantizer(rowwise=True, columnwise=False)(torch.zeros(32, 64))
    with pytest.raises(ValueError, match="out"):
        qext.NVFP4Quantizer(rowwise=True, columnwise=True).quantize(torch.zeros(32, 64), out=out)


@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="a noop flag on another device needs CUDA; this host has no GPU")
@pytest.mark.parametrize("fmt", ["nvfp4", "mxfp8"])
def test_noop_flag_on_another_device_is_rejected(fmt):
    x = torch.zeros(32, 64)
    with pytest.raises((TypeError, ValueError), match="noop"):
        _quantizer(fmt).quantize(x, noop_flag=torch.ones(1, device="cuda"))
