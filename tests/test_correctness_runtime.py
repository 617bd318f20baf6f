"""Runtime behaviour checked against torch (issue 14, part 3): the deterministic-algorithms
table, lazy samplers, corrupt checkpoints."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from helpers import torch

pytestmark = pytest.mark.skipif(torch is None, reason="torch oracle")


# ------------------------------------------------------------------ determinism table

def _determinism_cases(T):
    """Every op the nondeterminism table could concern, as a thunk per library ``T``."""
    F = T.nn.functional
    idx = T.tensor([0, 1, 1])

    def leaf(*shape):
        return T.ones(*shape).requires_grad_()

    def bwd(y):
        y.sum().backward()

    def unpool(n):
        x = T.arange(4.0 ** n).reshape((1, 1) + (4,) * n)
        pooled = getattr(F, f"max_pool{n}d")(x, 2, return_indices=True)
        return lambda: getattr(F, f"max_unpool{n}d")(*pooled, 2)

    grid = T.tensor([[[[-0.5, 0.2], [0.3, 0.9]], [[0.1, -0.7], [0.6, 0.0]]]])
    return {
        "scatter_add_": lambda: T.zeros(3).scatter_add_(0, idx, T.ones(3)),
        "scatter_add": lambda: T.zeros(3).scatter_add(0, idx, T.ones(3)),
        "scatter_add backward": lambda: bwd(T.zeros(3).scatter_add(0, idx, leaf(3))),
        "scatter": lambda: T.zeros(3).scatter(0, idx, T.ones(3)),
        "scatter_ reduce=add": lambda: T.zeros(3).scatter_(0, idx, T.ones(3), reduce="add"),
        "scatter_reduce sum": lambda: T.zeros(3).scatter_reduce(0, idx, T.ones(3), "sum"),
        "scatter_reduce mean": lambda: T.zeros(3).scatter_reduce(0, idx, T.ones(3), "mean"),
        "scatter_reduce prod": lambda: T.zeros(3).scatter_reduce(0, idx, T.ones(3), "prod"),
        "scatter_reduce amax": lambda: T.zeros(3).scatter_reduce(0, idx, T.ones(3), "amax"),
        "index_add_": lambda: T.zeros(3).index_add_(0, idx, T.ones(3)),
        "index_add": lambda: T.index_add(T.zeros(3), 0, idx, T.ones(3)),
        "index_copy": lambda: T.zeros(3).index_copy(0, idx, T.ones(3)),
        "index_copy_": lambda: T.zeros(3).index_copy_(0, idx, T.ones(3)),
        "index_fill_": lambda: T.zeros(3).index_fill_(0, idx, 1.0),
        "index_put_ accumulate": lambda: T.zeros(3).index_put_((idx,), T.ones(3), True),
        "index_put_": lambda: T.zeros(3).index_put_((idx,), T.ones(3)),
        "getitem backward": lambda: bwd(leaf(3)[idx]),
        "index_select backward": lambda: bwd(T.index_select(leaf(3), 0, idx)),
        "gather backward": lambda: bwd(T.gather(leaf(3), 0, idx)),
        "take backward": lambda: bwd(T.take(leaf(3), idx)),
        "put_ accumulate": lambda: T.zeros(3).put_(idx, T.ones(3), accumulate=True),
        "put_": lambda: T.zeros(3).put_(idx, T.ones(3)),
        "put": lambda: T.zeros(3).put(idx, T.ones(3)),
        "masked_scatter_": lambda: T.zeros(3).masked_scatter_(T.tensor([True, False, True]),
                                                              T.ones(3)),
        "bincount": lambda: T.bincount(idx),
        "bincount weights": lambda: T.bincount(idx, T.ones(3)),
        "histc": lambda: T.histc(T.tensor([1.0, 2.0, 1.0]), bins=4),
        "kthvalue": lambda: T.kthvalue(T.tensor([3.0, 1.0, 2.0]), 2),
        "median": lambda: T.median(T.tensor([3.0, 1.0, 2.0])),
        "median dim": lambda: T.median(T.tensor([[3.0, 1.0, 2.0]]), 1),
        "nanmedian dim": lambda: T.nanmedian(T.tensor([[3.0, 1.0, 2.0]]), 1),
        "mode": lambda: T.mode(T.tensor([1.0, 2.0, 1.0])),
        "cumsum": lambda: T.cumsum(T.ones(3), 0),
        "cumsum backward": lambda: bwd(T.cumsum(leaf(3), 0)),
        "sort": lambda: T.sort(T.tensor([1.0, 2.0, 1.0])),
        "unique": lambda: T.unique(T.tensor([1, 2, 1])),
        "interpolate nearest backward": lambda: bwd(F.interpolate(leaf(1, 1, 4, 4), scale_factor=2)),
        "interpolate linear backward": lambda: bwd(
            F.interpolate(leaf(1, 1, 4), scale_factor=2, mode="linear")),
        "interpolate bilinear backward": lambda: bwd(
            F.interpolate(leaf(1, 1, 4, 4), scale_factor=2, mode="bilinear")),
        "interpolate bicubic backward": lambda: bwd(
            F.interpolate(leaf(1, 1, 4, 4), scale_factor=2, mode="bicubic")),
        "interpolate trilinear backward": lambda: bwd(
            F.interpolate(leaf(1, 1, 2, 2, 2), scale_factor=2, mode="trilinear")),
        "embedding backward": lambda: bwd(F.embedding(idx, leaf(4, 3))),
        "embedding_bag backward": lambda: bwd(F.embedding_bag(idx, leaf(4, 3), T.tensor([0, 2]))),
        "embedding_bag max backward": lambda: bwd(
            F.embedding_bag(idx, leaf(4, 3), T.tensor([0, 2]), mode="max")),
        "ctc_loss backward": lambda: F.ctc_loss(
            leaf(5, 1, 4).log_softmax(2), T.tensor([[1, 2]]), T.tensor([5]),
            T.tensor([2])).backward(),
        "nll_loss backward": lambda: F.nll_loss(leaf(2, 3), T.zeros(2, dtype=T.long)).backward(),
        "nll_loss2d backward": lambda: F.nll_loss(
            leaf(1, 3, 2, 2), T.zeros(1, 2, 2, dtype=T.long)).backward(),
        "adaptive_avg_pool2d backward": lambda: bwd(F.adaptive_avg_pool2d(leaf(1, 1, 5, 5), 3)),
        "adaptive_avg_pool3d backward": lambda: bwd(
            F.adaptive_avg_pool3d(leaf(1, 1, 5, 5, 5), 3)),
        "adaptive_max_pool2d backward": lambda: bwd(F.adaptive_max_pool2d(leaf(1, 1, 5, 5), 3)),
        "avg_pool3d backward": lambda: bwd(F.avg_pool3d(leaf(1, 1, 4, 4, 4), 2)),
        "max_pool1d backward": lambda: bwd(F.max_pool1d(leaf(1, 1, 4), 2)),
        "max_pool2d backward": lambda: bwd(F.max_pool2d(leaf(1, 1, 4, 4), 2)),
        "max_pool3d backward": lambda: bwd(F.max_pool3d(leaf(1, 1, 4, 4, 4), 2)),
        "fractional_max_pool2d backward": lambda: bwd(
            F.fractional_max_pool2d(leaf(1, 1, 5, 5), 2, output_size=3,
                                    _random_samples=T.full((1, 1, 2), 0.5))),
        "max_unpool1d": unpool(1),
        "max_unpool2d": unpool(2),
        "max_unpool3d": unpool(3),
        "reflection_pad backward": lambda: bwd(F.pad(leaf(1, 1, 4, 4), (1, 1, 1, 1), "reflect")),
        "replication_pad backward": lambda: bwd(F.pad(leaf(1, 1, 4, 4), (1, 1, 1, 1), "replicate")),
        "grid_sample backward": lambda: bwd(F.grid_sample(leaf(1, 1, 4, 4), grid,
                                                          align_corners=False)),
        "conv_transpose2d backward": lambda: bwd(F.conv_transpose2d(leaf(1, 1, 3, 3),
                                                                    leaf(1, 1, 2, 2))),
        "empty": lambda: T.empty(3),
        "empty int": lambda: T.empty(3, dtype=T.int32),
        "empty bool": lambda: T.empty(2, dtype=T.bool),
        "empty_like": lambda: T.empty_like(T.ones(2, dtype=T.uint8)),
        "new_empty": lambda: T.ones(3).new_empty(4),
        "empty_strided": lambda: T.empty_strided((2, 2), (2, 1)),
        "resize_": lambda: T.zeros(2).resize_(5),
        "resize_ int": lambda: T.zeros(2, dtype=T.long).resize_(5),
        "resize_as_": lambda: T.zeros(2).resize_as_(T.ones(4)),
    }


def _outcome(T, fn):
    """(what happened, deterministic-alert warnings, result values) of one call."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn()
            what = "ok"
        except Exception as e:  # noqa: BLE001 - the class is what is compared
            result, what = None, type(e).__name__
    alerts = sorted({str(w.message).split(" ")[0] for w in caught
                     if "deterministic implementation" in str(w.message)})
    if isinstance(result, tuple):
        result = result[0]
    values = result.tolist() if hasattr(result, "tolist") else None
    return what, alerts, values


_CASES = sorted(_determinism_cases(ember))


@pytest.mark.parametrize("warn_only", [False, True])
@pytest.mark.parametrize("name", _CASES)
def test_deterministic_algorithms_table_matches_torch(name, warn_only):
    got = {}
    for T in (ember, torch):
        T.manual_seed(0)
        T.use_deterministic_algorithms(True, warn_only=warn_only)
        try:
            got[T.__name__] = _outcome(T, _determinism_cases(T)[name])
        finally:
            T.use_deterministic_algorithms(False)
    e_what, e_alerts, e_vals = got["ember"]
    t_what, t_alerts, t_vals = got["torch"]
    assert (e_what, e_alerts) == (t_what, t_alerts)
    if t_vals is not None:
        np.testing.assert_array_equal(np.asarray(e_vals), np.asarray(t_vals))


def test_deterministic_alert_message_is_torchs():
    msgs = []
    for T in (ember, torch):
        T.use_deterministic_algorithms(True)
        try:
            with pytest.raises(RuntimeError) as e:
                T.zeros(3).put(T.tensor([0]), T.ones(1))
            msgs.append(str(e.value))
        finally:
            T.use_deterministic_algorithms(False)
    assert msgs[0] == msgs[1]
