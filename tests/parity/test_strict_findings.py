"""Regressions found by the strict parity run (every sample of every dtype), checked
against torch directly so they hold in the quick run too."""
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "bool", "float16"])
@pytest.mark.parametrize("size", [(1, 2), (2, 1), (1, 1), (2, 2)])
def test_sum_to_size_of_small_ints_is_int64(dtype, size):
    """Integer (and bool) reductions give int64, as torch's ``sum``: NumPy's uint8 sum would
    be uint64, a dtype ember does not have."""
    data = [[200, 100], [1, 0]] if dtype == "uint8" else [[100, 100], [1, 0]]
    t = torch.tensor(data).to(getattr(torch, dtype)).sum_to_size(size)
    e = ember.tensor(data).to(getattr(ember, dtype)).sum_to_size(size)
    assert str(e.dtype) == str(t.dtype)
    assert e.tolist() == t.tolist()


@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (3, 0), (2, 0, 4)])
@pytest.mark.parametrize("ord", [1, -1, float("inf"), -float("inf"), 2, -2])
def test_matrix_norm_of_empty_matrices(shape, ord):
    """Positive orders reduce no column sums to 0; negative ones raise amin's error where
    the reduced dimension is empty (both as torch)."""
    try:
        t = torch.linalg.matrix_norm(torch.empty(shape), ord)
    except (RuntimeError, IndexError) as err:
        assert "amin" in str(err)
        with pytest.raises(type(err), match="amin"):
            ember.linalg.matrix_norm(ember.empty(shape), ord)
        return
    e = ember.linalg.matrix_norm(ember.empty(shape), ord)
    assert tuple(e.shape) == tuple(t.shape) and e.tolist() == t.tolist()
    assert ember.linalg.norm(ember.empty(shape[-2:]), ord).item() == 0.0 or ord < 0


def _c32(T, values):
    return T.tensor(values, dtype=T.complex64).to(T.complex32)


_C32_OPS = {
    "as_strided_copy": lambda T, x: T.as_strided_copy(x, (2, 2), (1, 2)),
    "as_strided_scatter": lambda T, x: T.as_strided_scatter(x, x[0, :2], (2,), (1,)),
    "permute_copy": lambda T, x: T.permute_copy(x, (1, 0)),
    "transpose_copy": lambda T, x: T.transpose_copy(x, 0, 1),
    "unsqueeze_copy": lambda T, x: T.unsqueeze_copy(x, 1),
    "unfold_copy": lambda T, x: T.unfold_copy(x, 1, 2, 1),
    "split_with_sizes_copy": lambda T, x: T.split_with_sizes_copy(x, [1, 2], 1),
    "hstack": lambda T, x: T.hstack([x, x]),
    "vstack": lambda T, x: T.vstack([x, x]),
    "dstack": lambda T, x: T.dstack([x, x]),
    "column_stack": lambda T, x: T.column_stack([x, x]),
    "_chunk_cat": lambda T, x: T._chunk_cat([x, x], 0, 2),
    "nonzero_static": lambda T, x: T.nonzero_static(x, size=5),
    "repeat_interleave": lambda T, x: T.repeat_interleave(x, T.tensor([2, 0]), dim=0),
    "log_softmax(dtype=float64)": lambda T, x: T.log_softmax(x, 1, dtype=T.float64),
    "softmax(dtype=float64)": lambda T, x: T.softmax(x, 0, dtype=T.float64),
}


@pytest.mark.parametrize("name", list(_C32_OPS))
def test_complex32_copies_stacks_and_casting_softmax(name):
    """Ops torch's OpInfos list for complex32 that ember refused: view copies, the stack
    family, nonzero_static, repeat_interleave, and (log_)softmax with a real ``dtype=``."""
    import warnings
    values = [[1 + 2j, 0, -3.5j], [0.25, 2 - 1j, 0]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = _C32_OPS[name](torch, _c32(torch, values))
        e = _C32_OPS[name](ember, _c32(ember, values))
    t, e = (t, e) if isinstance(t, (list, tuple)) else ([t], [e])
    assert len(e) == len(t)
    for a, b in zip(e, t):
        assert str(a.dtype) == str(b.dtype) and tuple(a.shape) == tuple(b.shape)
        if b.is_complex():
            a, b = a.to(ember.complex64), b.to(torch.complex64)
        assert a.tolist() == b.tolist()


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_complex32_softmax_without_real_dtype_is_refused(fn):
    x = ember.tensor([1 + 1j, 2j]).to(ember.complex32)
    with pytest.raises(NotImplementedError):
        getattr(torch, fn)(torch.tensor([1 + 1j, 2j]).to(torch.complex32), 0)
    with pytest.raises(NotImplementedError):
        getattr(ember, fn)(x, 0)


@pytest.mark.parametrize("antialias", [False, True])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("resize", [dict(size=(3, 3)), dict(size=(15, 11)),
                                    dict(size=(2, 7)), dict(scale_factor=1.7),
                                    dict(scale_factor=0.3)])
def test_uint8_bilinear_bicubic_resize_is_torchs_exactly(mode, align_corners, antialias, resize):
    """uint8 resizing computed in uint8 wrapped around (values off by up to 255); torch's
    kernel uses fixed-point weights, width pass first, rounding in between: equal bytes."""
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (2, 3, 7, 9), dtype=torch.uint8, generator=g)
    kw = dict(mode=mode, align_corners=align_corners, antialias=antialias, **resize)
    t = torch.nn.functional.interpolate(x, **kw)
    e = ember.nn.functional.interpolate(ember.tensor(x.tolist(), dtype=ember.uint8), **kw)
    assert e.dtype == ember.uint8 and e.tolist() == t.tolist()


def test_uint8_upsample_bilinear2d_aa_op():
    x = torch.randint(0, 256, (1, 2, 10, 20), dtype=torch.uint8,
                      generator=torch.Generator().manual_seed(1))
    t = torch.ops.aten._upsample_bilinear2d_aa(x, (3, 4), False)
    e = ember.ops.aten._upsample_bilinear2d_aa(ember.tensor(x.tolist(), dtype=ember.uint8),
                                               (3, 4), False)
    assert e.tolist() == t.tolist()


@pytest.mark.parametrize("dtype,mode,antialias,shape", [
    ("int8", "bilinear", False, (1, 1, 4, 4)), ("int16", "bicubic", False, (1, 1, 4, 4)),
    ("bool", "bilinear", True, (1, 1, 4, 4)), ("int64", "bicubic", True, (1, 1, 4, 4)),
    ("uint8", "linear", False, (1, 1, 4)), ("int32", "trilinear", False, (1, 1, 4, 4, 4))])
def test_integer_resize_torch_refuses(dtype, mode, antialias, shape):
    kw = dict(scale_factor=0.75, mode=mode, antialias=antialias)
    with pytest.raises(NotImplementedError) as t_err:
        torch.nn.functional.interpolate(torch.ones(shape, dtype=getattr(torch, dtype)), **kw)
    with pytest.raises(NotImplementedError) as e_err:
        ember.nn.functional.interpolate(ember.ones(shape, dtype=getattr(ember, dtype)), **kw)
    assert str(e_err.value) == str(t_err.value)
