"""The barebones unsigned dtypes uint16/uint32/uint64 against torch: promotion, which ops
torch's CPU kernels run or refuse, printing, iinfo, NumPy round trips, save/load."""
from __future__ import annotations

import io
import itertools

import numpy as np
import pytest

import ember
from helpers import torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs torch as the oracle")

WIDE = ["uint16", "uint32", "uint64"]
ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
       "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]


def outcome(fn, m):
    """What ``fn(m)`` gives: ("ok", value) or ("raise", exception class name)."""
    try:
        r = fn(m)
    except Exception as e:          # noqa: BLE001 - the class is what is compared
        return "raise", type(e).__name__, str(e)
    return "ok", r, ""


def same(fn):
    e, t = outcome(fn, ember), outcome(fn, torch)
    assert e[0] == t[0], (e, t)
    if e[0] == "raise":
        assert e[1] == t[1], (e, t)
        if t[1] == "NotImplementedError":
            assert e[2] == t[2]
        return
    a, b = e[1], t[1]
    if isinstance(b, torch.Tensor):
        assert str(a.dtype) == str(b.dtype) and tuple(a.shape) == tuple(b.shape)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    elif isinstance(b, tuple) and b and isinstance(b[0], torch.Tensor):
        for x, y in zip(a, b):
            assert str(x.dtype) == str(y.dtype)
            np.testing.assert_array_equal(x.numpy(), y.numpy())
    else:
        assert str(a) == str(b)


@pytest.mark.parametrize("a,b", list(itertools.product(WIDE, ALL)))
def test_promote_types(a, b):
    same(lambda m: m.promote_types(getattr(m, a), getattr(m, b)))
    same(lambda m: m.promote_types(getattr(m, b), getattr(m, a)))


@pytest.mark.parametrize("other", [lambda m: m.tensor(1, dtype=m.int8), lambda m: True,
                                   lambda m: m.tensor(True), lambda m: 1.5, lambda m: 2,
                                   lambda m: 1j, lambda m: m.tensor(1 + 1j),
                                   lambda m: m.tensor([1], dtype=m.int8),
                                   lambda m: m.tensor([1.0], dtype=m.float16)])
def test_result_type_with_dims(other):
    same(lambda m: m.result_type(m.tensor([1], dtype=m.uint16), other(m)))
    same(lambda m: m.result_type(m.tensor([True]), m.tensor(1, dtype=m.uint32)))
    same(lambda m: m.result_type(m.tensor([1]), m.tensor(1, dtype=m.uint64)))


def _a(m, dt="uint32"):
    return m.tensor([3, 1, 2], dtype=getattr(m, dt))


OPS = {
    "add": lambda m: _a(m) + _a(m), "add_scalar": lambda m: _a(m) + 1, "sub": lambda m: _a(m) - 1,
    "mul": lambda m: _a(m) * _a(m), "mul_scalar": lambda m: _a(m) * 2,
    "div": lambda m: _a(m) / _a(m), "floordiv": lambda m: _a(m) // _a(m),
    "rem": lambda m: _a(m) % 2, "neg": lambda m: -_a(m), "abs": lambda m: _a(m).abs(),
    "eq": lambda m: _a(m) == _a(m), "ne": lambda m: _a(m) != 2, "lt": lambda m: _a(m) < _a(m),
    "ge": lambda m: _a(m) >= 1, "lt_float": lambda m: _a(m) < 2.5,
    "and": lambda m: _a(m) & _a(m), "or": lambda m: _a(m) | 1, "xor": lambda m: _a(m) ^ _a(m),
    "not": lambda m: ~_a(m), "lshift": lambda m: _a(m) << 1,
    "sum": lambda m: _a(m).sum(), "prod": lambda m: _a(m).prod(),
    "cumsum": lambda m: _a(m).cumsum(0), "max": lambda m: _a(m).max(),
    "max_dim": lambda m: _a(m).max(0), "amin": lambda m: _a(m).amin(),
    "argmax": lambda m: _a(m).argmax(), "mean": lambda m: _a(m).mean(),
    "sort": lambda m: _a(m).sort(), "topk": lambda m: _a(m).topk(1),
    "unique": lambda m: m.unique(_a(m)), "cat": lambda m: m.cat([_a(m), _a(m)]),
    "stack": lambda m: m.stack([_a(m), _a(m)]), "index": lambda m: _a(m)[m.tensor([0, 2])],
    "mask": lambda m: _a(m)[_a(m) == 1], "where": lambda m: m.where(_a(m) == 1, _a(m), _a(m)),
    "fill": lambda m: _a(m).fill_(2), "zeros": lambda m: m.zeros(3, dtype=m.uint64),
    "full": lambda m: m.full((2,), 3, dtype=m.uint16), "arange": lambda m: m.arange(3, dtype=m.uint16),
    "to_float": lambda m: _a(m).float(), "from_float": lambda m: m.tensor([1.5]).to(m.uint64),
    "item": lambda m: _a(m)[0].item(), "tolist": lambda m: _a(m).tolist(),
    "matmul": lambda m: _a(m).reshape(3, 1) @ _a(m).reshape(1, 3),
    "maximum": lambda m: m.maximum(_a(m), _a(m)), "clamp": lambda m: _a(m).clamp(0, 2),
    "sqrt": lambda m: _a(m).sqrt(), "pow": lambda m: _a(m) ** 2, "flip": lambda m: _a(m).flip(0),
    "roll": lambda m: _a(m).roll(1), "gather": lambda m: _a(m).gather(0, m.tensor([0])),
    "index_select": lambda m: _a(m).index_select(0, m.tensor([1])),
    "masked_fill": lambda m: _a(m).masked_fill(_a(m) == 1, 0),
    "nonzero": lambda m: _a(m).nonzero(), "sign": lambda m: _a(m).sign(),
    "any": lambda m: _a(m).any(), "equal": lambda m: m.equal(_a(m), _a(m)),
    "randn": lambda m: m.randn(2, dtype=m.uint64), "eye": lambda m: m.eye(2, dtype=m.uint32),
    "tril": lambda m: _a(m).reshape(1, 3).tril(), "var": lambda m: _a(m).var(),
    "setitem": lambda m: _a(m).__setitem__(0, 5), "index_put": lambda m:
        _a(m).index_put_((m.tensor([0]),), _a(m)[:1]),
    "add_float": lambda m: _a(m) + m.tensor([1.0]), "add_int8": lambda m: _a(m) + _a(m, "int8"),
    "add_inplace": lambda m: _a(m).add_(_a(m)), "hash": lambda m: m.hash_tensor(_a(m)),
    "view_dtype": lambda m: _a(m).view(m.int32), "uint64_big": lambda m:
        m.tensor([2 ** 64 - 1, 2 ** 63], dtype=m.uint64) * m.tensor([1, 1], dtype=m.uint64),
    "uint64_too_big": lambda m: m.tensor([2 ** 64], dtype=m.uint64),
    "uint64_negative": lambda m: m.tensor([-1], dtype=m.uint64),
    "uint16_overflow": lambda m: m.tensor([70000], dtype=m.uint16),
    "randint_seeded": lambda m: (m.manual_seed(0), m.randint(0, 10, (4,), dtype=m.uint64))[1],
    "randint_bounds": lambda m: m.randint(0, 2 ** 17, (2,), dtype=m.uint16),
    "make_tensor": lambda m: m.testing.make_tensor((3,), dtype=m.uint32, device="cpu").dtype,
    "wrap_negative_scalar": lambda m: _a(m, "uint64") * -1,
    "wrap_uint16": lambda m: _a(m, "uint16") * 70000, "scalar_too_big": lambda m:
        _a(m, "uint64") * 2 ** 64, "eq_negative": lambda m: _a(m, "uint64") == -1,
    "sum_wraps_to_int64": lambda m: m.tensor([2 ** 63 + 5], dtype=m.uint64).sum(),
    "to_double": lambda m: m.tensor([2 ** 64 - 1], dtype=m.uint64).double(),
    "type_name": lambda m: _a(m).type(), "type_to": lambda m: m.ones(2).type("torch.UInt64Tensor"),
}


@pytest.mark.parametrize("name", list(OPS))
def test_op_support_as_torch(name):
    same(OPS[name])


@pytest.mark.parametrize("name", WIDE)
def test_dtype_attributes_and_printing(name):
    e, t = getattr(ember, name), getattr(torch, name)
    assert repr(e) == repr(t) and e.is_signed == t.is_signed and e.itemsize == t.itemsize
    assert not e.is_floating_point and not e.is_complex
    assert str(ember.iinfo(e)) == str(torch.iinfo(t))
    assert (ember.iinfo(e).max, ember.iinfo(e).bits) == (torch.iinfo(t).max, torch.iinfo(t).bits)
    x = ember.tensor([[1, 2], [3, 4]], dtype=e)
    assert repr(x) == repr(torch.tensor([[1, 2], [3, 4]], dtype=t))
    assert x.element_size() == torch.tensor([1], dtype=t).element_size()


@pytest.mark.parametrize("name", WIDE)
def test_numpy_round_trip_shares_memory(name):
    a = np.array([1, np.iinfo(name).max], dtype=name)
    x = ember.from_numpy(a)
    assert x.dtype is getattr(ember, name) and x.numpy() is not None
    assert x.numpy().dtype == np.dtype(name) and x.data_ptr() == a.ctypes.data
    assert ember.tensor(a).dtype is getattr(ember, name)
    assert x.tolist() == torch.from_numpy(a).tolist()


def test_save_load_in_torch_format():
    d = {n: ember.tensor([1, 2, 3], dtype=getattr(ember, n))[1:] for n in WIDE}
    buf = io.BytesIO()
    ember.save(d, buf)
    buf.seek(0)
    got = torch.load(buf)
    for n in WIDE:
        assert got[n].dtype is getattr(torch, n) and got[n].tolist() == [2, 3]
    buf = io.BytesIO()
    torch.save({n: torch.tensor([5, 6], dtype=getattr(torch, n)) for n in WIDE}, buf)
    buf.seek(0)
    back = ember.load(buf)
    for n in WIDE:
        assert back[n].dtype is getattr(ember, n) and back[n].tolist() == [5, 6]


# ------------------------------------------------------------------------------ hash_tensor

HASH_INPUTS = {
    "float32": lambda m: m.tensor([[1.5, 2.0, -3.0], [0.1, -0.0, 7.25]]),
    "float64": lambda m: m.tensor([[1e300, -2.5], [3.0, 1e-300]], dtype=m.float64),
    "float16": lambda m: m.tensor([[1.5, 2.0], [65504.0, -0.5]], dtype=m.float16),
    "bfloat16": lambda m: m.tensor([[1.5, 2.0], [3.0, -0.5]], dtype=m.bfloat16),
    "nan_inf": lambda m: m.tensor([[float("nan"), float("-inf")], [float("inf"), 1.0]]),
    "int64": lambda m: m.tensor([[1, -2], [3, -(2 ** 62)]]),
    "int32": lambda m: m.tensor([[1, -2], [3, 4]], dtype=m.int32),
    "int8": lambda m: m.tensor([[-1, 2], [3, 4]], dtype=m.int8),
    "uint8": lambda m: m.tensor([[200, 2], [3, 4]], dtype=m.uint8),
    "bool": lambda m: m.tensor([[True, False], [True, True]]),
    "scalar": lambda m: m.tensor(2.5),
    "complex": lambda m: m.tensor([1 + 1j]),
    "uint16": lambda m: m.tensor([1, 2], dtype=m.uint16),
}
HASH_CALLS = {
    "all": lambda m, x: m.hash_tensor(x), "dim0": lambda m, x: m.hash_tensor(x, 0),
    "dim1_keepdim": lambda m, x: m.hash_tensor(x, -1, keepdim=True),
    "dims": lambda m, x: m.hash_tensor(x, (0, 1)), "empty_list": lambda m, x: m.hash_tensor(x, []),
    "keepdim_all": lambda m, x: m.hash_tensor(x, keepdim=True),
    "method": lambda m, x: x.hash_tensor(), "aten": lambda m, x: m.ops.aten.hash_tensor.default(x),
    "mode1": lambda m, x: m.hash_tensor(x, mode=1), "dim_out_of_range": lambda m, x:
        m.hash_tensor(x, 3), "dup_dims": lambda m, x: m.hash_tensor(x, (0, 0)),
}


@pytest.mark.parametrize("inp", list(HASH_INPUTS))
@pytest.mark.parametrize("call", list(HASH_CALLS))
def test_hash_tensor(inp, call):
    same(lambda m: HASH_CALLS[call](m, HASH_INPUTS[inp](m)))


@pytest.mark.parametrize("shape,dim", [((0,), None), ((0, 3), 0), ((0, 3), 1), ((2, 0), [0, 1]),
                                       ((2, 0, 3), 2), ((2, 0, 3), [])])
def test_hash_tensor_empty(shape, dim):
    same(lambda m: m.hash_tensor(m.ones(shape), dim))


def test_hash_tensor_out_and_no_grad():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    out = ember.empty(0, dtype=ember.uint64)
    r = ember.hash_tensor(x, out=out)
    assert r is out and not r.requires_grad
    assert out.item() == torch.hash_tensor(torch.tensor([1.0, 2.0])).item()


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_hash_tensor_empty_complex(dim):
    same(lambda m: m.hash_tensor(m.empty(0, 2, dtype=m.complex64), dim))


# every public function of the op records, called on a uint32 matrix: torch's outcome class.
# Left out: torch checks arguments first (clamp with no bound, repeat_interleave's repeats),
# takes no tensor here (the *stack family), or runs a kernel ember shares with one it
# refuses (flipud runs where flip does not).
_ARGS_FIRST = {"clamp", "repeat_interleave", "column_stack", "dstack", "hstack", "vstack",
               "flipud"}


def _record_functions():
    from ember._ops.registry import OPS
    names = {op.public_name for op in OPS.values() if op.tensor_args}
    return sorted(n for n in names if not n.startswith("_") and not n.endswith("_")
                  and hasattr(ember, n) and hasattr(torch, n) and n not in _ARGS_FIRST)


@pytest.mark.parametrize("name", _record_functions())
def test_unary_support_as_torch(name):
    def call(m):
        return getattr(m, name)(m.tensor([[3, 1], [2, 5]], dtype=m.uint32))
    e, t = outcome(call, ember), outcome(call, torch)
    if "TypeError" in (e[1], t[1]):         # needs more arguments
        return
    assert e[0] == t[0] and (e[0] == "ok" or e[1] == t[1]), (e, t)
    if e[0] == "ok" and hasattr(t[1], "dtype"):
        assert str(e[1].dtype) == str(t[1].dtype)


def _binary_functions():
    from ember._ops.registry import OPS
    names = {op.public_name for op in OPS.values() if len(op.tensor_args) >= 2}
    return sorted(n for n in names if not n.startswith("_") and not n.endswith("_")
                  and hasattr(ember, n) and hasattr(torch, n)
                  and n not in ("histogram", "take"))   # torch checks bins / index dtype first


@pytest.mark.parametrize("name", _binary_functions())
def test_binary_support_as_torch(name):
    def call(m):
        x = m.tensor([[3, 1], [2, 5]], dtype=m.uint32)
        return getattr(m, name)(x, x)
    e, t = outcome(call, ember), outcome(call, torch)
    if "TypeError" in (e[1], t[1]):
        return
    assert e[0] == t[0] and (e[0] == "ok" or e[1] == t[1]), (e, t)


def _inplace_methods():
    from ember._ops.registry import METHODS
    return sorted(n for n in METHODS if n.endswith("_") and not n.startswith("_")
                  and hasattr(torch.Tensor, n))


@pytest.mark.parametrize("name", _inplace_methods())
def test_inplace_method_support_as_torch(name):
    def call(m):
        m.manual_seed(0)
        x = m.tensor([[3, 1], [2, 5]], dtype=m.uint32)
        getattr(x, name)()
        return x
    e, t = outcome(call, ember), outcome(call, torch)
    if "TypeError" in (e[1], t[1]):
        return
    assert e[0] == t[0] and (e[0] == "ok" or e[1] == t[1]), (e, t)


@pytest.mark.parametrize("call", [lambda x: x.random_(0, 10), lambda x: x.random_(7),
                                  lambda x: x.bernoulli_(0.5), lambda x: x.geometric_(0.5)])
def test_random_fills_as_torch(call):
    def run(m):
        m.manual_seed(0)
        return call(m.zeros(5, dtype=m.uint64))
    same(run)
