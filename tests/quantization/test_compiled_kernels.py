"""The compiled (numba) quantized kernels against the NumPy path they replace: every output
integer equal, on random accumulators / convolutions of many shapes with scales near ties,
and no fused multiply-add in their machine code (ember/_kernels/compiled/)."""
import re
import zlib

import numpy as np
import pytest

pytest.importorskip("numba")

from ember._kernels import compiled  # noqa: E402
from ember._kernels import quantized_gemm as G  # noqa: E402

F32 = np.float32


@pytest.fixture
def kernels():
    """The compiled kernels, switched on for the test (even under EMBER_NO_NUMBA=1), the
    switch put back after."""
    was_on = compiled.switched_on()
    compiled.enable()
    yield compiled.kernels()
    (compiled.enable if was_on else compiled.disable)()


def _numpy(fn, *args, **kw):
    """``fn`` run on the NumPy path (compiled kernels off; inside the ``kernels`` fixture)."""
    compiled.disable()
    try:
        return fn(*args, **kw)
    finally:
        compiled.enable()


def test_switch(kernels):
    assert kernels is not None and compiled.enabled()
    compiled.disable()
    assert compiled.kernels() is None and not compiled.enabled()


def _scales(rng, O, per_channel, ties):
    """(x_scale, w_scale(s), out_scale): random, or powers of two and small odd multiples
    (``ties``: many accumulators land exactly on a half)."""
    if ties:
        ws = rng.choice([2.0 ** -7, 3 * 2.0 ** -8, 5 * 2.0 ** -9], O).astype(F32)
        return 2.0 ** -rng.integers(2, 6), (ws if per_channel else F32(ws[0])), \
            2.0 ** -rng.integers(4, 10)
    ws = (rng.random(O) * 0.02 + 1e-3).astype(F32)
    return float(rng.random() * 0.05 + 1e-3), (ws if per_channel else F32(ws[0])), \
        float(rng.random() * 0.1 + 1e-3)


@pytest.mark.parametrize("rule", ["static", "onednn"])
@pytest.mark.parametrize("acc_dtype", [np.int32, np.float32, np.float64])
def test_requantize_equals_numpy(kernels, rule, acc_dtype):
    rng = np.random.default_rng(zlib.crc32(f"{rule}|{np.dtype(acc_dtype).name}".encode()))
    fn = G.requantize_acc_onednn if rule == "onednn" else G.requantize_acc
    for trial in range(40):
        shape = [(1, 1), (3, 7), (64, 32), (2, 5, 5, 96), (1, 9, 4100)][trial % 5]
        O = shape[-1]
        xs, ws, os_ = _scales(rng, O, trial % 2 == 0, trial % 3 != 0)
        acc = rng.integers(-40000, 40000, shape).astype(acc_dtype)
        bias = None if trial % 4 == 3 else (rng.standard_normal(O) * 2).astype(F32)
        args = (xs, ws, bias, os_, int(rng.integers(0, 256)), trial % 2 == 1)
        got = fn(acc, *args, channel_axis=-1)
        want = _numpy(fn, acc.copy(), *args, channel_axis=-1)
        assert got.dtype == want.dtype == np.uint8 and got.shape == want.shape
        np.testing.assert_array_equal(got, want, err_msg=f"{shape} {args[1:]}")


def test_requantize_onednn_not_fused(kernels):
    """oneDNN's ``v * w_scale + bias`` is two roundings: with ``bias = 0.5 - v * w_scale``
    (rounded) the separate steps give exactly 0.5 (-> 0), a fused multiply-add 0.5 plus the
    product's rounding error (-> 1 about half the time). This data tells them apart."""
    rng = np.random.default_rng(5)
    O = 256
    acc = rng.integers(20000, 30000, (4, O)).astype(np.int32)
    xs, ws = F32(0.0123), (rng.random(O) * 0.5 + 0.5).astype(F32)
    p = (acc.astype(F32) * xs).astype(F32) * ws            # float32 steps
    bias = (F32(0.5) - p[0]).astype(F32)
    exact = acc[0].astype(np.float64) * np.float64(xs)
    exact = exact.astype(F32).astype(np.float64) * ws.astype(np.float64) + bias
    fused = np.rint(exact.astype(F32))                      # (one rounding of v*w + b)
    assert np.any(fused != 0)                              # the case discriminates
    got = G.requantize_acc_onednn(acc, xs, ws, bias, 1.0, 0, False, channel_axis=-1)
    np.testing.assert_array_equal(got[0], 0)
    np.testing.assert_array_equal(got, _numpy(G.requantize_acc_onednn, acc, xs, ws, bias,
                                              1.0, 0, False, channel_axis=-1))


_ASM_PROBE = """
import re, numpy as np
from tests.quantization.test_compiled_kernels import _depthwise_case
from ember._kernels import compiled, quantized_gemm as G
k = compiled.kernels()
G.requantize_acc(np.ones((2, 3), np.int32), 0.1, np.float32(0.2), None, 0.3, 1, False,
                 channel_axis=-1)
for kernel, saturate in (((3, 3), False), ((3, 3), True), ((2, 2), True)):
    _depthwise_case(np.random.default_rng(0), 4, 1, kernel, (1, 1), (1, 1), (1, 1),
                    saturate, not saturate, True)
from ember._kernels import quantized_ops as QK
for op in (np.add, np.multiply):
    QK.pointwise_n([(np.arange(100, dtype=np.uint8), 0.1, 3)] * 2, op, 0.2, 5, 0, 255,
                   np.uint8)
from ember._kernels import quantized as Q
Q.quantize(np.linspace(-3, 3, 100, dtype=np.float32), 0.1, 3, 0, 255, np.uint8)
for fn in (k.requantize_rows, k.depthwise2d, k.depthwise3x3, k._requant_row, k.binary,
           k.quantize_fused):
    asm = "".join(fn.inspect_asm(sig) for sig in fn.signatures)
    assert re.search("mul[sp][sd]", asm), "no float product: not the real code"
    print(fn.__name__, len(re.findall(r"\\bv?fn?m(?:add|sub)\\w*(?:ps|ss|pd|sd)\\b", asm)))
"""


def test_no_fma_in_machine_code(tmp_path):
    """Compiled afresh (numba shows no machine code for kernels loaded from its cache): no
    fused multiply-add instruction anywhere in the requantizing kernels."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), EMBER_NO_NUMBA="0")
    res = subprocess.run([sys.executable, "-c", _ASM_PROBE], cwd=root, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    counts = dict(line.split() for line in res.stdout.split("\n") if line.strip())
    assert counts == {"requantize_rows": "0", "depthwise2d": "0", "depthwise3x3": "0",
                      "_requant_row": "0", "binary": "0", "quantize_fused": "0"}


def _depthwise_case(rng, C, mult, k, stride, padding, dilation, saturate, onednn, relu,
                    ties=False, w_zp_nonzero=False, per_channel=False):
    """The compiled depthwise + requantization and the NumPy path's integers."""
    O = C * mult
    x = rng.integers(0, 256, (2, 9, 11, C)).astype(np.uint8)
    x_zp = int(rng.integers(0, 256))
    wi = rng.integers(-128, 128, (O, 1) + k).astype(np.int8)
    w_zp = rng.integers(-10, 10, O) if w_zp_nonzero and per_channel else \
        (int(rng.integers(-10, 10)) if w_zp_nonzero else 0)
    xs, ws, os_ = _scales(rng, O, per_channel, ties)
    bias = (rng.standard_normal(O) * 3).astype(F32) if rng.random() < 0.7 else None
    out_zp = int(rng.integers(0, 256))
    got = G.depthwise_requantized(x, x_zp, wi, w_zp, stride, padding, dilation, saturate,
                                  onednn, xs, ws, bias, os_, out_zp, relu)

    def numpy_path():
        acc = G.depthwise_last(x, x_zp, wi, w_zp, stride, padding, dilation, saturate)
        rule = G.requantize_acc_onednn if onednn else G.requantize_acc
        return rule(acc, xs, ws, bias, os_, out_zp, relu, channel_axis=-1, own=True)
    return got, _numpy(numpy_path)


GEOMETRIES = [((3, 3), (1, 1), (1, 1), (1, 1)), ((3, 3), (2, 2), (1, 1), (1, 1)),
              ((5, 5), (1, 2), (2, 2), (1, 1)), ((3, 3), (1, 1), (2, 2), (2, 2)),
              ((1, 3), (1, 1), (0, 1), (1, 1)), ((2, 2), (2, 1), (0, 0), (1, 1)),
              ((3, 3), (3, 3), (0, 0), (1, 1)), ((5, 5), (2, 2), (2, 2), (1, 1))]


@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("route", ["onednn", "static", "static_saturate"])
def test_depthwise_equals_numpy(kernels, geometry, route):
    rng = np.random.default_rng(len(route) * 100 + GEOMETRIES.index(geometry))
    for trial in range(6):
        C, mult = [(8, 1), (3, 2), (16, 1), (1, 1), (32, 1), (5, 3)][trial]
        got, want = _depthwise_case(rng, C, mult, *geometry, route == "static_saturate",
                                    route == "onednn", trial % 2 == 0, ties=trial % 3 == 0,
                                    w_zp_nonzero=route != "onednn" and trial % 2 == 1,
                                    per_channel=trial >= 3)
        assert got is not None and got.dtype == np.uint8
        np.testing.assert_array_equal(got, want, err_msg=f"C={C} mult={mult} trial {trial}")


def test_depthwise_saturation_happens(kernels):
    """Large inputs and weights: fbgemm's int16 pairs saturate, and the kernel agrees with
    the NumPy path both ways (and the two routes differ, so saturation really ran)."""
    rng = np.random.default_rng(3)
    x = np.full((1, 5, 5, 8), 250, np.uint8)
    wi = np.full((8, 1, 3, 3), 127, np.int8)
    wi[1::2] = -128
    args = ((1, 1), (1, 1), (1, 1))
    q = (0.01, F32(0.01), None, 1.0, 0, False)
    sat = G.depthwise_requantized(x, 0, wi, 0, *args, True, False, *q)
    exact = G.depthwise_requantized(x, 0, wi, 0, *args, False, False, *q)
    assert np.any(sat != exact)
    for s, got in ((True, sat), (False, exact)):
        acc = _numpy(G.depthwise_last, x, 0, wi, 0, *args, s)
        np.testing.assert_array_equal(got, _numpy(G.requantize_acc, acc, *q, channel_axis=-1))
    del rng


def test_not_covered_returns_none(kernels):
    x3 = np.zeros((1, 4, 4, 4, 8), np.uint8)
    w3 = np.zeros((8, 1, 3, 3, 3), np.int8)
    assert G.depthwise_requantized(x3, 0, w3, 0, (1,) * 3, (1,) * 3, (1,) * 3, False, True,
                                   0.1, F32(0.1), None, 0.1, 0, False) is None
    compiled.disable()
    x = np.zeros((1, 4, 4, 8), np.uint8)
    assert G.depthwise_requantized(x, 0, w3[..., 0], 0, (1, 1), (1, 1), (1, 1), False, True,
                                   0.1, F32(0.1), None, 0.1, 0, False) is None


@pytest.mark.parametrize("op", [np.add, np.multiply])
@pytest.mark.parametrize("storage,qmin,qmax", [(np.uint8, 0, 255), (np.int8, -128, 127)])
def test_binary_equals_numpy(kernels, op, storage, qmin, qmax):
    """quantized::add / mul (vector body and scalar tail) against the NumPy kernel."""
    from ember._kernels import quantized_ops as QK
    rng = np.random.default_rng(7)
    for trial in range(30):
        n = int(rng.choice([1, 31, 64, 100, 4099, 20000]))
        a = rng.integers(qmin, qmax + 1, n).astype(storage)
        b = rng.integers(qmin, qmax + 1, n).astype(storage)
        if trial % 2:       # powers of two: sums land on halves
            sa, sb, so = (2.0 ** -int(rng.integers(1, 8)) for _ in range(3))
        else:
            sa, sb, so = (float(rng.random() * 0.1 + 1e-3) for _ in range(3))
        za, zb, zo = (int(rng.integers(qmin, qmax + 1)) for _ in range(3))
        args = ([(a, sa, za), (b, sb, zb)], op, so, zo, qmin, qmax, storage)
        got = QK.pointwise_n(*args)
        assert compiled.kernels() is not None
        want = _numpy(QK.pointwise_n, *args)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want, err_msg=f"n={n} {sa} {sb} {so}")


@pytest.mark.parametrize("storage,qmin,qmax", [(np.uint8, 0, 255), (np.int8, -128, 127)])
def test_quantize_equals_numpy(kernels, storage, qmin, qmax):
    """8-bit per-tensor quantization (one rounding of the multiply-add) on values at and
    next to half-way points, NaN and infinities."""
    from ember._kernels import quantized as Q
    rng = np.random.default_rng(11)
    for trial in range(20):
        scale = float(rng.choice([2.0 ** -5, 0.1, 1 / 3, float(rng.random() * 0.2 + 1e-4)]))
        zp = int(rng.integers(qmin, qmax + 1))
        k = rng.integers(-300, 300, 5000)
        halves = ((k + 0.5) * scale).astype(F32)
        x = np.concatenate([halves, np.nextafter(halves, F32(np.inf)),
                            np.nextafter(halves, F32(-np.inf)),
                            (rng.standard_normal(3000) * 30 * scale).astype(F32),
                            np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], F32)])
        got = Q.quantize(x, scale, zp, qmin, qmax, storage)
        with np.errstate(invalid="ignore"):
            want = _numpy(Q.quantize, x, scale, zp, qmin, qmax, storage)
        np.testing.assert_array_equal(got, want, err_msg=f"scale {scale} zp {zp}")


def test_max_pool_equals_numpy(kernels):
    from ember._kernels import quantized_ops as QK
    rng = np.random.default_rng(13)
    for trial in range(24):
        dtype = (np.uint8, np.int8)[trial % 2]
        x = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max + 1,
                         (2, int(rng.integers(3, 12)), int(rng.integers(3, 12)), 5)).astype(dtype)
        k = tuple(int(v) for v in rng.integers(1, 4, 2))
        s = tuple(int(v) for v in rng.integers(1, 4, 2))
        p = tuple(int(rng.integers(0, v // 2 + 1)) for v in k)
        d = tuple(int(v) for v in rng.integers(1, 3, 2))
        args = (x, k, s, p, d, trial % 3 == 0, True)
        got = QK.max_pool(*args)
        want = _numpy(QK.max_pool, *args)
        np.testing.assert_array_equal(got, want, err_msg=str(args[1:]))


@pytest.mark.parametrize("int_gemm", [False, True])
def test_conv_columns_equal_numpy(kernels, int_gemm):
    """Convolutions (im2col and GEMM, float32 or integer) with the compiled kernels on give
    the NumPy path's accumulators."""
    from ember._kernels import integer_gemm
    if int_gemm and not integer_gemm.available(100):
        pytest.skip("onnxruntime missing")
    rng = np.random.default_rng(17)
    for trial in range(12):
        groups = [1, 1, 2, 3][trial % 4]
        Cg, Og = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        k = tuple(int(v) for v in rng.integers(1, 4, 2))
        if k == (1, 1):
            k = (2, 3)
        stride = tuple(int(v) for v in rng.integers(1, 3, 2))
        padding = tuple(int(v) for v in rng.integers(0, 2, 2))
        dilation = tuple(int(v) for v in rng.integers(1, 3, 2))
        x = rng.integers(0, 256, (2, 9, 8, Cg * groups)).astype(np.uint8)
        wi = rng.integers(-128, 128, (Og * groups, Cg) + k).astype(np.int8)
        x_zp = int(rng.integers(0, 256))
        mat, w_max = G.conv_weight_matrix(wi, 0, groups)
        ints = (G.conv_weight_ints(wi, groups), np.asarray(0, np.int8)) if int_gemm else None
        args = (x, x_zp, mat, w_max, k, stride, padding, dilation, groups, ints)
        got = G.conv_last(*args)
        want = _numpy(G.conv_last, *args)
        np.testing.assert_array_equal(got, want, err_msg=str(args[4:9]))
