"""default_collate / default_convert (torch.utils.data._utils.collate)."""
from __future__ import annotations

import collections
import collections.abc
import copy
import re

import numpy as np

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, "
    "dicts or lists; found {}"
)


def _ember():
    import ember
    return ember


def default_convert(data):
    """Convert NumPy arrays in ``data`` to tensors (no batching)."""
    e = _ember()
    elem_type = type(data)
    if isinstance(data, e.Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_",
                                                                       "bytes_"):
        if elem_type.__name__ in ("ndarray", "memmap") and \
                np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return e.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch, *, collate_fn_map=None):
    """Collate a list of samples, using ``collate_fn_map`` (type -> function) for leaves."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: collate([d[key] for d in batch],
                                           collate_fn_map=collate_fn_map) for key in elem})
                return clone
            return elem_type({key: collate([d[key] for d in batch],
                                           collate_fn_map=collate_fn_map) for key in elem})
        except TypeError:
            return {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                    for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map)
                           for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(el) == elem_size for el in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(samples, collate_fn_map=collate_fn_map)
                              for samples in transposed])
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    return _ember().stack(list(batch), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    e = _ember()
    return collate([e.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return _ember().as_tensor(np.array(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    e = _ember()
    return e.tensor(batch, dtype=e.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return _ember().tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


class _LazyMap(dict):
    """default_collate_fn_map, filled on first use (ember.Tensor is imported lazily)."""


def _build_map():
    e = _ember()
    m = {e.Tensor: collate_tensor_fn, np.ndarray: collate_numpy_array_fn,
         np.memmap: collate_numpy_array_fn, np.generic: collate_numpy_scalar_fn,
         float: collate_float_fn, int: collate_int_fn, str: collate_str_fn,
         bytes: collate_str_fn}
    return m


default_collate_fn_map = _LazyMap()


def default_collate(batch):
    """Stack a list of samples into a batch: tensors/arrays stacked, numbers to tensors,
    strings kept, and dicts/sequences/namedtuples collated element-wise."""
    if not default_collate_fn_map:
        default_collate_fn_map.update(_build_map())
    # np.generic covers str_/bytes_ too: keep those as strings
    elem = batch[0]
    if isinstance(elem, (np.str_, np.bytes_)):
        return batch
    return collate(batch, collate_fn_map=default_collate_fn_map)
