"""Parity harness: run PyTorch's own op database (``op_db``) against ember.

For every ``OpInfo`` in ``torch.testing._internal.common_methods_invocations.op_db`` (which
already contains the linalg / fft / special / masked / signal definitions), the harness

1. resolves the name in ember (``torch.<name>`` -> ``ember.<name>``,
   ``nn.functional.x`` -> ``ember.nn.functional.x``, ``linalg.x`` -> ``ember.linalg.x``...;
   method-only ops -> ``ember.Tensor.<name>``; ATen ops torch has no front for
   (``torch.ops.aten.x.overload``, ``slice``) -> ``ember.ops.aten.<name>[.<overload>]``;
   OpInfos whose ``op`` is a lambda written in
   torch's test suite are *transplanted*: the same code runs with ``torch`` bound to ember);
2. for dtype in float32, float64, int64, bool, complex64, complex128 (those in ``op.dtypes``)
   takes the first ``MAX_SAMPLES`` of ``op.sample_inputs('cpu', dtype)`` (the strict run,
   ``STRICT``: every sample of every dtype in ``ALL_DTYPES``), converts each sample
   to ember (numpy copies keeping strides, aliasing kept, dtypes / Size / devices mapped),
   calls torch and ember, and compares structure, result dtype, shape and values
   (torch.testing tolerances by dtype, widened by the op's own ``toleranceOverride``s), and
   the input tensors afterwards (unchanged, or changed like torch's by ``inplace=True``).
   Lenient only where torch's answer is not the only right one: a float32/complex64 value
   mismatch passes when ember matches torch's float64 computation (ember may be more
   accurate); index outputs of ``sort``/``topk``/``mode``... may pick another of tied
   elements; the sample's ``output_process_fn_grad`` (gauge fixing for svd/eig) may be
   applied before comparing. Random/uninitialized ops (``NONDETERMINISTIC``) compare
   structure, dtype and shape only;
3. also compares the Tensor method variant (``op.method_variant``), the op's aliases
   (``torch.swapaxes`` for ``transpose``...) and the in-place variant (``op.inplace_variant``
   on a copy of the input, for samples torch accepts in place) when ember has them;
4. for differentiable ops, on float64 samples (``requires_grad=True``) compares gradients:
   ``autograd.grad(outputs, inputs, grad_outputs=<fixed random cotangents>)`` — i.e. the
   gradient of ``sum(out * cotangent)`` — w.r.t. every input that requires grad, with torch's
   ``gradcheck_wrapper`` and ``output_process_fn_grad`` applied on both sides.

``check_op(opinfo)`` returns an ``OpResult`` with ``status`` in ``pass`` / ``fail`` / ``missing``
/ ``nosamples``, the first mismatch (or exception) as ``reason``, and separate forward/grad
verdicts. ember raising anything is a ``fail``; ``NotImplementedError`` reads
``"not implemented: ..."``.

torch is the oracle only; ember never sees a torch object.
"""
from __future__ import annotations

import importlib
import os
import random
import sys
import time
import types
import unittest
import warnings
from dataclasses import dataclass, field

import numpy as np

import ember

MAX_SAMPLES = 8                         # per op per dtype
OP_TIME_BUDGET = 30.0                   # seconds per op; later samples are dropped after it
DTYPES = ("float32", "float64", "int64", "bool", "complex64", "complex128")

# The strict run (EMBER_PARITY_STRICT=1, or scripts/parity_report.py --strict): every sample
# of every dtype the OpInfo lists (complex32 and uint16/32/64 included: ember has them all),
# with a larger time budget per op.
STRICT = os.environ.get("EMBER_PARITY_STRICT", "") not in ("", "0")
STRICT_MAX_SAMPLES = 10**9
STRICT_OP_TIME_BUDGET = 240.0
ALL_DTYPES = DTYPES + ("float16", "bfloat16", "int8", "int16", "int32", "uint8",
                       "complex32", "uint16", "uint32", "uint64")


def strict_settings():
    """(max_samples, dtypes, time budget) of the strict run."""
    return STRICT_MAX_SAMPLES, ALL_DTYPES, STRICT_OP_TIME_BUDGET
GRAD_DTYPE = "float64"

# torch.testing.assert_close defaults: dtype -> (rtol, atol)
DEFAULT_TOL = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
    "complex32": (1e-3, 1e-5), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7),
}
ACCURACY_FACTOR = 4.0                   # float32: ember's error may be this x torch's own
GRAD_TOL_SCALE = 10.0                   # gradients go through more ops than forward values

# ops whose values are random or undefined: only structure, dtype and shape are compared
# (and no gradients)
NONDETERMINISTIC = {
    "bernoulli", "cauchy", "exponential", "geometric", "log_normal", "normal", "uniform",
    "multinomial", "randn", "randn_like", "rand_like", "randint", "randint_like",
    "empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided", "empty_permuted",
    "nn.functional.dropout", "nn.functional.dropout2d", "nn.functional.dropout3d",
    "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout",
    "nn.functional.rrelu", "nn.functional.fractional_max_pool2d",
    "nn.functional.fractional_max_pool3d", "svd_lowrank", "pca_lowrank",
    "torch.ops.aten._efficient_attention_forward", "torch.ops.aten._flash_attention_forward",
}

# ops that are random only when their dropout argument is nonzero (and training)
DROPOUT_ARGS = {"nn.functional.scaled_dot_product_attention": "dropout_p",
                "nn.functional.multi_head_attention_forward": "dropout_p"}

# ops whose float32 result must not be judged against a float64 computation (the answer
# depends on the dtype itself)
NO_UPCAST = {"nextafter", "nan_to_num", "frexp", "ldexp", "float_power"}

# unary special functions where torch's float64 kernels are known to be off by ~1e-7 near
# their zeros: a float64 mismatch passes if ember matches mpmath (30 digits) there
EXACT_REFS = {"special.bessel_j0": ("besselj", 0), "special.bessel_j1": ("besselj", 1),
              "special.bessel_y0": ("bessely", 0), "special.bessel_y1": ("bessely", 1)}

# ops returning indices of (possibly tied) elements: when the values agree, index outputs
# pass if they select equal input elements. name -> (position of `dim` in args, default dim,
# whether the op reduces `dim` (then `keepdim` follows `dim`))
TIE_OPS = {
    "sort": (0, -1, False), "argsort": (0, -1, False), "msort": (None, 0, False),
    "topk": (1, -1, False), "kthvalue": (1, -1, True), "mode": (0, -1, True),
    "median": (0, None, True), "nanmedian": (0, None, True),
    "max": (0, None, True), "min": (0, None, True),
    "cummax": (0, None, False), "cummin": (0, None, False),
}

# ops whose result depends on the input's storage, not just its elements: inputs are
# converted as views of a copy of their whole storage (via ember's own as_strided)
STORAGE_OPS = {"as_strided", "as_strided_copy", "as_strided_scatter"}

NAMESPACES = ("torch", "nn.functional", "linalg", "fft", "special", "other")


# ----------------------------------------------------------------------------- op_db

_OP_DB = None


def import_torch_testing(module, name):
    """``name`` from ``torch.testing._internal.<module>`` (op_db, module_db): torch's test
    internals import expecttest (only its TestCase is needed: stubbed when absent) and load
    their own hypothesis profile (the caller's is put back)."""
    import importlib
    import torch  # noqa: F401
    if "expecttest" not in sys.modules:
        try:
            import expecttest  # noqa: F401
        except ImportError:
            stub = types.ModuleType("expecttest")
            stub.TestCase, stub.ACCEPT = unittest.TestCase, False
            sys.modules["expecttest"] = stub
    try:
        import hypothesis
        prev_profile = getattr(hypothesis.settings, "_current_profile", None)
    except ImportError:
        hypothesis, prev_profile = None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = getattr(importlib.import_module(f"torch.testing._internal.{module}"), name)
    if hypothesis is not None and prev_profile is not None:
        try:
            hypothesis.settings.load_profile(prev_profile)
        except Exception:
            pass
    return value


def _import_op_db():
    """Import torch's op database (torch must be importable; callers importorskip it)."""
    global _OP_DB
    if _OP_DB is None:
        _OP_DB = list(import_torch_testing("common_methods_invocations", "op_db"))
    return _OP_DB


def op_id(op):
    """Unique id of an OpInfo: ``name`` or ``name.variant_test_name``."""
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def namespace(name):
    """torch (torch.* and Tensor methods), nn.functional, linalg, fft, special, or other
    (masked.*, signal.*, sparse.*, aten internals and test helpers)."""
    if name.startswith("nn.functional."):
        return "nn.functional"
    for ns in ("linalg", "fft", "special"):
        if name.startswith(ns + "."):
            return ns
    torch = sys.modules.get("torch")
    if "." not in name and torch is not None and (
            hasattr(torch, name) and not name.startswith("_") or hasattr(torch.Tensor, name)
            or hasattr(torch.Tensor, name + "_")):          # cauchy -> Tensor.cauchy_
        return "torch"
    return "other"


def all_ops():
    """Every OpInfo of torch's op database, with unique ids (first wins on duplicates)."""
    seen, out = set(), []
    for op in _import_op_db():
        i = op_id(op)
        if i not in seen:
            seen.add(i)
            out.append(op)
    return out


# ----------------------------------------------------------------------- name lookup

_SUBMODULES = ("nn", "nn.functional", "linalg", "fft", "special", "masked", "signal",
               "signal.windows", "sparse")


_imported = []


def _import_submodules():
    if _imported:
        return
    _imported.append(True)
    for sub in _SUBMODULES:
        try:
            importlib.import_module(ember.__name__ + "." + sub)
        except Exception:
            pass


def resolve_ember(path):
    """``ember.<path>`` (importing subpackages as needed) or None."""
    obj = ember
    for part in path.split("."):
        try:
            if hasattr(obj, part):
                obj = getattr(obj, part)
                continue
        except Exception:
            return None
        if isinstance(obj, types.ModuleType):
            try:
                obj = importlib.import_module(f"{obj.__name__}.{part}")
                continue
            except Exception:
                return None
        return None
    return obj


def _is_test_defined(fn):
    mod = getattr(fn, "__module__", "") or ""
    return isinstance(fn, types.FunctionType) and (
        mod.startswith("torch.testing") or fn.__name__ == "<lambda>")


def _method_name(op):
    mv = op.method_variant
    if mv is None:
        return None
    n = getattr(mv, "__name__", None)
    if n and n != "<lambda>":
        return n
    return op.name


@dataclass
class Target:
    """How ember is called for one OpInfo."""
    kind: str                   # 'function' | 'method' | 'lambda'
    fn: object                  # callable(input, *args, **kwargs)
    method: str | None = None   # Tensor method (also compared when kind != 'method')
    inplace: str | None = None  # in-place Tensor method also compared (``add_``)
    aliases: tuple = ()         # (label, ember callable, torch callable) of the op's aliases


def resolve(op):
    """The ember ``Target`` for an OpInfo, or None when ember lacks the name."""
    t = _resolve(op)
    if t is not None:
        t.aliases = _aliases(op)
    return t


def _aliases(op):
    out = []
    for a in getattr(op, "aliases", None) or ():
        name = a.name[len("torch."):] if a.name.startswith("torch.") else a.name
        fn = resolve_ember(name)
        if fn is not None and callable(fn) and not isinstance(fn, (ember.dtype, type)):
            out.append(("ember." + name, fn, a.op))
        mv = getattr(a, "method_variant", None)
        mname = getattr(mv, "__name__", None) if mv is not None else None
        if mname and mname != "<lambda>" and _tensor_has(mname) and "." not in name:
            out.append(("Tensor." + mname, _method_caller(mname), mv))
    return tuple(out)


def _resolve(op):
    _import_submodules()
    name = op.name
    if name.startswith("jiterator_"):
        return None
    if name.startswith("torch.ops."):                   # torch.ops.aten.x.overload
        fn_obj = resolve_ember(name[len("torch."):])
        return Target("function", fn_obj) if callable(fn_obj) else None
    has_method = _tensor_has(name)
    fn_obj = resolve_ember(name)
    if fn_obj is None and not has_method:               # an ATen op torch has no front for
        fn_obj = resolve_ember(_aten_path(op))
    has_function = fn_obj is not None and callable(fn_obj) and not isinstance(fn_obj, ember.dtype) \
        and not isinstance(fn_obj, type)
    iv = getattr(op, "inplace_variant", None)
    iname = getattr(iv, "__name__", None) if iv is not None else None
    inplace = iname if iname and iname != "<lambda>" and _tensor_has(iname) else None
    if _is_test_defined(op.op):
        if not (has_function or has_method or _tensor_has(name + "_")):
            return None
        mv = op.method_variant
        mname = getattr(mv, "__name__", None) if mv is not None else None
        method = mname if mname and mname != "<lambda>" and _tensor_has(mname) else None
        return Target("lambda", transplant(op.op), method, inplace)
    if has_function:
        mname = _method_name(op)
        method = mname if mname and _tensor_has(mname) else None
        return Target("function", fn_obj, method, inplace)
    mname = _method_name(op) or (name if "." not in name else None)
    if mname and _tensor_has(mname):
        return Target("method", _method_caller(mname), mname, inplace)
    return None


def _aten_path(op):
    """``ops.aten.<name>[.<overload>]`` for an OpInfo of an ATen op (its ``op`` an
    OpOverload, a packet or a test function around one)."""
    overload = getattr(op.op, "_overloadname", None)
    path = "ops.aten." + op.name
    return path + "." + overload if overload else path


def _tensor_has(name):
    """ember.Tensor defines ``name`` (looked up statically: ``type.__ror__`` etc. don't count)."""
    return any(name in k.__dict__ for k in ember.Tensor.__mro__ if k is not object)


def _method_caller(mname):
    def call(self, *args, **kwargs):
        return getattr(self, mname)(*args, **kwargs)
    call.__name__ = mname
    return call


# ------------------------------------------------------------------ transplanting

def _ember_wrapper_set_seed(fn, *args, **kwargs):
    seed = getattr(ember, "manual_seed", None)
    if seed is not None:
        seed(42)
    return fn(*args, **kwargs)


def transplant(fn):
    """The same Python function with ``torch`` (and torch objects it closes over) -> ember."""
    if not isinstance(fn, types.FunctionType):
        return fn
    g = dict(fn.__globals__)
    g["torch"] = ember
    g["wrapper_set_seed"] = _ember_wrapper_set_seed
    if "F" in g:
        g["F"] = resolve_ember("nn.functional")
    _conv = Converter()

    def conv(v):                # closures may hold test objects (an OpInfo): keep those
        try:
            return _conv(v)
        except Unconvertible:
            return v
    closure = None
    if fn.__closure__:
        closure = tuple(types.CellType(conv(c.cell_contents)) for c in fn.__closure__)
    defaults = tuple(conv(d) for d in fn.__defaults__) if fn.__defaults__ else None
    new = types.FunctionType(fn.__code__, g, fn.__name__, defaults, closure)
    if fn.__kwdefaults__:
        new.__kwdefaults__ = {k: conv(v) for k, v in fn.__kwdefaults__.items()}
    return new


# ------------------------------------------------------------------- conversion

class Unconvertible(Exception):
    pass


def torch_to_numpy(t):
    torch = sys.modules["torch"]
    t = t.detach()
    if t._is_zerotensor():
        return np.zeros(tuple(t.shape), dtype=torch.empty(0, dtype=t.dtype).numpy().dtype)
    if t.layout != torch.strided:
        raise Unconvertible(f"{t.layout} tensors")
    if t.dtype == torch.complex32:
        t = t.to(torch.complex64)
    elif t.dtype in (torch.bfloat16, torch.float16):
        t = t.to(torch.float64)
    if t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        t = t.resolve_neg()
    return t.numpy()


def _strided_copy(arr):
    """A copy of ``arr`` with the same strides (in elements; overlap/expansion kept)."""
    if arr.ndim == 0 or arr.size == 0 or arr.flags.c_contiguous:
        return arr.copy()
    item = arr.itemsize
    estr = [s // item for s in arr.strides]
    if any(s < 0 for s in estr) or any(s * item != b for s, b in zip(estr, arr.strides)):
        return arr.copy()
    extent = 1 + sum((n - 1) * s for n, s in zip(arr.shape, estr))
    buf = np.empty(extent, dtype=arr.dtype)
    out = np.lib.stride_tricks.as_strided(buf, arr.shape, arr.strides)
    out[...] = arr
    return out


class Converter:
    """torch objects -> ember objects, keeping aliasing (one ember tensor per torch tensor)."""

    def __init__(self, grad=False, keep_storage=False):
        self.grad = grad
        self.keep_storage = keep_storage
        self.memo = {}

    def __call__(self, x):
        torch = sys.modules.get("torch")
        if torch is None:
            return x
        if isinstance(x, torch.Tensor):
            key = id(x)
            if key in self.memo:
                return self.memo[key][1]
            e = self.tensor(x)
            self.memo[key] = (x, e)   # keep x alive so ids stay unique
            return e
        if isinstance(x, torch.Size):
            return ember.Size(tuple(x))
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return type(x)(*(self(v) for v in x))
        if isinstance(x, tuple):
            return tuple(self(v) for v in x)
        if isinstance(x, list):
            return [self(v) for v in x]
        if isinstance(x, dict):
            return {k: self(v) for k, v in x.items()}
        if isinstance(x, slice):
            return slice(self(x.start), self(x.stop), self(x.step))
        if isinstance(x, torch.dtype):
            name = str(x).split(".")[-1]
            d = getattr(ember, name, None)
            if not isinstance(d, ember.dtype):
                raise Unconvertible(f"ember has no dtype {name}")
            return d
        if isinstance(x, torch.device):
            return ember.device(str(x))
        if isinstance(x, torch.memory_format):
            name = str(x).split(".")[-1]
            if not hasattr(ember, name):
                raise Unconvertible(f"ember has no memory format {name}")
            return getattr(ember, name)
        if isinstance(x, torch.layout):
            name = str(x).split(".")[-1]
            if not hasattr(ember, name):
                raise Unconvertible(f"ember has no layout {name}")
            return getattr(ember, name)
        if isinstance(x, torch.Generator):
            gen = getattr(ember, "Generator", None)
            if gen is None:
                return None
            g = gen()
            g.manual_seed(x.initial_seed())
            return g
        opts = getattr(torch.nn, "LinearCrossEntropyOptions", None)
        if opts is not None and isinstance(x, opts):      # a frozen dataclass of settings
            import dataclasses
            return ember.nn.LinearCrossEntropyOptions(
                **{f.name: self(getattr(x, f.name)) for f in dataclasses.fields(x)})
        if isinstance(x, types.FunctionType) and _is_test_defined(x):
            return transplant(x)
        if isinstance(x, torch.nn.Module):
            return self.module(x)
        fmod = getattr(x, "__module__", None) or ""
        if callable(x) and not isinstance(x, type) and fmod.startswith("torch") \
                and getattr(x, "__name__", None):            # torch.add, F.relu passed as args
            sub = fmod.split(".")[1:] if fmod.startswith("torch.nn.functional") else []
            fn = resolve_ember(".".join(["nn", "functional"] if sub else []) +
                               ("." if sub else "") + x.__name__)
            if fn is None:
                raise Unconvertible(f"ember has no {fmod}.{x.__name__}")
            return fn
        mod = type(x).__module__ or ""
        if mod.startswith("torch"):
            raise Unconvertible(f"cannot convert {type(x).__name__} to ember")
        return x

    # constructor arguments of the torch modules that samples pass (as distance functions)
    MODULE_ARGS = {"PairwiseDistance": lambda m: dict(p=m.norm, eps=m.eps, keepdim=m.keepdim)}

    def module(self, m):
        name = type(m).__name__
        cls = resolve_ember("nn." + name)
        if cls is None or name not in self.MODULE_ARGS:
            raise Unconvertible(f"torch.nn.{name} modules")
        return cls(**self.MODULE_ARGS[name](m))

    def tensor(self, t):
        name = _dtype_name(t.dtype)
        d = getattr(ember, name, None)
        if not isinstance(d, ember.dtype):
            raise Unconvertible(f"ember has no dtype {name}")
        if self.keep_storage and t.layout == sys.modules["torch"].strided and t.numel() and \
                hasattr(ember.Tensor, "as_strided"):
            return self._view_of_storage(t, d)
        e = ember.from_numpy(_strided_copy(torch_to_numpy(t)))    # half types come as float64
        if _dtype_name(e.dtype) != name:
            e = e.to(d)
        if self.grad and t.requires_grad:
            e.requires_grad_(True)
        return e

    def _view_of_storage(self, t, d):
        """For ``as_strided``-like ops: the whole storage of ``t`` as an ember tensor and ``t``
        as ember's ``as_strided`` view of it (same sizes, strides and storage offset)."""
        torch = sys.modules["torch"]
        n = t.untyped_storage().nbytes() // t.element_size()
        whole = torch.as_strided(t.detach(), (n,), (1,), 0)
        root = ember.from_numpy(torch_to_numpy(whole).copy())
        if _dtype_name(root.dtype) != _dtype_name(t.dtype):
            root = root.to(d)
        if self.grad and t.requires_grad:
            root.requires_grad_(True)
        return root.as_strided(tuple(t.shape), tuple(t.stride()), t.storage_offset())


# ------------------------------------------------------------------- comparison

class Mismatch(Exception):
    pass


class ValueMismatch(Mismatch):
    """Same structure, dtype and shape; values outside tolerance."""


def _dtype_name(d):
    return str(d).split(".")[-1]


def ember_to_numpy(e):
    d = e.detach() if e.requires_grad else e
    if _dtype_name(d.dtype) == "complex32":        # NumPy has no complex32: via complex64
        d = d.to(getattr(ember, "complex64"))
    try:
        return np.asarray(d.numpy())
    except Exception:
        pass
    if hasattr(d, "resolve_conj"):                 # (the harness self-test runs on torch)
        try:
            return torch_to_numpy(d)
        except Exception:
            pass
    return np.asarray(d._data)


def _fmt_val(v):
    return repr(v.item() if isinstance(v, np.generic) else v)


def _fmt_idx(idx):
    return "(" + ", ".join(str(int(i)) for i in idx) + ")"


def compare_arrays(got, exp, rtol, atol, where):
    if got.shape != exp.shape:
        raise Mismatch(f"{where}: shape {got.shape} != expected {exp.shape}")
    if exp.size == 0:
        return
    if exp.dtype.kind in "biu" and got.dtype.kind in "biu":
        bad = got != exp
        if bad.any():
            idx = np.argwhere(bad)[0]
            raise ValueMismatch(f"{where}: {int(bad.sum())}/{exp.size} values differ; at "
                           f"{_fmt_idx(idx)} expected {_fmt_val(exp[tuple(idx)])} got "
                           f"{_fmt_val(got[tuple(idx)])}")
        return
    g = got.astype(np.complex128 if got.dtype.kind == "c" or exp.dtype.kind == "c" else np.float64)
    e = exp.astype(g.dtype)
    with np.errstate(all="ignore"):
        ok = np.isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
    if not ok.all():
        idx = np.argwhere(~ok)[0]
        ti = tuple(idx)
        with np.errstate(all="ignore"):
            diff = np.abs(g - e)
            finite = np.isfinite(diff) & ~ok
            mx = float(diff[finite].max()) if finite.any() else float("nan")
        raise ValueMismatch(f"{where}: {int((~ok).sum())}/{exp.size} values differ (max abs diff "
                       f"{mx:.3g}, rtol={rtol:g}, atol={atol:g}); at {_fmt_idx(idx)} expected "
                       f"{_fmt_val(e[ti])} got {_fmt_val(g[ti])}")


def compare(got, exp, tol, where="output", values=True):
    """Compare an ember result against torch's; raise Mismatch on the first difference."""
    torch = sys.modules["torch"]
    if isinstance(exp, torch.Tensor):
        if not isinstance(got, ember.Tensor):
            raise Mismatch(f"{where}: expected a Tensor, got {type(got).__name__}")
        if _dtype_name(got.dtype) != _dtype_name(exp.dtype):
            raise Mismatch(f"{where}: dtype {_dtype_name(got.dtype)} != expected "
                           f"{_dtype_name(exp.dtype)}")
        if tuple(got.shape) != tuple(exp.shape):
            raise Mismatch(f"{where}: shape {tuple(got.shape)} != expected {tuple(exp.shape)}")
        if exp.layout != torch.strided:
            raise Mismatch(f"{where}: torch returns a {exp.layout} tensor (not compared)")
        if values:
            rtol, atol = tol(_dtype_name(exp.dtype))
            ev = torch_to_numpy(exp)
            if exp.dtype in (torch.bfloat16, torch.float16, torch.complex32):
                up = getattr(got, "double" if exp.dtype != torch.complex32 else "cfloat", None)
                gv = ember_to_numpy(up() if up is not None else got)
            else:
                gv = ember_to_numpy(got)
            compare_arrays(gv, ev, rtol, atol, where)
        return
    if isinstance(exp, torch.Size):
        if not isinstance(got, (tuple, list)) or tuple(got) != tuple(exp):
            raise Mismatch(f"{where}: expected {tuple(exp)}, got {got!r}")
        return
    if isinstance(exp, (tuple, list)):
        if not isinstance(got, (tuple, list)):
            raise Mismatch(f"{where}: expected a {type(exp).__name__} of {len(exp)}, got "
                           f"{type(got).__name__}")
        if len(got) != len(exp):
            raise Mismatch(f"{where}: expected {len(exp)} results, got {len(got)}")
        for i, (g, e) in enumerate(zip(got, exp)):
            compare(g, e, tol, f"{where}[{i}]", values)
        return
    if exp is None:
        if got is not None:
            raise Mismatch(f"{where}: expected None, got {type(got).__name__}")
        return
    if isinstance(exp, (bool, int, float, complex)):
        if isinstance(got, ember.Tensor) or not isinstance(got, (bool, int, float, complex,
                                                                 np.generic)):
            raise Mismatch(f"{where}: expected a Python {type(exp).__name__}, got "
                           f"{type(got).__name__}")
        if values:
            rtol, atol = tol("float64" if isinstance(exp, float) else "complex128")
            if isinstance(exp, (bool, int)) and not isinstance(exp, float):
                if got != exp:
                    raise Mismatch(f"{where}: expected {exp!r}, got {got!r}")
            elif not (abs(got - exp) <= atol + rtol * abs(exp) or
                      (got != got and exp != exp) or got == exp):
                raise Mismatch(f"{where}: expected {exp!r}, got {got!r}")
        return
    if values and got != exp:
        raise Mismatch(f"{where}: expected {exp!r}, got {got!r}")


# ----------------------------------------------------------------- sample running

def _tolerances(op):
    """dtype name -> (rtol, atol): torch defaults widened by the op's toleranceOverrides
    (for any CPU test) and precisionOverrides."""
    extra = {}
    for d in getattr(op, "decorators", ()) or ():
        if getattr(d, "device_type", None) not in (None, "cpu"):
            continue
        for dec in getattr(d, "decorators", ()) or ():
            table = getattr(dec, "d", None)
            if not isinstance(table, dict):
                continue
            for dt, v in table.items():
                name = _dtype_name(dt)
                r, a = extra.get(name, (0.0, 0.0))
                if hasattr(v, "atol"):
                    extra[name] = (max(r, v.rtol), max(a, v.atol))
                else:
                    extra[name] = (r, max(a, float(v)))

    def tol(name, scale=1.0):
        r, a = DEFAULT_TOL.get(name, (0.0, 0.0))
        er, ea = extra.get(name, (0.0, 0.0))
        return max(r, er) * scale, max(a, ea) * scale
    return tol


def describe(x, depth=0):
    """Short repr of a torch sample argument."""
    torch = sys.modules["torch"]
    if isinstance(x, torch.Tensor):
        s = f"Tensor{list(x.shape)} {_dtype_name(x.dtype)}"
        if x.numel() > 1 and not x.is_contiguous():
            s += f" strides={tuple(x.stride())}"
        if x.numel() <= 4 and x.layout == torch.strided:
            try:
                s += " " + np.array2string(torch_to_numpy(x), precision=4, separator=",")
            except Exception:
                pass
        return s
    if isinstance(x, (tuple, list)) and depth < 3:
        inner = ", ".join(describe(v, depth + 1) for v in list(x)[:6])
        if len(x) > 6:
            inner += ", ..."
        return ("(%s)" if isinstance(x, tuple) else "[%s]") % inner
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k}={describe(v, depth + 1)}" for k, v in x.items()) + "}"
    r = repr(x)
    return r if len(r) < 60 else r[:57] + "..."


def describe_sample(s):
    try:
        parts = [describe(s.input)]
        parts += [describe(a) for a in s.args]
        parts += [f"{k}={describe(v)}" for k, v in s.kwargs.items()]
        return "(" + ", ".join(parts) + ")"
    except Exception:
        return "(" + type(s.input).__name__ + ", ...)"


def _flat_tensors(x, out):
    torch = sys.modules["torch"]
    if isinstance(x, torch.Tensor):
        out.append(x)
    elif isinstance(x, (tuple, list)):
        for v in x:
            _flat_tensors(v, out)
    elif isinstance(x, dict):
        for v in x.values():
            _flat_tensors(v, out)
    return out


def _flat_outputs(x, out):
    if isinstance(x, (tuple, list)):
        for v in x:
            _flat_outputs(v, out)
    else:
        out.append(x)
    return out


def _exc_reason(e, stage):
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    if len(msg) > 200:
        msg = msg[:197] + "..."
    if isinstance(e, NotImplementedError):
        return f"not implemented: {msg}"
    if isinstance(e, Unconvertible):
        return f"harness cannot convert sample: {msg}"
    return f"{stage} raised {type(e).__name__}: {msg}"


@dataclass
class OpResult:
    id: str
    name: str
    namespace: str
    status: str = "missing"            # pass | fail | missing | nosamples
    reason: str = ""
    forward: str | None = None         # pass | fail | None (not run)
    forward_reason: str = ""
    grad: str | None = None            # pass | fail | None (not checked)
    grad_reason: str = ""
    kind: str = ""                     # function | method | lambda
    samples: int = 0
    grad_samples: int = 0
    skipped_samples: int = 0           # torch itself raised on them
    truncated: bool = False            # OP_TIME_BUDGET ran out before all dtypes ran
    dtypes: list = field(default_factory=list)

    def as_dict(self):
        return dict(self.__dict__)


def _cotangent(t, rng):
    """A fixed random cotangent for torch output ``t``: (numpy float64/complex128, torch)."""
    shape = tuple(t.shape)
    if t.is_complex():
        a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    else:
        a = rng.standard_normal(shape)
    a = np.asarray(a)
    return a, sys.modules["torch"].from_numpy(a.copy()).to(t.dtype)


def _random_sample(op, sample):
    """True for samples of ops with a dropout argument that is in effect."""
    param = DROPOUT_ARGS.get(op.name)
    if param is None:
        return False
    import inspect
    torch = sys.modules["torch"]
    fn = torch.nn.functional
    for part in op.name.split(".")[2:]:
        fn = getattr(fn, part)
    try:
        b = inspect.signature(fn).bind(sample.input, *sample.args, **sample.kwargs)
    except (TypeError, ValueError):
        return True
    b.apply_defaults()
    return bool(b.arguments.get(param) or 0) and b.arguments.get("training", True) is not False


def _check_sample(op, target, sample, dtype, tol, grad, random_values, result):
    """Run one sample. Returns None, or raises _SampleFail(stage, reason)."""
    torch = sys.modules["torch"]
    random_values = random_values or _random_sample(op, sample)
    desc = f"{dtype} sample {describe_sample(sample)}"
    # ---- ember inputs first (torch ops in the sample may write into their inputs)
    keep = op.name in STORAGE_OPS
    conv = Converter(grad=grad, keep_storage=keep)
    conv_m = Converter(keep_storage=keep)
    try:
        e_in = conv(sample.input)
        e_args = conv(tuple(sample.args))
        e_kwargs = conv(dict(sample.kwargs))
        m_in = conv_m(sample.input) if target.method else None
        m_args = conv_m(tuple(sample.args)) if target.method else None
        m_kwargs = conv_m(dict(sample.kwargs)) if target.method else None
        alias_in = []
        for label, fn, t_fn in target.aliases:
            ca = Converter(keep_storage=keep)
            alias_in.append((label, fn, t_fn, ca(sample.input), ca(tuple(sample.args)),
                             ca(dict(sample.kwargs))))
    except Unconvertible as e:
        raise _SampleFail("forward", _exc_reason(e, "harness") + f" [{desc}]")
    except Exception as e:
        raise _SampleFail("forward", _exc_reason(e, "ember (converting the sample)") +
                          f" [{desc}]")
    # ---- torch
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if random_values:
                torch.random.default_generator.manual_seed(42)
            t_out = op.op(sample.input, *sample.args, **sample.kwargs)
    except Exception:
        result.skipped_samples += 1
        return
    # ---- ember
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e_out = target.fn(e_in, *e_args, **e_kwargs)
    except Exception as e:
        raise _SampleFail("forward", _exc_reason(e, "ember") + f" [{desc}]")
    hi_cache = []

    def reference_hi():
        """torch's result computed from float64/complex128 inputs (None if it can't be)."""
        if not hi_cache:
            try:
                ints = getattr(torch, dtype) if dtype == "int64" else None
                with warnings.catch_warnings(), torch.no_grad():
                    warnings.simplefilter("ignore")
                    hi = op.op(_upcast(sample.input, ints), *_upcast(tuple(sample.args), ints),
                               **_upcast(dict(sample.kwargs), ints))
                hi_cache.append(hi)
            except Exception:
                hi_cache.append(None)
        return hi_cache[0]

    def check(got, exp, where):
        """compare(); a float32/complex64 value mismatch still passes when ember is about as
        accurate as torch: it matches torch's float64 computation rounded to float32, or its
        error w.r.t. that float64 result is within ACCURACY_FACTOR x torch's own error
        (+ tolerance). Integer samples with float results go in as float64 for that."""
        try:
            compare(got, exp, tol, where, values=not random_values)
        except ValueMismatch:
            if op.name in TIE_OPS and _ties_explain(op, sample, got, exp, check):
                return
            if op.name in EXACT_REFS and _exact_explain(op, sample, got, exp, tol):
                return
            if _has_low_float(exp) and op.name not in NO_UPCAST:
                ref = reference_hi()
                if ref is not None:
                    try:
                        compare(got, _downcast_like(ref, exp), tol, where)
                        return
                    except Exception:
                        pass
                    if _as_accurate(got, exp, ref, tol):
                        return
            raise

    def check_output(got, where):
        """check() against torch's output; on a mismatch, a match after the sample's
        ``output_process_fn_grad`` (gauge-fixing for svd/eig, to_dense...) is accepted."""
        try:
            check(got, t_out, where)
        except Mismatch:
            proc = sample.output_process_fn_grad
            if not random_values and proc is not None:
                try:
                    pt = proc(t_out)
                    if pt is not t_out:
                        compare(transplant(proc)(got), pt, tol, where, values=True)
                        return
                except Exception:
                    pass
            raise

    try:
        check_output(e_out, "output")
    except Mismatch as m:
        raise _SampleFail("forward", f"{m} [{desc}]")
    except Exception as e:               # ember returned something odd
        raise _SampleFail("forward", _exc_reason(e, "comparing ember output") + f" [{desc}]")
    # ---- the inputs afterwards (unchanged, or changed like torch's by inplace=True ops)
    if not random_values:
        for i, (t, e) in enumerate(list(conv.memo.values())):
            try:
                compare(e, t, tol, f"input tensor {i} after the call")
            except Mismatch as m:
                raise _SampleFail("forward", f"{m} [{desc}]")
            except Exception:
                pass
    # ---- method variant
    if target.method and target.kind != "method" and isinstance(m_in, ember.Tensor):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m_out = getattr(m_in, target.method)(*m_args, **m_kwargs)
            check_output(m_out, "Tensor." + target.method)
        except Mismatch as m:
            raise _SampleFail("forward", f"method variant: {m} [{desc}]")
        except Exception as e:
            raise _SampleFail("forward", "method variant: " + _exc_reason(e, "ember") +
                              f" [{desc}]")
    # ---- aliases (torch.swapaxes for transpose, torch.special.expit for sigmoid...)
    for label, fn, t_fn, a_in, a_args, a_kwargs in alias_in:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                a_out = fn(a_in, *a_args, **a_kwargs)
            check_output(a_out, label)
        except Mismatch as m:
            raise _SampleFail("forward", f"alias {m} [{desc}]")
        except Exception as e:
            try:                             # an alias may accept fewer dtypes than its op
                with warnings.catch_warnings(), torch.no_grad():
                    warnings.simplefilter("ignore")
                    t_fn(_detached(sample.input), *_detached(tuple(sample.args)),
                         **_detached(dict(sample.kwargs)))
            except Exception:
                continue
            raise _SampleFail("forward", f"alias {label}: " + _exc_reason(e, "ember") +
                              f" [{desc}]")
    # ---- in-place variant (on a detached copy of the input; samples torch rejects skipped)
    if target.inplace and not random_values and isinstance(sample.input, torch.Tensor):
        t_x = sample.input.detach().clone()
        conv_i = Converter(keep_storage=keep)
        try:
            e_x = conv_i(t_x)
            i_args, i_kwargs = conv_i(tuple(sample.args)), conv_i(dict(sample.kwargs))
        except Exception:
            e_x = None
        try:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                op.inplace_variant(t_x, *sample.args, **sample.kwargs)
        except Exception:
            e_x = None
        if e_x is not None:
            where = "Tensor." + target.inplace
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    e_r = getattr(e_x, target.inplace)(*i_args, **i_kwargs)
                if e_r is not e_x:
                    raise Mismatch(f"{where} did not return self")
                check(e_x, t_x, where + " (self after)")
            except Mismatch as m:
                raise _SampleFail("forward", f"in-place variant: {m} [{desc}]")
            except Exception as e:
                raise _SampleFail("forward", "in-place variant: " + _exc_reason(e, "ember") +
                                  f" [{desc}]")
    # ---- gradients
    if not grad or random_values:
        return
    t_leaves = [t for t in _flat_tensors((sample.input, sample.args, sample.kwargs), [])
                if t.requires_grad]
    if not t_leaves:
        return
    default_wrapper = type(op).__dataclass_fields__["gradcheck_wrapper"].default \
        if hasattr(type(op), "__dataclass_fields__") else None
    wrapper = op.gradcheck_wrapper
    proc = sample.output_process_fn_grad
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if wrapper is default_wrapper:
                tg_out = t_out
            else:
                tg_out = wrapper(op.op, sample.input, *sample.args, **sample.kwargs)
            tg_out = proc(tg_out) if proc is not None else tg_out
            t_flat = [o for o in _flat_outputs(tg_out, [])
                      if isinstance(o, torch.Tensor) and o.requires_grad]
            if not t_flat:
                return
            rng = np.random.default_rng(1234)
            cots = [_cotangent(o, rng) for o in _flat_outputs(tg_out, [])
                    if isinstance(o, torch.Tensor)]
            tgrads = torch.autograd.grad(
                [o for o in _flat_outputs(tg_out, []) if isinstance(o, torch.Tensor)
                 and o.requires_grad],
                [t for t in t_leaves],
                [c[1] for o, c in zip([o for o in _flat_outputs(tg_out, [])
                                       if isinstance(o, torch.Tensor)], cots) if o.requires_grad],
                allow_unused=True)
    except Exception:                    # torch cannot differentiate this sample
        return
    result.grad_samples += 1
    e_leaves = [conv.memo[id(t)][1] for t in t_leaves]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if wrapper is default_wrapper:
                eg_out = e_out
            else:
                eg_out = transplant(wrapper)(target.fn, e_in, *e_args, **e_kwargs)
            eg_out = transplant(proc)(eg_out) if proc is not None else eg_out
            t_all = [o for o in _flat_outputs(tg_out, []) if isinstance(o, torch.Tensor)]
            e_all = _flat_outputs(eg_out, [])
            if len(e_all) != len(_flat_outputs(tg_out, [])):
                raise Mismatch(f"grad: {len(e_all)} outputs != expected "
                               f"{len(_flat_outputs(tg_out, []))}")
            e_all = [e for e, t in zip(e_all, _flat_outputs(tg_out, []))
                     if isinstance(t, torch.Tensor)]
            e_outs, e_cots = [], []
            for i, (eo, to, c) in enumerate(zip(e_all, t_all, cots)):
                if not to.requires_grad:
                    continue
                if not isinstance(eo, ember.Tensor) or not eo.requires_grad:
                    raise Mismatch(f"grad: output {i} does not require grad in ember")
                e_outs.append(eo)
                e_cots.append(ember.from_numpy(c[0].copy()).to(
                    getattr(ember, _dtype_name(to.dtype))))
            egrads = ember.autograd.grad(e_outs, e_leaves, e_cots, allow_unused=True)
        for i, (eg, tg, tl) in enumerate(zip(egrads, tgrads, t_leaves)):
            where = f"grad of input {i}"
            if tg is None:
                if eg is not None and np.any(ember_to_numpy(eg) != 0):
                    raise Mismatch(f"{where}: torch's is None (unused), ember's is nonzero")
                continue
            if eg is None:
                if np.any(torch_to_numpy(tg) != 0):
                    raise Mismatch(f"{where}: ember returned None, expected nonzero gradient")
                continue
            compare(eg, tg, lambda n: tol(n, GRAD_TOL_SCALE), where)
    except Mismatch as m:
        raise _SampleFail("grad", f"{m} [{desc}]")
    except Exception as e:
        raise _SampleFail("grad", _exc_reason(e, "ember backward") + f" [{desc}]")


def _ties_explain(op, sample, got, exp, check):
    """True when ``got`` differs from ``exp`` only in which of several equal elements its
    index output points at (``sort``/``topk``/``mode``... with ties; not ``stable=True``)."""
    torch = sys.modules["torch"]
    if sample.kwargs.get("stable") or not isinstance(sample.input, torch.Tensor):
        return False
    pos, dim, reduces = TIE_OPS[op.name]
    args = list(sample.args)
    if op.name in ("argsort", "sort") and args and isinstance(args[0], bool):
        args = []                                        # sort(input, stable, ...)
    if "dim" in sample.kwargs:
        dim = sample.kwargs["dim"]
    elif pos is not None and len(args) > pos and isinstance(args[pos], int) \
            and not isinstance(args[pos], bool):
        dim = args[pos]
    if dim is None:
        return False
    keepdim = sample.kwargs.get("keepdim", False)
    if reduces and pos is not None and len(args) > pos + 1 and isinstance(args[pos + 1], bool):
        keepdim = args[pos + 1]
    if isinstance(exp, torch.Tensor):                   # argsort
        e_idx, t_idx = got, exp
    elif isinstance(exp, (tuple, list)) and len(exp) == 2 and isinstance(got, (tuple, list)) \
            and len(got) == 2:
        try:
            check(got[0], exp[0], "values")
        except Exception:
            return False
        e_idx, t_idx = got[1], exp[1]
    else:
        return False
    if not isinstance(e_idx, ember.Tensor) or tuple(e_idx.shape) != tuple(t_idx.shape):
        return False
    x = torch_to_numpy(sample.input)
    ei, ti = ember_to_numpy(e_idx).astype(np.int64), torch_to_numpy(t_idx).astype(np.int64)
    if x.ndim == 0:
        return bool(np.all(ei == 0))
    d = dim % x.ndim
    if reduces and not keepdim:
        ei, ti = np.expand_dims(ei, d), np.expand_dims(ti, d)
    try:
        a = np.take_along_axis(x, ei, axis=d)
        b = np.take_along_axis(x, ti, axis=d)
    except Exception:
        return False
    if not reduces and op.name not in ("cummax", "cummin") and ei.shape[d] > 1 and \
            np.any(np.diff(np.sort(ei, axis=d), axis=d) == 0):
        return False                                      # sort/topk: indices must be distinct
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def _exact_explain(op, sample, got, exp, tol):
    """Every element where ember and torch disagree: ember matches mpmath's value."""
    torch = sys.modules["torch"]
    try:
        import mpmath
    except ImportError:
        return False
    if not isinstance(exp, torch.Tensor) or not isinstance(sample.input, torch.Tensor) \
            or sample.args or sample.kwargs or exp.dtype != torch.float64:
        return False
    x, g, e = torch_to_numpy(sample.input), ember_to_numpy(got), torch_to_numpy(exp)
    if x.shape != e.shape or g.shape != e.shape:
        return False
    fname, order = EXACT_REFS[op.name]
    rtol, atol = tol("float64")
    with np.errstate(all="ignore"):
        bad = np.argwhere(~np.isclose(g, e, rtol=rtol, atol=atol, equal_nan=True))
    if len(bad) > 200:
        return False
    with mpmath.workdps(30):
        for idx in map(tuple, bad):
            ref = float(getattr(mpmath, fname)(order, float(x[idx])))
            if not abs(float(g[idx]) - ref) <= atol + rtol * abs(ref):
                return False
    return True


def map_tensors(fn, x):
    """``x`` with each torch tensor replaced by ``fn(tensor)``: plain tuples (not named
    ones), lists and dicts are walked; anything else stays as it is."""
    torch = sys.modules["torch"]
    if isinstance(x, torch.Tensor):
        return fn(x)
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        return tuple(map_tensors(fn, v) for v in x)
    if isinstance(x, list):
        return [map_tensors(fn, v) for v in x]
    if isinstance(x, dict):
        return {k: map_tensors(fn, v) for k, v in x.items()}
    return x


def _detached(x):
    return map_tensors(lambda t: t.detach().clone(), x)


def _as_accurate(got, exp, ref, tol):
    """Every low-precision float output of ember is within ACCURACY_FACTOR x torch's error
    (plus the dtype tolerance) of the float64 reference ``ref``; other outputs equal."""
    torch = sys.modules["torch"]
    g_all, e_all, r_all = _flat_outputs(got, []), _flat_outputs(exp, []), _flat_outputs(ref, [])
    if not (len(g_all) == len(e_all) == len(r_all)):
        return False
    for g, e, r in zip(g_all, e_all, r_all):
        if not isinstance(e, torch.Tensor):
            continue
        if not _has_low_float(e):
            try:
                compare(g, e, tol)
            except Exception:
                return False
            continue
        if not isinstance(r, torch.Tensor) or tuple(r.shape) != tuple(e.shape):
            return False
        gv, ev, rv = ember_to_numpy(g), torch_to_numpy(e), torch_to_numpy(r)
        kind = np.complex128 if "c" in (gv.dtype.kind, ev.dtype.kind, rv.dtype.kind) \
            else np.float64
        gv, ev, rv = gv.astype(kind), ev.astype(kind), rv.astype(kind)
        rtol, atol = tol(_dtype_name(e.dtype))
        with np.errstate(all="ignore"):
            ok = np.abs(gv - rv) <= atol + rtol * np.abs(rv) + ACCURACY_FACTOR * np.abs(ev - rv)
            ok |= (gv == rv) | (np.isnan(gv) & np.isnan(ev))
            if ok.all():
                continue
            # matrix functions spread their error: compare the largest errors instead
            fin = np.isfinite(rv) & np.isfinite(gv) & np.isfinite(ev)
            if not (fin | ok).all() or not fin.any():
                return False
            g_err, t_err = np.abs(gv - rv)[fin].max(), np.abs(ev - rv)[fin].max()
            if not g_err <= atol + rtol * np.abs(rv)[fin].max() + ACCURACY_FACTOR * t_err:
                return False
    return True


def _has_low_float(x):
    torch = sys.modules["torch"]
    if isinstance(x, torch.Tensor):
        return x.dtype in (torch.float32, torch.complex64, torch.float16, torch.bfloat16,
                           torch.complex32)
    if isinstance(x, (tuple, list)):
        return any(_has_low_float(v) for v in x)
    return False


def _upcast(x, ints=None):
    """Floating tensors (and tensors of dtype ``ints``) -> float64 / complex128."""
    torch = sys.modules["torch"]
    ups = {torch.float32: torch.float64, torch.complex64: torch.complex128,
           torch.float16: torch.float64, torch.bfloat16: torch.float64,
           torch.complex32: torch.complex128}

    def up(t):
        dt = ups.get(t.dtype)
        if dt is None and ints is not None and t.dtype == ints:
            dt = torch.float64
        return t.detach().to(dt) if dt is not None else t.detach()
    return map_tensors(up, x)


def _downcast_like(hi, lo):
    torch = sys.modules["torch"]
    if isinstance(hi, torch.Tensor) and isinstance(lo, torch.Tensor):
        return hi.to(lo.dtype) if hi.dtype != lo.dtype else hi
    if isinstance(hi, (tuple, list)) and isinstance(lo, (tuple, list)) and len(hi) == len(lo):
        return type(lo)(_downcast_like(h, l) for h, l in zip(hi, lo)) \
            if not hasattr(lo, "_fields") else type(lo)(*(_downcast_like(h, l)
                                                         for h, l in zip(hi, lo)))
    return hi


class _SampleFail(Exception):
    def __init__(self, stage, reason):
        super().__init__(reason)
        self.stage = stage
        self.reason = reason


SAMPLE_SEED = 1234                      # torch's common_utils.SEED


def _samples(op, dtype, requires_grad, n):
    """The first ``n`` of ``op.sample_inputs('cpu', dtype)``, generated like torch's tracked
    iterator does (every RNG seeded before each sample) but without its per-sample
    ``inspect.stack()`` and without ``torch.manual_seed``'s CUDA bookkeeping; the global
    ``random`` / ``np.random`` states are restored afterwards."""
    import torch
    py_state, np_state = random.getstate(), np.random.get_state()
    out = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.random.default_generator.manual_seed(SAMPLE_SEED)
            it = iter(op.sample_inputs_func(op, "cpu", dtype, requires_grad))
            while len(out) < n:
                torch.random.default_generator.manual_seed(SAMPLE_SEED)
                random.seed(SAMPLE_SEED)
                np.random.seed(SAMPLE_SEED)
                try:
                    out.append(next(it))
                except StopIteration:
                    break
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
    return out


def check_op(op, max_samples=None, dtypes=None, time_budget=None, strict=None):
    """Run one OpInfo against ember; returns an OpResult. Unset limits are the default
    run's, or the strict run's when ``strict`` (default: ``STRICT``)."""
    import torch
    strict = STRICT if strict is None else strict
    limits = strict_settings() if strict else (MAX_SAMPLES, DTYPES, OP_TIME_BUDGET)
    max_samples = limits[0] if max_samples is None else max_samples
    dtypes = limits[1] if dtypes is None else dtypes
    time_budget = limits[2] if time_budget is None else time_budget
    res = OpResult(op_id(op), op.name, namespace(op.name))
    target = resolve(op)
    if target is None:
        res.status = "missing"
        res.reason = "ember lacks " + ("ember." + op.name if _method_name(op) is None
                                       else f"ember.{op.name} / Tensor.{_method_name(op)}")
        return res
    res.kind = target.kind
    supported = {_dtype_name(d) for d in op.supported_dtypes("cpu")}
    try:
        bwd = {_dtype_name(d) for d in op.supported_backward_dtypes("cpu")} \
            if op.supports_autograd else set()
    except Exception:
        bwd = set()
    random_values = op.name in NONDETERMINISTIC
    tol = _tolerances(op)
    fwd_fail = grad_fail = None
    grad_checked = False
    t0 = time.monotonic()
    for dt in dtypes:
        if time.monotonic() - t0 > time_budget:
            res.truncated = True
            break
        if dt not in supported:
            continue
        res.dtypes.append(dt)
        grad = dt == GRAD_DTYPE and dt in bwd and not random_values
        try:
            samples = _samples(op, getattr(torch, dt), grad, max_samples)
        except Exception:
            continue
        for sample in samples:
            if time.monotonic() - t0 > time_budget:
                res.truncated = True
                break
            before = res.grad_samples
            try:
                _check_sample(op, target, sample, dt, tol, grad and grad_fail is None,
                              random_values, res)
                res.samples += 1
            except _SampleFail as f:
                res.samples += 1
                if f.stage == "forward" and fwd_fail is None:
                    fwd_fail = f.reason
                elif f.stage == "grad" and grad_fail is None:
                    grad_fail = f.reason
            if res.grad_samples > before:
                grad_checked = True
            if fwd_fail is not None and (grad_fail is not None or not grad):
                break
        if fwd_fail is not None and grad_fail is not None:
            break
    ran = res.samples - res.skipped_samples
    if ran <= 0:
        res.status = "nosamples"
        res.reason = "no sample ran (torch produced none for the tested dtypes)"
        return res
    res.forward = "fail" if fwd_fail else "pass"
    res.forward_reason = fwd_fail or ""
    if grad_checked or grad_fail:
        res.grad = "fail" if grad_fail else "pass"
        res.grad_reason = grad_fail or ""
    if fwd_fail or grad_fail:
        res.status = "fail"
        res.reason = fwd_fail or ("grad: " + grad_fail)
    else:
        res.status = "pass"
    return res


def check_ops(ops=None, progress=None):
    """``check_op`` over ``ops`` (default: the whole op database)."""
    ops = all_ops() if ops is None else ops
    out = []
    for op in ops:
        r = check_op(op)
        out.append(r)
        if progress:
            progress(r)
    return out


def implemented_ops():
    """The OpInfos whose name resolves in ember (decided now; ember's op set grows)."""
    return [op for op in all_ops() if resolve(op) is not None]
