"""Cutting a batch into microbatches and gluing the outputs back together.

A *chunk spec* says what happens to one argument: ``TensorChunkSpec(dim)`` cuts a tensor
along ``dim`` (``tensor_split``, so the last pieces may be one row shorter),
``_Replicate`` hands the same object to every microbatch, ``sum_reducer`` adds the
microbatch values when merging. Containers (tuple, list, dict) are walked: a spec given
for a container applies to every tensor inside it.
"""
import ember

DEFAULT_CHUNK_DIM = 0


class TensorChunkSpec:
    """Cut (and later concatenate) a tensor along ``split_dim``."""

    def __init__(self, split_dim):
        self.split_dim = split_dim

    def __repr__(self):
        return f"{type(self).__module__}.{type(self).__name__}({self.split_dim})"

    def __str__(self):
        return f"TensorChunkSpec({self.split_dim})"

    @staticmethod
    def from_tuple(chunk_dims):
        """``(0, 1)`` -> ``(TensorChunkSpec(0), TensorChunkSpec(1))``."""
        return tuple(TensorChunkSpec(d) for d in chunk_dims)

    @staticmethod
    def from_dict(chunk_dims):
        """``{"x": 1}`` -> ``{"x": TensorChunkSpec(1)}``."""
        return {k: TensorChunkSpec(d) for k, d in chunk_dims.items()}


class _Replicate:
    """Give every microbatch the whole value (the class or an instance may be used)."""


class _LossReducer:
    """Merge microbatch values with ``reduce_fn(accumulated, value)`` from ``init``."""

    def __init__(self, init, reduce_fn):
        self.init_value, self.reduce_fn = init, reduce_fn

    def __repr__(self):
        return "_LossReducer(sum)"


sum_reducer = _LossReducer(0.0, lambda a, b: a + b)


def _is_replicate(spec):
    return spec is _Replicate or isinstance(spec, _Replicate)


def _leaves(value, spec):
    """Yield (tensor, spec) for every tensor in ``value`` (spec None means the default)."""
    if isinstance(value, (tuple, list)):
        specs = spec if isinstance(spec, (tuple, list)) else [spec] * len(value)
        for v, s in zip(value, specs):
            yield from _leaves(v, s)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, spec.get(k) if isinstance(spec, dict) else spec)
    elif isinstance(value, ember.Tensor):
        yield value, spec


def _cut(value, spec, chunks):
    """``value`` as a list of ``chunks`` pieces, following ``spec``."""
    if isinstance(value, (tuple, list)):
        specs = spec if isinstance(spec, (tuple, list)) else [spec] * len(value)
        parts = [_cut(v, s, chunks) for v, s in zip(value, specs)]
        return [type(value)(p[i] for p in parts) for i in range(chunks)]
    if isinstance(value, dict):
        parts = {k: _cut(v, spec.get(k) if isinstance(spec, dict) else spec, chunks)
                 for k, v in value.items()}
        return [{k: p[i] for k, p in parts.items()} for i in range(chunks)]
    if not isinstance(value, ember.Tensor) or _is_replicate(spec):
        return [value] * chunks
    dim = DEFAULT_CHUNK_DIM if spec is None else spec.split_dim
    if value.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return list(ember.tensor_split(value, chunks, dim))


def _chunk_count(values, chunks):
    """How many non-empty pieces every tensor can be cut into (at most ``chunks``)."""
    n = chunks
    for t, spec in values:
        if _is_replicate(spec) or t.dim() == 0:
            continue
        dim = DEFAULT_CHUNK_DIM if spec is None else spec.split_dim
        n = min(n, t.shape[dim])
    return n


def split_args_kwargs_into_chunks(args, kwargs, chunks, args_chunk_spec=None,
                                  kwargs_chunk_spec=None):
    """Cut positional ``args`` (tuple) and ``kwargs`` (dict or None) into ``chunks``
    microbatches; returns ``(list of args tuples, list of kwargs dicts)``. Tensors are cut
    along dim 0 unless a spec says otherwise; other values are repeated. A tensor shorter
    than ``chunks`` gives fewer microbatches."""
    kwargs = {} if kwargs is None else kwargs
    if args_chunk_spec is not None and len(args_chunk_spec) != len(args):
        raise AssertionError(f"args_chunk_spec has {len(args_chunk_spec)} entries for "
                             f"{len(args)} positional arguments")
    if kwargs_chunk_spec is not None and set(kwargs_chunk_spec) != set(kwargs):
        raise AssertionError(f"kwargs_chunk_spec keys {sorted(kwargs_chunk_spec)} differ "
                             f"from the keyword arguments {sorted(kwargs)}")
    args_spec = tuple(args_chunk_spec) if args_chunk_spec is not None else None
    leaves = list(_leaves(tuple(args), args_spec)) + list(_leaves(kwargs, kwargs_chunk_spec))
    n = _chunk_count(leaves, chunks)
    arg_chunks = _cut(tuple(args), args_spec, n)
    kwarg_chunks = _cut(dict(kwargs), kwargs_chunk_spec, n)
    return arg_chunks, kwarg_chunks


def merge_chunks(chunks, chunk_spec):
    """Glue the microbatch outputs ``chunks`` (a list) back into one value: tensors are
    concatenated along their spec's dim (0 by default), ``sum_reducer`` adds, and
    ``_Replicate`` keeps the first microbatch's value."""
    if not chunks:
        raise IndexError("merge_chunks needs at least one microbatch output")
    return _merge(list(chunks), chunk_spec)


def _merge(values, spec):
    first = values[0]
    if isinstance(spec, _LossReducer):
        total = spec.init_value
        for v in values:
            total = spec.reduce_fn(total, v)
        return total
    if _is_replicate(spec):
        return first
    if isinstance(first, (tuple, list)):
        specs = spec if isinstance(spec, (tuple, list)) else [spec] * len(first)
        return type(first)(_merge([v[i] for v in values], specs[i])
                           for i in range(len(first)))
    if isinstance(first, dict):
        return {k: _merge([v[k] for v in values], spec.get(k) if isinstance(spec, dict)
                          else spec) for k in first}
    if not isinstance(first, ember.Tensor):
        raise TypeError(f"merge_chunks: cannot concatenate microbatch outputs of type "
                        f"{type(first).__name__} (give _Replicate or sum_reducer as their "
                        f"spec)")
    dim = DEFAULT_CHUNK_DIM if spec is None else spec.split_dim
    return ember.cat(values, dim)
