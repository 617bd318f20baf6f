"""Kernels of the factory ops (new arrays from a size and a fill)."""
import numpy as np


def _shape(size):
    shape = tuple(int(s) for s in size)
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(shape)}")
    return shape


def zeros(size, dtype):
    return np.zeros(_shape(size), dtype.np)


def ones(size, dtype):
    return np.ones(_shape(size), dtype.np)


def full(size, fill_value, dtype):
    return np.full(_shape(size), fill_value, dtype.np)


def empty(size, dtype):
    # ember fills "uninitialised" memory with zeros: cheap, and deterministic by design
    return np.zeros(_shape(size), dtype.np)
