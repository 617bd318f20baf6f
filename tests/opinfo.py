"""ember's op database, in the style of PyTorch's OpInfo.

One ``OpInfo`` per public op. ``tests/test_ops.py`` drives every entry through: forward
against the NumPy/SciPy reference (values) and torch (result dtype), function / method /
in-place agreement, ``out=``, error inputs, float64 gradcheck and gradgradcheck, and a
coverage test that every registered op record is covered by some entry.

Add entries in ``tests/opdb/<family>.py`` as a list named ``OPS``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

FLOATS = ("float32", "float64")
INTS = ("int64", "int32", "uint8", "int8", "int16")
ALL_REAL = FLOATS + INTS + ("bool",)
COMPLEX = ("complex64", "complex128")


@dataclass
class SampleInput:
    """``op(input, *args, **kwargs)``. ``input`` and tensor-valued ``args`` are NumPy arrays
    (converted to ember and torch tensors by the runner); ``input`` may be a list of arrays
    for ops taking a tensor list (cat, stack)."""
    input: object
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    name: str = ""

    def __repr__(self):
        shp = [a.shape for a in self.input] if isinstance(self.input, list) else \
            getattr(self.input, "shape", self.input)
        return f"SampleInput({self.name or shp}, args={self.args!r}, kwargs={self.kwargs!r})"


@dataclass
class ErrorInput:
    sample: SampleInput
    error_type: type
    error_regex: str = ""


@dataclass
class OpInfo:
    name: str                                   # ember.<name>, torch.<name>
    ref: Callable | None                        # NumPy reference: ref(input, *args, **kwargs)
    sample_inputs: Callable                     # (dtype: str, rng) -> list[SampleInput]
    dtypes: tuple = FLOATS
    op_records: tuple = ()                      # op record names this entry covers
    method: bool = True                         # Tensor.<name> exists
    function: bool = True                       # ember.<name> exists
    inplace: str | None = None                  # name of the in-place method, e.g. "add_"
    supports_out: bool = False
    supports_grad: bool = True
    supports_gradgrad: bool = True
    grad_dtypes: tuple = ("float64",)
    error_inputs: Callable | None = None        # (rng) -> list[ErrorInput]
    atol: float = 1e-5
    rtol: float = 1.3e-6
    check_dtype: bool = True                    # compare the result dtype with torch's
    skips: tuple = ()                           # test names to skip, with reasons in docs
    torch_name: str | None = None               # when torch spells it differently
    grad_input_filter: Callable | None = None   # (sample) -> bool: use sample for gradcheck


def make_arg(shape, dtype, rng, low=None, high=None, noncontiguous=False):
    """A random NumPy array of ``shape`` and ``dtype`` (name), torch's make_tensor ranges."""
    if dtype == "bool":
        a = rng.random(shape) < 0.5
    elif dtype in INTS:
        lo = -9 if low is None else low
        hi = 10 if high is None else high
        if dtype == "uint8":
            lo = max(lo, 0)
        a = rng.integers(lo, hi, size=shape).astype(dtype)
    elif dtype in COMPLEX:
        lo, hi = (-9 if low is None else low), (9 if high is None else high)
        a = (rng.uniform(lo, hi, size=shape) + 1j * rng.uniform(lo, hi, size=shape)).astype(dtype)
    else:
        lo, hi = (-9 if low is None else low), (9 if high is None else high)
        a = rng.uniform(lo, hi, size=shape).astype(dtype)
    a = np.asarray(a)
    if noncontiguous and a.ndim > 0:
        big = np.repeat(a[..., None], 2, axis=-1)
        a = big[..., 0]
        assert not a.flags.c_contiguous or a.size <= 1
    return a


def unary_samples(shapes=((), (5,), (3, 4), (2, 3, 4)), low=None, high=None):
    """Sample generator for unary elementwise ops incl. a non-contiguous input."""
    def gen(dtype, rng):
        out = [SampleInput(make_arg(s, dtype, rng, low, high)) for s in shapes]
        out.append(SampleInput(make_arg((3, 4), dtype, rng, low, high, noncontiguous=True),
                               name="noncontig"))
        out.append(SampleInput(make_arg((0, 3), dtype, rng, low, high), name="empty"))
        return out
    return gen


def binary_samples(low=None, high=None, rhs_low=None, rhs_high=None, scalars=True):
    """Sample generator for binary elementwise ops: same shape, broadcasting, scalars."""
    pairs = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (3,)), ((5,), ())]

    def gen(dtype, rng):
        rl = low if rhs_low is None else rhs_low
        rh = high if rhs_high is None else rhs_high
        out = [SampleInput(make_arg(a, dtype, rng, low, high), (make_arg(b, dtype, rng, rl, rh),))
               for a, b in pairs]
        if scalars:
            s = 2 if dtype in INTS or dtype == "bool" else 2.5
            if dtype == "bool":
                s = True
            out.append(SampleInput(make_arg((3,), dtype, rng, low, high), (s,), name="scalar"))
        return out
    return gen
