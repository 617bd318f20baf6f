"""Op database driven tests (see tests/opinfo.py)."""
from __future__ import annotations

import re
import zlib

import numpy as np
import pytest

import ember
from ember._ops.registry import OPS as RECORDS
from helpers import to_ember, to_torch, to_numpy, assert_close, torch
from opdb import OP_DB

CASES = [(op, dt) for op in OP_DB for dt in op.dtypes]
IDS = [f"{op.name}-{dt}" for op, dt in CASES]
GRAD_OPS = [op for op in OP_DB if op.supports_grad]


def _rng(op, dtype=""):
    return np.random.default_rng(zlib.crc32(f"{op.name}|{dtype}".encode()))


def _call(op, lib, sample, convert, requires_grad=False, how="function"):
    x = convert(sample.input, requires_grad)
    args = tuple(convert(a, requires_grad) for a in sample.args)
    kwargs = {k: convert(v) for k, v in sample.kwargs.items()}
    if how == "function":
        fn = getattr(lib, op.torch_name or op.name) if lib is not ember else getattr(lib, op.name)
        return fn(x, *args, **kwargs), (x, args)
    return getattr(x, op.name)(*args, **kwargs), (x, args)


def _first(r):
    return r[0] if isinstance(r, (tuple, list)) else r


@pytest.mark.parametrize("op,dtype", CASES, ids=IDS)
def test_forward_matches_reference(op, dtype):
    rng = _rng(op, dtype)
    for sample in op.sample_inputs(dtype, rng):
        how = "function" if op.function else "method"
        res, _ = _call(op, ember, sample, to_ember, how=how)
        if op.ref is not None:
            ref_args = [a for a in sample.args]
            expected = op.ref(sample.input, *ref_args, **sample.kwargs)
            if isinstance(expected, tuple):
                for r, e in zip(res, expected):
                    assert_close(r, e, op.atol, op.rtol, msg=f"{op.name} {sample}")
            else:
                assert_close(_first(res), expected, op.atol, op.rtol, msg=f"{op.name} {sample}")
        if torch is not None and op.check_dtype:
            tres, _ = _call(op, torch, sample, to_torch, how=how)
            for r, t in zip(res if isinstance(res, (tuple, list)) else [res],
                            tres if isinstance(tres, (tuple, list)) else [tres]):
                if isinstance(t, torch.Tensor):
                    assert str(r.dtype) == str(t.dtype), f"{op.name} {sample}: dtype " \
                                                         f"{r.dtype} vs torch {t.dtype}"
                    assert tuple(r.shape) == tuple(t.shape)


@pytest.mark.parametrize("op,dtype", CASES, ids=IDS)
def test_method_and_inplace_agree(op, dtype):
    rng = _rng(op, dtype)
    for sample in op.sample_inputs(dtype, rng):
        if not isinstance(sample.input, np.ndarray):
            continue
        if op.method and op.function:
            f, _ = _call(op, ember, sample, to_ember, how="function")
            m, _ = _call(op, ember, sample, to_ember, how="method")
            assert_close(_first(m), _first(f), 0, 0, check_dtype=True)
        if op.inplace:
            f, _ = _call(op, ember, sample, to_ember, how="function" if op.function else "method")
            f = _first(f)
            x = to_ember(sample.input)
            if tuple(f.shape) != tuple(x.shape) or f.dtype != x.dtype:
                continue
            args = tuple(to_ember(a) for a in sample.args)
            r = getattr(x, op.inplace)(*args, **{k: to_ember(v) for k, v in
                                                 sample.kwargs.items()})
            assert r is x
            assert_close(x, f, op.atol, op.rtol)
            assert x._version == 1


@pytest.mark.parametrize("op,dtype", [(o, d) for o, d in CASES if o.supports_out],
                         ids=[i for (o, d), i in zip(CASES, IDS) if o.supports_out])
def test_out(op, dtype):
    rng = _rng(op, dtype)
    for sample in op.sample_inputs(dtype, rng):
        expected, _ = _call(op, ember, sample, to_ember)
        if isinstance(expected, (tuple, list)):
            continue
        out = ember.empty(0, dtype=expected.dtype)
        x = to_ember(sample.input)
        args = tuple(to_ember(a) for a in sample.args)
        r = getattr(ember, op.name)(x, *args, **{k: to_ember(v) for k, v in
                                                 sample.kwargs.items()}, out=out)
        assert r is out
        assert_close(out, expected, 0, 0, check_dtype=True)


@pytest.mark.parametrize("op", [o for o in OP_DB if o.error_inputs], ids=lambda o: o.name)
def test_error_inputs(op):
    for err in op.error_inputs(np.random.default_rng(0)):
        s = err.sample
        with pytest.raises(err.error_type, match=err.error_regex):
            _call(op, ember, s, to_ember, how="function" if op.function else "method")


def _grad_samples(op):
    rng = _rng(op, "grad")
    for dtype in op.grad_dtypes:
        for sample in op.sample_inputs(dtype, rng):
            if op.grad_input_filter is not None and not op.grad_input_filter(sample):
                continue
            yield sample


def _grad_fn(op, sample):
    how = "function" if op.function else "method"
    x = to_ember(sample.input, True)
    args = tuple(to_ember(a, True) for a in sample.args)
    flat_inputs = (list(x) if isinstance(x, list) else [x]) + \
        [a for a in args if isinstance(a, ember.Tensor)]
    diff = [t for t in flat_inputs if isinstance(t, ember.Tensor) and t.requires_grad]

    def fn(*ts):
        it = iter(ts)
        repl = {id(t): next(it) for t in diff}
        xx = [repl.get(id(t), t) for t in x] if isinstance(x, list) else repl.get(id(x), x)
        aa = tuple(repl.get(id(a), a) if isinstance(a, ember.Tensor) else a for a in args)
        kw = {k: to_ember(v) for k, v in sample.kwargs.items()}
        r = getattr(ember, op.name)(xx, *aa, **kw) if how == "function" else \
            getattr(xx, op.name)(*aa, **kw)
        return tuple(o for o in (r if isinstance(r, (tuple, list)) else (r,))
                     if isinstance(o, ember.Tensor) and (o.is_floating_point() or o.is_complex()))
    return fn, diff


@pytest.mark.parametrize("op", GRAD_OPS, ids=lambda o: o.name)
def test_gradcheck(op):
    for sample in _grad_samples(op):
        fn, diff = _grad_fn(op, sample)
        if diff:
            assert ember.autograd.gradcheck(fn, tuple(diff)), sample


@pytest.mark.parametrize("op", [o for o in GRAD_OPS if o.supports_gradgrad], ids=lambda o: o.name)
def test_gradgradcheck(op):
    for sample in _grad_samples(op):
        fn, diff = _grad_fn(op, sample)
        if diff and all(t.numel() <= 30 for t in diff):
            assert ember.autograd.gradgradcheck(fn, tuple(diff)), sample


def test_every_op_record_has_an_entry():
    covered = {r for op in OP_DB for r in op.op_records}
    missing = sorted(n for n in RECORDS if n not in covered and n not in UNTESTED_RECORDS)
    assert not missing, f"op records without an op database entry: {missing}"


# internal records exercised through others' entries (documented here, one reason each)
UNTESTED_RECORDS = {
    "_standard_gamma_grad": "the gradient of _standard_gamma (tests/test_random_streams.py)",
    "_dirichlet_grad": "the gradient of _sample_dirichlet (tests/test_programs_s22a.py)",
    "tanh_backward": "tanh's gradient (tests/test_activation_gradients.py)",
    "sigmoid_backward": "sigmoid's gradient (tests/test_activation_gradients.py)",
    "silu_backward": "silu's half-type gradient (tests/test_half_gradients.py)",
    "_basic_index": "every getitem test",
    "_fused_adam_": "tests/optim/test_adam_arrays.py", "_fused_adamw_": "Adam/AdamW steps",
    "_basic_index_backward": "gradients of getitem",
    "_to_copy": "Tensor.to / .float() ...",
    "sum_to_size": "every broadcasting gradient",
    "where.self": "CopySlices backward; public where entry",
    "copy": "setitem with tensors",
    "copy_": "setitem with tensors",
    "fill.Tensor": "setitem with scalars",
    "fill_.Tensor": "setitem with scalars",
    "zeros": "ember.zeros", "ones": "ember.ones", "full": "ember.full", "empty": "ember.empty",
    "clone": "clone", "transpose.int": "", "permute": "", "expand": "", "unsqueeze": "",
    "squeeze": "", "conj_physical": "", "conj_physical_": "",
    "_unsafe_view": "reshape that must copy (tests/test_correctness_semantics2.py)",
    "alias": "as_subclass (tests/test_correctness_semantics2.py)",
    "zero": "zero_'s functional form", "zero_": "Tensor.zero_ / torch.zero_ (setitem tests)",
    "_grad_links_input": "second derivatives of pools / nll_loss (tests/parity/test_torch_gradgrad.py)",
    "_weight_norm_interface": "torch._weight_norm's dim-0 record (tests/test_programs_s16b.py)",
    "_real_part": "torch.real / Tensor.real of complex tensors (tests/test_programs_s17a.py, "
                  "the complex op entries)",
}
# the sparse layouts' primitive records (ember/_ops/sparse.py): tests/test_sparse.py
UNTESTED_RECORDS.update(dict.fromkeys((
    "_sparse_coo_tensor_with_dims_and_tensors", "_values", "_sparse_values_at",
    "_sparse_to_dense", "_to_sparse", "coalesce", "_to_sparse_csr", "_csr_to_coo",
    "_sparse_csr_tensor_unsafe", "_sparse_add", "_sparse_mul", "_sparse_sparse_matmul",
    "_embedding_sparse_grad"),
    "tests/test_sparse.py"))
UNTESTED_RECORDS.update(dict.fromkeys((
    "_sparse_compressed_from_parts", "_sparse_compressed_to_coo", "_sparse_coo_to_compressed"),
    "tests/test_sparse_compressed.py"))
UNTESTED_RECORDS.update(dict.fromkeys((
    "_complex32_to_complex64", "_complex64_to_complex32"), "tests/test_complex32.py"))
UNTESTED_RECORDS.update(dict.fromkeys(("_sparse_smm", "hspmm"), "tests/test_semantics_s8.py"))
UNTESTED_RECORDS["hash_tensor"] = "tests/test_dtypes_unsigned.py (against torch)"
# quantized tensors' records (quantize/dequantize, int_repr, q_scale..., and every
# ``quantized::`` op): tests/quantization/ compares their integers with torch's bit for bit
from ember._ops.quantized import NATIVE as _QUANTIZED_NATIVE  # noqa: E402
UNTESTED_RECORDS.update(dict.fromkeys(_QUANTIZED_NATIVE, "tests/quantization/"))
# fake quantization's records (values and straight-through gradients against torch's in
# tests/quantization/test_fake_quant.py)
UNTESTED_RECORDS.update(dict.fromkeys((
    "fake_quantize_per_tensor_affine_cachemask",
    "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
    "fake_quantize_per_channel_affine_cachemask", "_fused_moving_avg_obs_fq_helper",
    "_fake_quantize_learnable_per_tensor_affine", "_fake_quantize_learnable_per_channel_affine"),
    "tests/quantization/test_fake_quant.py"))
