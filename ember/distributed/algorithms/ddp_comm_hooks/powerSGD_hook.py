"""PowerSGD gradient compression (Vogels, Karimireddy and Jaggi, NeurIPS 2019).

Each gradient matrix M (n x m: a parameter's gradient viewed as ``shape[0]`` rows) is
replaced by a rank-r approximation found by one step of subspace iteration, which needs
only all-reduces of n x r and m x r matrices:

    P = M Q;  P <- all-reduce(P);  P <- orthogonalize(P)    (Gram-Schmidt)
    Q = M^T P;  Q <- all-reduce(Q);  M <- P Q^T / world_size

Q starts as standard normal noise (orthogonalized; the same seed on every rank) and, with
``warm_start``, is reused from the previous iteration. With ``use_error_feedback`` what
compression lost on this rank (its input minus the result) is added to the next input.
Vectors, and matrices too small for rank r to save at least ``min_compression_rate``, are
all-reduced uncompressed. The first ``start_powerSGD_iter`` iterations are plain
all-reduces. ``batched_powerSGD_hook`` compresses the whole bucket as one square matrix.

The hooks run their collectives before returning (a completed Future).
"""
from __future__ import annotations

import logging
import math

import numpy as np

__all__ = ["PowerSGDState", "powerSGD_hook", "batched_powerSGD_hook"]

logger = logging.getLogger(__name__)


class PowerSGDState:
    """The hooks' settings and memory: per bucket index, the error (``error_dict``) and the
    P and Q factors (``p_memory_dict``, ``q_memory_dict``); ``iter`` counts iterations
    (one per backward, at the last bucket); ``rng`` (NumPy, seeded with ``random_seed``)
    draws the seeds of the initial Qs."""

    __slots__ = ["process_group", "matrix_approximation_rank", "start_powerSGD_iter",
                 "min_compression_rate", "orthogonalization_epsilon", "use_error_feedback",
                 "warm_start", "batch_tensors_with_same_shape", "rng", "error_dict",
                 "p_memory_dict", "q_memory_dict", "iter", "total_numel_before_compression",
                 "total_numel_after_compression", "compression_stats_logging_frequency",
                 "next_stats_report"]

    def __init__(self, process_group, matrix_approximation_rank=1, start_powerSGD_iter=1000,
                 min_compression_rate=2, use_error_feedback=True, warm_start=True,
                 orthogonalization_epsilon=0, random_seed=0,
                 compression_stats_logging_frequency=10_000,
                 batch_tensors_with_same_shape: bool = False):
        if (use_error_feedback or warm_start) and start_powerSGD_iter <= 1:
            raise ValueError("Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or "
                             "`warm_start` is enabled, because PowerSGD can only be applied "
                             "after the first two iterations in DDP.")
        self.process_group = process_group
        self.matrix_approximation_rank = matrix_approximation_rank
        self.start_powerSGD_iter = start_powerSGD_iter
        self.min_compression_rate = min_compression_rate
        self.use_error_feedback = use_error_feedback
        self.warm_start = warm_start
        self.orthogonalization_epsilon = orthogonalization_epsilon
        self.batch_tensors_with_same_shape = batch_tensors_with_same_shape
        self.rng = np.random.RandomState(random_seed)
        self.error_dict, self.p_memory_dict, self.q_memory_dict = {}, {}, {}
        self.iter = 0
        self.total_numel_before_compression = 0
        self.total_numel_after_compression = 0
        self.compression_stats_logging_frequency = max(1, compression_stats_logging_frequency)
        self.next_stats_report = 0

    def __getstate__(self):
        return {k: getattr(self, k) for k in self.__slots__ if k != "process_group"}

    def __setstate__(self, state):
        self.process_group = None
        for k, v in state.items():
            setattr(self, k, v)

    def maybe_increase_iter(self, bucket):
        if bucket.is_last():
            self.iter += 1
        if self.iter == self.start_powerSGD_iter:
            logger.info("Start to apply PowerSGD after %s iterations.", self.iter)

    def compression_stats(self):
        """(compression rate, elements before, elements after) so far."""
        after = self.total_numel_after_compression
        rate = self.total_numel_before_compression / after if after > 0 else 0
        return rate, self.total_numel_before_compression, after

    def _seed(self):
        return int(self.rng.randint(1_000_000_000))


def _should_compress(num_rows, num_cols, rank, min_compression_rate):
    """(compress?, elements sent uncompressed, elements sent compressed)."""
    uncompressed = num_rows * num_cols
    compressed = (num_rows + num_cols) * rank
    return compressed * min_compression_rate < uncompressed, uncompressed, compressed


def _orthogonalize(matrix, epsilon=0):
    """Gram-Schmidt on the columns of ``matrix`` (n x r NumPy array, in place); a
    nonzero ``epsilon`` is added to each norm (zero columns stay finite)."""
    r = matrix.shape[1]
    for i in range(r):
        col = matrix[:, i]
        norm = np.linalg.norm(col)
        col /= norm + epsilon if epsilon else norm
        if i + 1 < r:
            rest = matrix[:, i + 1:]
            rest -= np.outer(col, col @ rest)
    return matrix


def _all_reduce(array, group):
    """Sum ``array`` (a NumPy array) over the group, in place."""
    import ember
    import ember.distributed as dist
    if array.size:
        dist.all_reduce(ember.from_numpy(array), group=group)
    return array


def _done(value):
    from ember.futures import Future
    fut = Future()
    fut.set_result(value)
    return fut


def _group(state):
    import ember.distributed as dist
    return state.process_group if state.process_group is not None else dist.group.WORLD


def _initial_q(state, shapes, dtype):
    """Standard normal Qs (one seed per bucket, drawn from ``state.rng``), orthogonalized."""
    gen = np.random.RandomState(state._seed())
    qs = []
    for m, r in shapes:
        q = gen.standard_normal((m, r)).astype(dtype)
        qs.append(_orthogonalize(q, state.orthogonalization_epsilon))
    return qs


def _error_feedback(state, index, flat):
    """Add the bucket's stored error to ``flat`` (NumPy); returns a copy of the input."""
    if not state.use_error_feedback:
        return None
    err = state.error_dict.get(index)
    if err is None or err.shape != flat.shape:
        state.error_dict[index] = np.zeros_like(flat)
    else:
        flat += err
    return flat.copy()


def _low_rank(state, index, matrices, group, world):
    """Replace each matrix (NumPy, written in place) by its rank-r PowerSGD average."""
    rank = state.matrix_approximation_rank
    shapes = [(mat.shape[1], min(*mat.shape, rank)) for mat in matrices]
    qs = state.q_memory_dict.get(index)
    if not state.warm_start or qs is None or [q.shape for q in qs] != shapes:
        qs = _initial_q(state, shapes, matrices[0].dtype)
    ps = [mat @ q for mat, q in zip(matrices, qs)]
    flat_p = _all_reduce(np.concatenate([p.reshape(-1) for p in ps]), group)
    ps = _split(flat_p, [(mat.shape[0], q.shape[1]) for mat, q in zip(matrices, qs)])
    for p in ps:
        _orthogonalize(p, state.orthogonalization_epsilon)
    qs = [mat.T @ p for mat, p in zip(matrices, ps)]
    flat_q = _all_reduce(np.concatenate([q.reshape(-1) for q in qs]), group)
    qs = _split(flat_q, shapes)
    for mat, p, q in zip(matrices, ps, qs):
        mat[...] = p @ q.T / world
    state.p_memory_dict[index] = ps
    state.q_memory_dict[index] = qs


def _split(flat, shapes):
    out, at = [], 0
    for n, m in shapes:
        out.append(flat[at:at + n * m].reshape(n, m))
        at += n * m
    return out


def powerSGD_hook(state, bucket):
    """PowerSGD on each gradient of the bucket that rank ``matrix_approximation_rank``
    compresses enough; the rest all-reduced as is. Returns a Future of the bucket."""
    from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
    group = _group(state)
    buffer = bucket.buffer()
    if state.iter < state.start_powerSGD_iter:
        state.maybe_increase_iter(bucket)
        return default_hooks._allreduce_fut(group, buffer)
    import ember.distributed as dist
    world = dist.get_world_size(group)
    index = bucket.index()
    flat = buffer.numpy()
    before = _error_feedback(state, index, flat)

    matrices, plain = [], []
    offset = 0
    for grad in bucket.gradients():
        n = grad.numel()
        piece = flat[offset:offset + n]
        offset += n
        state.total_numel_before_compression += n
        if grad.dim() > 1:
            rows = grad.shape[0]
            ok, _, sent = _should_compress(rows, n // rows,
                                           min(rows, n // rows,
                                               state.matrix_approximation_rank),
                                           state.min_compression_rate)
            if ok:
                matrices.append(piece.reshape(rows, n // rows))
                state.total_numel_after_compression += sent
                continue
        plain.append(piece)
        state.total_numel_after_compression += n

    if plain:
        joined = _all_reduce(np.concatenate(plain), group) / world
        at = 0
        for piece in plain:
            piece[...] = joined[at:at + piece.size]
            at += piece.size
    if matrices:
        _low_rank(state, index, matrices, group, world)
    if before is not None:
        state.error_dict[index] = before - flat
    _maybe_log(state)
    state.maybe_increase_iter(bucket)
    return _done(buffer)


def batched_powerSGD_hook(state, bucket):
    """PowerSGD on the whole bucket viewed as one square matrix (zero padded)."""
    from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
    group = _group(state)
    buffer = bucket.buffer()
    if state.iter < state.start_powerSGD_iter:
        state.maybe_increase_iter(bucket)
        return default_hooks._allreduce_fut(group, buffer)
    import ember.distributed as dist
    world = dist.get_world_size(group)
    index = bucket.index()
    flat = buffer.numpy()
    total = flat.size
    side = math.ceil(math.sqrt(total))
    state.total_numel_before_compression += side * side
    state.total_numel_after_compression += side * min(side, state.matrix_approximation_rank) * 2
    before = _error_feedback(state, index, flat)
    square = np.zeros(side * side, flat.dtype)
    square[:total] = flat
    matrix = square.reshape(side, side)
    _low_rank(state, index, [matrix], group, world)
    flat[...] = square[:total]
    if before is not None:
        state.error_dict[index] = before - flat
    _maybe_log(state)
    state.maybe_increase_iter(bucket)
    return _done(buffer)


def _maybe_log(state):
    if state.iter >= state.next_stats_report:
        rate, before, after = state.compression_stats()
        logger.info("Compression stats: iter %s, total before compression %s, total after "
                    "compression %s, rate %s", state.iter, before, after, rate)
        state.next_stats_report = state.iter + state.compression_stats_logging_frequency
