"""torch.utils.benchmark's Fuzzer: random benchmark inputs from parameter distributions.

Draws come from a NumPy ``RandomState(seed)`` (restarted by every ``take``) in this order,
which is torch's: one 63-bit integer seeds ember's generator (the tensor values); then per
step every parameter in declaration order (redrawing the non-strict ones while a constraint
or a tensor's element bounds reject them), then per tensor a uniform deciding contiguity
and, when non-contiguous, permutations until one is not the identity.
"""
from __future__ import annotations

import math

import numpy as np

import ember

__all__ = ["Fuzzer", "FuzzedParameter", "ParameterAlias", "FuzzedTensor"]


class ParameterAlias:
    """A dict-distribution choice that takes another parameter's value (``alias_to``)."""

    def __init__(self, alias_to):
        self.alias_to = alias_to

    def __repr__(self):
        return f"ParameterAlias[alias_to: {self.alias_to}]"


class FuzzedParameter:
    """A named value drawn each step: ``"uniform"`` or ``"loguniform"`` over [minval,
    maxval] (integers unless a bound is a float; loguniform always integral), or a dict
    ``{choice: probability}``."""

    def __init__(self, name, minval=None, maxval=None, distribution=None, strict=False):
        self.name = name
        self.strict = strict
        if isinstance(distribution, dict):
            if minval is not None or maxval is not None:
                raise AssertionError("minval and maxval must not be set with a dict "
                                     "distribution")
            probs = list(distribution.values())
            if any(not isinstance(p, (int, float)) or p < 0 for p in probs):
                raise AssertionError("Distribution probabilities must be non-negative numbers")
            if abs(sum(probs) - 1) > 1e-5:
                raise AssertionError("Distribution is not normalized")
        elif distribution not in ("loguniform", "uniform"):
            raise AssertionError(f"Unknown distribution: {distribution}")
        elif minval is None or maxval is None:
            raise AssertionError("minval and maxval must be set")
        self._minval, self._maxval = minval, maxval
        self._distribution = distribution

    def sample(self, state):
        """One draw from ``state`` (a NumPy RandomState)."""
        d, lo, hi = self._distribution, self._minval, self._maxval
        if d == "loguniform":
            return int(np.exp(state.uniform(low=np.log(lo), high=np.log(hi))))
        if d == "uniform":
            if isinstance(lo, float) or isinstance(hi, float):
                return state.uniform(low=lo, high=hi)
            return state.randint(low=lo, high=hi + 1)
        choices = list(d.keys())
        return choices[state.choice(len(choices), p=list(d.values()))]


class FuzzedTensor:
    """A tensor built each step from the drawn parameters: ``size`` / ``steps`` entries are
    ints or parameter names; a non-contiguous layout comes from a random dim order."""

    def __init__(self, name, size, steps=None, probability_contiguous=0.5, min_elements=None,
                 max_elements=None, max_allocation_bytes=None, dim_parameter=None,
                 roll_parameter=None, dtype=ember.float32, cuda=False,
                 tensor_constructor=None):
        if roll_parameter is not None:
            raise NotImplementedError("FuzzedTensor: roll_parameter is not supported")
        if cuda:
            raise NotImplementedError("FuzzedTensor: cuda=True (ember runs on the CPU only)")
        self.name = name
        self._size, self._steps = size, steps
        self._probability_contiguous = probability_contiguous
        self._min_elements, self._max_elements = min_elements, max_elements
        self._max_allocation_bytes = max_allocation_bytes
        self._dim_parameter = dim_parameter
        self._dtype = dtype
        self._tensor_constructor = tensor_constructor

    @staticmethod
    def default_tensor_constructor(size, dtype, **kwargs):
        """Uniform [0, 1) for floating / complex dtypes, integers in [1, 127) otherwise."""
        if dtype.is_floating_point or dtype.is_complex:
            return ember.rand(size=size, dtype=dtype)
        return ember.randint(1, 127, size=size, dtype=dtype)

    def _get_size_and_steps(self, params):
        dim = params[self._dim_parameter] if self._dim_parameter is not None \
            else len(self._size)

        def resolve(values):
            return tuple(params[v] if isinstance(v, str) else v for v in values[:dim])
        size = resolve(self._size)
        steps = resolve(self._steps or (1,) * len(self._size))
        return size, steps, tuple(s * t for s, t in zip(size, steps))

    def satisfies_constraints(self, params):
        size, _, allocation = self._get_size_and_steps(params)
        numel = math.prod(size)
        if self._min_elements is not None and numel < self._min_elements:
            return False
        if self._max_elements is not None and numel > self._max_elements:
            return False
        if self._max_allocation_bytes is not None and \
                math.prod(allocation) * self._dtype.itemsize > self._max_allocation_bytes:
            return False
        return True

    def _make_tensor(self, params, state):
        size, steps, allocation = self._get_size_and_steps(params)
        make = self._tensor_constructor or self.default_tensor_constructor
        raw = make(size=allocation, dtype=self._dtype, **params)
        order = np.arange(raw.dim())
        if state.rand() > self._probability_contiguous and raw.dim() > 1:
            while (order == np.arange(raw.dim())).all():
                order = state.permutation(raw.dim())
        raw = raw.permute(tuple(int(i) for i in order)).contiguous()
        raw = raw.permute(tuple(int(i) for i in np.argsort(order)))
        t = raw[tuple(slice(None, None, s) for s in steps)]
        return t, {"numel": t.numel(), "order": order, "steps": steps,
                   "is_contiguous": t.is_contiguous(), "dtype": str(self._dtype)}


def _flatten(items):
    out = []
    for item in items:
        out.extend(item if isinstance(item, (list, tuple)) else [item])
    return out


class Fuzzer:
    """``take(n)`` yields n (tensors, tensor_properties, params) triples, each a dict by
    name. ``constraints`` are callables of the params dict; False rejects a draw."""

    def __init__(self, parameters, tensors, constraints=None, seed=None):
        self._seed = np.random.randint(0, 2 ** 63 - 1) if seed is None else seed
        self._parameters = _flatten(parameters)
        self._tensors = _flatten(tensors)
        names = [p.name for p in self._parameters]
        if len(set(names)) != len(names):
            raise ValueError("Duplicate names in parameters")
        if len({t.name for t in self._tensors}) != len(self._tensors):
            raise ValueError("Duplicate names in tensors")
        self._constraints = list(constraints or ())
        self._rejections = 0
        self._total_generated = 0

    def take(self, n):
        state = np.random.RandomState(self._seed)
        ember.manual_seed(state.randint(low=0, high=2 ** 63 - 1, dtype=np.int64))
        for _ in range(n):
            params = self._generate(state)
            tensors, properties = {}, {}
            for t in self._tensors:
                tensors[t.name], properties[t.name] = t._make_tensor(params, state)
            yield tensors, properties, params

    @property
    def rejection_rate(self):
        return self._rejections / self._total_generated if self._total_generated else 0.0

    def _generate(self, state):
        params = {p.name: p.sample(state) for p in self._parameters}
        while True:
            candidate = self._resolve_aliases(params)
            self._total_generated += 1
            if all(f(candidate) for f in self._constraints) and \
                    all(t.satisfies_constraints(candidate) for t in self._tensors):
                return candidate
            self._rejections += 1
            for p in self._parameters:          # strict parameters keep their first draw
                if not p.strict:
                    params[p.name] = p.sample(state)

    @staticmethod
    def _resolve_aliases(params):
        params = dict(params)
        for _ in range(len(params) + 1):
            pending = {k: v for k, v in params.items() if isinstance(v, ParameterAlias)}
            if not pending:
                return params
            for k, v in pending.items():
                params[k] = params[v.alias_to]
        raise ValueError("ParameterAlias cycle")
