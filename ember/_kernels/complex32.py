"""complex32 (torch's ComplexHalf) arrays: NumPy has no complex-half type, so an ember
complex32 array is a structured array of (real, imag) float16 pairs (4 bytes an element,
torch's memory layout). Ops compute in complex64 and round back to float16 parts."""
from __future__ import annotations

import numpy as np

C32 = np.dtype([("real", np.float16), ("imag", np.float16)])


def is_c32(a) -> bool:
    return isinstance(a, np.ndarray) and a.dtype == C32


def to_c64(a):
    """A complex64 copy of a complex32 array."""
    out = np.empty(a.shape, np.complex64)
    out.real = a["real"]
    out.imag = a["imag"]
    return out


def from_complex(z):
    """A complex32 array of ``z`` (any numeric array), parts rounded to float16."""
    z = np.asarray(z)
    out = np.empty(z.shape, C32)
    with np.errstate(all="ignore"):
        out["real"] = z.real
        out["imag"] = z.imag if z.dtype.kind == "c" else 0
    return out


def view_as_real(a):
    """The (..., 2) float16 view of a complex32 array."""
    re = a["real"]
    return np.lib.stride_tricks.as_strided(re, a.shape + (2,), re.strides + (2,),
                                           writeable=a.flags.writeable)
