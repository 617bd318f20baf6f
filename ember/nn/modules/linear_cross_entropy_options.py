"""Settings of the chunked path of ``ember.nn.functional.linear_cross_entropy``.

An immutable record: passing an instance as ``options=`` asks ``linear_cross_entropy`` to
walk the batch in chunks (one fused record, ``_linear_cross_entropy_chunked``) instead of
building the whole (N, C) logits matrix. Arguments are checked when the record is built.
"""
from __future__ import annotations

import dataclasses

_ACC_POLICIES = ("accurate", "balanced", "compact", "auto")


def _valid_chunking_method(m):
    if m is None or m in ("auto", "aspect_ratio"):
        return True
    if not isinstance(m, str) or not m.startswith("aspect_ratio:"):
        return False
    ratio = m[len("aspect_ratio:"):]
    return ratio.isdigit() and int(ratio) > 0


def _acc_dtypes():
    import ember
    return (ember.float16, ember.bfloat16, ember.float32, ember.float64)


@dataclasses.dataclass(frozen=True, slots=True)
class LinearCrossEntropyOptions:
    """How ``linear_cross_entropy`` splits its work when ``options`` is given.

    - ``allow_retain_graph``: accepted for compatibility; ember keeps the precomputed
      gradients until the graph is freed, so backward with ``retain_graph=True`` works
      either way.
    - ``batch_chunk_size``: rows of the batch per chunk (a positive int); ``None`` picks a
      size that keeps one chunk's logits at a few MB.
    - ``chunking_method``: ``'auto'``, ``'aspect_ratio'``, ``'aspect_ratio:<k>'`` or
      ``None``; ember's kernel sizes chunks by memory, so this is only validated.
    - ``acc_policy``: ``'accurate'``, ``'balanced'``, ``'compact'`` or ``'auto'``.
    - ``acc_dtype``: the floating dtype sums run in (``None``: float32 for half-precision
      inputs, else the input's dtype).
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        b = self.batch_chunk_size
        if b is not None and not (isinstance(b, int) and b > 0):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {b!r}")
        if not _valid_chunking_method(self.chunking_method):
            raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if self.acc_policy not in _ACC_POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        d = self.acc_dtype
        if d is not None and not any(d is a for a in _acc_dtypes()):
            names = ", ".join(repr(a) for a in _acc_dtypes())
            raise ValueError(f"acc_dtype must be one of {{None, {names}}}, got {d!r}. Pass "
                             f"acc_dtype=None to let the op pick automatically.")


__all__ = ["LinearCrossEntropyOptions"]
