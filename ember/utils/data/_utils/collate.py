"""default_collate (samples -> batch) and default_convert (NumPy -> tensors, no batching)."""
import collections.abc
import copy
import re

import numpy as np

import ember

# NumPy dtype codes that cannot become tensors: bytes, str, object
np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, "
    "dicts or lists; found {}"
)


def _rebuild_mapping(like, items):
    """A mapping of ``like``'s type holding ``items`` (a plain dict if that type won't do)."""
    try:
        if isinstance(like, collections.abc.MutableMapping):
            out = copy.copy(like)
            out.update(items)
            return out
        return type(like)(items)
    except TypeError:
        return dict(items)


def _rebuild_sequence(like, values):
    """A sequence of ``like``'s type holding ``values`` (a list if that type won't do)."""
    try:
        if isinstance(like, collections.abc.MutableSequence):
            out = copy.copy(like)
            for i, v in enumerate(values):
                out[i] = v
            return out
        return type(like)(values)
    except TypeError:
        return list(values)


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def default_convert(data):
    """Turn NumPy arrays and scalars inside ``data`` into tensors, keeping the structure."""
    kind = type(data)
    if isinstance(data, ember.Tensor):
        return data
    if kind.__module__ == "numpy" and kind.__name__ not in ("str_", "string_", "bytes_"):
        if kind.__name__ in ("ndarray", "memmap") and \
                np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return ember.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {k: default_convert(data[k]) for k in data})
    if _is_namedtuple(data):
        return kind(*(default_convert(v) for v in data))
    if isinstance(data, tuple):
        return [default_convert(v) for v in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(v) for v in data])
    return data


def collate(batch, *, collate_fn_map=None):
    """Collate ``batch`` (a list of samples of one structure): leaves go to the function
    that ``collate_fn_map`` gives for their type; containers are collated field by field."""
    first = batch[0]
    if collate_fn_map is not None:
        fn = collate_fn_map.get(type(first))
        if fn is None:
            fn = next((f for t, f in collate_fn_map.items() if isinstance(first, t)), None)
        if fn is not None:
            return fn(batch, collate_fn_map=collate_fn_map)

    def sub(samples):
        return collate(samples, collate_fn_map=collate_fn_map)

    if isinstance(first, collections.abc.Mapping):
        return _rebuild_mapping(first, {k: sub([s[k] for s in batch]) for k in first})
    if _is_namedtuple(first):
        return type(first)(*(sub(field) for field in zip(*batch)))
    if isinstance(first, collections.abc.Sequence):
        if any(len(s) != len(first) for s in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [sub(field) for field in zip(*batch)]
        return fields if isinstance(first, tuple) else _rebuild_sequence(first, fields)
    raise TypeError(default_collate_err_msg_format.format(type(first)))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    return ember.stack(list(batch), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    if np_str_obj_array_pattern.search(batch[0].dtype.str):
        raise TypeError(default_collate_err_msg_format.format(batch[0].dtype))
    return collate([ember.as_tensor(a) for a in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return ember.as_tensor(np.array(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    return ember.tensor(batch, dtype=ember.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return ember.tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


# looked up by exact type first, then by isinstance in this order
default_collate_fn_map = {
    ember.Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    np.memmap: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Stack tensors and arrays, turn numbers into tensors, keep strings, and collate
    dicts, namedtuples and sequences field by field."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
