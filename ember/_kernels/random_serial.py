"""torch's serial rejection samplers, in torch's draw order (split from random.py).

``poisson`` (torch's ``sample_poisson``), ``standard_gamma`` (``sample_gamma``, with its
derivative ``standard_gamma_grad``), ``sample_dirichlet`` and ``binomial``
(``sample_binomial``: BTRS or inversion) consume the same double uniforms / normals as torch's
CPU kernels, element by element; Note [torch-compatible streams] in ``random.py`` says how
``_Uniforms`` feeds these loops and when a loop is evaluated for all attempts at once.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ember._kernels.random import (_SCALAR, _c_exp, _cast_double, _fill, _memory_order_like,
                                   _name, engine)


# ------------------------------------------------- serial rejection samplers (torch's order)

def _load_libm():
    import ctypes
    import ctypes.util
    for name in (ctypes.util.find_library("m"), "libm.so.6", "libm.dylib"):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        fns = {}
        for fn, rt in (("lgamma", ctypes.c_double), ("log1pf", ctypes.c_float)):
            f = getattr(lib, fn, None)
            if f is not None:
                f.restype = rt
                f.argtypes = [rt]
                fns[fn] = f
        return fns
    return {}  # pragma: no cover


_CLIBM = _load_libm()
# the C library's lgamma (Python's math.lgamma is its own, differing in the last bits)
_lgamma = _CLIBM.get("lgamma", math.lgamma)
_log1pf = _CLIBM.get("log1pf") or (lambda x: float(np.float32(math.log1p(x))))
_f32 = np.float32


def _r32(x):
    """Round a Python float to float32 (as a Python float)."""
    return float(_f32(x))


class _Uniforms:
    """torch's ``uniform_real_distribution<double>(0, 1)`` and ``normal_distribution<double>``
    drawn one at a time, as torch's serial kernels draw them, from pre-drawn chunks; ``close``
    rewinds the engine to just after the last value used (so the stream stays in step)."""
    __slots__ = ("eng", "saved", "buf", "pos", "used", "normal")

    def __init__(self, eng, hint):
        self.eng = eng
        eng._fresh_key = None
        self.saved = eng.bitgen.state
        self.buf = []
        self.pos = 0
        self.used = 0
        self.normal = eng.next_double_normal
        self._more(hint)

    def _more(self, k):
        self.used += self.pos
        self.buf = self.eng.uniform01(max(int(k), 64), np.float64).tolist()
        self.pos = 0

    def u(self):
        if self.pos == len(self.buf):
            self._more(2 * len(self.buf))
        v = self.buf[self.pos]
        self.pos += 1
        return v

    def n(self):
        if self.normal is not None:
            v, self.normal = self.normal, None
            return v
        u1 = self.u()
        u2 = self.u()
        r = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        self.normal = r * math.sin(theta)
        return r * math.cos(theta)

    def close(self):
        used = self.used + self.pos
        eng = self.eng
        eng.bitgen.state = self.saved
        if used:
            eng.bitgen.random_raw(2 * used)
        eng.next_double_normal = self.normal


def _serial_input(out, a):
    """``a`` (shaped like ``out``) flattened in torch's TensorIterator order for ``out``."""
    return np.ascontiguousarray(_memory_order_like(out, a)).reshape(-1)


def _clog(x):
    """C's ``log`` elementwise (glibc, as torch's scalar kernels call it; -inf at 0)."""
    return np.fromiter((math.log(v) if v > 0 else (-math.inf if v == 0 else math.nan)
                        for v in x.tolist()), np.float64, x.size)


def _pair_attempts(eng, n, evaluate, rate=0.8):
    """``n`` draws of a rejection sampler whose every attempt takes exactly two double
    uniforms and whose parameters are the same for all ``n`` elements: then whether an
    attempt is accepted depends on its own pair only, so the k-th result is the value of the
    k-th accepted pair -- torch's serial loop, evaluated for all pairs at once.
    ``evaluate(U1, U2) -> (values, accepted)``. Leaves the engine just after the last pair
    used."""
    eng._fresh_key = None
    saved = eng.bitgen.state
    parts = []
    have = 0
    pairs = 0
    while True:
        m = int((n - have) / rate * 1.1) + 32
        u = eng.uniform01(2 * m, np.float64)
        vals, acc = evaluate(u[0::2], u[1::2])
        idx = np.flatnonzero(acc)
        need = n - have
        if idx.size >= need:
            parts.append(vals[idx[:need]])
            pairs += int(idx[need - 1]) + 1
            break
        parts.append(vals[idx])
        have += idx.size
        pairs += m
    eng.bitgen.state = saved
    eng.bitgen.random_raw(4 * pairs)
    return np.concatenate(parts)


def _poisson_pairs(lam):
    slam = math.sqrt(lam)
    loglam = math.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    log_invalpha = math.log(invalpha)

    def evaluate(u1, u2):
        U = u1 - 0.5
        V = u2
        us = 0.5 - np.abs(U)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            kf = np.floor((2 * a / us + b) * U + lam + 0.43)
        ok = (kf >= -9.223372036854775808e18) & (kf < 9.223372036854775808e18)
        k = np.where(ok, kf, -9.223372036854775808e18).astype(np.int64)
        acc = (us >= 0.07) & (V <= vr)
        rest = np.flatnonzero(~acc & ~((k < 0) | ((us < 0.013) & (V > us))))
        if rest.size:
            ks, vs, uss = k[rest].tolist(), V[rest].tolist(), us[rest].tolist()
            acc[rest] = [(math.log(v) if v > 0 else -math.inf) + log_invalpha
                         - math.log(a / (w * w) + b) <= -lam + kk * loglam - _lgamma(kk + 1.0)
                         for kk, v, w in zip(ks, vs, uss)]
        return k, acc
    return evaluate


_I64_MIN = -(1 << 63)


def _to_i64(x):
    """``(int64_t)std::floor(x)`` as x86 computes it: INT64_MIN where out of range."""
    if not -9.223372036854775808e18 <= x < 9.223372036854775808e18:
        return _I64_MIN
    return math.floor(x)


def _poisson_one(lam, u):
    if lam >= 10:
        # transformed rejection (Hoermann 1993), as torch's sample_poisson
        slam = math.sqrt(lam)
        loglam = math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        log_invalpha = math.log(invalpha)
        while True:
            U = u() - 0.5
            V = u()
            us = 0.5 - abs(U)
            k = _to_i64((2 * a / us + b) * U + lam + 0.43)
            if us >= 0.07 and V <= vr:
                return k
            if k < 0 or (us < 0.013 and V > us):
                continue
            lv = math.log(V) if V > 0 else -math.inf
            if lv + log_invalpha - math.log(a / (us * us) + b) <= \
                    -lam + k * loglam - _lgamma(k + 1.0):
                return k
    if lam == 0:
        return 0
    enlam = math.exp(-lam)
    x = 0
    prod = 1.0
    while True:
        prod *= u()
        if prod > enlam:
            x += 1
        else:
            return x


def poisson(a, generator=None):
    if a.dtype.kind not in "f" and a.dtype.name != "bfloat16":
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for "
                                  f"'{_SCALAR[_name(a.dtype)]}'")
    if a.size and not (a >= 0).all():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    # torch's sample_poisson per element in TensorIterator order, double uniforms
    out = np.zeros(a.shape, a.dtype)
    lam = _serial_input(out, a).astype(np.float64).tolist()
    if not lam:
        return out
    first = lam[0]
    if len(lam) >= 16 and 10 <= first < math.inf and lam.count(first) == len(lam):
        # one rate >= 10 for every element: each attempt takes two uniforms (vectorised)
        k = _pair_attempts(engine(generator), len(lam), _poisson_pairs(first))
        return _fill(out, _cast_double(k.astype(np.float64), a.dtype))
    src = _Uniforms(engine(generator), 1.2 * sum(min(x, 10.0) + 1 for x in lam))
    u = src.u
    try:
        vals = [_poisson_one(x, u) for x in lam]
    finally:
        src.close()
    return _fill(out, _cast_double(np.asarray(vals, np.float64), a.dtype))


_F_THIRD = float(_f32(1.0) / _f32(3.0))
_F_0331 = float(_f32(0.0331))


def _gamma_one(alpha, single, u, n):
    """torch's ``sample_gamma<scalar_t, double>``; ``single``: scalar_t is float (alpha a
    float32 value, its own arithmetic in float32)."""
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        inv = _r32(1.0 / alpha) if single else 1.0 / alpha
        scale *= math.pow(1 - u(), inv)
        alpha = _r32(alpha + 1.0) if single else alpha + 1.0
    if alpha != alpha:  # torch loops forever on a NaN concentration
        raise RuntimeError("_standard_gamma: concentration is NaN")
    d = _r32(alpha - _F_THIRD) if single else alpha - _F_THIRD
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        while True:
            x = n()
            y = 1.0 + c * x
            if not y <= 0:
                break
        v = y * y * y
        uu = 1 - u()
        xx = x * x
        if uu < 1.0 - _F_0331 * xx * xx:
            return scale * d * v
        if (math.log(uu) if uu > 0 else -math.inf) < \
                0.5 * xx + d * (1.0 - v + (math.log(v) if v > 0 else -math.inf)):
            return scale * d * v


def _check_gamma_dtype(dt, kernel):
    if dt not in (np.float32, np.float64):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_SCALAR[_name(dt)]}'")


def _gamma_values(alpha, single, eng):
    if not alpha:
        return []
    src = _Uniforms(eng, 2.5 * len(alpha) + 8)
    u, n = src.u, src.n
    try:
        return [_gamma_one(x, single, u, n) for x in alpha]
    finally:
        src.close()


def standard_gamma(a, generator=None):
    """``torch._standard_gamma``: Gamma(alpha, 1) draws in torch's stream order."""
    _check_gamma_dtype(a.dtype, "gamma_cpu")
    out = np.zeros(a.shape, a.dtype)
    alpha = _serial_input(out, a).astype(np.float64).tolist()
    vals = np.asarray(_gamma_values(alpha, a.dtype == np.float32, engine(generator)),
                      np.float64)
    tiny = np.finfo(a.dtype).tiny
    with np.errstate(over="ignore"):
        vals = vals.astype(a.dtype)
    # std::max(numeric_limits<scalar_t>::min(), sample): NaN stays where it is first
    vals = np.where(tiny < vals, vals, tiny).astype(a.dtype)
    return _fill(out, vals)


def sample_dirichlet(a, generator=None):
    """``torch._sample_dirichlet``: double gamma draws normalised along the last dim."""
    _check_gamma_dtype(a.dtype, "dirichlet")
    out = np.zeros(a.shape, a.dtype)
    alpha = _serial_input(out, a).astype(np.float64).tolist()
    g = np.asarray(_gamma_values(alpha, False, engine(generator)), np.float64)
    tiny64 = np.finfo(np.float64).tiny
    g = np.where(tiny64 < g, g, tiny64)  # std::max(DBL_MIN, sample)
    # torch writes the gammas into a contiguous double tensor in TensorIterator order
    gamma = np.zeros(a.shape, np.float64)
    _fill(gamma, g)
    total = gamma if a.ndim == 0 else _torch_last_dim_sum(gamma)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (gamma / total).astype(a.dtype)
    lo = np.finfo(a.dtype).tiny
    hi = np.nextafter(a.dtype.type(1), a.dtype.type(0))
    r = np.where(lo < r, r, lo)  # std::min(max_val, std::max(min_val, value))
    return np.where(r < hi, r, hi).astype(a.dtype)


def _torch_last_dim_sum(x):
    """``x.sum(-1, keepdim=True)`` for a contiguous float64 array in torch's CPU summation
    order (SumKernel's vectorised inner sum: 4-lane vectors, 4 accumulators, the scalar
    tail first and then the lanes), for rows shorter than 256 where the cascade has one
    level; NumPy's pairwise sum (equal to a few ulp) for longer rows."""
    W = 4
    R = x.reshape(-1, x.shape[-1])
    K = R.shape[1]
    if K >= 16 * 4 * W:
        return x.sum(-1, keepdims=True)
    nv = K // W
    V = R[:, :nv * W].reshape(R.shape[0], nv, W)
    ni = nv // 4
    ps = [np.zeros((R.shape[0], W)) for _ in range(4)]
    for i in range(ni):
        for k in range(4):
            ps[k] = ps[k] + V[:, 4 * i + k]
    for i in range(4 * ni, nv):
        ps[0] = ps[0] + V[:, i]
    acc = ps[0]
    for k in range(1, 4):
        acc = acc + ps[k]
    fin = np.zeros(R.shape[0])
    for k in range(nv * W, K):
        fin = fin + R[:, k]
    for lane in range(W if nv else 0):
        fin = fin + acc[:, lane]
    return fin.reshape(x.shape[:-1] + (1,))


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_tail(k):
    if k < 10:
        return _STIRLING_TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _binomial_inversion(count, prob, single, u):
    logprob = _log1pf(-prob) if single else math.log1p(-prob)
    geom_sum = 0.0
    num = 0.0
    while True:
        U = u()
        lu = math.log(U) if U > 0 else -math.inf
        geom_sum += math.ceil(lu / logprob) if lu != -math.inf else math.inf
        if geom_sum > count:
            return num
        num = num + 1  # float32 (single) or double: exact below 2**24


def _btrs_constants(count, prob, single):
    """The per-(count, prob) constants of torch's BTRS sampler (float32 roundings where its
    float kernel rounds): a, b, c, v_r, r, alpha, m, count + 1, the mode term and the two
    Stirling tails."""
    R = _r32 if single else float
    stddev = math.sqrt(R(R(count * prob) * R(1 - prob)))
    if single:
        stddev = _r32(stddev)  # std::sqrt(float)
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = R(count * prob) + 0.5
    v_r = 0.92 - 4.2 / b
    r = R(prob / R(1 - prob))
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor(R(R(count + 1) * prob))
    cp1 = R(count + 1)
    head = (m + 0.5) * math.log((m + 1) / (r * (count - m + 1)))
    return a, b, c, v_r, r, alpha, m, cp1, head, _stirling_tail(m), _stirling_tail(count - m)


def _btrs(count, prob, single, u):
    R = _r32 if single else float
    a, b, c, v_r, r, alpha, m, cp1, t_m, s_m, s_cm = _btrs_constants(count, prob, single)
    while True:
        U = u() - 0.5
        V = u()
        us = 0.5 - abs(U)
        kf = math.floor((2 * a / us + b) * U + c)
        k = R(kf) if math.isfinite(kf) else kf
        if k < 0 or k > count:
            continue
        if us >= 0.07 and V <= v_r:
            return k
        V = V * alpha / (a / (us * us) + b)
        V = math.log(V) if V > 0 else -math.inf
        ck1 = R(R(count - k) + 1)
        upper = (t_m + cp1 * math.log((count - m + 1) / ck1)
                 + (k + 0.5) * math.log(r * ck1 / R(k + 1))
                 + s_m + s_cm - _stirling_tail(k) - _stirling_tail(R(count - k)))
        if V <= upper:
            return k


def _stirling_tail_vec(k):
    out = np.empty(k.shape, np.float64)
    small = k < 10
    out[small] = np.asarray(_STIRLING_TAIL)[k[small].astype(np.int64)]
    kb = k[~small]
    kp1sq = (kb + 1) * (kb + 1)
    out[~small] = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (kb + 1)
    return out


def _btrs_pairs(count, prob, single):
    """``_btrs`` for one (count, prob), evaluated for arrays of uniform pairs (float32
    arithmetic through NumPy float32 arrays where torch's float kernel computes in float)."""
    a, b, c, v_r, r, alpha, m, cp1, head, s_m, s_cm = _btrs_constants(count, prob, single)
    cm1 = count - m + 1
    ft = np.float32 if single else np.float64

    def evaluate(u1, u2):
        U = u1 - 0.5
        V = u2
        us = 0.5 - np.abs(U)
        with np.errstate(all="ignore"):
            k = np.floor((2 * a / us + b) * U + c).astype(ft).astype(np.float64)
        valid = ~((k < 0) | (k > count))
        acc = valid & (us >= 0.07) & (V <= v_r)
        rest = np.flatnonzero(valid & ~acc)
        if rest.size:
            kr, w = k[rest], us[rest]
            k32 = kr.astype(ft)
            ck1 = ((ft(count) - k32) + ft(1)).astype(np.float64)
            kp1 = (k32 + ft(1)).astype(np.float64)
            cmk = (ft(count) - k32).astype(np.float64)
            with np.errstate(all="ignore"):
                v2 = _clog(V[rest] * alpha / (a / (w * w) + b))
                upper = (head + cp1 * _clog(cm1 / ck1) + (kr + 0.5) * _clog(r * ck1 / kp1)
                         + s_m + s_cm - _stirling_tail_vec(kr) - _stirling_tail_vec(cmk))
            acc[rest] = v2 <= upper
        return k, acc
    return evaluate


def _inversion_const(eng, n, count, prob, single):
    """``_binomial_inversion`` for ``n`` elements sharing (count, prob): each uniform gives a
    geometric jump ceil(log(U) / log1p(-p)) that does not depend on the element, and the
    jumps are whole numbers, so the running sums are exact and an element ends at the first
    prefix sum past ``count`` -- torch's loop, found with a search. ``None`` where the sums
    could be inexact (the caller then runs the loop)."""
    logprob = _log1pf(-prob) if single else math.log1p(-prob)
    eng._fresh_key = None
    saved = eng.bitgen.state
    m = int(n * (count * prob + 1) * 1.2) + 64
    limit = math.floor(count) + 1
    from bisect import bisect_left
    for _ in range(8):
        eng.bitgen.state = saved
        u = eng.uniform01(m, np.float64)
        with np.errstate(all="ignore"):
            geom = np.ceil(_clog(u) / logprob)
        if not np.isfinite(geom).all():
            break
        sums = np.cumsum(geom)
        if sums[-1] >= 2.0 ** 52:
            break
        cs = sums.tolist()
        res = []
        base = 0.0
        st = 0
        for _i in range(n):
            t = bisect_left(cs, base + limit, st)
            if t == m:
                break
            res.append(t - st)
            base = cs[t]
            st = t + 1
        else:
            eng.bitgen.state = saved
            eng.bitgen.random_raw(2 * st)
            return np.asarray(res, np.float64)
        m *= 2
    eng.bitgen.state = saved
    return None


def _binomial_one(count, prob, single, u):
    R = _r32 if single else float
    if count <= 0.0 or prob <= 0.0:
        return 0.0
    if prob >= 1.0:
        return count
    if prob <= 0.5:
        if R(count * prob) >= 10.0:
            return _btrs(count, prob, single, u)
        return _binomial_inversion(count, prob, single, u)
    if prob > 0.5:
        q = R(1.0 - prob)
        if R(count * q) >= 10.0:
            return R(count - _btrs(count, q, single, u))
        return R(count - _binomial_inversion(count, q, single, u))
    return math.nan


def binomial(count, prob, generator=None):
    """``torch.binomial``: torch's sample_binomial (BTRS for count * p >= 10, inversion
    otherwise) per element, in TensorIterator order."""
    dt = count.dtype
    for name, arg in (("count", count), ("prob", prob)):
        if arg.dtype.kind != "f" and _name(arg.dtype) != "bfloat16":
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, "
                             f"got: {_SCALAR[_name(arg.dtype)]}")
    if prob.dtype != dt:
        raise RuntimeError(f"Found dtype {_SCALAR[_name(prob.dtype)]} but expected "
                           f"{_SCALAR[_name(dt)]}")
    _check_gamma_dtype(dt, "binomial_cpu")
    shape = np.broadcast_shapes(count.shape, prob.shape)
    if shape != count.shape and count.size:     # the output (count's shape) is resized
        warnings.warn(f"An output with one or more elements was resized since it had shape "
                      f"{list(count.shape)}, which does not match the required output shape "
                      f"{list(shape)}. This behavior is deprecated, and in a future PyTorch "
                      f"release outputs will not be resized unless they have zero elements. "
                      f"You can explicitly reuse an out tensor t by resizing it, inplace, to "
                      f"zero elements with t.resize_(0).", UserWarning, stacklevel=2)
    out = np.zeros(shape, dt)
    n = _serial_input(out, np.broadcast_to(count, shape)).astype(np.float64).tolist()
    p = _serial_input(out, np.broadcast_to(prob, shape)).astype(np.float64).tolist()
    if not n:
        return out
    single = dt == np.float32
    c0, p0 = n[0], p[0]
    if len(n) >= 16 and n.count(c0) == len(n) and p.count(p0) == len(p) and \
            0 < c0 < math.inf and 0 < p0 < 1:
        # one (count, prob) for every element, in BTRS's regime: vectorised attempts
        R = _r32 if single else float
        q = p0 if p0 <= 0.5 else R(1.0 - p0)
        if R(c0 * q) >= 10.0:
            k = _pair_attempts(engine(generator), len(n), _btrs_pairs(c0, q, single))
        else:
            k = _inversion_const(engine(generator), len(n), c0, q, single)
        if k is not None:
            if p0 > 0.5:
                k = (dt.type(c0) - k.astype(dt)).astype(np.float64)
            return _fill(out, k.astype(dt))
    src = _Uniforms(engine(generator), 1.2 * sum(min(x * min(y, 1 - y), 10.0) + 2
                                                 for x, y in zip(n, p)
                                                 if x == x and y == y))
    u = src.u
    try:
        vals = [_binomial_one(x, y, single, u) for x, y in zip(n, p)]
    finally:
        src.close()
    return _fill(out, np.asarray(vals, np.float64).astype(dt))


# ------------------------------------------------------------ gamma reparameterised grad

_PSI_10 = 2.25175258906672110764
_DIGAMMA_A = (8.33333333333333333333E-2, -2.10927960927960927961E-2,
              7.57575757575757575758E-3, -4.16666666666666666667E-3,
              3.96825396825396825397E-3, -8.33333333333333333333E-3,
              8.33333333333333333333E-2)
_F_1E17 = float(_f32(1.0e17))
_F_08 = float(_f32(0.8))
_F_09 = float(_f32(0.9))
_F_11 = float(_f32(1.1))
_COEF_UV = ((0.16009398, -0.094634809, 0.025146376, -0.0030648343,
             1, 0.32668115, 0.10406089, 0.0014179084),
            (0.53487893, 0.1298071, 0.065735949, -0.0015649758,
             0.16639465, 0.020070113, -0.0035938915, -0.00058392623),
            (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
             0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07))


def _c_log(v):
    return math.log(v) if v > 0 else (-math.inf if v == 0 else math.nan)


def _c_pow(a, b):
    try:
        return math.pow(a, b)
    except (ValueError, OverflowError):
        if a == 0:
            return math.inf
        if a < 0:
            return math.nan
        return math.inf


def _digamma_one(x):
    """torch's ``digamma_one<double, double>`` (Distributions.h)."""
    if x == 0:
        return math.inf
    extra = 0.0
    if x < 0:
        if x == math.floor(x):
            return math.inf
        extra = -math.pi / math.tan(math.pi * x)
        x = 1 - x
    result = 0.0
    while x < 10:
        result -= 1 / x
        x += 1
    if x == 10:
        return result + _PSI_10 + extra
    y = 0.0
    if x < _F_1E17:
        z = 1.0 / (x * x)
        pol = 0.0
        for c in _DIGAMMA_A:
            pol = pol * z + c
        y = z * pol
    return result + _c_log(x) - (0.5 / x) - y + extra


def _gamma_grad_one(alpha, x):
    """torch's ``standard_gamma_grad_one<scalar_t, double>``: d sample / d alpha."""
    if x < _F_08:
        numer = 1.0
        denom = alpha
        series1 = numer / denom
        series2 = numer / (denom * denom)
        for i in range(1, 6):
            numer *= -x / float(i)
            denom += 1
            series1 += numer / denom
            series2 += numer / (denom * denom)
        pow_x_alpha = _c_pow(x, alpha)
        gamma_pdf = _c_pow(x, alpha - 1) * _c_exp(-x)
        gamma_cdf = pow_x_alpha * series1
        gamma_cdf_alpha = (_c_log(x) - _digamma_one(alpha)) * gamma_cdf - pow_x_alpha * series2
        try:
            result = -gamma_cdf_alpha / gamma_pdf
        except ZeroDivisionError:
            result = math.nan if gamma_cdf_alpha == 0 or gamma_cdf_alpha != gamma_cdf_alpha \
                else math.copysign(math.inf, -gamma_cdf_alpha)
        return 0.0 if result != result else result
    if alpha > 8.0:
        if _F_09 * alpha <= x <= _F_11 * alpha:
            numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
            numer_2 = 1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) \
                - 65 * x * x / alpha + alpha * (107 + 3600 * x)
            denom = 1244160 * (alpha * alpha) * (alpha * alpha)
            return numer_1 * numer_2 / denom
        denom = math.sqrt(8 * alpha)
        term2 = denom / (alpha - x)
        term3 = _c_pow(x - alpha - alpha * _c_log(x / alpha), -1.5)
        term23 = term2 - term3 if x < alpha else term2 + term3
        term1 = _c_log(x / alpha) * term23 - \
            math.sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x))
        stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
        numer = x * term1
        return -stirling * numer / denom
    u = _c_log(x / alpha)
    v = _c_log(alpha)
    cv = [_COEF_UV[0][i] + u * (_COEF_UV[1][i] + u * _COEF_UV[2][i]) for i in range(8)]
    p = cv[0] + v * (cv[1] + v * (cv[2] + v * cv[3]))
    q = cv[4] + v * (cv[5] + v * (cv[6] + v * cv[7]))
    return _c_exp(p / q)


def standard_gamma_grad(a, output):
    """``torch._standard_gamma_grad(alpha, sample)``: the reparameterised derivative of a
    Gamma(alpha, 1) sample with respect to alpha (serial, as torch's CPU kernel)."""
    if a.dtype not in (np.float32, np.float64):
        raise NotImplementedError(f"\"_standard_gamma_grad_cpu\" not implemented for "
                                  f"'{_SCALAR[_name(a.dtype)]}'")
    x = np.broadcast_to(output, a.shape).astype(np.float64).ravel().tolist()
    al = np.asarray(a, np.float64).ravel().tolist()
    with np.errstate(over="ignore"):
        return np.asarray([_gamma_grad_one(p, q) for p, q in zip(al, x)],
                          np.float64).astype(a.dtype).reshape(a.shape)


# Note [dirichlet grad]: torch differentiates ``_sample_dirichlet`` through
# ``_dirichlet_grad(x, alpha, total)``, by experiment the implicit derivative of a Beta(alpha,
# total - alpha) marginal sample x with its other concentration held fixed, over 1 - x:
# ``-(d/d alpha) I_x(alpha, beta) / (pdf(x; alpha, beta) (1 - x))`` (the gamma draws'
# pathwise derivative: x = G / (G + R) with the rest R fixed). torch evaluates it by an
# approximation (within ~1e-3); this kernel differentiates SciPy's regularised incomplete
# beta numerically (central differences, one Richardson step), from the side of the
# distribution where I is small (I_x(a, b) = 1 - I_{1-x}(b, a)), in float64.

def _d_first_param(fn, a, b, x):
    """d/da of ``fn(a, b, x)`` (elementwise), central differences + Richardson."""
    h = 1e-4 * np.maximum(a, 1e-3)
    h = np.minimum(h, 0.5 * a)

    def central(step):
        return (fn(a + step, b, x) - fn(a - step, b, x)) / (2 * step)
    return (4 * central(h / 2) - central(h)) / 3


def dirichlet_grad(x, alpha, total):
    """``torch._dirichlet_grad(x, alpha, total)`` (Note [dirichlet grad])."""
    for t in (alpha, total):
        if t.dtype != x.dtype:
            from ember._dtype import scalar_type_name
            raise RuntimeError(f"Found dtype {scalar_type_name(t.dtype)} but expected "
                               f"{scalar_type_name(x.dtype)}")
    if x.dtype not in (np.float32, np.float64):
        raise NotImplementedError(f"\"_dirichlet_grad_cpu\" not implemented for "
                                  f"'{_SCALAR[_name(x.dtype)]}'")
    from scipy import special
    xs, a, t = (np.asarray(v, np.float64) for v in np.broadcast_arrays(x, alpha, total))
    b = t - a

    def betainc_second(p, q, y):             # I_y(q, p): differentiate in its second slot
        return special.betainc(q, p, y)
    with np.errstate(all="ignore"):
        low = xs <= 0.5
        # x <= 1/2: d/da I_x(a, b); x > 1/2: -d/da I_{1-x}(b, a)
        d_low = _d_first_param(special.betainc, a, b, xs)
        d_high = -_d_first_param(betainc_second, a, b, 1 - xs)
        dI = np.where(low, d_low, d_high)
        log_pdf = (special.xlogy(a - 1, xs) + special.xlog1py(b - 1, -xs) - special.betaln(a, b))
        out = -dI / (np.exp(log_pdf) * (1 - xs))
        out = np.where((xs <= 0) | ~np.isfinite(out), 0.0, out)
        edge = xs >= 1                           # the limit from below
        if edge.any():
            near = np.nextafter(1.0, 0.0) * np.ones_like(xs)
            out = np.where(edge, dirichlet_grad(near, a, t), out)
    return out.astype(x.dtype)
