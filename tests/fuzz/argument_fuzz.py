"""Differential fuzzer for argument validation: ember against torch on the same bad input.

Every public function and Tensor method generated from an op record (``ember._ops.registry``)
is called with a valid baseline built from its schema, then with one argument replaced by a
wrong value (wrong Python type, wrong dtype, empty / zero-size / 0-d tensor, negative or
out-of-range dim, mismatched shape, a wrong ``out=``). ember and torch must agree: equal
values (dtype and shape included), or the same exception class.

A case is described by plain specs (NumPy arrays, dtype names, Python values) that are
turned into each library's objects separately, so neither side sees the other's tensors.
"""
from __future__ import annotations

import random
import signal
import warnings
from dataclasses import dataclass

import numpy as np

ERROR_CLASSES = (IndexError, ValueError, TypeError, NotImplementedError, RuntimeError)
CASE_TIMEOUT_S = 2.0


# ------------------------------------------------------------------ value specs

@dataclass(frozen=True)
class Arr:
    """A tensor to build in each library from ``data``."""
    data: np.ndarray


@dataclass(frozen=True)
class DType:
    name: str            # 'float32' -> lib.float32


@dataclass(frozen=True)
class Py:
    value: object        # passed unchanged


def _arr(shape, dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 1.5, size=shape)
    if dtype == "bool":
        return Arr(a > 1.0)
    if dtype == "complex64":
        return Arr((a + 1j * a[::-1] if a.ndim else a + 0.5j).astype(np.complex64))
    if dtype == "int64":
        return Arr(np.round(a * 2).astype(np.int64))
    return Arr(a.astype(dtype))


def materialize(spec, lib):
    """The library object a spec stands for (lists of specs stay lists)."""
    if isinstance(spec, Arr):
        return lib.tensor(spec.data.copy())
    if isinstance(spec, DType):
        return getattr(lib, spec.name)
    if isinstance(spec, Py):
        return spec.value
    if isinstance(spec, list):
        return [materialize(s, lib) for s in spec]
    raise TypeError(spec)


# ------------------------------------------------------------------ schema -> values

_SIZE_NAMES = {"size", "shape", "sizes", "stride", "output_size"}


def baseline(arg):
    """A valid value for schema argument ``arg`` (None: leave it to its default)."""
    t = arg.type
    if arg.has_default and t != "Tensor":
        return None
    if t == "Tensor":
        if arg.is_list:
            return [_arr((2, 3), seed=1), _arr((2, 3), seed=2)]
        if arg.optional and arg.has_default:
            return None
        return _arr((2, 3), seed=hash(arg.name) % 7)
    if t in ("int", "SymInt"):
        if arg.is_list:
            return Py((2, 3) if arg.name in _SIZE_NAMES else (0,))
        return Py(1)
    if t == "Scalar":
        return Py(2)
    if t == "float":
        return Py(0.5)
    if t == "bool":
        return Py(False)
    if t == "ScalarType":
        return DType("float32")
    return Py(None)


def mutations(arg, position):
    """(kind, spec) pairs of wrong values for one schema argument."""
    t, out = arg.type, []
    if t == "Tensor" and not arg.is_list:
        out += [("list", Py([1.0, 2.0])), ("str", Py("a")), ("tuple", Py((1.0, 2.0))),
                ("bool_tensor", _arr((2, 3), "bool")), ("int_tensor", _arr((2, 3), "int64")),
                ("complex_tensor", _arr((2, 3), "complex64")), ("empty", _arr((0,))),
                ("zero_size", _arr((2, 0))), ("0d", _arr(())),
                ("mismatched_shape", _arr((4,)) if position else _arr((3, 4)))]
        if not arg.optional:
            out.append(("none", Py(None)))
    elif t == "Tensor":
        out += [("str", Py("a")), ("list_of_float", Py([1.0, 2.0])),
                ("mixed_dtypes", [_arr((2, 3)), _arr((2, 3), "int64")]),
                ("mismatched_shapes", [_arr((2, 3)), _arr((4,))]), ("empty_list", Py([]))]
    elif t in ("int", "SymInt") and not arg.is_list:
        out += [("float", Py(1.5)), ("str", Py("a")), ("negative", Py(-1)),
                ("out_of_range", Py(5)), ("out_of_range_negative", Py(-5)),
                ("tuple", Py((0, 1)))]
        if not arg.optional:
            out.append(("none", Py(None)))
    elif t in ("int", "SymInt"):
        out += [("str", Py("a")), ("float_list", Py([1.5])), ("negative", Py((-1,))),
                ("out_of_range", Py((5,))), ("int_for_list", Py(1))]
        if not arg.optional:
            out.append(("none", Py(None)))
    elif t == "float":
        out += [("str", Py("a")), ("list", Py([1.0])), ("complex", Py(1j))]
        if not arg.optional:
            out.append(("none", Py(None)))
    elif t == "bool":
        out += [("str", Py("a")), ("list", Py([True]))]
    elif t == "Scalar":
        out += [("str", Py("a")), ("list", Py([1, 2])), ("complex", Py(1 + 1j))]
        if not arg.optional:
            out.append(("none", Py(None)))
    elif t == "ScalarType":
        out += [("str", Py("float32")), ("int", Py(1))]
    elif t == "str":
        out += [("int", Py(1)), ("unknown", Py("nonsense"))]
    return out


@dataclass
class Case:
    front: str           # 'fn:add' or 'method:add_'
    name: str
    arg: str             # the mutated argument ('' for the baseline, 'out' for out=)
    kind: str
    args: list           # positional specs
    kwargs: dict         # keyword specs
    values_random: bool  # compare shape and dtype only

    @property
    def key(self):
        return f"{self.front}/{self.arg}/{self.kind}"


def _random_valued(op):
    n = op.public_name
    return any(a.type == "Generator" for a in op.schema.args) or "empty" in n or \
        n.startswith(("rand", "normal", "bernoulli", "multinomial", "dropout", "uniform",
                      "exponential", "cauchy", "geometric", "log_normal", "poisson"))


def cases_for(op, name, method, with_out):
    """The baseline and every single-argument mutation of one front."""
    args = op.schema.args
    base = [baseline(a) for a in args]

    def build(replace_at=None, spec=None, out=None):
        pos, kw = [], {}
        for i, a in enumerate(args):
            v = spec if i == replace_at else base[i]
            if v is None and i != replace_at:
                continue
            if a.kwarg_only or len(pos) < i:        # a skipped default: go by keyword
                kw[a.name] = v
            else:
                pos.append(v)
        if out is not None:
            kw["out"] = out
        return pos, kw

    front = ("method:" if method else "fn:") + name
    rnd = _random_valued(op)
    pos, kw = build()
    found = [Case(front, name, "", "baseline", pos, kw, rnd)]
    for i, a in enumerate(args):
        if method and i == 0:
            continue
        for kind, spec in mutations(a, i):
            pos, kw = build(i, spec)
            found.append(Case(front, name, a.name, kind, pos, kw, rnd))
    if with_out:
        for kind, spec in (("int_out", _arr((0,), "int64")), ("bool_out", _arr((0,), "bool")),
                           ("list_out", Py([1.0])), ("float64_out", _arr((0,), "float64"))):
            pos, kw = build(out=spec)
            found.append(Case(front, name, "out", kind, pos, kw, rnd))
    return found


def all_cases():
    """Cases for every generated function and Tensor method that torch also has."""
    import ember
    import torch
    from ember._ops.registry import FUNCTIONS, METHODS
    found = []
    for name, fn in sorted(FUNCTIONS.items()):
        op = getattr(fn, "_op", None)
        if op is None or not hasattr(torch, name):
            continue
        with_out = "out" in fn.__code__.co_varnames[:fn.__code__.co_argcount +
                                                    fn.__code__.co_kwonlyargcount]
        found += cases_for(op, name, False, with_out)
    for name, fn in sorted(METHODS.items()):
        op = getattr(fn, "_op", None)
        if op is None or not hasattr(torch.Tensor, name) or not hasattr(ember.Tensor, name):
            continue
        found += cases_for(op, name, True, False)
    return found


# ------------------------------------------------------------------ running and comparing

class _Hang(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Hang()


def outcome(case, lib):
    """('ok', result) or ('error', class name, message) of one case in one library."""
    pos = [materialize(s, lib) for s in case.args]
    kw = {k: materialize(v, lib) for k, v in case.kwargs.items()}
    if case.front.startswith("method:"):
        fn = getattr(pos[0], case.name)
        pos = pos[1:]
    else:
        fn = getattr(lib, case.name)
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_TIMEOUT_S)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fn(*pos, **kw)
        return ("ok", res)
    except _Hang:
        return ("error", "Hang", f"no answer in {CASE_TIMEOUT_S} s")
    except Exception as e:   # noqa: BLE001 - every exception is an outcome to compare
        cls = next((c.__name__ for c in ERROR_CLASSES if isinstance(e, c)),
                   f"Other:{type(e).__name__}")
        return ("error", cls, str(e).splitlines()[0][:200] if str(e) else "")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _plain(value):
    """A comparable form of a result: ('tensor', dtype, shape, array) or the value."""
    if hasattr(value, "dtype") and hasattr(value, "shape") and hasattr(value, "detach"):
        try:
            arr = value.detach().cpu().resolve_conj().numpy() if hasattr(
                value, "resolve_conj") else value.detach().numpy()
        except Exception:     # noqa: BLE001 - sparse or odd layouts: shape and dtype only
            arr = None
        return ("tensor", str(value.dtype), tuple(value.shape), arr)
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    return value


def same_values(a, b, shape_only):
    pa, pb = _plain(a), _plain(b)
    return _same(pa, pb, shape_only)


def _same(pa, pb, shape_only):
    if isinstance(pa, tuple) and pa and pa[0] == "tensor":
        if not (isinstance(pb, tuple) and pb and pb[0] == "tensor"):
            return False
        if pa[1:3] != pb[1:3]:
            return False
        if shape_only or pa[3] is None or pb[3] is None:
            return True
        x, y = pa[3], pb[3]
        if x.dtype == bool or y.dtype == bool:
            return np.array_equal(x, y)
        return np.allclose(x, y, rtol=1e-4, atol=1e-5, equal_nan=True)
    if isinstance(pa, tuple) and isinstance(pb, tuple):
        return len(pa) == len(pb) and all(_same(x, y, shape_only) for x, y in zip(pa, pb))
    try:
        return bool(pa == pb) or (pa != pa and pb != pb)
    except Exception:         # noqa: BLE001
        return False


def compare(case):
    """None when ember and torch agree on ``case``, else a one-line description."""
    import ember
    import torch
    te, tt = outcome(case, ember), outcome(case, torch)
    if te[0] == "error" and tt[0] == "error":
        if te[1] == tt[1]:
            return None
        return f"ember {te[1]}({te[2]!r}) vs torch {tt[1]}({tt[2]!r})"
    if te[0] == "ok" and tt[0] == "ok":
        try:
            if same_values(te[1], tt[1], case.values_random):
                return None
        except Exception as e:   # noqa: BLE001
            return f"results not comparable: {e!r}"
        return f"values differ: ember {_short(te[1])} vs torch {_short(tt[1])}"
    if te[0] == "ok":
        return f"ember returned {_short(te[1])}; torch {tt[1]}({tt[2]!r})"
    return f"ember {te[1]}({te[2]!r}); torch returned {_short(tt[1])}"


def _short(v):
    p = _plain(v)
    if isinstance(p, tuple) and p and p[0] == "tensor":
        return f"tensor({p[1]}, {list(p[2])})"
    return repr(v)[:80]


# wrong Python types: torch's argument parser refuses them before any other check, so
# they are compared even where the op's baseline is itself refused
PARSER_KINDS = {"list", "str", "tuple", "none", "float", "float_list", "list_of_float",
                "list_out", "empty_list", "int", "complex"}


def run(seed=0, max_cases=None):
    """Compare every case (or a seeded sample of ``max_cases``); returns (cases, diffs).
    Where torch refuses an op's baseline, only the argument-type cases are compared (which
    of two faults an op reports first is not part of its contract)."""
    import torch
    cases = all_cases()
    if max_cases is not None and len(cases) > max_cases:
        cases = random.Random(seed).sample(cases, max_cases)
    torch_seed_state()
    refused, compared, diffs = {}, [], {}
    for c in cases:
        if c.front not in refused:
            base = next(b for b in cases_of(c) if b.kind == "baseline")
            refused[c.front] = outcome(base, torch)[0] == "error"
        if refused[c.front] and c.kind != "baseline" and c.kind not in PARSER_KINDS:
            continue
        compared.append(c)
        d = compare(c)
        if d is not None:
            diffs[c.key] = d
    return compared, diffs


def cases_of(case):
    """All cases of ``case``'s front (for its baseline)."""
    import ember
    from ember._ops.registry import FUNCTIONS, METHODS
    method = case.front.startswith("method:")
    fn = (METHODS if method else FUNCTIONS)[case.name]
    del ember
    return cases_for(fn._op, case.name, method, False)


def torch_seed_state():
    import ember
    import torch
    ember.manual_seed(0)
    torch.manual_seed(0)


if __name__ == "__main__":
    import sys
    import time
    t0 = time.time()
    cases, diffs = run()
    for k in sorted(diffs):
        print(f"{k}: {diffs[k]}")
    print(f"{len(cases)} cases, {len(cases) - len(diffs)} agree, {len(diffs)} differ, "
          f"{time.time() - t0:.1f} s", file=sys.stderr)
