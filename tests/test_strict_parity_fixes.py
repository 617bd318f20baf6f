"""Small torch-parity fixes of the strict run (tests/parity/known_failures.py): half
dtypes kept on 0-d operands of ``half_in_float32`` kernels (where NumPy's ufuncs answer a
float32 scalar) and in corrcoef; empty histograms, unique along an empty dimension and an
empty group_norm batch; Scalar arguments into integer tensors (scatter's value, index_add's
alpha); einsum's and bilinear's integer result dtypes; softmin's cast."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

CASES = {
    "square": lambda lib, x, y: lib.square(x),
    "softsign": lambda lib, x, y: lib.nn.functional.softsign(x),
    "l1_loss": lambda lib, x, y: lib.nn.functional.l1_loss(x, y),
    "smooth_l1_loss": lambda lib, x, y: lib.nn.functional.smooth_l1_loss(x, y),
    "soft_margin_loss": lambda lib, x, y: lib.nn.functional.soft_margin_loss(x, y),
    "frexp": lambda lib, x, y: lib.frexp(x)[0],
    "matmul_1d": lambda lib, x, y: lib.matmul(x.reshape(1), y.reshape(1)),
    "mul": lambda lib, x, y: x * y,
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_zero_dim_half_keeps_dtype(case, dtype):
    got = CASES[case](ember, ember.tensor(-8.5, dtype=getattr(ember, dtype)),
                      ember.tensor(-1.7656, dtype=getattr(ember, dtype)))
    want = CASES[case](torch, torch.tensor(-8.5, dtype=getattr(torch, dtype)),
                       torch.tensor(-1.7656, dtype=getattr(torch, dtype)))
    assert str(got.dtype) == str(want.dtype)
    assert got.shape == tuple(want.shape)
    assert got.float().item() == pytest.approx(want.float().item(), rel=1e-2)


@pytest.mark.parametrize("bins", [1, 3])
def test_histogram_of_empty_input_spans_zero_to_one(bins):
    got = ember.histogram(ember.empty(5, 0, 5), bins)
    want = torch.histogram(torch.empty(5, 0, 5), bins)
    assert got.bin_edges.tolist() == pytest.approx(want.bin_edges.tolist())
    edges = ember.histogramdd(ember.empty(5, 0, 2), [bins, 1]).bin_edges
    want = torch.histogramdd(torch.empty(5, 0, 2), [bins, 1]).bin_edges
    assert [e.tolist() for e in edges] == [pytest.approx(w.tolist()) for w in want]


SCALAR_CASES = {
    "scatter_value": lambda lib, x, v: lib.scatter(x, 0, lib.tensor([0]), v),
    "scatter_add_value": lambda lib, x, v: lib.scatter(x, 0, lib.tensor([0]), v, reduce="add"),
    "scatter_mul_value": lambda lib, x, v: lib.scatter(x, 0, lib.tensor([0]), v,
                                                       reduce="multiply"),
    "index_add_alpha": lambda lib, x, v: lib.index_add(x, 0, lib.tensor([0]), x[:1], alpha=v),
}


@pytest.mark.parametrize("value", [-1, -255, -256, 300, 2.7, -2.5, 1e10])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int64"])
@pytest.mark.parametrize("case", sorted(SCALAR_CASES))
def test_scalar_argument_converts_to_integer_dtype(case, dtype, value):
    """A Scalar value/alpha into an integer tensor truncates and wraps as in torch, and
    out of torch's bounds raises its overflow error."""
    results = []
    for lib in (ember, torch):
        x = lib.tensor([5, 7], dtype=getattr(lib, dtype))
        try:
            results.append(SCALAR_CASES[case](lib, x, value).tolist())
        except RuntimeError as e:
            results.append(str(e))
    assert results[0] == results[1]


@pytest.mark.parametrize("fn", ["unique_consecutive", "unique"])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_unique_along_a_dim_of_an_empty_tensor(fn, dim):
    results = []
    for lib in (ember, torch):
        try:
            out = getattr(lib, fn)(lib.empty(5, 0, 5), dim=dim, return_inverse=True,
                                   return_counts=True)
            results.append([tuple(t.shape) for t in out])
        except RuntimeError as e:
            results.append(str(e))
    assert results[0] == results[1]


def test_native_group_norm_of_an_empty_batch():
    args = lambda lib: (lib.empty(0, 2), lib.ones(2), lib.zeros(2), 0, 2, 1, 1, 1e-5)
    got = ember.native_group_norm(*args(ember))
    want = torch.native_group_norm(*args(torch))
    assert [tuple(t.shape) for t in got] == [tuple(t.shape) for t in want]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_corrcoef_of_halves_keeps_dtype(dtype):
    x = np.random.default_rng(0).standard_normal((3, 4)).tolist()
    got = ember.corrcoef(ember.tensor(x, dtype=getattr(ember, dtype)))
    want = torch.corrcoef(torch.tensor(x, dtype=getattr(torch, dtype)))
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), atol=2e-2)


EINSUMS = [("...ik, ...j -> ij", [(1, 2, 3), (3,)]), ("ijk,ijl->", [(2, 2, 3), (2, 2, 3)]),
           ("ijk,l->ijl", [(2, 2, 3), (3,)]), ("ijk,ijk->", [(2, 2, 3), (2, 2, 3)]),
           ("ijk,j->ik", [(2, 2, 3), (2,)]), ("ijk->ik", [(2, 2, 3)]), ("ij,jk->ik", [(2, 3), (3, 2)])]


@pytest.mark.parametrize("dtype", ["int8", "int32", "float32"])
@pytest.mark.parametrize("equation,shapes", EINSUMS)
def test_einsum_integer_result_dtype(equation, shapes, dtype):
    """torch sums a subscript found in one operand only with ``sum``: integers come out
    int64; contractions between operands keep the dtype."""
    arrays = [np.arange(np.prod(s)).reshape(s) % 5 - 2 for s in shapes]
    got = ember.einsum(equation, *[ember.tensor(a.tolist(), dtype=getattr(ember, dtype))
                                   for a in arrays])
    want = torch.einsum(equation, *[torch.tensor(a.tolist(), dtype=getattr(torch, dtype))
                                    for a in arrays])
    assert str(got.dtype) == str(want.dtype)
    assert got.tolist() == want.tolist()


def test_bilinear_of_integers_keeps_dtype():
    make = lambda lib: (lib.ones(3, dtype=lib.int8), lib.ones(4, dtype=lib.int8),
                        lib.ones(5, 3, 4, dtype=lib.int8), lib.ones(5, dtype=lib.int8))
    got = ember.nn.functional.bilinear(*make(ember))
    want = torch.nn.functional.bilinear(*make(torch))
    assert str(got.dtype) == str(want.dtype) and got.tolist() == want.tolist()


def test_softmin_with_dtype_negates_before_the_cast():
    x = [[0, 5, 200], [3, 0, 1]]
    got = ember.nn.functional.softmin(ember.tensor(x, dtype=ember.uint8), 1, dtype=ember.float64)
    want = torch.nn.functional.softmin(torch.tensor(x, dtype=torch.uint8), 1,
                                       dtype=torch.float64)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


# half-dtype kernels torch computes in float32 and rounds once: the same values, bit for bit
# (rtol 0), or within torch's tolerances where float32 sums are ordered differently (rms_norm);
# cosine_similarity normalises each operand first (its n1 * n2 overflowed float16)
def _softmax(a, dim):
    e = np.exp(a - a.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


HALF_FLOAT32 = {
    "addcmul": (lambda lib, a, b, c: lib.addcmul(a, b, c, value=0.3), 0),
    "addcmul_0d": (lambda lib, a, b, c: lib.addcmul(a[0, 0], b[0, 0], c[0, 0]), 0),
    "addcmul_": (lambda lib, a, b, c: a.clone().addcmul_(b, c), 0),
    "addcdiv": (lambda lib, a, b, c: lib.addcdiv(a, b, c, value=3), 0),
    "softmax_backward_data": (lambda lib, a, b, c: lib.ops.aten._softmax_backward_data(
        a, b, 0, a.dtype), 0),
    "log_softmax_backward_data": (lambda lib, a, b, c: lib.ops.aten._log_softmax_backward_data(
        a, b.log(), 1, a.dtype), 1e-3),
    "logsigmoid": (lambda lib, a, b, c: lib.nn.functional.logsigmoid(a), 0),
    "multilabel_soft_margin_loss": (lambda lib, a, b, c:
                                    lib.nn.functional.multilabel_soft_margin_loss(a, c, b), 0),
    "rms_norm": (lambda lib, a, b, c: lib.nn.functional.rms_norm(a, (10,), c[0]), 1e-3),
    "cosine_similarity": (lambda lib, a, b, c: lib.nn.functional.cosine_similarity(a, c), 0),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", sorted(HALF_FLOAT32))
def test_half_ops_compute_in_float32(case, dtype):
    fn, rtol = HALF_FLOAT32[case]
    rtol *= 16 if dtype == "bfloat16" else 1          # torch's 1.6e-2 for bfloat16
    rng = np.random.default_rng(0)
    a, c = (rng.uniform(-9, 9, (10, 10)).astype(np.float32) for _ in range(2))
    arrays = [a, _softmax(rng.uniform(-3, 3, (10, 10)), 0).astype(np.float32), c]
    got = fn(ember, *[ember.tensor(x).to(getattr(ember, dtype)) for x in arrays])
    want = fn(torch, *[torch.tensor(x).to(getattr(torch, dtype)) for x in arrays])
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=rtol,
                               atol=1e-5 if rtol else 0)


@pytest.mark.parametrize("momentum", [0.1, -1.2])
@pytest.mark.parametrize("shape", [(2, 1), (3, 2, 4), (5, 3)])
def test_float16_running_stats_update_in_float32(shape, momentum):
    """batch_norm's running statistics of float16: (1 - m) running + m batch-stat in float32
    from the float32 batch statistics, rounded once: torch's values bit for bit."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-9, 9, shape).astype(np.float32)
    stats = [rng.uniform(-9, 9, shape[1]).astype(np.float32),
             rng.uniform(0, 9, shape[1]).astype(np.float32)]
    got, want = [], []
    for lib, out in ((ember, got), (torch, want)):
        rm, rv = (lib.tensor(s).half() for s in stats)
        lib.nn.functional.batch_norm(lib.tensor(x).half(), rm, rv, training=True,
                                     momentum=momentum)
        out += [rm.float().tolist(), rv.float().tolist()]
    assert got == want


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("start,end,base", [(4.3, 4, 10.0), (0.1, 3.3, 2.0), (-2.7, 2.5, 2.5)])
def test_logspace_of_halves_rounds_the_endpoints_first(start, end, base, dtype):
    """torch converts start/end to the half dtype, then computes in float32: 10**4.2
    comes out 15864, not the 15824 of half-precision exponents."""
    got = ember.logspace(start, end, 7, base=base, dtype=getattr(ember, dtype))
    want = torch.logspace(start, end, 7, base=base, dtype=getattr(torch, dtype))
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(),
                               rtol=2e-3 if dtype == "float16" else 2e-2)
    if (start, end, dtype) == (4.3, 4, "float16"):
        assert got.tolist() == want.tolist()


@pytest.mark.parametrize("dtype", ["int8", "int64", "float32", "float64"])
def test_trigamma_at_the_poles_uses_the_reflection(dtype):
    """polygamma(1, x) below 1/2 is pi^2 / sin^2(pi x) - trigamma(1 - x) in the input's
    precision: the negative integers give torch's huge finite values, 0 gives inf."""
    values = list(range(-20, 6)) + ([-2.5, -0.25, 0.3] if dtype.startswith("float") else [])
    got = ember.polygamma(1, ember.tensor(values, dtype=getattr(ember, dtype)))
    want = torch.polygamma(1, torch.tensor(values, dtype=getattr(torch, dtype)))
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


BF16_ORDER = {
    "sort": lambda lib, t: lib.sort(t, 1)[0],
    "sort_indices_descending": lambda lib, t: lib.sort(t, 1, descending=True)[1],
    "median": lambda lib, t: lib.median(t, 1)[0],
    "nanmedian": lambda lib, t: lib.nanmedian(t),
    "masked_median": lambda lib, t: lib.masked.median(t[0], 0, mask=t[1] > 0),
    "kthvalue": lambda lib, t: lib.kthvalue(t, 2, 1)[0],
    "unique": lambda lib, t: lib.unique(t[0]),
}


@pytest.mark.parametrize("case", sorted(BF16_ORDER))
def test_bfloat16_with_nan_sorts_nan_last(case):
    """ml_dtypes' bfloat16 comparison sort leaves NaNs where they are: the sorting kernels
    order bfloat16 through float32 (exact), NaN last as in torch."""
    x = np.random.default_rng(0).uniform(-9, 9, (4, 7)).astype(np.float32)
    x[np.random.default_rng(1).random((4, 7)) < 0.3] = np.nan
    got = BF16_ORDER[case](ember, ember.tensor(x).bfloat16())
    want = BF16_ORDER[case](torch, torch.tensor(x).bfloat16())
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


@pytest.mark.parametrize("n", [2, 3])
def test_fractional_max_pool_of_bfloat16(n):
    """bfloat16 input (Tensor.numpy() refuses it, as torch's does): same values and indices
    as torch for the same random samples."""
    x = np.random.default_rng(0).standard_normal((1, 2) + (9,) * n).astype(np.float32)
    samples = np.random.default_rng(1).random((1, 2, n)).astype(np.float32)
    got, want = (getattr(lib.nn.functional, f"fractional_max_pool{n}d")(
        lib.tensor(x).bfloat16(), 3, output_size=2, return_indices=True,
        _random_samples=lib.tensor(samples).bfloat16()) for lib in (ember, torch))
    assert str(got[0].dtype) == str(want[0].dtype)
    assert got[0].float().tolist() == want[0].float().tolist()
    assert got[1].tolist() == want[1].tolist()
