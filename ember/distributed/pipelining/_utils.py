"""Small shared pieces: the metadata error, what a traced pipe tells its stages, and the
fixed-size header that describes the tensors one stage sends to the next."""
from dataclasses import dataclass

import ember


class PipeliningMetadataError(RuntimeError):
    """Stage inputs/outputs that do not fit what the pipeline expects."""


@dataclass
class PipeInfo:
    """What ``build_stage`` needs from a traced ``Pipe``."""
    graph: object
    num_stages: int
    has_loss_and_backward: bool


# dtype <-> small integer, for the activation header
_DTYPES = [ember.float32, ember.float64, ember.float16, ember.bfloat16, ember.complex64,
           ember.complex128, ember.int64, ember.int32, ember.int16, ember.int8, ember.uint8,
           ember.bool]
HEADER_LEN = 256


def encode_header(tensors):
    """int64 tensor ``[count, (dtype code, ndim, *shape) per tensor, 0...]``."""
    words = [len(tensors)]
    for t in tensors:
        words += [_DTYPES.index(t.dtype), t.dim(), *t.shape]
    if len(words) > HEADER_LEN:
        raise NotImplementedError(f"pipelining: {len(tensors)} tensors of these ranks do "
                                  f"not fit the {HEADER_LEN}-word activation header")
    return ember.tensor(words + [0] * (HEADER_LEN - len(words)), dtype=ember.int64)


def decode_header(header):
    """[(shape, dtype)] from ``encode_header``'s tensor."""
    words = header.tolist()
    out, at = [], 1
    for _ in range(words[0]):
        code, ndim = words[at], words[at + 1]
        out.append((tuple(words[at + 2:at + 2 + ndim]), _DTYPES[code]))
        at += 2 + ndim
    return out


def flatten_tensors(value, what):
    """A stage's output as a tuple of tensors (a tensor, or a tuple/list of them)."""
    items = value if isinstance(value, (tuple, list)) else (value,)
    for v in items:
        if not isinstance(v, ember.Tensor):
            raise PipeliningMetadataError(
                f"{what}: stages pass tensors (or tuples of tensors) to each other; got "
                f"{type(v).__name__}")
    return tuple(items)


def needs_grad(t):
    return t.is_floating_point() or t.is_complex()
