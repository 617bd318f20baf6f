"""Random number kernels (NumPy only).

Note [torch-compatible streams]: torch's CPU generator is a 32-bit Mersenne Twister seeded
with ``init_genrand(seed & 0xffffffff)`` -- the same stream NumPy's ``MT19937`` produces
with its legacy seeding. ``Engine`` wraps that bit generator and reproduces torch's
transformations for the common distributions, so with the same seed ember draws the same
numbers as torch for ``rand``/``uniform_``, ``randint``/``random_``, ``randperm``,
``bernoulli`` with tensor probabilities, and ``randn``/``normal`` (for float32 tensors of
16+ elements with torch's vectorised log and sincos: Note [normal_ float32 transcendentals]).
``exponential_``, ``geometric_``, ``log_normal_``, ``cauchy_``, ``multinomial``, ``poisson``,
``binomial``, ``_standard_gamma`` and ``_sample_dirichlet`` follow torch's CPU kernels too:
the same transformations of the same double uniforms / normals, in TensorIterator order. The
rejection samplers (torch's ``sample_poisson``, ``sample_binomial``, ``sample_gamma``) draw
element by element in a serial loop; ``_Uniforms`` feeds such loops from pre-drawn chunks and
rewinds the engine to the last value used, and where every element shares its parameters
and every attempt takes exactly two uniforms (Poisson with rate >= 10, BTRS) or one
(binomial inversion) the loop is evaluated for all attempts at once (``_pair_attempts``,
``_inversion_const``). Transcendentals come from the C library (``math``, ``ctypes`` for
``lgamma``/``log1pf``), as torch's scalar kernels call them.
The engine's state round-trips through torch's 5056-byte ``CPUGeneratorImplState`` layout.

Every kernel takes the engine as its ``generator`` argument: an object with an ``_engine``
attribute (ember's ``Generator``) or ``None`` for ``DEFAULT``.
"""
from __future__ import annotations

import math
import sys

import ml_dtypes
import numpy as np

from ember import _dtype
from ember._kernels import compiled
from ember._kernels.util import check_storage_size

DEFAULT_SEED = 67280421310721
_N = 624
STATE_SIZE = 5056
LEGACY_STATE_SIZE = 5048

_SCALAR = _dtype.TYPE_NAMES
_MASK24, _MASK53 = np.uint64((1 << 24) - 1), np.uint64((1 << 53) - 1)
_TWO_M24 = np.float32(2.0 ** -24)
# up to this many values a factory returns its draws as they come; above, the output is
# allocated first (an allocation error then names the output's bytes, as torch's)
_DIRECT_MAX = 1 << 24


def _init_genrand(seed32):
    """MT19937 key for ``init_genrand(seed32)`` (when NumPy's legacy seeding is missing)."""
    key = np.empty(_N, np.uint32)
    x = seed32
    key[0] = x
    for j in range(1, _N):
        x = (1812433253 * (x ^ (x >> 30)) + j) & 0xFFFFFFFF
        key[j] = x
    return key


class Engine:
    """torch's CPUGeneratorImpl on NumPy: an MT19937 stream plus the cached normal sample."""
    __slots__ = ("bitgen", "np", "seed", "next_double_normal", "next_float_normal",
                 "_fresh_key")

    def __init__(self, seed=DEFAULT_SEED):
        self.bitgen = np.random.MT19937(0)
        self.np = np.random.Generator(self.bitgen)
        self.manual_seed(seed)

    # ---- seeding / state
    def manual_seed(self, seed):
        seed = int(seed) & 0xFFFFFFFFFFFFFFFF
        self.seed = seed
        bg = self.bitgen
        legacy = getattr(bg, "_legacy_seeding", None)
        if legacy is not None:
            legacy(seed & 0xFFFFFFFF)
        else:  # pragma: no cover - NumPy without the legacy seeding helper
            bg.state = {"bit_generator": "MT19937",
                        "state": {"key": _init_genrand(seed & 0xFFFFFFFF), "pos": _N}}
        self._fresh_key = bg.state["state"]["key"]
        self.next_double_normal = None
        self.next_float_normal = None

    def get_state(self):
        """torch's CPUGeneratorImplState as 5056 bytes (a uint8 array)."""
        st = self.bitgen.state["state"]
        key, pos = st["key"], int(st["pos"])
        buf = np.zeros(STATE_SIZE, np.uint8)
        if pos >= _N:
            left = 1
            nxt = 0 if self._fresh_key is not None and np.array_equal(key, self._fresh_key) \
                else _N
        else:
            left, nxt = _N - pos + 1, pos
        buf[0:8] = np.frombuffer(np.uint64(self.seed).tobytes(), np.uint8)
        buf[8:12] = np.frombuffer(np.int32(left).tobytes(), np.uint8)
        buf[12:16] = np.frombuffer(np.int32(1).tobytes(), np.uint8)
        buf[16:24] = np.frombuffer(np.uint64(nxt).tobytes(), np.uint8)
        buf[24:24 + 8 * _N] = np.frombuffer(key.astype(np.uint64).tobytes(), np.uint8)
        if self.next_double_normal is not None:
            buf[5024:5032] = np.frombuffer(np.float64(self.next_double_normal).tobytes(), np.uint8)
            buf[5040:5044] = np.frombuffer(np.int32(1).tobytes(), np.uint8)
        if self.next_float_normal is not None:
            buf[5048:5052] = np.frombuffer(np.float32(self.next_float_normal).tobytes(), np.uint8)
            buf[5052] = 1
        return buf

    def set_state(self, buf):
        buf = np.ascontiguousarray(buf, np.uint8)
        n = buf.size
        if n != STATE_SIZE:         # (torch 2.13 no longer reads the legacy 5048-byte one)
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {STATE_SIZE} but found "
                               f"the input RNG state size to be {n}")
        raw = buf.tobytes()
        seed = int(np.frombuffer(raw, np.uint64, 1, 0)[0])
        left = int(np.frombuffer(raw, np.int32, 1, 8)[0])
        seeded = int(np.frombuffer(raw, np.int32, 1, 12)[0])
        nxt = int(np.frombuffer(raw, np.uint64, 1, 16)[0])
        key = np.frombuffer(raw, np.uint64, _N, 24).astype(np.uint32)
        if not (seeded and 0 < left <= _N and nxt <= _N):
            raise RuntimeError("Invalid mt19937 state")
        normal_valid = int(np.frombuffer(raw, np.int32, 1, 5040)[0])
        double_normal = None
        float_normal = None
        if n == STATE_SIZE:
            if normal_valid:
                double_normal = float(np.frombuffer(raw, np.float64, 1, 5024)[0])
            if raw[5052]:
                float_normal = float(np.frombuffer(raw, np.float32, 1, 5048)[0])
        elif normal_valid:
            x = float(np.frombuffer(raw, np.float64, 1, 5016)[0])
            rho = float(np.frombuffer(raw, np.float64, 1, 5032)[0])
            double_normal = rho * math.sin(2.0 * math.pi * x)
        pos = _N if left == 1 else nxt
        self.bitgen.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}
        self.seed = seed
        self._fresh_key = key if (left == 1 and nxt == 0) else None
        self.next_double_normal = double_normal
        self.next_float_normal = float_normal

    def clone(self):
        e = Engine.__new__(Engine)
        e.bitgen = np.random.MT19937(0)
        e.np = np.random.Generator(e.bitgen)
        e.bitgen.state = self.bitgen.state
        e.seed = self.seed
        e._fresh_key = self._fresh_key
        e.next_double_normal = self.next_double_normal
        e.next_float_normal = self.next_float_normal
        return e

    # ---- raw draws
    def random(self, n):
        """``n`` 32-bit draws (as uint64)."""
        self._fresh_key = None
        return self.bitgen.random_raw(n)

    def random64(self, n):
        """``n`` 64-bit draws, each from two 32-bit ones (high word first, like torch)."""
        r = self.random(2 * n).reshape(n, 2)
        return (r[:, 0] << np.uint64(32)) | r[:, 1]

    def uniform01(self, n, dt):
        """torch's ``uniform_real_distribution`` in [0, 1): 24 random bits for float32 (and
        the half types), 53 for float64."""
        if dt == np.float64:
            return (self.random64(n) & _MASK53).astype(np.float64) * 2.0 ** -53
        r = self.random(n) & _MASK24
        return np.multiply(r.astype(np.float32), _TWO_M24, out=np.empty(n, np.float32))

    def normal_double(self, n):
        """``n`` draws of torch's scalar ``normal_distribution<double>`` (Box-Muller, caching
        the second value in the engine)."""
        out = np.empty(n, np.float64)
        i = 0
        if n and self.next_double_normal is not None:
            out[0] = self.next_double_normal
            self.next_double_normal = None
            i = 1
        m = n - i
        if m <= 0:
            return out
        pairs = (m + 1) // 2
        u = self.uniform01(2 * pairs, np.float64).reshape(pairs, 2)
        r = libm(math.sqrt, -2.0 * libm(math.log1p, -u[:, 1]))
        theta = 2.0 * math.pi * u[:, 0]
        cos = r * libm(math.cos, theta)
        sin = r * libm(math.sin, theta)
        vals = np.empty(2 * pairs, np.float64)
        vals[0::2] = cos
        vals[1::2] = sin
        out[i:] = vals[:m]
        if m % 2:
            self.next_double_normal = float(sin[-1])
        return out


DEFAULT = Engine()

_LIBM_MAX = 1 << 16


def _c_exp(v):
    """C's exp (inf on overflow, where ``math.exp`` raises)."""
    if v < 709.0:
        return math.exp(v)
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def libm(fn, x, zero=None):
    """``fn`` (a ``math`` function: the C library's, as torch's scalar kernels call it)
    elementwise on a float64 array; NumPy's SIMD versions (which may differ in the last
    bit) for large arrays."""
    if x.size > _LIBM_MAX:
        return {math.sqrt: np.sqrt, math.log1p: np.log1p, math.log: np.log, math.cos: np.cos,
                math.sin: np.sin, math.exp: np.exp, math.tan: np.tan, _c_exp: np.exp}[fn](x)
    if zero is not None:  # the value at 0 (math.log raises where C's log gives -inf)
        f = fn
        fn = lambda v: f(v) if v else zero  # noqa: E731
    return np.fromiter(map(fn, x.ravel().tolist()), np.float64, x.size).reshape(x.shape)


def engine(gen):
    return DEFAULT if gen is None else gen._engine


# ----------------------------------------------------------------------------- layout

def _memory_order(out):
    """A view of ``out`` whose C-order traversal walks its memory in order (torch's
    TensorIterator order), so serial streams land where torch puts them."""
    if out.ndim <= 1 or out.flags.c_contiguous:
        return out
    perm = sorted(range(out.ndim), key=lambda d: (-abs(out.strides[d]), d))
    return out.transpose(perm)


def _like_layout(a, dt):
    """A fresh array shaped like ``a`` with ``a``'s memory layout (NumPy's order 'K')."""
    return np.empty_like(a, dtype=dt, order="K")


def _fill(out, flat):
    v = _memory_order(out)
    v[...] = flat.reshape(v.shape)
    return out


def _check_float(dt, kernel_name):
    if dt.kind not in "fc" and _name(dt) != "bfloat16":
        raise NotImplementedError(f"\"{kernel_name}\" not implemented for "
                                  f"'{_SCALAR[_name(dt)]}'")


def _name(dt):
    name = _NAMES.get(dt)
    if name is None:                  # (NumPy's dtype.name is a slow Python property)
        name = _NAMES[dt] = dt.name
    return name


_NAMES: dict = {}


def _real_dt(dt):
    return {np.dtype(np.complex64): np.dtype(np.float32),
            np.dtype(np.complex128): np.dtype(np.float64)}.get(dt, dt)


def _comp_dt(dt):
    """Arithmetic type of a distribution: float64 stays float64, everything else float32."""
    return np.float64 if dt == np.float64 else np.float32


# ----------------------------------------------------------------------------- fma

def _split(x):
    t = 134217729.0 * x
    hi = t - (t - x)
    return hi, x - hi


def fma(a, b, c, ct):
    """``a * b + c`` with a single rounding, as torch's compiled kernels compute it (exact
    through float64 for float32; error-free transformations for float64)."""
    if ct == np.float32:
        return (np.asarray(a, np.float64) * float(b) + float(c)).astype(np.float32)
    a = np.asarray(a, np.float64)
    b, c = np.float64(b), np.float64(c)
    with np.errstate(all="ignore"):
        p = a * b
        ah, al = _split(a)
        bh, bl = _split(b)
        e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
        s = p + c
        bb = s - p
        t = (p - (s - bb)) + (c - bb)
        r = s + (t + e)
    return np.where(np.isfinite(r) & np.isfinite(p), r, p + c)


# ----------------------------------------------------------------------------- uniform

def _uniform_flat(eng, n, dt, low, high):
    ct = _comp_dt(dt)
    x = eng.uniform01(n, ct)
    if low == 0 and high == 1:                   # (x * 1 + 0 is x)
        return x
    lo, hi = ct(low), ct(high)
    with np.errstate(over="ignore"):
        return fma(x, hi - lo, lo, ct)


def _uniform_into(out, eng, low, high):
    dt = out.dtype
    if dt.kind == "c":
        rv = out.view(_real_dt(dt)).reshape(out.shape + (2,)) if out.flags.c_contiguous else None
        if rv is None:
            tmp = np.empty(out.shape + (2,), _real_dt(dt))
            _uniform_into(tmp, eng, low, high)
            out[...] = tmp[..., 0] + 1j * tmp[..., 1]
            return out
        _uniform_into(rv, eng, low, high)
        return out
    with np.errstate(over="ignore"):
        return _fill(out, _uniform_flat(eng, out.size, dt, low, high).astype(dt))


def _check_uniform(dt, low, high, name="uniform_"):
    _check_float(dt, "check_uniform_bounds")
    if low > high:
        raise RuntimeError(f"{name} expects to return a [from, to) range, but found "
                           f"from={_g(low)} > to={_g(high)}")


def _g(v):
    return f"{v:g}" if isinstance(v, float) else str(v)


def rand(size, generator=None, dtype=None):
    shape = _shape(size, dtype)
    dt = dtype.np
    _check_uniform(dt, 0.0, 1.0)
    if dt.char in "fd" and math.prod(shape) <= _DIRECT_MAX:      # (no copy)
        return engine(generator).uniform01(math.prod(shape), dt).reshape(shape)
    return _uniform_into(np.empty(shape, dt), engine(generator), 0.0, 1.0)


def uniform(a, low=0.0, high=1.0, generator=None):
    _check_uniform(a.dtype, low, high)
    return _uniform_into(_like_layout(a, a.dtype), engine(generator), low, high)


def rand_like(a, generator=None, dtype=None, memory_format=None):
    dt = a.dtype if dtype is None else dtype.np
    _check_uniform(dt, 0.0, 1.0)
    return _uniform_into(_layout_for(a, dt, memory_format), engine(generator), 0.0, 1.0)


def _layout_for(a, dt, memory_format):
    fmt = getattr(memory_format, "name", memory_format)
    if fmt == "contiguous_format":
        return np.empty(a.shape, dt)
    return _like_layout(a, dt)


def _shape(size, dtype):
    shape = tuple(int(s) for s in size)
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(shape)}")
    check_storage_size(shape, dtype.np.itemsize)
    return shape


# ----------------------------------------------------------------------------- normal

def _normal_flat(eng, n, dt, contiguous):
    """``n`` standard normals as torch's ``normal_`` draws them for a tensor of ``dt``."""
    if n >= 16 and contiguous:
        ct = _comp_dt(dt)
        k = n // 16 * 16
        # float32/float64 draw a uniform for every element before the tail's 16 (so n + 16
        # in all); the half types (computed in float32) draw only the whole chunks' before
        # it (k + 16: found by experiment against torch)
        data = eng.uniform01(n if ct == dt else k, ct)
        out = np.empty(n, ct)
        out[:k] = _box_muller16(data[:k], ct)
        if n % 16:
            tail = eng.uniform01(16, ct)
            out[n - 16:] = _box_muller16(tail, ct)
        return out
    return eng.normal_double(n)


_BOX_MULLER = {np.float32: tuple(np.float32(c) for c in (1, -2, 2.0 * math.pi)),
               np.float64: (1.0, -2.0, 2.0 * math.pi)}


_NORMAL_LOAD = 4096     # float32 normals from which numba is loaded for the transform


def _box_muller16(data, ct):
    """torch's normal_ for 16+ elements: per chunk of 16 uniforms u, radius
    sqrt(-2 log(1 - u[:8])) times cos/sin of 2 pi u[8:] (1 - u >= 2^-24 > 0: the log never
    sees 0); float32 (and the half types, computed in float32 and rounded) with torch's SIMD
    log and sincos (Note [normal_ float32 transcendentals])."""
    d = data.reshape(-1, 16)
    one, minus_two, two_pi = _BOX_MULLER[ct]
    theta = two_pi * d[:, 8:]
    out = np.empty_like(d)
    if ct == np.float64:           # scalar C library calls in torch's double kernel
        radius = libm(math.sqrt, minus_two * _log(one - d[:, :8]))
        out[:, :8] = radius * libm(math.cos, theta.ravel()).reshape(theta.shape)
        out[:, 8:] = radius * libm(math.sin, theta.ravel()).reshape(theta.shape)
        return out.reshape(-1)
    kernels = compiled.module("normal") if d.size >= _NORMAL_LOAD or "numba" in sys.modules \
        else None
    if kernels is not None and d.flags.c_contiguous:
        kernels.box_muller16(d, out)              # the same operations, compiled
        return out.reshape(-1)
    radius = np.sqrt(minus_two * _log_ps(one - d[:, :8]))
    sin, cos = _sincos_ps(theta)
    np.multiply(radius, cos, out=out[:, :8])
    np.multiply(radius, sin, out=out[:, 8:])
    return out.reshape(-1)


# Note [normal_ float32 transcendentals]: torch's vectorised float32 normal_ does not call
# correctly rounded log/sin/cos but single-precision Cephes-style approximations (the classic
# SIMD ``log_ps`` / ``sincos_ps`` forms: exponent split, a degree-8 polynomial for log; an
# octant reduction by 4/pi with a three-part pi/4 and two short polynomials for sin/cos),
# with some of their multiply-adds fused. Which ones are fused was found by experiment
# against torch (every other arrangement tried left some of 640000 draws an ulp apart):
# the log polynomial's steps, its ``y * z + e * q1`` and the final ``e * q2`` add; the
# sin/cos polynomials' steps, cos's ``y * z * z - z / 2`` (one rounding) and sin's
# ``y * x + x``. NumPy's float32 log/sin/cos left one draw in seven an ulp off torch's
# (and a few half draws in a million a half-ulp step off).

_f32 = np.float32
_LOG_P = tuple(_f32(c) for c in (
    7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
    -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1))
_LOG_Q1, _LOG_Q2 = _f32(-2.12194440e-4), _f32(0.693359375)
_SQRT_HALF = _f32(0.707106781186547524)
_FOUR_OVER_PI = _f32(1.27323954473516)
_PI4_PARTS = (_f32(-0.78515625), _f32(-2.4187564849853515625e-4), _f32(-3.77489497744594108e-8))
_COS_P = (_f32(2.443315711809948e-5), _f32(-1.388731625493765e-3), _f32(4.166664568298827e-2))
_SIN_P = (_f32(-1.9515295891e-4), _f32(8.3321608736e-3), _f32(-1.6666654611e-1))


def _fma32(a, b, c):
    """``a * b + c`` rounded once (float32 C-contiguous ``a``; ``b`` and ``c`` one such array
    and one float32 number, or two arrays), by the compiled kernels where present."""
    from ember._kernels.elementwise import fma as fused
    if type(c) is not np.ndarray:
        c = np.full(a.shape, c, np.float32)
    if type(b) is not np.ndarray:
        return fused(b, a, c)
    return fused(a, b, c)


def _log_ps(x):
    """Natural log of positive normal float32 values as torch's vectorised normal_ has it
    (Note [normal_ float32 transcendentals])."""
    bits = x.view(np.int32)
    e = (((bits >> 23) & 0xff) - 0x7e).astype(np.float32)       # exponent for [0.5, 1)
    m = ((bits & np.int32(0x007fffff)) | np.int32(0x3f000000)).view(np.float32)
    low = m < _SQRT_HALF                                        # [0.5, sqrt(1/2)): 2m - 1
    e -= low
    x = (m - _f32(1)) + np.where(low, m, _f32(0))
    z = x * x
    y = np.full_like(x, _LOG_P[0])
    for c in _LOG_P[1:]:
        y = _fma32(y, x, c)
    y = _fma32(y * x, z, e * _LOG_Q1)
    y = _fma32(z, _f32(-0.5), y)
    return _fma32(e, _LOG_Q2, x + y)


def _sincos_ps(x):
    """(sin, cos) of finite float32 values as torch's vectorised normal_ has them (Note
    [normal_ float32 transcendentals])."""
    sin_neg = np.signbit(x)
    x = np.abs(x)
    j = (x * _FOUR_OVER_PI).astype(np.int32)
    j = (j + 1) & ~np.int32(1)                                   # even octant index
    y = j.astype(np.float32)
    for part in _PI4_PARTS:
        x = x + y * part
    sin_neg ^= (j & 4) != 0
    cos_neg = (~(j - 2) & 4) != 0
    first = (j & 2) == 0                   # octants where sin is sin's polynomial
    z = x * x
    yc = _fma32(_fma32(np.full_like(x, _COS_P[0]), z, _COS_P[1]), z, _COS_P[2])
    yc = _fma32(yc * z, z, -(z * _f32(0.5))) + _f32(1)
    ys = _fma32(_fma32(np.full_like(x, _SIN_P[0]), z, _SIN_P[1]), z, _SIN_P[2])
    ys = _fma32(ys * z, x, x)
    sin = np.where(first, ys, yc)
    cos = np.where(first, yc, ys)
    return np.where(sin_neg, -sin, sin), np.where(cos_neg, -cos, cos)


def _log(x):
    flat = x.ravel()
    with np.errstate(divide="ignore"):
        res = np.where(flat > 0, libm(math.log, np.where(flat > 0, flat, 1.0)), -np.inf)
    return res.reshape(x.shape)


def _normal_into(out, eng, mean, std, contiguous=True):
    dt = out.dtype
    if dt.kind == "c":
        rdt = _real_dt(dt)
        tmp = np.empty(out.shape + (2,), rdt)
        _normal_into(tmp, eng, mean, std / math.sqrt(2.0), contiguous)
        out[...] = tmp[..., 0] + 1j * tmp[..., 1]
        return out
    z = _normal_flat(eng, out.size, dt, contiguous)
    ct = z.dtype.type
    if std == 1 and mean == 0:
        return _fill(out, z.astype(dt, copy=False))
    with np.errstate(over="ignore"):
        return _fill(out, fma(z, ct(std), ct(mean), ct).astype(dt, copy=False))


def _check_std(std):
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")


def randn(size, generator=None, dtype=None):
    shape = _shape(size, dtype)
    dt = dtype.np
    _check_float(dt, "normal_kernel_cpu")
    n = math.prod(shape)
    if 16 <= n <= _DIRECT_MAX and dt.char in "fd":     # (the draws come in the dtype: no copy)
        return _normal_flat(engine(generator), n, dt, True).reshape(shape)
    return _normal_into(np.empty(shape, dt), engine(generator), 0.0, 1.0)


def randn_like(a, generator=None, dtype=None, memory_format=None):
    dt = a.dtype if dtype is None else dtype.np
    _check_float(dt, "normal_kernel_cpu")
    out = _layout_for(a, dt, memory_format)
    return _normal_into(out, engine(generator), 0.0, 1.0, out.flags.c_contiguous)


def normal_(a, mean=0.0, std=1.0, generator=None):
    """Values for ``a.normal_(mean, std)`` (the in-place op copies them into ``a``)."""
    _check_float(a.dtype, "normal_kernel_cpu")
    _check_std(std)
    out = _like_layout(a, a.dtype)
    return _normal_into(out, engine(generator), mean, std, a.flags.c_contiguous)


def normal_float_float(mean, std, size, generator=None, dtype=None):
    _check_std(std)
    out = np.empty(_shape(size, dtype), dtype.np)
    _check_float(out.dtype, "normal_kernel_cpu")
    return _normal_into(out, engine(generator), mean, std)


def broadcast_shapes(a, b):
    """NumPy's broadcast_shapes with torch's error message."""
    nd = max(len(a), len(b))
    out = []
    for i in range(nd - 1, -1, -1):
        ia, ib = i - (nd - len(a)), i - (nd - len(b))
        sa = a[ia] if ia >= 0 else 1
        sb = b[ib] if ib >= 0 else 1
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(f"The size of tensor a ({sa}) must match the size of tensor b "
                               f"({sb}) at non-singleton dimension {i}")
        out.append(sa if sb == 1 else sb)
    return tuple(reversed(out))


def _std_tensor_check(std):
    if np.size(std) and not (np.asarray(std) >= 0).all():
        raise RuntimeError("normal expects all elements of std >= 0.0")


def normal_tensor_tensor(mean, std, generator=None):
    mean, std = np.asarray(mean), np.asarray(std)
    _check_float(mean.dtype, "normal_kernel_cpu")
    _std_tensor_check(std)
    shape = broadcast_shapes(mean.shape, std.shape)
    out = np.empty(shape, mean.dtype)
    _normal_into(out, engine(generator), 0.0, 1.0)
    return out * std + mean


def normal_tensor_float(mean, std=1.0, generator=None):
    mean = np.asarray(mean)
    _check_float(mean.dtype, "normal_kernel_cpu")
    _check_std(std)
    out = np.empty(mean.shape, mean.dtype)
    _normal_into(out, engine(generator), 0.0, std)
    return out + mean


def normal_float_tensor(mean, std, generator=None):
    std = np.asarray(std)
    _check_float(std.dtype, "normal_kernel_cpu")
    _std_tensor_check(std)
    out = np.empty(std.shape, std.dtype)
    _normal_into(out, engine(generator), 0.0, 1.0)
    return out * std + std.dtype.type(mean)


# ----------------------------------------------------------------------------- integers

_C_TYPES = {"uint8": "unsigned char", "int8": "signed char", "int16": "short", "int32": "int",
            "int64": "long", "float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "bool": "bool", "uint16": "short unsigned int",
            "uint32": "unsigned int", "uint64": "unsigned long"}
_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def _int_bounds(dt):
    """[min, max] of the integers ``random_`` may produce for ``dt``."""
    name = _name(dt)
    if name in _DIGITS:
        m = 1 << _DIGITS[name]
        return -m, m
    if name == "bool":
        return 0, 1
    found = _BOUNDS.get(dt)
    if found is None:
        info = np.iinfo(dt)
        found = _BOUNDS[dt] = int(info.min), int(info.max)
    return found


_BOUNDS: dict = {}


def _from_to(eng, n, low, rng):
    """torch's ``uniform_int_from_to``: ``random % range + low`` (64-bit draws when the range
    needs them: from 2**28 on, keeping the modulo bias small), in wrapping 64-bit arithmetic."""
    r = eng.random64(n) if rng >= 1 << 28 else eng.random(n)
    return ((r % np.uint64(rng)) + np.uint64(low & 0xFFFFFFFFFFFFFFFF)).view(np.int64)


def _check_from_to(dt, low, high):
    if dt.kind == "c":
        raise NotImplementedError(f"\"random_from_to_range_calc\" not implemented for "
                                  f"'{_SCALAR[_name(dt)]}'")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    name = _name(dt)
    ctype = _C_TYPES[name]
    if name in _DIGITS:      # floats: beyond the type an error, beyond its integers a warning
        digits = _DIGITS[name]
        top = float(ml_dtypes.finfo(dt).max) if name == "bfloat16" else float(np.finfo(dt).max)
        for label, v in (("from", low), ("to - 1", high - 1)):
            if not -top <= v <= top:
                raise RuntimeError(f"{label} is out of bounds for {ctype}")
            if not -(1 << digits) <= v <= 1 << digits:
                import warnings
                from ember._runtime_flags import user_stacklevel
                warnings.warn(f"{label} is out of bounds [-(2^{digits}), 2^{digits}]. Due to "
                              f"precision limitations {ctype} can support discrete uniform "
                              f"distribution only within this range. This warning will become "
                              f"an error in version 1.7 release, please fix the code in advance",
                              UserWarning, stacklevel=user_stacklevel() + 1)
        return
    lo, hi = _int_bounds(dt)
    if not lo <= low <= hi:
        raise RuntimeError(f"from is out of bounds for {ctype}")
    if not lo <= high - 1 <= hi:
        raise RuntimeError(f"to - 1 is out of bounds for {ctype}")


def _ints_into(out, values):
    with np.errstate(all="ignore"):
        return _fill(out, np.asarray(values).astype(out.dtype))


def randint(low, high, size, generator=None, dtype=None):
    shape = _shape(size, dtype)
    dt = dtype.np
    _check_from_to(dt, low, high)
    if dt == np.int64 and math.prod(shape) <= _DIRECT_MAX:     # (no copy)
        return _from_to(engine(generator), math.prod(shape), low, high - low).reshape(shape)
    out = np.empty(shape, dt)
    return _ints_into(out, _from_to(engine(generator), out.size, low, high - low))


def randint_like(a, low, high, generator=None, dtype=None, memory_format=None):
    dt = a.dtype if dtype is None else dtype.np
    out = _layout_for(a, dt, memory_format)
    _check_from_to(dt, low, high)
    return _ints_into(out, _from_to(engine(generator), out.size, low, high - low))


def random_from(a, low, high=None, generator=None):
    dt = a.dtype
    out = _like_layout(a, dt)
    if high is None:
        lo, hi = _int_bounds(dt)
        if dt.kind == "c":
            raise NotImplementedError(f"\"random_from_to_range_calc\" not implemented for "
                                      f"'{_SCALAR[_name(dt)]}'")
        if not lo <= low <= hi:
            raise RuntimeError(f"from is out of bounds for {_C_TYPES[_name(dt)]}")
        if dt == np.int64 and low == lo:
            return _ints_into(out, eng_full64(engine(generator), out.size))
        return _ints_into(out, _from_to(engine(generator), out.size, low, hi - low + 1))
    _check_from_to(dt, low, high)
    return _ints_into(out, _from_to(engine(generator), out.size, low, high - low))


def eng_full64(eng, n):
    return eng.random64(n).view(np.int64)


def random_to(a, high, generator=None):
    return random_from(a, 0, high, generator)


def random(a, generator=None):
    """``random_()``: integers over the whole range torch allows for ``a``'s dtype."""
    dt = a.dtype
    if dt.kind == "c":
        raise NotImplementedError(f"\"random_kernel_cpu\" not implemented for "
                                  f"'{_SCALAR[_name(dt)]}'")
    out = _like_layout(a, dt)
    eng = engine(generator)
    name = _name(dt)
    n = out.size
    if name == "bool":
        vals = (eng.random(n) & np.uint64(1)).astype(np.bool_)
    elif name in ("int64", "float64"):
        mod = (1 << 63) if name == "int64" else (1 << 53) + 1
        vals = eng.random64(n) % np.uint64(mod)
    elif name in _DIGITS:
        vals = eng.random(n) % np.uint64((1 << _DIGITS[name]) + 1)
    else:
        vals = eng.random(n) % np.uint64(int(np.iinfo(dt).max) + 1)
    return _ints_into(out, vals)


_SMALL_PERM = 1 << 14


def randperm(n, generator=None, dtype=None):
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dt = dtype.np
    if dt.kind in "iu" and n > 0 and n - 1 > np.iinfo(dt).max:
        ctype = _CT_SHORT.get(_name(dt), _name(dt))
        raise RuntimeError(f"value cannot be converted to type {ctype} without overflow")
    if dt.kind == "b":
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    if _name(dt) in _DIGITS and n > (1 << _DIGITS[_name(dt)]) + 1:
        d = _DIGITS[_name(dt)]
        bound = (1 << d) + 1 if dt.itemsize == 2 else f"2^{d}+1"
        raise RuntimeError(f"n cannot be greater than {bound} for {_SCALAR[_name(dt)]} type.")
    # torch's Fisher-Yates at every size (its stream: a DataLoader shuffling ImageNet's 1.28M
    # samples draws torch's order): swap r[i] with r[i + random() % (n - i)], i ascending
    eng = engine(generator)
    if n <= 1:
        return np.arange(n, dtype=np.int64).astype(dt)
    z = eng.random(n - 1) % np.arange(n, 1, -1, dtype=np.uint64)
    from ember._kernels import compiled
    fast = compiled.module("perm") if n > _SMALL_PERM else None
    if fast is not None:
        return fast.fisher_yates(z.astype(np.int64)).astype(dt)
    r = list(range(n))
    for i, zi in enumerate(z.tolist()):
        j = i + zi
        r[i], r[j] = r[j], r[i]
    return np.asarray(r, np.int64).astype(dt)


_CT_SHORT = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int"}


# ----------------------------------------------------------------------------- bernoulli

def bernoulli(a, generator=None):
    """``bernoulli(p)``: 1 with probability ``p`` (the input), in ``a``'s dtype."""
    _check_float(a.dtype, "bernoulli_tensor_cpu_p_")
    if a.size and not ((a >= 0) & (a <= 1)).all():
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could "
                           "this error message be improved?  If so, please report an enhancement "
                           "request to PyTorch.)")
    # torch's functional form allocates a contiguous result (draws in its C order)
    return _bernoulli_tensor(np.empty(a.shape, a.dtype), a, engine(generator))


def _bernoulli_tensor(out, p, eng):
    if isinstance(p, np.float64) and out.flags.c_contiguous and out.dtype.char in "fd" and \
            out.size >= 4096:
        kernels = compiled.module("uniform")
        if kernels is not None:         # (one fused pass; the same draws and comparisons)
            kernels.bernoulli_into(eng.random(2 * out.size), p, out.reshape(-1))
            return out
    p = np.broadcast_to(np.asarray(p), out.shape)
    ct = np.float64 if p.dtype == np.float64 else np.float32
    u = eng.uniform01(out.size, ct)
    pv = _memory_order_like(out, p)
    vals = u.reshape(pv.shape) < pv.astype(ct)
    v = _memory_order(out)
    v[...] = vals
    return out


def _memory_order_like(out, other):
    """``other`` (same shape as ``out``) permuted the way ``_memory_order`` permutes ``out``."""
    if out.ndim <= 1 or out.flags.c_contiguous:
        return other
    perm = sorted(range(out.ndim), key=lambda d: (-abs(out.strides[d]), d))
    return other.transpose(perm)


def bernoulli_p(a, p=0.5, generator=None):
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_g(p)}")
    if a.dtype.kind == "c":
        raise NotImplementedError(f"\"bernoulli_scalar_cpu_\" not implemented for "
                                  f"'{_SCALAR[_name(a.dtype)]}'")
    out = _like_layout(a, a.dtype)
    return _bernoulli_tensor(out, np.float64(p), engine(generator))


def bernoulli_tensor(a, p, generator=None):
    p = np.asarray(p)
    if a.dtype.kind == "c":
        raise NotImplementedError(f"\"bernoulli_tensor_cpu_self_\" not implemented for "
                                  f"'{_SCALAR[_name(a.dtype)]}'")
    _check_float(p.dtype, "bernoulli_tensor_cpu_p_")
    try:
        np.broadcast_to(p, a.shape)
    except ValueError:
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(p.shape)}}}, size={list(a.shape)}): "
                           f"the number of sizes provided ({a.ndim}) must be greater or equal to "
                           f"the number of dimensions in the tensor ({p.ndim})") from None
    return _bernoulli_tensor(_like_layout(a, a.dtype), p, engine(generator))


# ----------------------------------------------------------------------------- others

def _check_continuous(dt, what, ctype_name):
    if dt.kind not in "f" and _name(dt) != "bfloat16":
        raise RuntimeError(f"{what} distribution is a continuous probability distribution. dtype "
                           f"must be a floating point but you specified {ctype_name}")


def _draw(a, eng_fn, generator):
    out = _like_layout(a, a.dtype)
    eng = engine(generator)
    eng._fresh_key = None
    ct = _comp_dt(a.dtype)
    with np.errstate(over="ignore"):
        return _fill(out, np.asarray(eng_fn(eng.np, out.size), ct).astype(a.dtype))


def exponential(a, lambd=1.0, generator=None):
    _check_continuous(a.dtype, "Exponential", _SCALAR[_name(a.dtype)])
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_g(lambd)}")
    # torch's CPU stream: -1/lambda * log1p(-u), u a double uniform per element
    out = _like_layout(a, a.dtype)
    u = engine(generator).uniform01(out.size, np.float64)
    return _fill(out, _exponential_values(u, lambd, a.dtype))


def _exponential_values(u, lambd, dt):
    """-1/lambda * log1p(-u) in double, cast to ``dt`` as torch casts (a half type through
    float32)."""
    with np.errstate(divide="ignore"):
        v = (-1.0 / lambd) * np.log1p(-u)
    if np.dtype(dt).itemsize == 2:
        v = v.astype(np.float32)
    return v.astype(dt)


def _cast_double(v, dt):
    """Cast float64 values to ``dt`` as torch's ``static_cast<scalar_t>(double)`` does (a half
    type through float32, as c10::Half/BFloat16 are built from a float)."""
    dt = np.dtype(dt)
    with np.errstate(over="ignore"):
        if dt.kind == "f" and dt.itemsize == 2 or _name(dt) == "bfloat16":
            v = v.astype(np.float32)
        return v.astype(dt)


def geometric(a, p, generator=None):
    if a.dtype.kind in "cb":
        raise NotImplementedError(f"\"geometric_cpu\" not implemented for "
                                  f"'{_SCALAR[_name(a.dtype)]}'")
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_g(p)}")
    # torch's stream: ceil(log(u) / log1p(-p)), u a double uniform per element
    out = _like_layout(a, a.dtype)
    u = engine(generator).uniform01(out.size, np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lu = libm(math.log, u, zero=-math.inf) if u.size <= _LIBM_MAX else np.log(u)
        v = np.ceil(lu / math.log1p(-p))
        if a.dtype.kind in "iub":
            # static_cast<integer>(double): truncation (out-of-range values wrap like the
            # C conversion does on x86: the integer indefinite value)
            v = v.astype(np.int64).astype(a.dtype) if a.dtype != np.bool_ else v != 0
            return _fill(out, v)
        return _fill(out, _cast_double(v, a.dtype))


def log_normal(a, mean=1.0, std=2.0, generator=None):
    if a.dtype.kind != "f" and _name(a.dtype) != "bfloat16":      # torch: no such kernel
        raise NotImplementedError(f"\"log_normal_cpu\" not implemented for "
                                  f"'{_SCALAR[_name(a.dtype)]}'")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_g(std)}")
    # torch's stream: exp(normal_distribution<double>(mean, std)) per element (scalar
    # Box-Muller with the engine's cached second value)
    out = _like_layout(a, a.dtype)
    z = engine(generator).normal_double(out.size)
    with np.errstate(over="ignore"):
        # (torch's CPU-capability build contracts ``z * std + mean`` into an fma)
        return _fill(out, _cast_double(libm(_c_exp, fma(z, std, mean, np.float64)), a.dtype))


def cauchy(a, median=0.0, sigma=1.0, generator=None):
    _check_continuous(a.dtype, "Cauchy", _CT_LONG.get(_name(a.dtype), _name(a.dtype)))
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_g(sigma)}")
    # torch's stream: median + sigma * tan(pi * (u - 0.5)), u a double uniform per element
    out = _like_layout(a, a.dtype)
    u = engine(generator).uniform01(out.size, np.float64)
    with np.errstate(over="ignore"):
        t = libm(math.tan, math.pi * (u - 0.5))
        # median + sigma * tan(...), contracted into an fma as torch's build does
        return _fill(out, _cast_double(fma(t, sigma, median, np.float64), a.dtype))


_CT_LONG = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char", "bool": "bool"}


def multinomial(a, num_samples, replacement=False, generator=None):
    if a.dtype.kind not in "f" and _name(a.dtype) != "bfloat16":
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_SCALAR[_name(a.dtype)]}")
    if a.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n_cat = a.shape[-1]
    if not replacement and num_samples > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    p = a.astype(np.float64).reshape(-1, n_cat)
    if replacement and num_samples > 1 and p.size:
        # torch's with-replacement kernel (more than one sample) scans row by row, entry by
        # entry, with texts of its own
        with np.errstate(invalid="ignore"):
            for row in p:
                bad = np.flatnonzero(~(row >= 0) | ~np.isfinite(row))
                if bad.size:
                    v = row[bad[0]]
                    raise RuntimeError("invalid multinomial distribution (encountering "
                                       "probability entry " + ("= infinity or NaN)"
                                                               if np.isinf(v) else "< 0)"))
                if row.sum() <= 0:
                    raise RuntimeError("invalid multinomial distribution (sum of "
                                       "probabilities <= 0)")
    if p.size and not (np.isfinite(p).all() and (p >= 0).all()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (p.sum(axis=1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    eng = engine(generator)
    eng._fresh_key = None
    rows = p.shape[0]
    if not replacement or num_samples == 1:
        # Gumbel top-k, as torch: argmax/topk of p / q with q ~ Exp(1) drawn from torch's
        # stream in the input's dtype
        low = a.dtype if a.dtype.kind == "f" and a.dtype.itemsize >= 4 else np.float32
        q = _exponential_values(eng.uniform01(p.size, np.float64), 1.0, a.dtype)
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.divide(a.reshape(p.shape).astype(low), q.reshape(p.shape).astype(low))
        idx = np.argsort(-score, axis=1, kind="stable")[:, :num_samples]
    else:
        # torch's stream: per row, the running sum in the input's precision (float32 for
        # the half types) divided by the total, the last bucket set to 1, then one double
        # uniform per sample and the first bucket >= it
        ct = np.float64 if a.dtype == np.float64 else np.float32
        cdf = np.cumsum(a.reshape(-1, n_cat).astype(ct), axis=1)
        cdf /= cdf[:, -1:]
        cdf[:, -1] = 1
        u = eng.uniform01(rows * num_samples, np.float64).reshape(rows, num_samples)
        idx = np.stack([np.searchsorted(cdf[r].astype(np.float64), u[r], side="left")
                        for r in range(rows)])
    idx = idx.astype(np.int64)
    return idx.reshape(num_samples) if a.ndim == 1 else idx


# torch's serial rejection samplers live beside this module (imported last: they use it)
from ember._kernels.random_serial import (binomial, poisson, sample_dirichlet,  # noqa: E402,F401
                                          standard_gamma, standard_gamma_grad)
