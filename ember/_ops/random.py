"""Random op records and their fronts: ``rand``, ``randn``, ``randint``, ``randperm``,
``normal`` (4 overloads), ``bernoulli``, ``multinomial``, ``poisson``, ``binomial``,
``_standard_gamma`` (+ ``_standard_gamma_grad``), ``_sample_dirichlet``, the ``*_like``
variants and the in-place samplers (``uniform_``, ``normal_``, ``bernoulli_``, ``random_``,
``exponential_``, ``geometric_``, ``log_normal_``, ``cauchy_``).

Every record takes a ``Generator? generator`` (``None``: the default generator); kernels
live in ``ember/_kernels/random.py``. Gradients: sampling is not differentiable with respect
to the distribution's parameters in torch (``normal``, ``bernoulli``, ``poisson`` and the
in-place samplers give zero gradients), and ember does the same.
"""
from __future__ import annotations

import operator

from ember import _dtype
from ember._device import to_device
from ember._kernels import random as K
from ember._kernels.random_serial import dirichlet_grad as _dirichlet_grad_kernel
from ember._ops.factory import (var_size, seq_size, resolve_dtype, finish, _make, _size_kw,
                                _tname, check_input)
from ember._ops.parser_errors import factory_keywords
from ember._ops.registry import OpDef, defop, public, register
from ember._tensor import Tensor

_GEN = "Generator? generator=None"
_LIKE = f", *, {_GEN}, ScalarType? dtype=None, MemoryFormat? memory_format=None) -> Tensor"

# ------------------------------------------------------------------------------ records

rand_op = OpDef(f"rand(SymInt[] size, *, {_GEN}, ScalarType dtype) -> Tensor", K.rand,
                promote=None, differentiable=False)
randn_op = OpDef(f"randn(SymInt[] size, *, {_GEN}, ScalarType dtype) -> Tensor", K.randn,
                 promote=None, differentiable=False)
randint_op = OpDef(f"randint.low(SymInt low, SymInt high, SymInt[] size, *, {_GEN}, "
                   f"ScalarType dtype) -> Tensor", K.randint, promote=None, differentiable=False)
randperm_op = OpDef(f"randperm(SymInt n, *, {_GEN}, ScalarType dtype) -> Tensor", K.randperm,
                    promote=None, differentiable=False)
rand_like_op = OpDef("rand_like(Tensor self" + _LIKE, K.rand_like, promote=None,
                     differentiable=False)
randn_like_op = OpDef("randn_like(Tensor self" + _LIKE, K.randn_like, promote=None,
                      differentiable=False)
randint_like_op = OpDef("randint_like.low_dtype(Tensor self, SymInt low, SymInt high" + _LIKE,
                        K.randint_like, promote=None, differentiable=False)

normal_tt = OpDef(f"normal.Tensor_Tensor(Tensor mean, Tensor std, *, {_GEN}) -> Tensor",
                  K.normal_tensor_tensor, grad_name="NormalBackward3")
normal_tf = OpDef(f"normal.Tensor_float(Tensor mean, float std=1, *, {_GEN}) -> Tensor",
                  K.normal_tensor_float, promote=None, grad_name="NormalBackward1")
normal_ft = OpDef(f"normal.float_Tensor(float mean, Tensor std, *, {_GEN}) -> Tensor",
                  K.normal_float_tensor, promote=None, grad_name="NormalBackward2")
normal_ff = OpDef(f"normal.float_float(float mean, float std, SymInt[] size, *, {_GEN}, "
                  f"ScalarType dtype) -> Tensor", K.normal_float_float, promote=None,
                  differentiable=False)

bernoulli_op = OpDef(f"bernoulli(Tensor self, *, {_GEN}) -> Tensor", K.bernoulli, promote=None,
                     grad_name="BernoulliBackward0")
bernoulli_p = OpDef(f"bernoulli.p(Tensor self, float p=0.5, *, {_GEN}) -> Tensor",
                    K.bernoulli_p, promote=None, grad_name="BernoulliBackward2")
bernoulli_t = OpDef(f"bernoulli.Tensor(Tensor self, Tensor p, *, {_GEN}) -> Tensor",
                    K.bernoulli_tensor, promote=None, grad_name="BernoulliBackward1")
bernoulli_p_ = bernoulli_p.make_inplace()
bernoulli_t_ = bernoulli_t.make_inplace()

multinomial = defop(f"multinomial(Tensor self, SymInt num_samples, bool replacement=False, *, "
                    f"{_GEN}) -> Tensor", K.multinomial, promote=None, differentiable=False)
poisson = defop("poisson(Tensor self, Generator? generator=None) -> Tensor", K.poisson,
                promote=None, method=False)
binomial = defop("binomial(Tensor count, Tensor prob, Generator? generator=None) -> Tensor",
                 K.binomial, promote=None, method=False, out=False)
standard_gamma = defop("_standard_gamma(Tensor self, Generator? generator=None) -> Tensor",
                       K.standard_gamma, promote=None, method=False, saves=("self", "result"))
standard_gamma_grad = defop("_standard_gamma_grad(Tensor self, Tensor output) -> Tensor",
                            K.standard_gamma_grad, promote=None, method=False,
                            differentiable=False)


@standard_gamma.def_backward
def _standard_gamma_backward(ctx, g, alpha, generator=None):
    # torch's derivative: grad * _standard_gamma_grad(self, result)
    return (g * standard_gamma_grad(alpha, ctx.result),) + (None,) * (1 if generator else 0)


sample_dirichlet = defop("_sample_dirichlet(Tensor self, Generator? generator=None) -> Tensor",
                         K.sample_dirichlet, promote=None, method=False,
                         saves=("self", "result"), grad_name="_DirichletBackward")
dirichlet_grad = defop("_dirichlet_grad(Tensor x, Tensor alpha, Tensor total) -> Tensor",
                       _dirichlet_grad_kernel, promote=None, method=False, out=False,
                       differentiable=False)


@sample_dirichlet.def_backward
def _sample_dirichlet_backward(ctx, g, alpha, generator=None):
    # torch's rule (Note [dirichlet grad] in ember/_kernels/random_serial.py): the gamma
    # draws' pathwise derivative, d x_j / d alpha_i = x_i' (delta_ij - x_j) with
    # x_i' = _dirichlet_grad(x_i, alpha_i, total)
    x = ctx.result
    total = alpha.sum(-1, keepdim=True).expand_as(alpha)
    grad = dirichlet_grad(x, alpha, total) * (g - (x * g).sum(-1, keepdim=True))
    return (grad,) + (None,) * (1 if generator else 0)


# functional forms of the in-place samplers; the public fronts are the ``*_`` methods
uniform = OpDef(f"uniform(Tensor self, float from=0, float to=1, *, {_GEN}) -> Tensor",
                K.uniform, promote=None)
normal_functional = OpDef(f"normal_functional(Tensor self, float mean=0, float std=1, *, "
                          f"{_GEN}) -> Tensor", K.normal_, promote=None,
                          grad_name="NormalBackward0")
random_from = OpDef(f"random.from(Tensor self, SymInt from, SymInt? to, *, {_GEN}) -> Tensor",
                    K.random_from, promote=None, grad_name="RandomBackward0")
random_to = OpDef(f"random.to(Tensor self, SymInt to, *, {_GEN}) -> Tensor", K.random_to,
                  promote=None, grad_name="RandomBackward1")
random_full = OpDef(f"random(Tensor self, *, {_GEN}) -> Tensor", K.random, promote=None,
                    grad_name="RandomBackward2")
exponential = OpDef(f"exponential(Tensor self, float lambd=1, *, {_GEN}) -> Tensor",
                    K.exponential, promote=None)
geometric = OpDef(f"geometric(Tensor self, float p, *, {_GEN}) -> Tensor", K.geometric,
                  promote=None)
log_normal = OpDef(f"log_normal(Tensor self, float mean=1, float std=2, *, {_GEN}) -> Tensor",
                   K.log_normal, promote=None)
cauchy = OpDef(f"cauchy(Tensor self, float median=0, float sigma=1, *, {_GEN}) -> Tensor",
               K.cauchy, promote=None)

uniform_ = uniform.make_inplace()
normal_ = normal_functional.make_inplace("normal_")
random_from_ = random_from.make_inplace()
random_to_ = random_to.make_inplace()
random_full_ = random_full.make_inplace()
for _op in (exponential, geometric, log_normal, cauchy):
    register(_op, function=False, method=False, inplace=True)


def _zero_grads(*tensor_positions):
    """Backward of a sampler: zero gradient for its tensor arguments (torch's rule)."""
    def backward(ctx, g, *args):
        out = [None] * len(args)
        for i in tensor_positions:
            if ctx.needs_input_grad[i]:
                out[i] = g * 0
        return tuple(out)
    return backward


for _op, _pos in ((normal_tt, (0, 1)), (normal_tf, (0,)), (normal_ft, (1,)),
                  (bernoulli_op, (0,)), (bernoulli_p, (0,)), (bernoulli_t, (0, 1)),
                  (poisson, (0,)), (binomial, (0, 1)), (uniform, (0,)), (normal_functional, (0,)),
                  (random_from, (0,)), (random_to, (0,)), (random_full, (0,)),
                  (exponential, (0,)), (geometric, (0,)), (log_normal, (0,)), (cauchy, (0,))):
    _op.def_backward(_zero_grads(*_pos))


# ------------------------------------------------------------------------------ helpers

def _generator(generator, fname):
    if generator is None:
        return None
    if not hasattr(generator, "_engine"):
        raise TypeError(f"{fname}(): argument 'generator' must be torch.Generator, not "
                        f"{_tname(generator)}")
    return generator


def _tensorish(x):
    """A tensor, or a tensor-like taking part in ``__torch_function__``."""
    return isinstance(x, Tensor) or hasattr(type(x), "__torch_function__")


def _int(x):
    if isinstance(x, bool):
        raise TypeError
    if isinstance(x, Tensor):
        if x.ndim == 0 and x.dtype.is_integer:
            return int(x.item())
        raise TypeError
    return operator.index(x)


_RANDINT_SIGS = (" * (int high, tuple of ints size, *, torch.Generator generator, Tensor out = "
                 "None, torch.dtype dtype = None, torch.layout layout = None, torch.device device "
                 "= None, bool pin_memory = False, bool requires_grad = False)\n"
                 " * (int low, int high, tuple of ints size, *, torch.Generator generator, Tensor "
                 "out = None, torch.dtype dtype = None, torch.layout layout = None, torch.device "
                 "device = None, bool pin_memory = False, bool requires_grad = False)\n")


def _bad_combination(fname, args, sigs):
    got = ", ".join(_tname(a) for a in args)
    raise TypeError(f"{fname}() received an invalid combination of arguments - got ({got}), but "
                    f"expected one of:\n{sigs}")


# ------------------------------------------------------------------------------ fronts

@public()
def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None,
         pin_memory=False, requires_grad=False, **kw):
    """Uniform samples in [0, 1) (default float dtype)."""
    to_device(device)
    if kw:
        factory_keywords("rand", kw, ("size",))
    shape = var_size(size, "rand", _size_kw(kw, "rand"))
    d = resolve_dtype(dtype, out, fname="rand")
    return _make(rand_op, (shape,), {"generator": _generator(generator, "rand"), "dtype": d},
                 out, requires_grad)


@public()
def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None,
          pin_memory=False, requires_grad=False, **kw):
    """Standard normal samples (default float dtype)."""
    to_device(device)
    if kw:
        factory_keywords("randn", kw, ("size",))
    shape = var_size(size, "randn", _size_kw(kw, "randn"))
    d = resolve_dtype(dtype, out, fname="randn")
    return _make(randn_op, (shape,), {"generator": _generator(generator, "randn"), "dtype": d},
                 out, requires_grad)


@public()
def randint(*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
            pin_memory=False, requires_grad=False, low=None, high=None, **_kw):
    """Integers uniform in [low, high): ``randint(high, size)`` or ``randint(low, high, size)``
    (int64 unless ``dtype`` is given)."""
    if _kw:
        factory_keywords("randint", _kw)
    to_device(device)
    pos = list(args)
    try:
        if size is None:
            if not pos:
                raise TypeError
            size = pos.pop()
        if high is None:
            if not pos:
                raise TypeError
            high = pos.pop()
        if low is None:
            low = pos.pop() if pos else 0
        if pos:
            raise TypeError
        lo, hi = _int(low), _int(high)
        if not isinstance(size, (tuple, list)):
            raise TypeError
    except (TypeError, IndexError):
        _bad_combination("randint", args, _RANDINT_SIGS)
    shape = seq_size(size, "randint")
    d = resolve_dtype(dtype, out, lambda: _dtype.int64, fname="randint")
    if d.is_complex:
        raise RuntimeError("check_random_bounds handles only integral, floating-point and "
                           "boolean types")
    return _make(randint_op, (lo, hi, shape), {"generator": _generator(generator, "randint"),
                                               "dtype": d}, out, requires_grad)


@public()
def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None,
             pin_memory=False, requires_grad=False):
    """A random permutation of ``0 .. n-1`` (int64 unless ``dtype`` is given)."""
    to_device(device)
    try:
        n = _int(n)
    except TypeError:
        raise TypeError(f"randperm(): argument 'n' (position 1) must be int, not "
                        f"{_tname(n)}") from None
    d = resolve_dtype(dtype, out, lambda: _dtype.int64, fname="randperm")
    return _make(randperm_op, (n,), {"generator": _generator(generator, "randperm"), "dtype": d},
                 out, requires_grad)


_NORMAL_SIGS = (" * (Tensor mean, Tensor std, *, torch.Generator generator = None, Tensor out = "
                "None)\n * (Tensor mean, float std = 1, *, torch.Generator generator = None, "
                "Tensor out = None)\n * (float mean, Tensor std, *, torch.Generator generator = "
                "None, Tensor out = None)\n * (float mean, float std, tuple of ints size, *, "
                "torch.Generator generator = None, Tensor out = None, torch.dtype dtype = None, "
                "torch.layout layout = None, torch.device device = None, bool pin_memory = False, "
                "bool requires_grad = False)\n")


@public()
def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, pin_memory=False, requires_grad=False):
    """Normal samples: ``normal(mean, std)`` with tensor and/or float arguments, or
    ``normal(mean, std, size)`` with floats."""
    g = _generator(generator, "normal")
    tm, ts = _tensorish(mean), _tensorish(std)
    if tm and ts:
        return _make(normal_tt, (mean, std), {"generator": g}, out, requires_grad)
    if tm:
        return _make(normal_tf, (mean, float(std)), {"generator": g}, out, requires_grad)
    if ts:
        return _make(normal_ft, (float(mean), std), {"generator": g}, out, requires_grad)
    if size is None:
        _bad_combination("normal", (mean, std), _NORMAL_SIGS)
    to_device(device)
    shape = seq_size(size, "normal", 3)
    return _make(normal_ff, (float(mean), float(std), shape),
                 {"generator": g, "dtype": resolve_dtype(dtype, out, fname="normal")}, out,
                 requires_grad)


@public(method=True)
def bernoulli(input, p=None, *, generator=None, out=None):
    """Samples 1 with probability ``p`` (default: the values of ``input``), else 0; the
    result has ``input``'s dtype."""
    g = _generator(generator, "bernoulli")
    if p is None:
        r = bernoulli_op(input, generator=g) if out is None else \
            bernoulli_op(input, generator=g, out=out)
    elif _tensorish(p):
        r = bernoulli_t(input, p, generator=g) if out is None else \
            bernoulli_t(input, p, generator=g, out=out)
    else:
        r = bernoulli_p(input, float(p), generator=g) if out is None else \
            bernoulli_p(input, float(p), generator=g, out=out)
    return r


@public("bernoulli_", method=True, function=False)
def bernoulli_inplace(self, p=0.5, *, generator=None):
    """Fill with 1 with probability ``p`` (a float or a tensor broadcastable to ``self``)."""
    g = _generator(generator, "bernoulli_")
    if _tensorish(p):
        return bernoulli_t_(self, p, generator=g)
    return bernoulli_p_(self, float(p), generator=g)


def _like_front(op, name, with_bounds=False):
    if with_bounds:
        def front(input, *args, generator=None, dtype=None, layout=None, device=None,
                  requires_grad=False, memory_format=None, low=None, high=None):
            check_input(input, name)
            to_device(device)
            pos = list(args)
            try:
                if high is None:
                    high = pos.pop()
                if low is None:
                    low = pos.pop() if pos else 0
                if pos:
                    raise TypeError
                lo, hi = _int(low), _int(high)
            except (TypeError, IndexError):
                _bad_combination(name, (input,) + args,
                                 " * (Tensor input, int high, *, ...)\n"
                                 " * (Tensor input, int low, int high, *, ...)\n")
            d = None if dtype is None else _dtype.dtype_argument(dtype, name)
            return finish(op(input, lo, hi, generator=_generator(generator, name), dtype=d,
                             memory_format=memory_format), requires_grad)
    else:
        def front(input, *, generator=None, dtype=None, layout=None, device=None,
                  requires_grad=False, memory_format=None):
            check_input(input, name)
            to_device(device)
            d = None if dtype is None else _dtype.dtype_argument(dtype, name)
            return finish(op(input, generator=_generator(generator, name), dtype=d,
                             memory_format=memory_format), requires_grad)
    front.__name__ = front.__qualname__ = name
    front.__doc__ = f"Random values shaped like ``input`` (the ``{op.name}`` record)."
    return public(name)(front)


rand_like = _like_front(rand_like_op, "rand_like")
randn_like = _like_front(randn_like_op, "randn_like")
randint_like = _like_front(randint_like_op, "randint_like", with_bounds=True)


def _bind(fname, args, kwargs, names, defaults):
    """Bind ``args``/``kwargs`` to ``names`` (``from`` is a keyword torch accepts)."""
    vals = list(defaults)
    if len(args) > len(names):
        raise TypeError(f"{fname}() takes at most {len(names)} positional arguments but "
                        f"{len(args)} were given")
    for i, a in enumerate(args):
        vals[i] = a
    for k, v in kwargs.items():
        k2 = k.rstrip("_")
        if k2 not in names:
            raise TypeError(f"{fname}() got an unexpected keyword argument '{k}'")
        vals[names.index(k2)] = v
    return vals


@public("uniform_", method=True, function=False)
def uniform_inplace(self, *args, generator=None, **kwargs):
    """``uniform_(from=0, to=1, *, generator=None)``: fill with samples from U[from, to)."""
    lo, hi = _bind("uniform_", args, kwargs, ("from", "to"), (0.0, 1.0))
    return uniform_(self, float(lo), float(hi), generator=_generator(generator, "uniform_"))


@public("normal_", method=True, function=False)
def normal_inplace(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with samples from N(mean, std**2)."""
    return normal_(self, float(mean), float(std), generator=_generator(generator, "normal_"))


@public("random_", method=True, function=False)
def random_inplace(self, *args, generator=None, **kwargs):
    """``random_(from=0, to=None, *, generator=None)``: integers in [from, to); with one
    argument ``random_(to)``; without arguments the full range of the dtype."""
    g = _generator(generator, "random_")
    if not args and not kwargs:
        return random_full_(self, generator=g)
    if len(args) == 1 and not kwargs:
        return random_to_(self, _int(args[0]), generator=g)
    lo, hi = _bind("random_", args, kwargs, ("from", "to"), (0, None))
    return random_from_(self, _int(lo), None if hi is None else _int(hi), generator=g)
