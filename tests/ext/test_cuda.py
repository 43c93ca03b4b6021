"""qext's CUDA kernels: CUDA bytes == CPU bytes == reference, no-op graph replay, seeds.

Every test needs a CUDA GPU and a qext built with its CUDA kernels; without a GPU the
module is skipped with that reason. CPU and CUDA must give identical bytes for the same
input and, with stochastic rounding, the same explicit [seed, offset] states
(docs/qext-internals.md); the reference runs on the CPU copy of the input.
"""

import pytest
import qext
import torch
from ext_util import assert_same_bytes
from qext import reference as ref

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="needs a CUDA GPU (qext's CUDA kernels)")

NVFP4_BUFFERS = ("rowwise_data", "rowwise_scale_inv", "rowwise_amax",
                 "columnwise_data", "columnwise_scale_inv", "columnwise_amax")
MXFP8_BUFFERS = ("rowwise_data", "rowwise_scale_inv", "columnwise_data", "columnwise_scale_inv")
DATA_BUFFERS = ("rowwise_data", "columnwise_data")
USAGES = {"both": (True, True), "rowwise": (True, False), "columnwise": (False, True)}

# (128, 320) and (48, 96) leave partial 64x64 tiles and scale padding; (256, 512) is
# aligned; (128, 256) bf16 is aligned for the fused path; (208, 1040) spans many tiles.
NVFP4_SHAPES = [(128, 320), (48, 96), (256, 512), (128, 256), (208, 1040), (3, 64, 32)]
MXFP8_SHAPES = [(128, 320), (256, 512), (96, 160), (32, 32), (3, 64, 32)]
DTYPES = [torch.float32, torch.bfloat16]

CUDA = torch.device("cuda")


# ---- helpers ----------------------------------------------------------------------


def buffers(t, names) -> dict:
    """The named buffers of a quantized tensor or reference dict (None where absent)."""
    get = t.get if isinstance(t, dict) else (lambda n: getattr(t, n, None))
    out = {}
    for n in names:
        b = get(n)
        if b is not None and n in DATA_BUFFERS:
            b = b.reshape(-1, b.shape[-1])  # data of an N-D input may keep leading dims
        out[n] = b
    return out


def assert_same_tensors(actual, expected, names, what: str) -> None:
    a, e = buffers(actual, names), buffers(expected, names)
    for n in names:
        if e[n] is None:
            assert a[n] is None, f"{what}: {n}: expected None (usage not requested)"
            continue
        assert_same_bytes(a[n], e[n], f"{what}: {n}")
    sw_a, sw_e = (t["with_gemm_swizzled_scales"] if isinstance(t, dict)
                  else t.with_gemm_swizzled_scales for t in (actual, expected))
    assert sw_a == sw_e, f"{what}: with_gemm_swizzled_scales {sw_a} != {sw_e}"


def make_input(shape, dtype=torch.float32, kind="randn", seed=0) -> torch.Tensor:
    """Deterministic test data (made on the CPU, so CPU and CUDA see the same values)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g)
    if kind == "wide":  # large dynamic range: subnormal block scales, saturation
        x = x * torch.exp2(torch.randint(-30, 20, shape, generator=g).float())
    elif kind == "sparse":  # whole zero blocks, -0.0, isolated large values
        flat = x.view(-1, 32)
        flat[::3] = 0.0
        flat[1::5] = -0.0
        flat[2::7, 5] = 1000.0
    return x.to(dtype)


def states(n: int, seed: int, device) -> list:
    """n explicit [seed, offset] states (rowwise first on the two-state path)."""
    return [torch.tensor([seed + 7919 * i, 4 * i + 3], dtype=torch.int64, device=device)
            for i in range(n)]


def n_states(x, rowwise, columnwise, with_rht) -> int:
    return ref.nvfp4_state_count(x, rowwise, columnwise, with_rht, True)


def snapshot(t, names) -> dict:
    return {n: (b.clone(), b.data_ptr()) for n in names if (b := getattr(t, n)) is not None}


def assert_unchanged(t, before: dict, names, what: str) -> None:
    now = {n: b for n in names if (b := getattr(t, n)) is not None}
    assert now.keys() == before.keys(), f"{what}: buffers {sorted(now)} != {sorted(before)}"
    for n, (copy, ptr) in before.items():
        assert_same_bytes(getattr(t, n), copy, f"{what}: {n}")
        assert getattr(t, n).data_ptr() == ptr, f"{what}: {n} was reallocated"


# ---- CUDA == CPU --------------------------------------------------------------------


@pytest.mark.parametrize("gemm", [False, True], ids=["compact", "gemm"])
@pytest.mark.parametrize("usage", list(USAGES))
@pytest.mark.parametrize("dtype", DTYPES + [torch.float16], ids=str)
@pytest.mark.parametrize("shape", NVFP4_SHAPES, ids=str)
def test_nvfp4_rn_cuda_equals_cpu(shape, dtype, usage, gemm):
    rowwise, columnwise = USAGES[usage]
    q = qext.NVFP4Quantizer(rowwise=rowwise, columnwise=columnwise, optimize_for_gemm=gemm)
    x = make_input(shape, dtype, seed=11)
    assert_same_tensors(q(x.to(CUDA)), q(x), NVFP4_BUFFERS, "cuda vs cpu")


SR_CASES = [
    # shape, dtype, rowwise, columnwise, with_rht        (path; states)
    ((128, 320), torch.float32, True, True, False),     # unfused; two states
    ((48, 96), torch.bfloat16, True, True, False),      # unfused, partial tiles; two states
    ((256, 512), torch.bfloat16, True, False, False),   # rowwise; one state
    ((48, 96), torch.float32, False, True, False),      # columnwise; one state
    ((48, 96), torch.bfloat16, True, True, True),       # unfused RHT (48 % 64); two states
    ((128, 192), torch.bfloat16, True, True, True),     # unfused RHT (192 % 128); two states
    ((64, 128), torch.bfloat16, False, True, True),     # RHT columnwise only; one state
    ((128, 256), torch.bfloat16, True, True, True),     # fused; one state for both
    ((256, 512), torch.bfloat16, True, True, True),     # fused, several tiles
    ((3, 64, 128), torch.bfloat16, True, True, True),   # fused, 3-D input
]


def _sr_id(case):
    shape, dtype, r, c, rht = case
    usage = ("r" if r else "") + ("c" if c else "") + ("-rht" if rht else "")
    return f"{shape}-{str(dtype).split('.')[-1]}-{usage}"


@pytest.mark.parametrize("gemm", [False, True], ids=["compact", "gemm"])
@pytest.mark.parametrize("case", SR_CASES, ids=_sr_id)
def test_nvfp4_sr_cuda_equals_cpu_with_the_same_states(case, gemm):
    shape, dtype, rowwise, columnwise, with_rht = case
    q = qext.NVFP4Quantizer(rowwise=rowwise, columnwise=columnwise, stochastic_rounding=True,
                            with_rht=with_rht, optimize_for_gemm=gemm)
    x = make_input(shape, dtype, seed=12)
    n = n_states(x, rowwise, columnwise, with_rht)
    on_cuda = q.quantize(x.to(CUDA), rng_states=states(n, 1234, CUDA))
    on_cpu = q.quantize(x, rng_states=states(n, 1234, "cpu"))
    assert_same_tensors(on_cuda, on_cpu, NVFP4_BUFFERS, "cuda vs cpu")


@pytest.mark.parametrize("kind", ["wide", "sparse"])
@pytest.mark.parametrize("sr", [False, True], ids=["rn", "sr"])
def test_nvfp4_special_inputs_cuda_equals_cpu(kind, sr):
    x = make_input((128, 320), torch.float32, kind, seed=13)
    q = qext.NVFP4Quantizer(stochastic_rounding=sr)
    st = (lambda dev: states(2, 99, dev)) if sr else (lambda dev: None)
    on_cuda = q.quantize(x.to(CUDA), rng_states=st(CUDA))
    assert_same_tensors(on_cuda, q.quantize(x, rng_states=st("cpu")), NVFP4_BUFFERS, "cuda vs cpu")


def test_nvfp4_rht_rn_cuda_equals_cpu():
    x = make_input((128, 192), torch.bfloat16, seed=14)
    q = qext.NVFP4Quantizer(with_rht=True)
    assert_same_tensors(q(x.to(CUDA)), q(x), NVFP4_BUFFERS, "cuda vs cpu")


def test_nvfp4_misaligned_input_cuda_equals_cpu():
    # A view that starts one element into its storage: not 16-byte aligned, so the
    # kernels take their scalar load paths.
    m, k = 48, 96
    base = make_input((m * k + 1,), torch.float32, seed=15)
    x = base.to(CUDA)[1:].view(m, k)
    assert x.data_ptr() % 16 != 0
    q = qext.NVFP4Quantizer()
    assert_same_tensors(q(x), q(base[1:].view(m, k)), NVFP4_BUFFERS, "cuda vs cpu")


@pytest.mark.parametrize("gemm", [False, True], ids=["compact", "gemm"])
@pytest.mark.parametrize("usage", list(USAGES))
@pytest.mark.parametrize("dtype", DTYPES + [torch.float16], ids=str)
@pytest.mark.parametrize("shape", MXFP8_SHAPES, ids=str)
def test_mxfp8_cuda_equals_cpu(shape, dtype, usage, gemm):
    rowwise, columnwise = USAGES[usage]
    q = qext.MXFP8Quantizer(rowwise=rowwise, columnwise=columnwise, optimize_for_gemm=gemm)
    x = make_input(shape, dtype, seed=16)
    assert_same_tensors(q(x.to(CUDA)), q(x), MXFP8_BUFFERS, "cuda vs cpu")


@pytest.mark.parametrize("kind", ["wide", "sparse"])
def test_mxfp8_special_inputs_cuda_equals_cpu(kind):
    x = make_input((96, 160), torch.float32, kind, seed=17)
    q = qext.MXFP8Quantizer()
    assert_same_tensors(q(x.to(CUDA)), q(x), MXFP8_BUFFERS, "cuda vs cpu")


# ---- CUDA == reference ----------------------------------------------------------------


@pytest.mark.parametrize("gemm", [False, True], ids=["compact", "gemm"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(128, 320), (48, 96), (256, 512)], ids=str)
def test_nvfp4_rn_cuda_equals_reference(shape, dtype, gemm):
    x = make_input(shape, dtype, seed=21)
    t = qext.NVFP4Quantizer(optimize_for_gemm=gemm)(x.to(CUDA))
    assert_same_tensors(t, ref.nvfp4_quantize(x, optimize_for_gemm=gemm), NVFP4_BUFFERS,
                        "cuda vs reference")


@pytest.mark.parametrize("gemm", [False, True], ids=["compact", "gemm"])
@pytest.mark.parametrize("case", SR_CASES, ids=_sr_id)
def test_nvfp4_sr_cuda_equals_reference(case, gemm):
    shape, dtype, rowwise, columnwise, with_rht = case
    x = make_input(shape, dtype, seed=22)
    n = n_states(x, rowwise, columnwise, with_rht)
    t = qext.NVFP4Quantizer(rowwise=rowwise, columnwise=columnwise, stochastic_rounding=True,
                            with_rht=with_rht, optimize_for_gemm=gemm
                            ).quantize(x.to(CUDA), rng_states=states(n, 777, CUDA))
    want = ref.nvfp4_quantize(x, rowwise, columnwise, with_rht=with_rht, stochastic_rounding=True,
                              optimize_for_gemm=gemm, rng_states=states(n, 777, "cpu"))
    assert_same_tensors(t, want, NVFP4_BUFFERS, "cuda vs reference")


@pytest.mark.parametrize("gemm", [False, True], ids=["compact", "gemm"])
@pytest.mark.parametrize("usage", list(USAGES))
@pytest.mark.parametrize("shape", [(128, 320), (96, 160)], ids=str)
def test_mxfp8_cuda_equals_reference(shape, usage, gemm):
    rowwise, columnwise = USAGES[usage]
    x = make_input(shape, torch.bfloat16, seed=23)
    q = qext.MXFP8Quantizer(rowwise=rowwise, columnwise=columnwise, optimize_for_gemm=gemm)
    t = q(x.to(CUDA))
    assert_same_tensors(t, ref.mxfp8_quantize(x, rowwise, columnwise, optimize_for_gemm=gemm),
                        MXFP8_BUFFERS, "cuda vs reference")


@pytest.mark.parametrize("fmt", ["nvfp4", "mxfp8"])
@pytest.mark.parametrize("shape", [(128, 320), (256, 512)], ids=str)
def test_swizzled_scales_equal_reference_swizzle_of_compact(shape, fmt):
    x = make_input(shape, torch.bfloat16, seed=24)
    if fmt == "nvfp4":
        swz = qext.NVFP4Quantizer(optimize_for_gemm=True)(x.to(CUDA))
        compact = ref.nvfp4_quantize(x)
    else:
        swz = qext.MXFP8Quantizer(optimize_for_gemm=True)(x.to(CUDA))
        compact = ref.mxfp8_quantize(x)
    transposed = fmt == "mxfp8"
    assert_same_bytes(swz.rowwise_scale_inv, ref.swizzle(compact["rowwise_scale_inv"]),
                      "rowwise scales")
    assert_same_bytes(swz.columnwise_scale_inv,
                      ref.swizzle(compact["columnwise_scale_inv"], transposed=transposed),
                      "columnwise scales")


@pytest.mark.parametrize(("shape", "transposed"), [
    ((128, 4), False), ((256, 20), False), ((384, 516), False),   # [R % 128, C % 4]
    ((8, 384), True), ((12, 256), True),                          # MXFP8 columnwise: [M/32, K]
], ids=str)
def test_swizzle_kernels_equal_reference(shape, transposed):
    g = torch.Generator().manual_seed(25)
    s = torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
    z = qext.swizzle_scales(s.to(CUDA), transposed=transposed)
    assert_same_bytes(z, ref.swizzle(s, transposed=transposed), "swizzle")
    assert_same_bytes(qext.unswizzle_scales(z, transposed=transposed), s, "unswizzle(swizzle)")


# ---- no-op flag under CUDA-graph replay -------------------------------------------------

GRAPH_CASES = [
    # name, quantizer factory, shape, dtype
    ("nvfp4-rn", lambda g: qext.NVFP4Quantizer(optimize_for_gemm=g), (256, 512), torch.float32),
    ("nvfp4-rn-unaligned", lambda g: qext.NVFP4Quantizer(optimize_for_gemm=g), (128, 320),
     torch.bfloat16),
    ("nvfp4-rn-rowwise", lambda g: qext.NVFP4Quantizer(columnwise=False, optimize_for_gemm=g),
     (128, 320), torch.float32),
    ("nvfp4-rn-columnwise", lambda g: qext.NVFP4Quantizer(rowwise=False, optimize_for_gemm=g),
     (128, 320), torch.float32),
    ("mxfp8", lambda g: qext.MXFP8Quantizer(optimize_for_gemm=g), (256, 512), torch.bfloat16),
    ("mxfp8-unaligned", lambda g: qext.MXFP8Quantizer(optimize_for_gemm=g), (128, 320),
     torch.float32),
]
# With SR each replay draws fresh random bits, so these are checked for the no-op only.
GRAPH_SR_CASES = [
    ("nvfp4-sr", lambda g: qext.NVFP4Quantizer(stochastic_rounding=True, optimize_for_gemm=g),
     (256, 512), torch.bfloat16),
    ("nvfp4-sr-fused", lambda g: qext.NVFP4Quantizer(stochastic_rounding=True, with_rht=True,
                                                     optimize_for_gemm=g),
     (128, 256), torch.bfloat16),
    ("nvfp4-sr-rht-unfused", lambda g: qext.NVFP4Quantizer(stochastic_rounding=True,
                                                           with_rht=True, optimize_for_gemm=g),
     (48, 96), torch.bfloat16),
]


def _names(q):
    return NVFP4_BUFFERS if isinstance(q, qext.NVFP4Quantizer) else MXFP8_BUFFERS


def _capture_update(q, t, x2, flag) -> torch.cuda.CUDAGraph:
    """A CUDA graph of `q.quantize(x2, out=t, noop_flag=flag)` (warmed up on a side stream)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        q.quantize(x2, out=t, noop_flag=flag)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        q.quantize(x2, out=t, noop_flag=flag)
    return graph


@pytest.mark.parametrize("gemm", [False, True], ids=["compact", "gemm"])
@pytest.mark.parametrize("case", GRAPH_CASES + GRAPH_SR_CASES, ids=lambda c: c[0])
def test_graph_replay_with_noop_flag_changes_nothing(case, gemm):
    _, make_q, shape, dtype = case
    q = make_q(gemm)
    names = _names(q)
    t = q(make_input(shape, dtype, seed=31).to(CUDA))
    x2 = make_input(shape, dtype, seed=32).to(CUDA)
    flag = torch.ones(1, dtype=torch.float32, device=CUDA)
    before = snapshot(t, names)
    graph = _capture_update(q, t, x2, flag)  # the warm-up update runs with the flag set too
    torch.cuda.synchronize()
    assert_unchanged(t, before, names, "after capture")
    for _ in range(2):
        graph.replay()
    torch.cuda.synchronize()
    assert_unchanged(t, before, names, "after replay with the flag set")


@pytest.mark.parametrize("gemm", [False, True], ids=["compact", "gemm"])
@pytest.mark.parametrize("case", GRAPH_CASES, ids=lambda c: c[0])
def test_graph_replay_without_noop_flag_equals_fresh_quantization(case, gemm):
    _, make_q, shape, dtype = case
    q = make_q(gemm)
    names = _names(q)
    t = q(make_input(shape, dtype, seed=33).to(CUDA))
    x2 = make_input(shape, dtype, seed=34).to(CUDA)
    flag = torch.ones(1, dtype=torch.float32, device=CUDA)
    graph = _capture_update(q, t, x2, flag)
    ptrs = {n: b.data_ptr() for n in names if (b := getattr(t, n)) is not None}
    x3 = make_input(shape, dtype, seed=35)
    x2.copy_(x3)
    flag.zero_()
    graph.replay()
    torch.cuda.synchronize()
    assert_same_tensors(t, q(x3.to(CUDA)), names, "replayed update vs fresh quantization")
    assert_same_tensors(t, q(x3), names, "replayed update vs the CPU")
    for n, p in ptrs.items():
        assert getattr(t, n).data_ptr() == p, f"{n} was reallocated"


def test_noop_flag_without_graph_changes_nothing():
    q = qext.NVFP4Quantizer(stochastic_rounding=True, optimize_for_gemm=True)
    t = q(make_input((128, 320), torch.float32, seed=36).to(CUDA))
    before = snapshot(t, NVFP4_BUFFERS)
    flag = torch.ones(1, dtype=torch.float32, device=CUDA)
    q.quantize(make_input((128, 320), torch.float32, seed=37).to(CUDA), out=t, noop_flag=flag)
    torch.cuda.synchronize()
    assert_unchanged(t, before, NVFP4_BUFFERS, "noop update")


# ---- seeded reproducibility -------------------------------------------------------------

SEED_CASES = [
    ("unfused-two-states", dict(stochastic_rounding=True), (128, 320), torch.float32),
    ("unfused-rowwise", dict(stochastic_rounding=True, columnwise=False), (48, 96), torch.bfloat16),
    ("fused", dict(stochastic_rounding=True, with_rht=True), (128, 256), torch.bfloat16),
    ("unfused-rht", dict(stochastic_rounding=True, with_rht=True), (48, 96), torch.bfloat16),
]


@pytest.mark.parametrize("case", SEED_CASES, ids=lambda c: c[0])
def test_sr_is_reproducible_from_the_cuda_generator_state(case):
    _, kwargs, shape, dtype = case
    q = qext.NVFP4Quantizer(**kwargs)
    x = make_input(shape, dtype, seed=41).to(CUDA)
    torch.cuda.manual_seed(1234)
    saved = torch.cuda.get_rng_state()
    first = q(x)
    torch.cuda.set_rng_state(saved)
    second = q(x)
    assert_same_tensors(second, first, NVFP4_BUFFERS, "same generator state")
    torch.cuda.manual_seed(4321)
    other = q(x)
    data = [n for n in DATA_BUFFERS if getattr(first, n) is not None]
    assert any(not torch.equal(getattr(other, n), getattr(first, n)) for n in data), \
        "a different seed gave identical SR data"
