"""Tensor printing (placeholder: numpy formatting; torch-exact formatting pending)."""
import numpy as np


def tensor_repr(t):
    body = np.array2string(t._data, separator=", ", prefix="tensor(")
    extras = []
    if t._grad_fn is not None:
        extras.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t._requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"
